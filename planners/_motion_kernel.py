"""Compiled foot motion of :class:`planners.quadruped_planner.QuadrupedPlanner` relative to the gait
pose.

Every control step the planner turns its world foot targets (positions, velocities,
accelerations) into targets relative to the gait pose, which is level and turns about the world
z axis with the planned yaw rate ``w``. As numpy expressions that took about 20 calls on (L, 3)
arrays (25 us for some 200 flops): four products with the rotation ``R``, and products with the
skew matrices ``W = [w e_z]x``, ``W' = [w' e_z]x`` and ``W W``.

Here the differences to rotate are stacked for one BLAS product with ``R`` (rows as the separate
products gave them: each element is the same fused sum), and the skew products, whose only
non-zero terms are single products (``x W^T = (-w x_1, w x_0, 0)``, ``W W = diag(-w^2, -w^2,
0)``), are written out, summed in the expression's order. The results are bit for bit those of
the numpy expressions.  Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

from idyn.jit import cached_jit


@cached_jit
def frame_offsets(feet, pd, pdd, origin, linear, acceleration, out):
    """Rows of ``out`` (3L, 3): ``feet - origin``, ``pd - linear``, ``pdd - acceleration`` (the world
    foot motion relative to the gait pose's origin, before rotating into its frame)."""
    L = feet.shape[0]
    for leg in range(L):
        for i in range(3):
            out[leg, i] = feet[leg, i] - origin[i]
            out[L + leg, i] = pd[leg, i] - linear[i]
            out[2 * L + leg, i] = pdd[leg, i] - acceleration[i]


@cached_jit
def rotating_frame_rates(rotated, wz, wz_rate, x_rel, xd, xdd):
    """From ``rotated`` = the rows of :func:`frame_offsets` times R (``R^T`` applied to each): the
    foot points ``x_rel``, velocities ``xd = R^T (pd - V) - W x_rel`` and accelerations
    ``xdd = R^T (pdd - A) - 2 W R^T (pd - V) - W' x_rel + W W x_rel`` in the frame turning at
    ``wz`` (rate of change ``wz_rate``) about z, into ``x_rel``, ``xd``, ``xdd`` (L, 3)."""
    L = x_rel.shape[0]
    ww = wz * wz
    for leg in range(L):
        x0, x1, x2 = rotated[leg, 0], rotated[leg, 1], rotated[leg, 2]
        v0, v1, v2 = rotated[L + leg, 0], rotated[L + leg, 1], rotated[L + leg, 2]
        x_rel[leg, 0], x_rel[leg, 1], x_rel[leg, 2] = x0, x1, x2
        xd[leg, 0] = v0 + x1 * wz
        xd[leg, 1] = v1 - x0 * wz
        xd[leg, 2] = v2
        xdd[leg, 0] = rotated[2 * L + leg, 0] + (2.0 * v1) * wz + x1 * wz_rate - x0 * ww
        xdd[leg, 1] = rotated[2 * L + leg, 1] - (2.0 * v0) * wz - x0 * wz_rate - x1 * ww
        xdd[leg, 2] = rotated[2 * L + leg, 2]
