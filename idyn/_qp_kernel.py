"""The arithmetic around a QP backend call in :func:`idyn.qp.solve_built`, compiled with numba.

A control step solves one or two QPs of 15-30 variables; around each backend call the adapter
symmetrises ``H``, checks the answer against every constraint and evaluates the objective: about
twenty small numpy calls, each 1-3 us in a control loop (measured: ``idyn bench controllers``),
for arithmetic of a few microseconds.  These loops compute the same quantities; compilation is
cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import ctypes

import numpy as np
import quadprog
from numba import types

from ._lapack_kernel import cholesky_lower
from .jit import cached_jit as _jit
from .jit import external

_P, _I32 = types.voidptr, types.int32
#: quadprog's Goldfarb-Idnani solver, the routine ``quadprog.solve_qp`` wraps (same arguments)
_qpgen2 = external("idyn_quadprog_qpgen2", ctypes.cast(ctypes.CDLL(quadprog.__file__).qpgen2_, ctypes.c_void_p).value,
                   types.int32(_P, _P, _I32, _P, _P, _P, _P, _P, _I32, _I32, _P, _P, _P, _P, _I32))

#: :func:`quadprog_attempts`' codes (the statuses of :class:`idyn.qp.QPStatus`, and not tried)
SOLVED, INFEASIBLE, FAILED, NOT_TRIED = 0, 1, 2, 3


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


@_jit
def _python_max(a, b):
    """Python's ``max(a, b)``: ``b`` only if it compares greater (a NaN in ``a`` stays)."""
    return b if b > a else a


@_jit
def positive_definite(H, tol):
    """Whether quadprog would be accurate on ``H``: LAPACK's Cholesky factorisation (lower, on a
    Fortran-ordered copy, as ``scipy.linalg.lapack.dpotrf(H, lower=1)`` passes it) succeeds and
    its squared pivots ``d`` satisfy ``min(d) > tol * max(max(d), 1e-300)`` (Python's ``min`` and
    ``max``, the semantics of the former numpy form).  A semi-definite ``H`` often passes a plain
    Cholesky by rounding, so tiny pivots count as singular."""
    n = H.shape[0]
    F = np.empty((n, n)).T                  # Fortran order
    for i in range(n):
        for j in range(n):
            F[i, j] = H[i, j]
    if cholesky_lower(F) != 0:
        return False
    if n == 0:
        return 1.0 > tol * 1e-300
    dmin = dmax = F[0, 0] * F[0, 0]
    for i in range(1, n):
        d = F[i, i] * F[i, i]
        if d < dmin:
            dmin = d
        if d > dmax:
            dmax = d
    return dmin > tol * _python_max(dmax, 1e-300)


@_jit
def quadprog_solve(H, c, Ae, be, Ai, bi, x, iters):
    """``quadprog.solve_qp(H, -c, [Ae; Ai]^T, [be; bi], len(be))`` (or ``solve_qp(H, -c)``
    without rows) as that wrapper calls ``qpgen2_``: the same copies in Fortran order and
    zeroed work arrays, so the same ``x`` (output) bit for bit.  Returns qpgen2's code: 0
    solved, 1 inconsistent constraints, 2 ``H`` not positive definite; ``iters[0]``: its
    iteration count."""
    n, p = H.shape[0], Ae.shape[0]
    m = p + Ai.shape[0]
    rows = max(m, 1)                        # without rows: C = 0 (n x 1), b = -1
    G = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            G[j, i] = H[i, j]
    a = np.empty(n)
    for i in range(n):
        a[i] = -c[i]
        x[i] = 0.0
    C, b = np.zeros((rows, n)), np.full(rows, -1.0)    # C[r] is column r of the n x m matrix
    for r in range(m):
        for j in range(n):
            C[r, j] = Ae[r, j] if r < p else Ai[r - p, j]
        b[r] = be[r] if r < p else bi[r - p]
    lagr, crval = np.zeros(rows), np.zeros(1)
    iact, nact, it = np.zeros(rows, np.int32), np.zeros(1, np.int32), np.zeros(2, np.int32)
    k = min(n, rows)
    work = np.zeros(2 * n + 2 * rows + k * (k + 5) // 2)
    code = _qpgen2(G.ctypes, a.ctypes, n, x.ctypes, lagr.ctypes, crval.ctypes, C.ctypes, b.ctypes, rows,
                   p if m else 0, iact.ctypes, nact.ctypes, it.ctypes, work.ctypes, 0)
    iters[0] = it[0]
    return code


@_jit
def quadprog_attempts(H, c, Ae_kept, be_kept, Ai, bi, Ae, be, tol, try_quadprog, schedule, Hs, x, out):
    """The quadprog attempts of :func:`idyn.qp.solve_built`, compiled: ``Hs`` (output) the
    symmetrised ``H`` (:func:`symmetrized`), then, with ``try_quadprog``, quadprog on the kept
    equality rows and the inequality rows into ``x``, each answer checked by :func:`feasible`
    against every row: first on ``Hs`` itself if it is positive definite
    (:func:`positive_definite`, tolerance 1e-12), then on ``Hs + s scale I`` for ``s`` in
    ``schedule`` (empty: no ridge fallback), until one is accepted.  Returns :data:`SOLVED`,
    or the last attempt's :data:`INFEASIBLE` / :data:`FAILED`, or :data:`NOT_TRIED`;
    ``out = [ridge scale, iterations, objective (of Hs), ridge used, verdicts]`` with the
    iterations of the last attempt (0 unless quadprog returned an x) and ``verdicts`` bit 1 set
    when an attempt was INFEASIBLE, bit 2 when one FAILED."""
    scale = symmetrized(H, Hs)
    out[0], out[1], out[3], out[4] = scale, 0.0, 0.0, 0.0
    if not try_quadprog:
        return NOT_TRIED
    n = Hs.shape[0]
    code, verdicts = NOT_TRIED, 0
    Hr = np.empty((n, n))
    iters = np.zeros(1, np.int64)
    for attempt in range(-1, schedule.shape[0]):
        if attempt < 0:
            if not positive_definite(Hs, 1e-12):
                continue
            eps = 0.0
            Hr[:, :] = Hs
        else:
            eps = schedule[attempt] * scale
            Hr[:, :] = Hs
            for i in range(n):
                Hr[i, i] += eps
        out[1], out[3] = 0.0, eps
        code = quadprog_solve(Hr, c, Ae_kept, be_kept, Ai, bi, x, iters)
        if code == 0:
            out[1] = iters[0]
            code = SOLVED if feasible(x, Ae, be, Ai, bi, tol) else INFEASIBLE
        elif code != 1:
            code = FAILED
        if code == SOLVED:
            out[2] = objective(Hs, c, x)
            return SOLVED
        verdicts |= 1 if code == INFEASIBLE else 2
        out[4] = verdicts
    return code
