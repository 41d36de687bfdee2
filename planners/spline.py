"""Velocity-clamped cubic splines with prescribed end accelerations (paper Sec. 7.2.1).

The swing foot follows, per axis, a C2 piecewise cubic through a few control points, with the
velocity clamped at both ends and the acceleration prescribed there too (zero by default, so a
foot leaves and meets the ground without a jump in the desired acceleration). A C2 cubic spline
through n points has only n + 2 degrees of freedom, one short of n points plus four end
conditions; as in the authors' Pacer, two *virtual knots* whose values are free are inserted,
one inside the first and one inside the last interval, which makes the system square. Pacer puts them 1/1000 of the interval
from the ends, which concentrates the end-acceleration transition in a few microseconds; we put
them at the interval midpoints so the acceleration stays smooth at a 1 ms control rate.
"""
from __future__ import annotations

import numpy as np

from idyn import validation
from idyn.errors import InvalidInputError

from .kernels import evaluate_into


class ClampedCubicSpline:
    """A vector-valued C2 cubic spline x(t) through ``points`` at ``times``.

    Parameters
    ----------
    times:
        Strictly increasing knot times, at least two.
    points:
        Control points, shape (len(times), d); the spline passes through each at its time.
    v0, v1:
        Velocities (d) at the first and last time.
    a0, a1:
        Accelerations (d) at the first and last time (default zero).

    Outside [times[0], times[-1]] the spline continues at its clamped end velocity with zero
    acceleration (x(t1) + v1 (t - t1) after the end), which is what a foot that is about to
    touch down or has just lifted off is planned to do.
    """

    def __init__(self, times, points, v0, v1, a0=None, a1=None):
        times = validation.vector(times, None, "spline times")
        points = np.atleast_2d(np.asarray(points, dtype=float))
        if points.shape[0] != times.size or times.size < 2:
            raise InvalidInputError(
                f"spline needs >= 2 times and one point per time, got {times.size} times and "
                f"points of shape {points.shape}")
        if not np.isfinite(points).all():
            raise validation.NonFiniteError("spline points contain NaN or infinite values")
        if np.any(np.diff(times) <= 0):
            raise InvalidInputError(f"spline times must increase strictly, got {times}")
        d = points.shape[1]
        zero = np.zeros(d)
        v0, v1 = validation.vector(v0, d, "v0"), validation.vector(v1, d, "v1")
        a0 = zero if a0 is None else validation.vector(a0, d, "a0")
        a1 = zero if a1 is None else validation.vector(a1, d, "a1")

        # knots: the control times plus one virtual knot in the middle of each end interval
        # (at its thirds when there is a single interval)
        if times.size == 2:
            virtual = times[0] + np.array([1.0, 2.0]) / 3.0 * (times[1] - times[0])
        else:
            virtual = 0.5 * np.array([times[0] + times[1], times[-2] + times[-1]])
        knots = np.concatenate(([times[0], virtual[0]], times[1:-1], [virtual[1], times[-1]]))
        known = np.concatenate(([0], np.arange(2, knots.size - 2), [knots.size - 1]))
        y, m = self._solve(knots, known, points, v0, v1, a0, a1)
        h = np.diff(knots)[:, None]
        dy = np.diff(y, axis=0)
        self._knots = knots
        # per segment k: x(s) = coef[k, 0] + coef[k, 1] s + coef[k, 2] s^2 + coef[k, 3] s^3, s = t - knot
        self._coef = np.ascontiguousarray(np.stack(
            (y[:-1], m[:-1], (3.0 * dy / h - 2.0 * m[:-1] - m[1:]) / h, (m[:-1] + m[1:] - 2.0 * dy / h) / h ** 2),
            axis=1))
        # the start point and rate, the end point and rate
        self._ends = np.array([y[0], v0, y[-1], v1])
        for a in (self._knots, self._coef, self._ends):
            a.setflags(write=False)

    @staticmethod
    def _solve(knots, known, points, v0, v1, a0, a1):
        """Knot values y and slopes m (Hermite form) from the interpolation, C2 and end
        conditions: one dense (2K x 2K) solve with d right-hand sides, K = number of knots."""
        K, d = knots.size, points.shape[1]
        h = np.diff(knots)
        A = np.zeros((2 * K, 2 * K))
        b = np.zeros((2 * K, d))
        Y, M = 0, K      # column offsets of the y and m unknowns
        row = 0
        for k, p in zip(known, points):          # interpolation
            A[row, Y + k] = 1.0
            b[row] = p
            row += 1
        for k, v in ((0, v0), (K - 1, v1)):      # clamped end velocities
            A[row, M + k] = 1.0
            b[row] = v
            row += 1

        def acc_start(k):   # coefficients of the acceleration at the start of segment k
            return {Y + k: -6 / h[k] ** 2, Y + k + 1: 6 / h[k] ** 2, M + k: -4 / h[k], M + k + 1: -2 / h[k]}

        def acc_end(k):     # ... and at its end
            return {Y + k: 6 / h[k] ** 2, Y + k + 1: -6 / h[k] ** 2, M + k: 2 / h[k], M + k + 1: 4 / h[k]}

        for k in range(1, K - 1):                # C2 continuity at interior knots
            for col, val in acc_end(k - 1).items():
                A[row, col] += val
            for col, val in acc_start(k).items():
                A[row, col] -= val
            row += 1
        for coefs, a in ((acc_start(0), a0), (acc_end(K - 2), a1)):  # end accelerations
            for col, val in coefs.items():
                A[row, col] = val
            b[row] = a
            row += 1
        sol = np.linalg.solve(A, b)
        return sol[:K], sol[K:]

    @property
    def t0(self) -> float:
        return float(self._knots[0])

    @property
    def t1(self) -> float:
        return float(self._knots[-1])

    @property
    def end_point(self) -> np.ndarray:
        """The last control point (where the curve ends)."""
        return self._ends[2].copy()

    @property
    def end_height(self) -> float:
        """The last control point's last coordinate (a swing foot's landing height)."""
        return float(self._ends[2, -1])

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position, velocity and acceleration at time ``t``."""
        d = self._ends.shape[1]
        x, xd, xdd = np.empty(d), np.empty(d), np.empty(d)
        self.evaluate_into(t, x, xd, xdd)
        return x, xd, xdd

    def pieces(self) -> tuple[np.ndarray, ...]:
        """The read-only arrays of the curve, in the argument order of
        :func:`idyn.planners.kernels.evaluate_into`: knots (K), the per-segment coefficients
        (K - 1, 4, d: of s^0..s^3), and the start point and rate and end point and rate (4, d)."""
        return self._knots, self._coef, self._ends

    def evaluate_into(self, t: float, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> None:
        """:meth:`__call__` written into the float arrays ``x``, ``xd``, ``xdd`` (d each; e.g. rows
        of the caller's arrays), without allocating."""
        evaluate_into(*self.pieces(), float(t), x, xd, xdd)
