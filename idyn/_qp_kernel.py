"""The arithmetic around a QP backend call in :func:`idyn.qp.solve_built`, compiled with numba.

A control step solves one or two QPs of 15-30 variables; around each backend call the adapter
symmetrises ``H``, checks the answer against every constraint and evaluates the objective: about
twenty small numpy calls, each 1-3 us in a control loop (measured: ``idyn bench controllers``),
for arithmetic of a few microseconds.  These loops compute the same quantities; compilation is
cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from .jit import cached_jit as _jit


@_jit
def symmetrized(H, out):
    """``out = (H + H^T) / 2``; returns ``max(max_i |H_ii|, 1)`` (the scale of the ridge
    schedule).  Into an array the caller allocates: numba boxes a returned array through a
    Python-level lookup that costs more than the allocation."""
    n = H.shape[0]
    scale = 1.0
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.5 * (H[i, j] + H[j, i])
        scale = max(scale, abs(out[i, i]))
    return scale


@_jit
def _row_ok(A, b, x, i, slack, tol, scale):
    """Row ``i`` is within ``tol`` of its constraint relative to ``scale (1 + max_j |a_ij|) + |b_i|``."""
    amax = 0.0
    for j in range(A.shape[1]):
        amax = max(amax, abs(A[i, j]))
    return slack >= -tol * (scale * (1.0 + amax) + abs(b[i]))


@_jit
def feasible(x, Ae, be, Ai, bi, tol):
    """Every equality row ``|a x - b|`` and inequality row ``b - a x`` below ``tol`` times
    ``scale (1 + max_j |a_ij|) + |b_i|``, ``scale = 1 + max|x|``; False for a non-finite ``x``.
    A row within ``tol * scale`` needs no row maximum (the bound is at least ``scale``)."""
    xmax = 0.0
    for j in range(x.shape[0]):
        if not np.isfinite(x[j]):
            return False
        xmax = max(xmax, abs(x[j]))
    scale = 1.0 + xmax
    for i in range(Ae.shape[0]):
        s = 0.0
        for j in range(x.shape[0]):
            s += Ae[i, j] * x[j]
        miss = -abs(s - be[i])
        if miss < -tol * scale and not _row_ok(Ae, be, x, i, miss, tol, scale):
            return False
    for i in range(Ai.shape[0]):
        s = 0.0
        for j in range(x.shape[0]):
            s += Ai[i, j] * x[j]
        slack = s - bi[i]
        if slack < -tol * scale and not _row_ok(Ai, bi, x, i, slack, tol, scale):
            return False
    return True


@_jit
def objective(H, c, x):
    """``1/2 x^T H x + c^T x``."""
    n = x.shape[0]
    total = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += H[i, j] * x[j]
        total += x[i] * (0.5 * s + c[i])
    return total
