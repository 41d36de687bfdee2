"""Compiled foot motion of :class:`planners.quadruped_planner.QuadrupedPlanner` relative to the gait
pose.

Every control step the planner turns its world foot targets (positions, velocities,
accelerations) into targets relative to the gait pose, which is level and turns about the world
z axis with the planned yaw rate: as numpy expressions about twenty calls on (L, 3) arrays and
3 x 3 matrices (products with the heading rotation and the skew matrices of the yaw rate and its
rate of change), 25-40 us for some 200 flops. This loop writes the rotation and the skew
products out (their zero terms dropped). Its results agree with the numpy expressions to
round-off, not bit for bit: OpenBLAS fuses each product's sum into FMAs in its own order
(measured on 3000 replayed trot steps: joint targets within 1.1e-15 relative).  Cached on disk
(:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

from idyn.jit import cached_jit


@cached_jit
def gait_frame_motion(feet, pd, pdd, origin, yaw, twist, twist_rate, vz, linear, x_rel, xd, xdd):
    """Foot targets relative to the gait pose, and the pose's own velocity.

    The gait pose has its origin at ``origin`` (world), heading ``yaw``, planned twist ``twist``
    = (vx, vy, wz) in its heading frame changing at ``twist_rate``, and vertical speed ``vz``.
    Its origin moves with world velocity V = R (vx, vy, 0) + (0, 0, vz) (written to ``linear``)
    and acceleration A = R (vx', vy', 0) + wz e_z x R (vx, vy, 0). For the world foot points
    ``feet`` with velocities ``pd`` and accelerations ``pdd`` (L, 3), in the frame R = R_z(yaw)
    turning with angular velocity w = wz e_z (W = [w]x):

        x_rel = R^T (p - b),    xd = R^T (pd - V) - W x_rel,
        xdd = R^T (pdd - A) - 2 W R^T (pd - V) - W' x_rel + W W x_rel,

    written into ``x_rel``, ``xd``, ``xdd``.
    """
    c, s = math.cos(yaw), math.sin(yaw)
    wz, wz_rate = twist[2], twist_rate[2]
    planar_x = c * twist[0] - s * twist[1]
    planar_y = s * twist[0] + c * twist[1]
    linear[0], linear[1], linear[2] = planar_x, planar_y, vz
    ax = c * twist_rate[0] - s * twist_rate[1] - wz * planar_y
    ay = s * twist_rate[0] + c * twist_rate[1] + wz * planar_x
    for leg in range(feet.shape[0]):
        dx, dy = feet[leg, 0] - origin[0], feet[leg, 1] - origin[1]
        x0, x1 = c * dx + s * dy, c * dy - s * dx            # R^T (p - b), planar part
        vx, vy = pd[leg, 0] - planar_x, pd[leg, 1] - planar_y
        v0, v1 = c * vx + s * vy, c * vy - s * vx            # R^T (pd - V)
        gx, gy = pdd[leg, 0] - ax, pdd[leg, 1] - ay
        x_rel[leg, 0], x_rel[leg, 1], x_rel[leg, 2] = x0, x1, feet[leg, 2] - origin[2]
        xd[leg, 0] = v0 + wz * x1                             # - W x_rel = (wz x1, -wz x0, 0)
        xd[leg, 1] = v1 - wz * x0
        xd[leg, 2] = pd[leg, 2] - vz
        xdd[leg, 0] = (c * gx + s * gy) + 2.0 * wz * v1 + wz_rate * x1 - wz * wz * x0
        xdd[leg, 1] = (c * gy - s * gx) - 2.0 * wz * v0 - wz_rate * x0 - wz * wz * x1
        xdd[leg, 2] = pdd[leg, 2]
