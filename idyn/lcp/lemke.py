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
secondary ray is retried cold, so it can cost time but never a solution.  A control loop whose
previous basis usually still solves the next step starts from it with :func:`warm_lemke` (one
``b x b`` factorisation sets the path up, no pivot when the basis still solves) or checks only
the previous pattern (:func:`basis_checked`, a compiled least-norm solve), and follows the cold path when
that fails, so Lemke's robustness on degenerate problems is kept.
"""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
from scipy.linalg import LinAlgWarning, lu_factor, lu_solve

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


def warm_lemke(M: np.ndarray, q: np.ndarray, basis: np.ndarray, *, pivot_tol: float = 1e-12,
               tol: float = DEFAULT_TOL) -> LCPResult:
    """Lemke's path from the complementary basis whose basic ``z`` are ``basis`` (non-empty; a
    control loop's previous ``LCPResult.basic``) for the finite LCP ``(q, M)`` a caller built,
    with no cold retry: a singular basis, a secondary ray or a rejected answer is reported in the
    status, and the caller starts cold (:func:`idyn.lcp.regularized.regularized_checked`).  When
    the basis still solves, no pivot is made; one ``b x b`` factorisation sets the path up."""
    return _solve(M, q, np.asarray(basis, dtype=np.intp), default_max_pivots(q.shape[0]), pivot_tol, tol,
                  singular_cold=False)


@cached_jit
def basis_checked(M, q, basis, tol, z):
    """A solution of the finite LCP ``(q, M)`` (checked by the caller) with the complementarity
    pattern ``basis`` (non-empty ``intp`` indices: ``w_b = 0``, the other ``z`` zero): ``z``
    (output) the least-norm ``z_b`` of ``M_bb z_b = -q_b``, clipped to ``z >= 0``; returns whether
    it passes the residual check :func:`idyn.lcp.residuals.exact_pass` (else the caller starts
    Lemke's path), as one compiled call.

    A warm start without pivots: a control loop's previous pattern (its support, or Lemke's
    terminal basis ``LCPResult.basic``) often still solves.  Least norm, not ``M_bb^-1``: an
    indeterminate contact problem (more loaded impulses than the base has motions, Stage I of
    :mod:`idyn.controllers.dissipation`) makes the support's ``M_bb`` singular, and the system is
    then consistent with a face of solutions, any point of which the residual check accepts."""
    b = basis.shape[0]
    Mbb, qb = np.empty((b, b)), np.empty(b)
    for i in range(b):
        qb[i] = -q[basis[i]]
        for j in range(b):
            Mbb[i, j] = M[basis[i], basis[j]]
    zb = np.linalg.lstsq(Mbb, qb, rcond=b * 2.220446049250313e-16)[0]
    z[:] = 0.0
    for i in range(b):
        if not np.isfinite(zb[i]):
            return False
        if zb[i] > 0.0:
            z[basis[i]] = zb[i]
    return exact_pass(M, q, z, np.dot(M, z) + q, tol)


def warm_checked(M: np.ndarray, q: np.ndarray, basis: np.ndarray, tol: float = DEFAULT_TOL) -> LCPResult | None:
    """:func:`basis_checked` as an :class:`LCPResult` (no pivot, ``basic`` = ``basis``), or None
    when the pattern does not solve."""
    if not basis.size:
        return None
    z = np.empty(q.shape[0])
    if not basis_checked(M, q, basis, tol, z):
        return None
    return LCPResult(z, M @ z + q, LCPStatus.SOLVED, 0, 0.0, np.flatnonzero(z > 0.0), basic=basis)


def _with_pivots(res: LCPResult, pivots: int) -> LCPResult:
    return replace(res, pivots=pivots)


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


def _solve(M, q, warm, limit, pivot_tol, tol, z0_exit=Z0_EXIT, singular_cold=True) -> LCPResult:
    """Lemke's path from ``warm`` (or cold), its residual check, the polish of a rejected answer
    and, for a cold path still rejected, :func:`_ties_only`; ``z0_exit`` in tie widths.  A
    singular ``warm`` basis starts cold, or with ``singular_cold=False`` is NUMERICAL_FAILURE."""
    n = q.shape[0]
    Binv, xb, d = np.empty((n, n)), np.empty(n), np.empty(n)   # the cold start fills them
    basic = np.empty(n, dtype=np.int64)  # see idyn.lcp._lemke_kernel for the encoding
    cold = warm is None or not warm.size
    if not cold:
        if q.min() >= 0.0:
            return _at_start(q)
        # B = I with columns ``warm`` replaced by -M[:, warm]; in (warm, rest) blocks
        # B = [[-M_bb, 0], [-M_cb, I]], so B^-1 = [[-M_bb^-1, 0], [-M_cb M_bb^-1, I]]: one
        # factorisation of the b x b block instead of the n x n basis
        Mb = M[:, warm]
        Mbb = Mb[warm]
        try:
            with warnings.catch_warnings():     # an exactly singular block: judged just below
                warnings.simplefilter("ignore", LinAlgWarning)
                lu = lu_factor(Mbb, check_finite=False)
        except (ValueError, np.linalg.LinAlgError):
            lu = None
        if lu is not None and np.all(np.abs(np.diag(lu[0])) > _EPS * n * max(np.abs(Mb).max(), 1.0)):
            Mbb_inv = lu_solve(lu, np.eye(warm.size), check_finite=False)
            xb = q.copy()
            zb = -Mbb_inv @ q[warm]
            xb += Mb @ zb                                      # w = q + M_:b z_b on the rest
            xb[warm] = zb
            if xb.min() >= 0.0:
                z = np.zeros(n)
                z[warm] = zb
                res = _clipped_finish(M, q, z, LCPStatus.SOLVED, 0, tol)
                if res.solved:
                    return replace(res, basic=warm)
            Binv = np.eye(n)
            Binv[:, warm] = -(Mb @ Mbb_inv)                     # rows c: -M_cb M_bb^-1
            Binv[np.ix_(warm, warm)] = -Mbb_inv
            basic[:] = np.arange(n)
            basic[warm] += n
            d = np.ones(n)
            d[warm] = 0.0
            d -= Mb.sum(axis=1)
        elif singular_cold:
            cold = True
        else:
            return LCPResult(np.zeros(n), q.copy(), LCPStatus.NUMERICAL_FAILURE, 0, 0.0, np.empty(0, np.intp))
    z, support = np.empty(n), np.empty(n, dtype=np.intp)
    code, pivots, count = lemke_path(M, q, d, Binv, xb, basic, limit, float(pivot_tol), cold, z0_exit, z,
                                     support)
    if code == AT_START:
        return _at_start(q)
    status = _STATUS[code]
    basic_z = np.sort(basic[(basic >= n) & (basic < 2 * n)] - n).astype(np.intp)
    res = replace(_finish(M, q, z, status, pivots, tol, support[:count]), basic=basic_z)
    if status is LCPStatus.SOLVED and not res.solved:
        zp = _polish(M, q, basic_z)
        if zp is not None:
            polished = _clipped_finish(M, q, zp, LCPStatus.SOLVED, pivots, tol)
            if polished.solved:
                return replace(polished, basic=basic_z)
        if cold and z0_exit > Z0_TIES:
            return _ties_only(M, q, limit, pivot_tol, tol, res)
    return res


def _ties_only(M, q, limit, pivot_tol, tol, rejected: LCPResult) -> LCPResult:
    """The cold path again with ``z0`` leaving only on a minimum-ratio tie (the rule of Cottle,
    Pang & Stone 1992, Sec. 4.4, without the early exit that gave the ``rejected`` answer); its
    answer if it passes, else ``rejected``, with the pivots of both paths."""
    strict = _solve(M, q, None, limit, pivot_tol, tol, Z0_TIES)
    return _with_pivots(strict if strict.solved else rejected, rejected.pivots + strict.pivots)
