"""Points placed by pinocchio's rigid placements, read from its workspace in place.

:func:`record_rows` views pinocchio's per-joint or per-frame records (``data.oMi``, ``data.oMf``,
``data.v``, ``data.a``) as a live (n, k) array, so compiled loops read a pass's results without
a Python call per record; :func:`placed_points` applies placements to points there (``t + R o``)
with the operations of pinocchio's Eigen build, bit for bit. Used by the planner's leg
kinematics (:mod:`planners.leg_kinematics`) and the quadruped testbed's foot centres
(:mod:`robots.pybullet.quadruped`). Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import ctypes

import numpy as np

from .errors import IdynError
from .jit import cached_jit


def record_rows(vector, field: str) -> np.ndarray:
    """A live (n, k) view of one of pinocchio's vectors of fixed-size records (``data.oMi``,
    ``data.oMf``, ``data.v``, ``data.a``: a std::vector, contiguous, which the passes overwrite
    in place), a row per record from its first field ``field`` on (k = the record's size in
    doubles; for a placement, ``"rotation"``: the rotation column-major, then the translation).
    The even stride is checked, element by element. The view does not keep ``data`` alive: its
    owner must."""
    addresses = [getattr(vector[j], field).__array_interface__["data"][0] for j in range(len(vector))]
    stride = addresses[1] - addresses[0]
    if stride <= 0 or stride % 8 or addresses != [addresses[0] + j * stride for j in range(len(addresses))]:
        raise IdynError(f"pinocchio's records are not evenly strided ({field})")
    memory = (ctypes.c_char * (stride * len(addresses))).from_address(addresses[0])
    return np.frombuffer(memory, dtype=np.float64).reshape(len(addresses), stride // 8)


@cached_jit
def rotate(R, x0, x1, x2):
    """``R x`` for the column-major 3 x 3 ``R`` (9 values) as pinocchio's Eigen build evaluates
    it, so bit for bit: rows 0 and 1 as one SSE2 packet summing the columns in order, row 2 by
    the scalar tail's pairwise sum ``r0 + (r1 + r2)`` (no fused multiply-adds)."""
    return (R[0] * x0 + R[3] * x1 + R[6] * x2,
            R[1] * x0 + R[4] * x1 + R[7] * x2,
            R[2] * x0 + (R[5] * x1 + R[8] * x2))


@cached_jit
def placed_points(placements, indices, offsets, x):
    """``x[l] = t + R offsets[l]`` with (R, t) the placement ``placements[indices[l]]`` (rows of
    :func:`record_rows`, rotation column-major first): pinocchio's ``M.act(offset)``, and the
    translation of its frame placement ``oMi * SE3(I, offset)`` (``updateFramePlacements``), the
    same operations bit for bit on this project's pinocchio build (:func:`rotate`)."""
    for leg in range(indices.shape[0]):
        M = placements[indices[leg]]
        r0, r1, r2 = rotate(M, offsets[leg, 0], offsets[leg, 1], offsets[leg, 2])
        x[leg, 0], x[leg, 1], x[leg, 2] = M[9] + r0, M[10] + r1, M[11] + r2
