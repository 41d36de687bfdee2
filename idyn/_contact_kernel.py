"""The rows ``[N; S; T]`` of a list of contacts (:func:`idyn.contact.jacobians_at`), compiled.

Row ``d m + i`` is ``d_i^T (J_A(p_i) - J_B(p_i)) = d_i^T J_lin + (p_i x d_i)^T J_ang`` over the
supports of bodies ``A`` and ``B`` (paper App. B; :meth:`idyn.model.Workspace.directional_jacobian`),
for the directions ``d`` = normal, s, t of contact ``i``.  As numpy calls (stacking, two cross
products' worth of takes, two matrix products, the support masks) about fifteen calls, 1-3 us
each in a control loop, for a few microseconds of arithmetic (measured; ``idyn bench
controllers``).  Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from .jit import cached_jit


@cached_jit
def contact_rows(J, support, ja, jb, two_bodies, frames, points, rows):
    """``rows = [N; S; T]`` (3m x nv, output) from the world joint Jacobian ``J`` (6 x nv, [linear
    at the origin; angular]), the support masks of the joints ``ja`` (and ``jb`` when
    ``two_bodies``), the contact frames (m, 3, 3: rows n, s, t) and points (m, 3).  Into an
    array the caller allocates: numba boxes a returned array through a Python-level lookup that
    costs more than the allocation."""
    m, nv = ja.shape[0], J.shape[1]
    for i in range(m):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        for d in range(3):
            n0, n1, n2 = frames[i, d, 0], frames[i, d, 1], frames[i, d, 2]
            x0, x1, x2 = py * n2 - pz * n1, pz * n0 - px * n2, px * n1 - py * n0     # p x d
            r = d * m + i
            for j in range(nv):
                mask = support[ja[i], j] - support[jb[i], j] if two_bodies else support[ja[i], j]
                rows[r, j] = ((n0 * J[0, j] + n1 * J[1, j] + n2 * J[2, j])
                              + (x0 * J[3, j] + x1 * J[4, j] + x2 * J[5, j])) * mask


@cached_jit
def tangent_rows(normals, s, t):
    """The tangents of :func:`idyn.contact.tangent_frames` (its formula, operation for
    operation, so the same numbers) into ``s`` and ``t`` (m, 3), which the caller allocates.
    As numpy column expressions they are a dozen calls, ~14 us for the four feet of a control
    step; here one call."""
    for i in range(normals.shape[0]):
        nx, ny, c = normals[i, 0], normals[i, 1], normals[i, 2]
        if c < -1.0 + 1e-12:           # n = -z: the shortest arc is not unique; rotate about x
            s[i, 0], s[i, 1], s[i, 2] = 1.0, 0.0, 0.0
            t[i, 0], t[i, 1], t[i, 2] = 0.0, -1.0, 0.0
            continue
        k = 1.0 / (1.0 + c)
        kx = k * nx
        s[i, 0] = 1.0 - kx * nx
        s[i, 1] = t[i, 0] = -kx * ny
        s[i, 2] = -nx
        t[i, 1] = 1.0 - k * ny * ny
        t[i, 2] = -ny


@cached_jit
def framed_rows(rows, mu, frames, points):
    """Validate and frame m contacts given as ``rows`` (m, 7: point, normal of any non-zero
    length, gap) with friction ``mu`` (m,), in one call: ``frames`` (m, 3, 3) gets the rows n, s,
    t (n the unit normal, s and t from :func:`tangent_rows`), ``points`` (m, 3) the points.
    Returns 0, or ``4 i + code`` for the first bad row i with code 1 for a non-finite number, 2
    for a zero normal, 3 for a friction coefficient that is NaN or negative (the checks of
    :class:`idyn.ContactSet`).

    The normal's squared length is summed as ``(n0^2 + n2^2) + n1^2``: the pairing numpy's
    ``einsum("ij,ij->i")`` uses for rows of three (two-wide vectors), so these are the unit
    normals of :class:`idyn.ContactSet` to the bit."""
    m = rows.shape[0]
    for i in range(m):
        for k in range(7):
            if not np.isfinite(rows[i, k]):
                return 4 * i + 1
        if np.isnan(mu[i]) or mu[i] < 0.0:
            return 4 * i + 3
        n0, n1, n2 = rows[i, 3], rows[i, 4], rows[i, 5]
        norm = np.sqrt((n0 * n0 + n2 * n2) + n1 * n1)
        if norm < 1e-12:
            return 4 * i + 2
        frames[i, 0, 0], frames[i, 0, 1], frames[i, 0, 2] = n0 / norm, n1 / norm, n2 / norm
        points[i, 0], points[i, 1], points[i, 2] = rows[i, 0], rows[i, 1], rows[i, 2]
    tangent_rows(frames[:, 0], frames[:, 1], frames[:, 2])
    return 0
