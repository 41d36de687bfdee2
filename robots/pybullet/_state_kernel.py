"""The PyBullet testbeds' per-step state conversion, compiled (:class:`robots.pybullet.base.StateReader`).

Every control step turns PyBullet's joint states and base pose and velocity into pinocchio's
(q, v).  Through pinocchio's SE3 objects (``XYZQUATToSE3``, an SE3 product, ``SE3ToXYZQUAT``)
and numpy's small-vector operations that was about 11 us of interpreted overhead for under a
microsecond of arithmetic.  This kernel does the scatter of the joints and the free-flyer pose
in one call with the *operations of pinocchio's compiled Eigen code in their order* (found by
testing candidate orders against pinocchio 4.1's wheel), so the numbers are those of the
pinocchio chain to the bit (tested on random poses in ``tests/test_testbed_state_kernel.py``):

* quaternion -> rotation: Eigen's ``QuaternionBase::toRotationMatrix``;
* SE3 product ``R = R_1 R_2``, ``t = t_1 + R_1 t_2``: Eigen's lazy 3x3 product sums rows 0 and 1
  as ``(p0 + p1) + p2`` (its SSE packet path) and row 2 as ``p0 + (p1 + p2)`` (its unrolled
  scalar reduction);
* rotation -> quaternion: Eigen's ``quaternionbase_assign_impl`` with the trace summed as
  ``m00 + (m11 + m22)``.

The two rotations of the velocity into the base frame are ``np.dot`` calls as before: numba
compiles them to BLAS ``dgemv`` (scipy's OpenBLAS) on the same transposed-matrix layout as
numpy's ``RT.dot`` (numpy's OpenBLAS), whose summation order (fused multiply-adds on AVX2
machines) depends on the BLAS kernel of the machine; the test compares them bit for bit.
Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np

from idyn.jit import cached_jit

#: raw free-flyer numbers after the joints: position (3), quaternion x y z w (4), world COM
#: velocity (3), world angular velocity (3)
FREE_FLYER_RAW = 13


@cached_jit
def _row_sum(p0, p1, p2, row):
    """Eigen's sum of a 3x3 product's row ``row`` (see the module docstring)."""
    if row == 2:
        return p0 + (p1 + p2)
    return (p0 + p1) + p2


@cached_jit
def read_rows(raw, index, work, qo, vo, out):
    """Scatter PyBullet's numbers ``raw`` into ``out`` = [q, v] and convert a free flyer; return
    whether every entry of ``out`` is finite (:func:`idyn.validation.finite`'s check, in the
    same call: one compiled call fewer per control step).

    ``raw``: the na joint positions, the na joint velocities (pinocchio's actuated order), then,
    if ``raw`` is longer, one free flyer's :data:`FREE_FLYER_RAW` numbers (PyBullet's base: the
    pose of its inertial frame and the world velocity of its centre of mass).  ``index``: the
    2 na positions in ``out`` of the joint positions and velocities.  ``work``: see
    :func:`_free_flyer`."""
    na = index.shape[0] // 2
    for k in range(2 * na):
        out[index[k]] = raw[k]
    if raw.shape[0] > 2 * na:
        _free_flyer(raw, 2 * na, work, qo, vo, out)
    for i in range(out.shape[0]):
        if not np.isfinite(out[i]):
            return False
    return True


@cached_jit
def _free_flyer(raw, b, work, qo, vo, out):
    """The free flyer of :func:`read_rows` from ``raw[b:b + FREE_FLYER_RAW]``.

    ``work`` (24): rows of the inertial -> link transform (rotation 0:9 row-major, translation
    9:12), given; scratch: the transposed base rotation R^T (12:21, row-major) and the world
    velocity of the base origin ``v_com - w x (c - o)`` (21:24).  The base pose goes to
    ``out[qo:qo + 7]`` as pinocchio's XYZQUAT (x y z, qx qy qz qw), its velocity in the base
    frame ``R^T (v_com - w x (c - o))``, ``R^T w`` to ``out[vo:vo + 6]``."""
    x, y, z, w = raw[b + 3], raw[b + 4], raw[b + 5], raw[b + 6]
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    com = ((1.0 - (tyy + tzz), txy - twz, txz + twy),
           (txy + twz, 1.0 - (txx + tzz), tyz - twx),
           (txz - twy, tyz + twx, 1.0 - (txx + tyy)))
    m = work[12:21]                       # base rotation, stored transposed: m[3 j + i] = R[i, j]
    for i in range(3):
        c0, c1, c2 = com[i]
        for j in range(3):
            m[3 * j + i] = _row_sum(c0 * work[j], c1 * work[3 + j], c2 * work[6 + j], i)
        t = raw[b + i] + _row_sum(c0 * work[9], c1 * work[10], c2 * work[11], i)
        out[qo + i] = t
        work[21 + i] = raw[b + i] - t     # c - o, replaced by the origin's velocity below
    trace = m[0] + (m[4] + m[8])
    q = out[qo + 3:qo + 7]
    if trace > 0.0:
        s = math.sqrt(trace + 1.0)
        q[3] = 0.5 * s
        s = 0.5 / s
        q[0] = (m[5] - m[7]) * s
        q[1] = (m[6] - m[2]) * s
        q[2] = (m[1] - m[3]) * s
    else:
        i = 0
        if m[4] > m[0]:
            i = 1
        if m[8] > m[4 * i]:
            i = 2
        j = (i + 1) % 3
        k = (j + 1) % 3
        s = math.sqrt(((m[4 * i] - m[4 * j]) - m[4 * k]) + 1.0)
        q[i] = 0.5 * s
        s = 0.5 / s
        q[3] = (m[3 * j + k] - m[3 * k + j]) * s       # R[k, j] - R[j, k]
        q[j] = (m[3 * i + j] + m[3 * j + i]) * s       # R[j, i] + R[i, j]
        q[k] = (m[3 * i + k] + m[3 * k + i]) * s       # R[k, i] + R[i, k]
    d0, d1, d2 = work[21], work[22], work[23]
    a0, a1, a2 = raw[b + 10], raw[b + 11], raw[b + 12]
    work[21] = raw[b + 7] - (a1 * d2 - a2 * d1)
    work[22] = raw[b + 8] - (a2 * d0 - a0 * d2)
    work[23] = raw[b + 9] - (a0 * d1 - a1 * d0)
    rt = work[12:21].reshape((3, 3))
    np.dot(rt, work[21:24], out[vo:vo + 3])
    np.dot(rt, raw[b + 10:b + 13], out[vo + 3:vo + 6])
