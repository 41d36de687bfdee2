"""The pivoting loop of :func:`idyn.lcp.lemke`, compiled with numba.

One pivot is a handful of ``O(n)`` and ``O(n^2)`` loops (entering column, ratio test, rank-1
update of ``B^-1``), compiled as one loop.

Storage: ``Binv`` is C-ordered, so ``B^-1 M_j`` and the rank-1 update walk rows contiguously;
``MT`` is ``M^T`` (row ``j`` is column ``j`` of ``M``).  ``basic[r]`` is the variable in row
``r``: ``i`` for ``w_i``, ``n + i`` for ``z_i``, ``2n`` for ``z0``.

Compilation takes a few seconds, so the machine code is cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from ..jit import cached_jit as _jit
from ..kernels import general_solve

SOLVED, MAX_PIVOTS, RAY, SINGULAR = 0, 1, 2, 3
#: Status of :func:`lemke_path` when ``q >= 0``: ``z = 0`` solves and no path is followed.
AT_START = 4
_EPS = np.finfo(np.float64).eps
#: z0 leaves when its ratio is within this many tie widths of the minimum: ending the path a
#: hair early perturbs the answer by about 1e-11 * Z0_EXIT relative, which the residual check
#: then accepts or rejects, whereas missing the exit can send the path onto a secondary ray.
#: That perturbation is ``1e-9 max|x_B|``, the size of the check's tolerance ``1e-9 max|q|``, so
#: an exit near the window's edge is rejected whenever ``max|x_B| > max|q|``.
Z0_EXIT = 100.0
#: The window of the textbook rule (z0 leaves only when it ties for the minimum ratio), which
#: :func:`idyn.lcp.lemke` follows when the answer of a :data:`Z0_EXIT` path is rejected.
Z0_TIES = 1.0
#: Ratios closer than ``TIE * max|x_B| / max|y|`` to the minimum count as ties.
TIE = 1e-11
#: A column entry is round-off, not a pivot candidate, unless it exceeds ``NOISE * n * eps``
#: times the sum of the magnitudes it was computed from (the forward error bound of a dot
#: product, Higham 2002, eq. 3.5).
NOISE = 8.0


#: ``B^-1`` is refactorised from the basis columns when ``B x_B = q`` or ``B y = column`` is
#: violated by more than this (relative): rank-1 updates through tiny pivots accumulate error.
REFACTOR = 1e-10
#: Reductions may be reordered (as BLAS does) so they vectorise; no other fast-math licence.
_REASSOC = {"reassoc", "contract"}


@_jit
def _tie_width(xb, ymax):
    return TIE * max(np.abs(xb).max(), 1e-300) / max(ymax, 1e-300)


@_jit
def _lex_min(rows, count, Binv, y):
    """Row among ``rows[:count]`` whose ``B^-1`` row over ``y`` is lexicographically smallest.

    ``rows`` is overwritten (the surviving rows are compacted to its front).
    """
    n = Binv.shape[1]
    for k in range(n):
        vmin = np.inf
        vabs = 0.0
        for t in range(count):
            v = Binv[rows[t], k] / y[rows[t]]
            vmin = min(vmin, v)
            vabs = max(vabs, abs(v))
        cut = vmin + TIE * max(vabs, 1e-300)
        kept = 0
        for t in range(count):
            if Binv[rows[t], k] / y[rows[t]] <= cut:
                rows[kept] = rows[t]
                kept += 1
        count = kept
        if count == 1:
            break
    return rows[0]


@_jit(fastmath=_REASSOC)
def _entering_column(Binv, MT, entering, n, y, noise):
    """``y = B^-1 [I, -M]_entering`` and the round-off floor ``noise`` of each entry."""
    if entering < n:
        for i in range(n):
            y[i] = Binv[i, entering]
            noise[i] = 0.0
        return
    col = MT[entering - n]
    scale = NOISE * n * _EPS
    for i in range(n):
        s = 0.0
        a = 0.0
        for j in range(n):
            p = Binv[i, j] * col[j]
            s += p
            a += abs(p)
        y[i] = -s
        noise[i] = scale * a


@_jit(fastmath=_REASSOC)
def _basis_times(MT, d, basic, x, out):
    """``out = B x`` and return ``|B| |x|`` (inf-norm) for the basis ``basic``."""
    n = x.shape[0]
    out[:] = 0.0
    scale = 0.0
    for r in range(n):
        v, xr = basic[r], x[r]
        if xr == 0.0:
            continue
        if v < n:
            out[v] += xr
            scale = max(scale, abs(xr))
        else:
            col = MT[v - n] if v < 2 * n else d
            sign = -1.0
            for i in range(n):
                out[i] += sign * col[i] * xr
            m = 0.0
            for i in range(n):
                m = max(m, abs(col[i]))
            scale = max(scale, m * abs(xr))
    return scale


@_jit
def _inaccurate(MT, d, basic, x, rhs, work):
    """True when ``B x = rhs`` is violated by more than :data:`REFACTOR` (relative)."""
    scale = _basis_times(MT, d, basic, x, work)
    err = 0.0
    for i in range(x.shape[0]):
        err = max(err, abs(work[i] - rhs[i]))
    return err > REFACTOR * (np.abs(rhs).max() + scale)


@_jit
def _refactor(MT, d, basic, q, Binv, xb):
    """Recompute ``B^-1`` and ``x_B = B^-1 q`` from the basis columns (LAPACK ``dgesv`` against
    the identity, :func:`idyn.kernels.general_solve`); False if the basis matrix is exactly
    singular (``B^-1`` is then undefined and ``x_B`` unchanged)."""
    n = xb.shape[0]
    B = np.zeros((n, n))
    for r in range(n):
        v = basic[r]
        if v < n:
            B[v, r] = 1.0
        else:
            col = MT[v - n] if v < 2 * n else d
            for i in range(n):
                B[i, r] = -col[i]
    for i in range(n):
        for j in range(n):
            Binv[i, j] = 1.0 if i == j else 0.0
    # Fortran views: B^T X = I with X = B^-T in column order, i.e. B^-1 in Binv's row order
    if general_solve(B.T, Binv.T, np.empty(n, np.int32)) != 0:
        return False
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += Binv[i, j] * q[j]
        xb[i] = s
    return True


@_jit
def _pivot(Binv, xb, y, r):
    """Make row ``r`` the pivot row for entering column ``y`` (basis space), in place."""
    n = xb.shape[0]
    yr = y[r]
    for j in range(n):
        Binv[r, j] /= yr
    xr = xb[r] / yr
    xb[r] = xr
    for i in range(n):
        if i == r or y[i] == 0.0:
            continue
        f = y[i]
        for j in range(n):
            Binv[i, j] -= f * Binv[r, j]
        xb[i] -= f * xr


@_jit
def lemke_path(M, q, d, Binv, xb, basic, limit, pivot_tol, cold, z0_exit, z, support):
    """Lemke's path for the LCP ``(q, M)`` and the basic solution where it ends, as one call.

    With ``cold`` the slack basis (``B = I``, ``x_B = q``, covering vector ``d = 1``) is first
    written into ``Binv``, ``xb``, ``d`` and ``basic`` (their contents are ignored); otherwise
    they hold the caller's complementary basis; ``d`` is the covering vector (the column of
    ``z0`` is ``-d``).  The path updates ``(Binv, xb, basic)`` in place; ``z0`` leaves within
    ``z0_exit`` tie widths of the minimum ratio (:data:`Z0_EXIT` or :data:`Z0_TIES`).  Every
    pivot checks that ``x_B`` and the entering column still solve their systems with the current
    basis and refactorises ``B^-1`` when they do not (:data:`REFACTOR`).  A secondary ray whose
    ``z0`` is already at zero (within ``z0_exit`` tie widths) ends at a complementary point and
    is reported :data:`SOLVED` for the residual check to judge.  :data:`SINGULAR`: the updated
    basis drifted and is singular when rebuilt (round-off pivots on a degenerate problem; the
    caller reports a numerical failure, never raises).
    ``z`` receives the basic ``z`` clipped at zero exactly as ``np.maximum(z, 0.0)`` does (NaN
    kept, ``-0.0`` made ``+0.0``) and ``support[:count]`` the indices of its positive entries.

    Returns ``(status, pivots, count)``: :data:`SOLVED`, :data:`MAX_PIVOTS`, :data:`RAY`,
    :data:`SINGULAR`, or :data:`AT_START` (nothing written) when ``q >= 0`` or ``n = 0``.  One
    kernel, not a loop called from a wrapper: numba re-optimises a callee inside every caller.
    """
    n = q.shape[0]
    if n == 0 or q.min() >= 0.0:
        return AT_START, 0, 0
    if cold:
        for i in range(n):
            for j in range(n):
                Binv[i, j] = 0.0
            Binv[i, i] = 1.0
            xb[i] = q[i]
            d[i] = 1.0
            basic[i] = i
    MT = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            MT[j, i] = M[i, j]
    # the path (see idyn.lcp.lemke for the method and its tolerances)
    z0 = 2 * n
    rows = np.empty(n, np.int64)
    y = np.empty(n)
    noise = np.zeros(n)
    work = np.empty(n)
    column = np.empty(n)
    # z0 enters with basis-space column -1 (covering vector d = B 1): the leaving row is the
    # lexicographic minimum of the rows of [x_B, B^-1].
    xmin = xb.min()
    width = _tie_width(xb, 1.0)
    # counters start at np.intp(0), not 0: numba would compile _lex_min a second time for the
    # literal 0 it meets first while typing the loops
    count = np.intp(0)
    for i in range(n):
        if xb[i] <= xmin + width:
            rows[count] = i
            count += 1
        y[i] = 1.0
    r = _lex_min(rows, count, Binv, y) if count > 1 else rows[0]
    y[:] = -1.0
    entering = z0
    z0_row = r  # z0 keeps this row until it leaves
    z0_tol = 1e-14 * max(-xmin, 1e-300)
    pivots = 0
    while True:
        leaving = basic[r]
        _pivot(Binv, xb, y, r)
        basic[r] = entering
        pivots += 1
        if leaving == z0 or xb[z0_row] <= z0_tol:
            code = SOLVED       # z0 left, or stays basic at zero (degenerate)
            break
        entering = leaving + n if leaving < n else leaving - n
        if pivots >= limit:
            code = MAX_PIVOTS
            break
        _entering_column(Binv, MT, entering, n, y, noise)
        if entering < n:
            column[:] = 0.0
            column[entering] = 1.0
        else:
            for i in range(n):
                column[i] = -MT[entering - n, i]
        if _inaccurate(MT, d, basic, xb, q, work) or _inaccurate(MT, d, basic, y, column, work):
            if not _refactor(MT, d, basic, q, Binv, xb):
                code = SINGULAR
                break
            _entering_column(Binv, MT, entering, n, y, noise)
        ymax = np.abs(y).max()
        floor = pivot_tol * ymax
        theta = np.inf
        count = np.intp(0)
        for i in range(n):
            if y[i] > floor and y[i] > noise[i]:
                rows[count] = i
                count += 1
                theta = min(theta, max(xb[i], 0.0) / y[i])
        if count == 0:
            code = RAY
            break
        width = _tie_width(xb, ymax)
        yz = y[z0_row]
        if yz > floor and yz > noise[z0_row] and xb[z0_row] / yz <= theta + z0_exit * width:
            r = z0_row  # z0 can (nearly) leave: end the path (the residual check judges)
            continue
        ties = np.intp(0)
        for t in range(count):
            i = rows[t]
            if max(xb[i], 0.0) / y[i] <= theta + width:
                rows[ties] = i
                ties += 1
        r = rows[0] if ties == 1 else _lex_min(rows, ties, Binv, y)
    if code == RAY and xb[z0_row] <= z0_exit * _tie_width(xb, 1.0):
        code = SOLVED
    for i in range(n):
        z[i] = 0.0
    basic_z(basic, xb, z)
    count = 0
    for i in range(n):
        if not (z[i] > 0.0 or np.isnan(z[i])):
            z[i] = 0.0          # as np.maximum: -0.0 becomes +0.0
        elif z[i] > 0.0:
            support[count] = i
            count += 1
    return code, pivots, count


@_jit
def basic_z(basic, xb, z):
    """``z`` (zero-filled) of the basis ``basic`` with values ``x_B`` (the basic ``z_i``)."""
    n = xb.shape[0]
    for r in range(n):
        v = basic[r]
        if n <= v < 2 * n:
            z[v - n] = xb[r]


@_jit
def lcp_scales(M, q):
    """``(max|q|, ||M||_inf)``, the scales of the residual check of an LCP ``(q, M)``."""
    n = q.shape[0]
    qmax, mnorm = 0.0, 0.0
    for i in range(n):
        qmax = max(qmax, abs(q[i]))
        s = 0.0
        for j in range(n):
            s += abs(M[i, j])
        mnorm = max(mnorm, s)
    return qmax, mnorm
