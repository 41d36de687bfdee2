"""Compiled evaluation of :class:`idyn.planners.spline.ClampedCubicSpline` (a swing foot's target).

The one evaluation of a swing spline, for the planner's compiled step and for Python callers.
Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

from idyn.jit import cached_jit


@cached_jit
def evaluate_into(knots, coef, ends, t, x, xd, xdd):
    """Position, velocity and acceleration at time ``t`` into ``x``, ``xd``, ``xdd``.

    Segment ``k`` (from ``knots[k]``) is ``sum_p coef[k, p] s^p`` (p = 0..3) with ``s = t -
    knots[k]``; before the first knot the curve continues from ``ends[0]`` at rate ``ends[1]``,
    after the last from ``ends[2]`` at rate ``ends[3]``, without acceleration."""
    first, last = knots[0], knots[-1]
    if t < first or t > last:
        e, t_end = (0, first) if t < first else (2, last)
        for j in range(x.shape[0]):
            x[j] = ends[e, j] + ends[e + 1, j] * (t - t_end)
            xd[j] = ends[e + 1, j]
            xdd[j] = 0.0
        return
    k = 0                                  # the segment: the last knot <= t (the last segment at t = last)
    while k < knots.shape[0] - 2 and knots[k + 1] <= t:
        k += 1
    s = t - knots[k]
    for j in range(x.shape[0]):
        a1, a2, a3 = coef[k, 1, j], coef[k, 2, j], coef[k, 3, j]
        x[j] = coef[k, 0, j] + s * (a1 + s * (a2 + s * a3))
        xd[j] = a1 + s * (2.0 * a2 + 3.0 * s * a3)
        xdd[j] = 2.0 * a2 + 6.0 * s * a3
