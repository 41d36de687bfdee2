"""The compiled layer of the PyBullet testbeds (:mod:`idyn.robots.pybullet.base`), in one module.

Cached on disk (:mod:`idyn.jit`).

**State** (:class:`idyn.robots.pybullet.base.StateReader`, :func:`read_rows`): PyBullet reports
the pose of the base's *inertial* frame (centre of mass c, unit quaternion q_c) with the world velocity of the centre of mass and the world angular velocity w; pinocchio's
free flyer is the link frame's pose and its velocity in base axes. With the link -> inertial
transform T_i = (R_i, t_i):

    T_link = T_com T_i^-1:   q = q_c (x) q_i^-1 (Hamilton product),   o = c + R_c (-R_i^T t_i),
    v = R^T (v_com - w x (c - o)),   w_b = R^T w    (R: the link frame's rotation).

One compiled call per control step scatters the joints, converts the free flyer and checks
that the result is finite.

**Force attribution** (:func:`idyn.robots.pybullet.base.attribute_forces`, :func:`attribute_rows`):
every control step sums PyBullet's contact points into the forces on the testbed's contacts:
per point a body-pair test against every contact, a distance and a three-term force, then a
rotation per contact into its frame.  In Python that is a few hundred interpreted operations
for well under a microsecond of arithmetic (about 15 us for the four feet of a trot, ~40 us
inside the loop, measured with ``idyn bench-loop`` before it was compiled).
"""
from __future__ import annotations

import math

import numpy as np

from idyn.jit import cached_jit


# ---------------------------------------------------------------------- State


#: raw free-flyer numbers after the joints: position (3), quaternion x y z w (4), world COM
#: velocity (3), world angular velocity (3)
FREE_FLYER_RAW = 13


@cached_jit
def read_rows(raw, index, inverse, qo, vo, out):
    """Scatter PyBullet's numbers ``raw`` into ``out`` = [q, v] and convert a free flyer; return
    whether every entry of ``out`` is finite.

    ``raw``: the na joint positions, the na joint velocities (pinocchio's actuated order), then,
    if ``raw`` is longer, one free flyer's :data:`FREE_FLYER_RAW` numbers. ``index``: the 2 na
    positions in ``out`` of the joint positions and velocities. ``inverse``: T_i^-1 as
    (translation, quaternion x y z w). The base pose goes to ``out[qo:qo + 7]`` (x y z, qx qy qz
    qw, the quaternion with qw >= 0), its velocity (linear, angular; base axes) to
    ``out[vo:vo + 6]`` (module docstring)."""
    na = index.shape[0] // 2
    for k in range(2 * na):
        out[index[k]] = raw[k]
    if raw.shape[0] > 2 * na:
        b = 2 * na
        cx, cy, cz, cw = raw[b + 3], raw[b + 4], raw[b + 5], raw[b + 6]
        ix, iy, iz, iw = inverse[3], inverse[4], inverse[5], inverse[6]
        # the link's quaternion q_c (x) q_i^-1, normalised, sign chosen with w >= 0
        x = cw * ix + iw * cx + (cy * iz - cz * iy)
        y = cw * iy + iw * cy + (cz * ix - cx * iz)
        z = cw * iz + iw * cz + (cx * iy - cy * ix)
        w = cw * iw - (cx * ix + cy * iy + cz * iz)
        scale = 1.0 / math.sqrt(x * x + y * y + z * z + w * w)
        if w < 0.0:
            scale = -scale
        x, y, z, w = x * scale, y * scale, z * scale, w * scale
        Rc = _rotation(cx, cy, cz, cw)
        R = _rotation(x, y, z, w)
        d = np.empty(3)                  # c - o = -R_c t', t' the translation of T_i^-1
        for i in range(3):
            d[i] = -(Rc[i, 0] * inverse[0] + Rc[i, 1] * inverse[1] + Rc[i, 2] * inverse[2])
            out[qo + i] = raw[b + i] - d[i]
        out[qo + 3], out[qo + 4], out[qo + 5], out[qo + 6] = x, y, z, w
        a0, a1, a2 = raw[b + 10], raw[b + 11], raw[b + 12]
        v0 = raw[b + 7] - (a1 * d[2] - a2 * d[1])         # v_com - w x (c - o)
        v1 = raw[b + 8] - (a2 * d[0] - a0 * d[2])
        v2 = raw[b + 9] - (a0 * d[1] - a1 * d[0])
        for j in range(3):                                   # R^T v, R^T w
            out[vo + j] = R[0, j] * v0 + R[1, j] * v1 + R[2, j] * v2
            out[vo + 3 + j] = R[0, j] * a0 + R[1, j] * a1 + R[2, j] * a2
    for i in range(out.shape[0]):
        if not np.isfinite(out[i]):
            return False
    return True


