"""Compiled per-leg arithmetic of :class:`planners.leg_kinematics.LegKinematics`.

The planner evaluates the leg Jacobians and their inverses one to three times per 1 ms control
step. As numpy calls on (L, 3, n) arrays (an einsum with the Levi-Civita symbol, transposes, a
stacked SVD) they cost 20-60 us per evaluation for a few hundred flops (measured on the trot's
recorded states, ``idyn bench-loop``); these loops do the same arithmetic in the same order, so
the results are bit-for-bit those of the numpy expressions they replace.  Cached on disk
(:mod:`idyn.jit`).
"""
from __future__ import annotations

from idyn.jit import cached_jit


@cached_jit
def leg_jacobians(Jw, leg_v, x, out):
    """``out[l] = J_lin + omega x x_l`` (3 x n) for each leg ``l``: the base-axes Jacobian of foot
    point ``x[l]`` from the world joint Jacobian ``Jw`` (6 x nv, [linear at the origin;
    angular]) restricted to the leg's columns ``leg_v[l]`` (the velocity of a point is
    ``v_O + omega x p``). Into ``out`` (L, 3, n), which the caller allocates."""
    for leg in range(leg_v.shape[0]):
        x0, x1, x2 = x[leg, 0], x[leg, 1], x[leg, 2]
        for k in range(leg_v.shape[1]):
            c = leg_v[leg, k]
            w0, w1, w2 = Jw[3, c], Jw[4, c], Jw[5, c]
            out[leg, 0, k] = Jw[0, c] + (w1 * x2 - w2 * x1)
            out[leg, 1, k] = Jw[1, c] + (w2 * x0 - w0 * x2)
            out[leg, 2, k] = Jw[2, c] + (w0 * x1 - w1 * x0)


@cached_jit
def surely_regular(J, threshold, out):
    """``out[l]`` True when the 3 x 3 leg Jacobian ``J[l]`` certainly has its smallest singular
    value above ``threshold``, from ``sigma_min >= |det J| / ||J||_F^2`` (``|det J| = s1 s2 s3 <=
    s1^2 sigma_min`` and ``s1 <= ||J||_F``), with a 1e-6 relative margin for round-off. False
    means "not certain": the caller decides with the singular values themselves."""
    for leg in range(J.shape[0]):
        a = J[leg]
        det = (a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1])
               - a[0, 1] * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
               + a[0, 2] * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]))
        frob = 0.0
        for i in range(3):
            for j in range(3):
                frob += a[i, j] * a[i, j]
        out[leg] = abs(det) > threshold * (1.0 + 1e-6) * frob
