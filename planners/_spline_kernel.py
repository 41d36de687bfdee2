"""Compiled evaluation of :class:`planners.spline.ClampedCubicSpline` (a swing foot's target).

The one evaluation of a swing spline, for the planner's compiled step and for Python callers.
Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

from idyn.jit import cached_jit


@cached_jit
def evaluate_into(knots, c0, c1, c2, c3, start, start_rate, end, end_rate, t, x, xd, xdd):
    """Position, velocity and acceleration at time ``t`` into ``x``, ``xd``, ``xdd``.

    Segment ``k`` (from ``knots[k]``) is ``c0[k] + c1[k] s + c2[k] s^2 + c3[k] s^3`` with
    ``s = t - knots[k]``; before the first knot the curve continues from ``start`` at
    ``start_rate``, after the last from ``end`` at ``end_rate``, without acceleration."""
    first, last = knots[0], knots[-1]
    if t < first or t > last:
        point, rate, t_end = (start, start_rate, first) if t < first else (end, end_rate, last)
        for j in range(x.shape[0]):
            x[j] = point[j] + rate[j] * (t - t_end)
            xd[j] = rate[j]
            xdd[j] = 0.0
        return
    k = 0                                  # the segment: the last knot <= t (the last segment at t = last)
    while k < knots.shape[0] - 2 and knots[k + 1] <= t:
        k += 1
    s = t - knots[k]
    for j in range(x.shape[0]):
        a1, a2, a3 = c1[k, j], c2[k, j], c3[k, j]
        x[j] = c0[k, j] + s * (a1 + s * (a2 + s * a3))
        xd[j] = a1 + s * (2.0 * a2 + 3.0 * s * a3)
        xdd[j] = 2.0 * a2 + 6.0 * s * a3