@cached_jit
def _rotation(x, y, z, w):
    """The rotation matrix of the unit quaternion (x, y, z, w)."""
    R = np.empty((3, 3))
    R[0, 0], R[0, 1], R[0, 2] = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)
    R[1, 0], R[1, 1], R[1, 2] = 2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)
    R[2, 0], R[2, 1], R[2, 2] = 2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)
    return R


# ---------------------------------------------------------------------- Force attribution


#: a contact pair's "any link of the body" (:class:`idyn.robots.pybullet.base.BodyLink` with link
#: None); PyBullet's link indices are -1 (the base) and up
ANY_LINK = -2


@cached_jit
def attribute_rows(points_b, pairs, points, frames, radius, out):
    """``out`` (m, 3) = the forces [normal, s, t] on body A of m contacts from PyBullet's contact
    points ``points_b`` (P, 19 columns: body A, link A, body B, link B, point on B (3), normal
    (3), normal force, lateral direction 1 (3), its force, lateral direction 2 (3), its force).

    Contact i is the PyBullet pair ``pairs[i]`` = (body A, link A, body B, link B; link
    :data:`ANY_LINK` matches every link) at ``points[i]`` with frame ``frames[i]`` (rows n, s, t).
    A point's force on its body A, ``f_n n + f_1 d_1 + f_2 d_2``, goes to the nearest contact of
    its pair (either order; negated when PyBullet's A is the contact's B) within ``radius``
    (the last of equally near ones), summed in PyBullet's order.  The world force F is then
    rotated into the frame (``out[i] = frames[i] F``)."""
    m = pairs.shape[0]
    world = np.zeros((m, 3))
    for p in range(points_b.shape[0]):
        row = points_b[p]
        body_a, link_a, body_b, link_b = int(row[0]), int(row[1]), int(row[2]), int(row[3])
        best, best_d, best_sign = -1, radius, 1.0
        for i in range(m):
            want_a, want_link_a, want_b, want_link_b = pairs[i, 0], pairs[i, 1], pairs[i, 2], pairs[i, 3]
            a_is_a = body_a == want_a and (want_link_a == ANY_LINK or link_a == want_link_a)
            b_is_b = body_b == want_b and (want_link_b == ANY_LINK or link_b == want_link_b)
            b_is_a = body_b == want_a and (want_link_a == ANY_LINK or link_b == want_link_a)
            a_is_b = body_a == want_b and (want_link_b == ANY_LINK or link_a == want_link_b)
            if a_is_a and b_is_b:
                sign = 1.0
            elif b_is_a and a_is_b:
                sign = -1.0
            else:
                continue
            d = math.sqrt((points[i, 0] - row[4]) ** 2 + (points[i, 1] - row[5]) ** 2
                          + (points[i, 2] - row[6]) ** 2)
            if d <= best_d:
                best, best_d, best_sign = i, d, sign
        if best >= 0:
            for k in range(3):
                force = row[10] * row[7 + k] + row[14] * row[11 + k] + row[18] * row[15 + k]
                world[best, k] += best_sign * force
    for i in range(m):
        for r in range(3):
            out[i, r] = frames[i, r, 0] * world[i, 0] + frames[i, r, 1] * world[i, 1] + frames[i, r, 2] * world[i, 2]
