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
``B^-1`` is kept explicitly and updated by one rank-1 operation per pivot, so a pivot costs two
``O(n^2)`` loops and no factorisation; the loop is compiled (:mod:`idyn.lcp._lemke_kernel`).
Tolerances are relative: a pivot entry must exceed ``pivot_tol * max|column|`` *and* the
round-off bound of the dot product that computed it, ratio ties are detected relative to the
ratios' own scale, and the final answer is polished by one solve of the terminal complementary
basis and accepted only through :func:`idyn.lcp.lcp_residuals`.

Early exit.  ``z0`` is let leave when its ratio is within ``Z0_EXIT = 100`` tie widths of the
minimum (:mod:`idyn.lcp._lemke_kernel`): the exit is then taken even if round-off puts it a hair
above the minimum.  When the larger ratio is genuine, the rows whose ratios were smaller go
negative by up to ``1e-9 max|x_B|``, beyond the residual check's ``1e-9 max|q|`` when
``max|x_B| > max|q|``.  A box resting flat on four coplanar contacts does this (the friction
LCP of ``idyn.sim``'s ``ap-lcp``, ``tests/test_lcp_solvers.py``): its normal constants differ by
``2e-11`` (``5e-9`` relative), ``z0``'s ratio exceeded the minimum by 80 tie widths, and the exit
left ``w = -8e-12``, ``2.0e-9`` of ``max|q|`` (``max|x_B|`` was 3.3 times ``max|q|``), so only
``eps = 1e-4`` regularisation got an answer.  A cold path whose answer is rejected is therefore
followed again with the textbook rule (``z0`` leaves only on a tie, ``Z0_TIES``); on that
problem it ends three pivots later at a solution (residuals ``1e-15``).

Why the round-off bound.  Duplicated contacts make many columns of ``B^-1 M`` exactly zero in
degenerate rows (``x_r = 0``).  Computed, those zeros come out as ``+-1e-12``-sized noise; any
positive one ties at ratio 0 with the genuine pivots, and the lexicographic rule, dividing by
it, tends to pick it.  Pivoting on noise corrupts ``B^-1`` (``|B B^-1 - I|`` reaching ``1e3``)
and the path then cycles or stops on a false secondary ray: this is how plain Lemke failed the
48-contact mid-trot problems that only ``eps = 1e-4`` regularisation used to rescue.

Warm start.  ``warm_start`` (indices of ``z`` assumed basic, e.g. ``result.basis`` of the
previous control step) starts the path from that complementary basis ``B`` with covering vector
``d = B 1``.  If the basis already solves the problem no pivot is made.  The paper reports
(Sec. 5.3) that warm-starting Lemke's method from the previous solution "usually leads to
excessive pivoting"; our benchmark (``idyn bench lcp``) measures it.  A warm start that ends on a
secondary ray is retried cold, so it can cost time but never a solution.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lu_factor, lu_solve

from ..errors import InvalidInputError
from ..jit import cached_jit
from ._lemke_kernel import AT_START, MAX_PIVOTS, RAY, SINGULAR, SOLVED, Z0_EXIT, Z0_TIES, lemke_path
from .inputs import check_indices, check_lcp, check_options, default_max_pivots, finite_data
from .residuals import DEFAULT_TOL, exact_pass
from .result import LCPResult, LCPStatus

_EPS = np.finfo(float).eps
_STATUS = {SOLVED: LCPStatus.SOLVED, MAX_PIVOTS: LCPStatus.MAX_PIVOTS,
           RAY: LCPStatus.RAY_TERMINATION, SINGULAR: LCPStatus.NUMERICAL_FAILURE}


def lemke(M, q, *, warm_start=None, max_pivots: int | None = None, pivot_tol: float = 1e-12,
          tol: float = DEFAULT_TOL) -> LCPResult:
    """Solve the LCP ``w = M z + q, 0 <= z ⊥ w >= 0`` by Lemke's method (lexicographic).

    Args:
        M: (n, n) matrix; Lemke's method is guaranteed for copositive-plus matrices (PSD, the
            copositive friction LCP of paper eq. 64, P-matrices).
        q: (n,) vector.
        warm_start: optional indices (or boolean mask) of ``z`` variables to start basic.
        max_pivots: pivot limit (default :func:`idyn.lcp.inputs.default_max_pivots`:
            ``max(100, 50 n, 2^22 / n^2)``, enough for Murty's problems up to ``n = 14``);
            reaching it gives ``LCPStatus.MAX_PIVOTS``.
        pivot_tol: relative size below which a column entry is not a pivot candidate.
        tol: relative residual tolerance of the acceptance check.

    Returns:
        :class:`LCPResult`; ``basis`` holds the indices of basic ``z`` variables.
    """
    check_options(tol, max_pivots)
    if not (isinstance(pivot_tol, (int, float, np.integer, np.floating)) and 0 <= pivot_tol < 1):
        raise InvalidInputError(f"pivot_tol must be a number in [0, 1), got {pivot_tol!r}")
    M, q = check_lcp(M, q)
    return checked_lemke(M, q, warm_start=warm_start, max_pivots=max_pivots, pivot_tol=pivot_tol, tol=tol)


def checked_lemke(M: np.ndarray, q: np.ndarray, *, warm_start=None, max_pivots: int | None = None,
                  pivot_tol: float = 1e-12, tol: float = DEFAULT_TOL) -> LCPResult:
    """:func:`lemke` for ``(M, q)`` of consistent shapes built by the caller: no second shape
    check; non-finite data never reaches the compiled path (status ``NUMERICAL_FAILURE``,
    :func:`idyn.lcp.inputs.finite_data`)."""
    n = q.shape[0]
    if not finite_data(q, M):
        return LCPResult(np.zeros(n), np.array(q, dtype=float), LCPStatus.NUMERICAL_FAILURE, 0, 0.0,
                         np.empty(0, np.intp))
    warm = check_indices(warm_start, n, "warm_start") if warm_start is not None else None
    limit = default_max_pivots(n) if max_pivots is None else int(max_pivots)
    if warm is not None and warm.size:
        res = _solve(M, q, warm, limit, pivot_tol, tol)
        if res.status not in (LCPStatus.RAY_TERMINATION, LCPStatus.NUMERICAL_FAILURE):
            return res
        cold = _solve(M, q, None, limit, pivot_tol, tol)
        return _with_pivots(cold, cold.pivots + res.pivots)
    return _solve(M, q, None, limit, pivot_tol, tol)


@cached_jit
def cold_checked(M, q, pivot_tol, tol, z):
    """Lemke's path from the slack basis and its residual check, as one compiled call for a
    compiled caller that only needs an answer that passes (finite ``(M, q)``, checked by that
    caller): ``z`` (output) the clipped basic solution, ``w = M z + q`` checked by
    :func:`idyn.lcp.residuals.exact_pass`.  Returns ``(passed, pivots)``; when it does not pass
    the caller runs :func:`checked_lemke` (or :func:`idyn.lcp.regularized.regularized_checked`),
    which polishes, re-follows the path with the textbook exit rule, and reports the status."""
    n = q.shape[0]
    Binv, xb, d = np.empty((n, n)), np.empty(n), np.empty(n)
    basic, support = np.empty(n, np.int64), np.empty(n, np.intp)
    cold = n >= 0    # True as a runtime bool: a literal True would compile a second lemke_path
    code, pivots, _ = lemke_path(M, q, d, Binv, xb, basic, default_max_pivots(n), pivot_tol, cold, Z0_EXIT, z,
                                 support)
    if code == AT_START:
        z[:] = 0.0
        return True, 0
    if code != SOLVED:
        return False, pivots
    w = np.empty(n)
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += M[i, j] * z[j]
        w[i] = s + q[i]
    return exact_pass(M, q, z, w, tol), pivots


def _with_pivots(res: LCPResult, pivots: int) -> LCPResult:
    return LCPResult(res.z, res.w, res.status, pivots, res.regularization, res.basis)


def _at_start(q) -> LCPResult:
    """``q >= 0``: ``z = 0``, ``w = q`` solves without a pivot."""
    return LCPResult(np.zeros(q.shape[0]), q.copy(), LCPStatus.SOLVED, 0, 0.0, np.empty(0, np.intp))


def _finish(M, q, z, status, pivots, tol, basis) -> LCPResult:
    """The result at ``z >= 0`` (clipped by the caller) with support ``basis``: ``w = M z + q``
    and the residual check of a SOLVED status."""
    w = M @ z + q
    if status is LCPStatus.SOLVED and not exact_pass(M, q, z, w, tol):
        status = LCPStatus.NUMERICAL_FAILURE
    return LCPResult(z, w, status, pivots, 0.0, basis)


def _clipped_finish(M, q, z, status, pivots, tol) -> LCPResult:
    """:func:`_finish` for an unclipped ``z``."""
    z = np.maximum(z, 0.0)
    return _finish(M, q, z, status, pivots, tol, np.flatnonzero(z > 0.0))


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


def _solve(M, q, warm, limit, pivot_tol, tol, z0_exit=Z0_EXIT) -> LCPResult:
    """Lemke's path from ``warm`` (or cold), its residual check, the polish of a rejected answer
    and, for a cold path still rejected, :func:`_ties_only`; ``z0_exit`` in tie widths."""
    n = q.shape[0]
    Binv, xb, d = np.empty((n, n)), np.empty(n), np.empty(n)   # the cold start fills them
    basic = np.empty(n, dtype=np.int64)  # see idyn.lcp._lemke_kernel for the encoding
    cold = warm is None or not warm.size
    if not cold:
        if q.min() >= 0.0:
            return _at_start(q)
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
                res = _clipped_finish(M, q, z, LCPStatus.SOLVED, 0, tol)
                if res.solved:
                    return res
            Binv = np.ascontiguousarray(lu_solve(lu, np.eye(n), check_finite=False))
            basic[:] = np.arange(n)
            basic[warm] += n
            d = B.sum(axis=1)
        else:
            cold = True
    z, support = np.empty(n), np.empty(n, dtype=np.intp)
    code, pivots, count = lemke_path(M, q, d, Binv, xb, basic, limit, float(pivot_tol), cold, z0_exit, z,
                                     support)
    if code == AT_START:
        return _at_start(q)
    status = _STATUS[code]
    res = _finish(M, q, z, status, pivots, tol, support[:count])
    if status is LCPStatus.SOLVED and not res.solved:
        zp = _polish(M, q, basic[(basic >= n) & (basic < 2 * n)] - n)
        if zp is not None:
            polished = _clipped_finish(M, q, zp, LCPStatus.SOLVED, pivots, tol)
            if polished.solved:
                return polished
        if cold and z0_exit > Z0_TIES:
            return _ties_only(M, q, limit, pivot_tol, tol, res)
    return res


def _ties_only(M, q, limit, pivot_tol, tol, rejected: LCPResult) -> LCPResult:
    """The cold path again with ``z0`` leaving only on a minimum-ratio tie (the rule of Cottle,
    Pang & Stone 1992, Sec. 4.4, without the early exit that gave the ``rejected`` answer); its
    answer if it passes, else ``rejected``, with the pivots of both paths."""
    strict = _solve(M, q, None, limit, pivot_tol, tol, Z0_TIES)
    return _with_pivots(strict if strict.solved else rejected, rejected.pivots + strict.pivots)
