"""Lemke's complementary pivoting method with a lexicographic ratio test (paper Sec. 5.2.1).

The Coulomb-friction inverse dynamics LCP (paper eq. 64) is copositive, and Lemke's method
solves it "if precautions are taken to prevent cycling through indices" (Sec. 5.2.1, citing
Anitescu & Potra 1997).  The authors' C++ has no such precaution; this one does: ties in the
minimum-ratio test are broken lexicographically on the rows of ``[x_B, B^-1]`` (Cottle, Pang &
Stone 1992, Sec. 4.4), which makes every basis on the path distinct, so the method cannot cycle
even on the highly degenerate problems that duplicated contact points produce.

Formulation.  With covering vector ``d > 0`` and artificial variable ``z0`` the method follows
the almost-complementary path of

    w - M z - d z0 = q,   w, z, z0 >= 0,   w_i z_i = 0,

starting at ``z0 = max(-q)`` and stopping when ``z0`` leaves the basis.  The basis inverse
``B^-1`` is kept explicitly and updated by one rank-1 (BLAS ``dger``) operation per pivot, so a
pivot costs two ``O(n^2)`` products and no factorisation.  Tolerances are relative: a pivot
entry must exceed ``pivot_tol * max|column|``, ratio ties are detected relative to the ratios'
own scale, and the final answer is polished by one solve of the terminal complementary basis
and accepted only through :func:`idyn.lcp.lcp_residuals`.

Warm start.  ``warm_start`` (indices of ``z`` assumed basic, e.g. ``result.basis`` of the
previous control step) starts the path from that complementary basis ``B`` with covering vector
``d = B 1``.  If the basis already solves the problem no pivot is made.  The paper reports
(Sec. 5.3) that warm-starting Lemke's method from the previous solution "usually leads to
excessive pivoting"; our benchmark (``idyn bench lcp``) measures it.  A warm start that ends on a
secondary ray is retried cold, so it can cost time but never a solution.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas, lu_factor, lu_solve

from .inputs import check_indices, check_lcp
from .residuals import DEFAULT_TOL, lcp_residuals
from .result import LCPResult, LCPStatus

_EPS = np.finfo(float).eps
#: z0 leaves when its ratio is within this many tie widths of the minimum: ending the path a
#: hair early perturbs the answer by about 1e-11 * Z0_EXIT relative, which the residual check
#: then accepts or rejects, whereas missing the exit can send the path onto a secondary ray.
Z0_EXIT = 100.0


def lemke(M, q, *, warm_start=None, max_pivots: int | None = None, pivot_tol: float = 1e-12,
          tol: float = DEFAULT_TOL) -> LCPResult:
    """Solve the LCP ``w = M z + q, 0 <= z ⊥ w >= 0`` by Lemke's method (lexicographic).

    Args:
        M: (n, n) matrix; Lemke's method is guaranteed for copositive-plus matrices (PSD, the
            copositive friction LCP of paper eq. 64, P-matrices).
        q: (n,) vector.
        warm_start: optional indices (or boolean mask) of ``z`` variables to start basic.
        max_pivots: pivot limit (default ``max(100, 50 n)``); reaching it gives
            ``LCPStatus.MAX_PIVOTS``.
        pivot_tol: relative size below which a column entry is not a pivot candidate.
        tol: relative residual tolerance of the acceptance check.

    Returns:
        :class:`LCPResult`; ``basis`` holds the indices of basic ``z`` variables.
    """
    M, q = check_lcp(M, q)
    n = q.shape[0]
    warm = check_indices(warm_start, n, "warm_start") if warm_start is not None else None
    limit = max(100, 50 * n) if max_pivots is None else int(max_pivots)
    if warm is not None and warm.size:
        res = _solve(M, q, warm, limit, pivot_tol, tol)
        if res.status is not LCPStatus.RAY_TERMINATION:
            return res
        cold = _solve(M, q, None, limit, pivot_tol, tol)
        return _with_pivots(cold, cold.pivots + res.pivots)
    return _solve(M, q, None, limit, pivot_tol, tol)


def _with_pivots(res: LCPResult, pivots: int) -> LCPResult:
    return LCPResult(res.z, res.w, res.status, pivots, res.regularization, res.basis)


def _finish(M, q, z, status, pivots, tol) -> LCPResult:
    z = np.maximum(z, 0.0)
    w = M @ z + q
    if status is LCPStatus.SOLVED and not lcp_residuals(M, q, z, w).ok(tol):
        status = LCPStatus.NUMERICAL_FAILURE
    return LCPResult(z, w, status, pivots, 0.0, np.flatnonzero(z > 0.0))


def _basis_matrix(M, z_basic: np.ndarray) -> np.ndarray:
    """Columns of ``[I, -M]`` for the complementary basis whose basic ``z`` are ``z_basic``."""
    n = M.shape[0]
    B = np.eye(n)
    B[:, z_basic] = -M[:, z_basic]
    return B


def _polish(M, q, z_basic: np.ndarray) -> np.ndarray | None:
    """Solve the complementary basis directly: ``M_aa z_a = -q_a`` (rest of ``z`` zero)."""
    n = q.shape[0]
    z = np.zeros(n)
    if z_basic.size:
        try:
            z[z_basic] = np.linalg.solve(M[np.ix_(z_basic, z_basic)], -q[z_basic])
        except np.linalg.LinAlgError:
            return None
    return z


def _solve(M, q, warm, limit, pivot_tol, tol) -> LCPResult:
    n = q.shape[0]
    if n == 0 or q.min() >= 0.0:
        return LCPResult(np.zeros(n), q.copy(), LCPStatus.SOLVED, 0, 0.0, np.empty(0, np.intp))
    # basic[r] is the variable in row r: i for w_i, n + i for z_i, 2n for z0.
    basic = np.arange(n)
    Binv = np.asfortranarray(np.eye(n))
    xb = q.copy()
    if warm is not None and warm.size:
        B = _basis_matrix(M, warm)
        try:
            lu = lu_factor(B, check_finite=False)
        except (ValueError, np.linalg.LinAlgError):
            lu = None
        if lu is not None and np.all(np.abs(np.diag(lu[0])) > _EPS * n * np.abs(B).max()):
            xb = lu_solve(lu, q, check_finite=False)
            if xb.min() >= 0.0:
                z = np.zeros(n)
                z[warm] = xb[warm]
                res = _finish(M, q, z, LCPStatus.SOLVED, 0, tol)
                if res.solved:
                    return res
            Binv = np.asfortranarray(lu_solve(lu, np.eye(n), check_finite=False))
            basic[warm] += n
        else:
            xb = q.copy()
    MT = np.ascontiguousarray(M.T)  # MT[j] is column j of M, contiguous
    z0 = 2 * n
    # z0 enters with basis-space column -1 (covering vector d = B 1): the leaving row is the
    # lexicographic minimum of the rows of [x_B, B^-1].
    rows = np.flatnonzero(xb <= xb.min() + _tie_width(xb, 1.0))
    r = _lex_min(rows, Binv, np.ones(n)) if rows.size > 1 else int(rows[0])
    y = -np.ones(n)
    entering = z0
    z0_row = r  # z0 keeps this row until it leaves
    z0_tol = 1e-14 * max(float(-xb.min()), 1e-300)
    pivots = 0
    while True:
        leaving = int(basic[r])
        _pivot(Binv, xb, y, r)
        basic[r] = entering
        pivots += 1
        if leaving == z0 or xb[z0_row] <= z0_tol:
            # z0 left, or stays basic at zero (degenerate): the basis is complementary.
            status = LCPStatus.SOLVED
            break
        entering = leaving + n if leaving < n else leaving - n
        if pivots >= limit:
            status = LCPStatus.MAX_PIVOTS
            break
        if entering < n:
            y = Binv[:, entering].copy()
        else:
            y = -(Binv @ MT[entering - n])
        ymax = np.abs(y).max()
        cand = np.flatnonzero(y > pivot_tol * ymax)
        if cand.size == 0:
            status = LCPStatus.RAY_TERMINATION
            break
        ratios = np.maximum(xb[cand], 0.0) / y[cand]
        theta = ratios.min()
        width = _tie_width(xb, ymax)
        if y[z0_row] > pivot_tol * ymax and xb[z0_row] / y[z0_row] <= theta + Z0_EXIT * width:
            r = z0_row  # z0 can (nearly) leave: end the path (the residual check judges)
        else:
            ties = cand[ratios <= theta + width]
            r = int(ties[0]) if ties.size == 1 else _lex_min(ties, Binv, y)
    if status is LCPStatus.RAY_TERMINATION and xb[z0_row] <= Z0_EXIT * 1e-11 * max(
            float(np.abs(xb).max()), 1e-300):
        status = LCPStatus.SOLVED  # the ray starts at a complementary point; let residuals judge
    z = np.zeros(n)
    zrows = np.flatnonzero((basic >= n) & (basic < z0))
    z[basic[zrows] - n] = xb[zrows]
    res = _finish(M, q, z, status, pivots, tol)
    if status is LCPStatus.SOLVED and not res.solved:
        zp = _polish(M, q, basic[zrows] - n)
        if zp is not None:
            polished = _finish(M, q, zp, LCPStatus.SOLVED, pivots, tol)
            if polished.solved:
                return polished
    return res


def _tie_width(xb: np.ndarray, ymax: float) -> float:
    """Ratios closer than this to the minimum count as ties (relative to their scale)."""
    return 1e-11 * max(np.abs(xb).max(), 1e-300) / max(ymax, 1e-300)


def _lex_min(rows: np.ndarray, Binv: np.ndarray, y: np.ndarray) -> int:
    """Row among ``rows`` whose ``B^-1`` row divided by ``y`` is lexicographically smallest."""
    yr = y[rows]
    n = Binv.shape[1]
    for k in range(n):
        vals = Binv[rows, k] / yr
        vmin = vals.min()
        keep = vals <= vmin + 1e-11 * max(np.abs(vals).max(), 1e-300)
        if not keep.all():
            rows, yr = rows[keep], yr[keep]
            if rows.size == 1:
                break
    return int(rows[0])


def _pivot(Binv: np.ndarray, xb: np.ndarray, y: np.ndarray, r: int) -> None:
    """Make row ``r`` the pivot row for entering column ``y`` (basis space), in place."""
    yr = y[r]
    row = Binv[r] / yr
    xr = xb[r] / yr
    y = y.copy()
    y[r] = 0.0
    blas.dger(-1.0, y, row, a=Binv, overwrite_a=1)
    Binv[r] = row
    xb -= y * xr
    xb[r] = xr
