"""The arithmetic around quadprog's call in :func:`idyn.qp.solve_built`, compiled: the rank
decision on the equality rows, preparing the Hessian (symmetrised, its ridge scale and
positive-definiteness test) and accepting an answer (feasibility check and objective).  As numpy calls these were about fifteen calls per QP, 1-3 us
each in a control loop, around a solve of ~15 us.  Flat loops; cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from ._lapack_kernel import pivoted_qr
from .jit import cached_jit


@cached_jit
def prepare(H, pd_tol, Hs):
    """``Hs = (H + H^T) / 2`` (output); returns ``(scale, definite)``: ``max(max_i |Hs_ii|, 1)``
    (the scale of the ridge schedule) and whether quadprog would be accurate on ``Hs``: its
    Cholesky factorisation exists and every squared pivot exceeds ``pd_tol`` times the largest
    (a semi-definite ``H`` often passes a plain Cholesky by rounding, and quadprog then returns a
    feasible but visibly suboptimal point).  NaN anywhere: not definite."""
    n = H.shape[0]
    scale = 1.0
    for i in range(n):
        for j in range(n):
            Hs[i, j] = 0.5 * (H[i, j] + H[j, i])
        scale = max(scale, abs(Hs[i, i]))
    L = np.zeros((n, n))
    dmin, dmax = np.inf, 0.0
    for j in range(n):
        s = Hs[j, j]
        for t in range(j):
            s -= L[j, t] * L[j, t]
        if not s > 0.0:
            return scale, False
        d = np.sqrt(s)
        L[j, j] = d
        dmin, dmax = min(dmin, s), max(dmax, s)
        for i in range(j + 1, n):
            s = Hs[i, j]
            for t in range(j):
                s -= L[i, t] * L[j, t]
            L[i, j] = s / d
    return scale, dmin > pd_tol * max(dmax, 1e-300)


@cached_jit
def accepted(H, c, x, Ae, be, Ai, bi, tol):
    """``1/2 x^T H x + c^T x`` if ``x`` is finite and every equality row ``|a x - b|`` and
    inequality row ``b - a x`` is below ``tol`` times ``(1 + max|x|)(1 + max_j |a_ij|) + |b_i|``;
    NaN otherwise."""
    n = x.shape[0]
    xmax = 0.0
    for j in range(n):
        if not np.isfinite(x[j]):
            return np.nan
        xmax = max(xmax, abs(x[j]))
    scale = 1.0 + xmax
    for i in range(Ae.shape[0] + Ai.shape[0]):
        s, amax = 0.0, 0.0
        for j in range(n):
            aij = Ae[i, j] if i < Ae.shape[0] else Ai[i - Ae.shape[0], j]
            s += aij * x[j]
            amax = max(amax, abs(aij))
        b = be[i] if i < Ae.shape[0] else bi[i - Ae.shape[0]]
        slack = -abs(s - b) if i < Ae.shape[0] else s - b
        if not slack >= -tol * (scale * (1.0 + amax) + abs(b)):
            return np.nan
    total = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += H[i, j] * x[j]
        total += x[i] * (0.5 * s + c[i])
    return total



@cached_jit
def independent_rows(A, tol, keep):
    """The rank ``r`` of the rows of ``A`` (p x n, p >= 1) by a column-pivoted QR of ``A^T``
    (LAPACK ``dgeqp3``, :func:`idyn._lapack_kernel.pivoted_qr`): ``|R_jj| > tol max_j |R_jj|``;
    ``keep[:r]`` (output) the pivot order's first ``r`` rows, ascending.  -1 when LAPACK
    reports an illegal argument."""
    qr, piv, _, info = pivoted_qr(A.T)
    if info < 0:
        return -1
    d = min(A.shape[0], A.shape[1])
    largest = 1e-300
    for j in range(d):
        largest = max(largest, abs(qr[j, j]))
    rank = 0
    for j in range(d):
        if abs(qr[j, j]) > tol * largest:
            rank += 1
    for j in range(rank):
        keep[j] = piv[j]
    keep[:rank].sort()
    return rank
