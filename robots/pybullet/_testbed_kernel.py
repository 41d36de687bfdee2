"""The PyBullet testbeds' per-step force attribution, compiled (:func:`idyn.robots.pybullet.base.attribute_forces`).

Every control step sums PyBullet's contact points into the forces on the testbed's contacts:
per point a body-pair test against every contact, a distance and a three-term force, then a
rotation per contact into its frame.  In Python that is a few hundred interpreted operations
(about 15 us for the four feet of a trot, ~40 us inside the loop, measured with ``idyn
bench-loop``) for well under a microsecond of arithmetic.  Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np

from idyn.jit import cached_jit

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
