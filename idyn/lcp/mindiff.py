"""Algorithm 3 (MINDIFF): the LCP solution closest to a previous one, by enumeration (Sec. 5.3).

For the MLCP ``(A, B, C, D, g, h)`` of Appendix C, Algorithm 3 visits every subset of the
``t`` complementarity indices as the set of possibly non-zero ``z`` (its recursion on ``n``
builds the subsets one index at a time), solves the corresponding linear system, keeps the
complementary solutions and returns the one whose unconstrained variables ``x`` (eq. 120) are
closest in Euclidean norm to ``x0`` (for inverse dynamics: the previous torques and
velocities), removing torque chatter caused by indeterminacy.

Re-derived parts (the PDF conversion lost lines 5-6 and garbled line 8): the leaf of the
recursion solves ``Q_aa z_a = -r_a`` with ``Q, r`` from eqs. 121-122 and accepts it only if
``z >= 0`` and ``w = Q z + r >= 0`` (checked by :func:`idyn.lcp.lcp_residuals`' tolerances);
non-solutions and singular ``Q_aa`` score ``epsilon = inf``; the two branches return the
smaller ``epsilon``.  We enumerate the same ``2^t`` subsets with an iterative loop instead of
recursion.  A basic (vertex) solution of every complementary face has a non-singular ``Q_aa``,
so skipping singular subsets loses no vertex solution.

Cost: ``2^t`` linear solves.  The paper says so too ("not practical"); ``max_size`` guards it
(default 12, i.e. 4096 solves; the friction LCP of one contact already has t = 6).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .. import validation
from ..errors import InvalidInputError
from .mlcp import mlcp_to_lcp
from .residuals import DEFAULT_TOL, residuals_from_parts
from .result import LCPResult, LCPStatus

#: Largest number of complementarity variables :func:`mindiff` accepts by default.
DEFAULT_MAX_SIZE = 12


@dataclass(frozen=True)
class MinDiffResult:
    """``x`` closest to ``x0``, its distance ``epsilon``, the LCP answer and the solution count."""

    x: np.ndarray
    epsilon: float
    lcp: LCPResult
    solutions: int


def mindiff(A, B, C, D, g, h, x0, *, max_size: int = DEFAULT_MAX_SIZE,
            tol: float = DEFAULT_TOL) -> MinDiffResult:
    """Enumerate every solution of the MLCP and return the one with ``x`` closest to ``x0``.

    Raises :class:`idyn.errors.InvalidInputError` when ``B`` has more than ``max_size`` rows
    (the enumeration is exponential) or ``A`` is singular.  If no solution exists the result
    has ``epsilon = inf`` and status ``INFEASIBLE``.
    """
    t = np.shape(B)[0] if np.ndim(B) == 2 else -1
    if t > max_size:
        raise InvalidInputError(
            f"mindiff enumerates 2^{t} index sets; raise max_size (now {max_size}) to allow it")
    red = mlcp_to_lcp(A, B, C, D, g, h)
    Q, r = red.Q, red.r
    x0 = validation.vector(x0, np.shape(A)[0], "x0")
    q_norm = float(np.abs(r).max(initial=0.0))
    m_norm = float(np.abs(Q).sum(axis=1).max(initial=0.0))
    best_z, best_eps, count = None, np.inf, 0
    for k in range(t + 1):
        for subset in combinations(range(t), k):
            a = list(subset)
            z = np.zeros(t)
            if a:
                try:
                    z[a] = np.linalg.solve(Q[np.ix_(a, a)], -r[a])
                except np.linalg.LinAlgError:
                    continue
            w = Q @ z + r
            w[a] = 0.0
            if not residuals_from_parts(z, w, q_norm, m_norm).ok(tol):
                continue
            count += 1
            eps = float(np.linalg.norm(red.unconstrained(np.maximum(z, 0.0)) - x0))
            if eps < best_eps:
                best_z, best_eps = np.maximum(z, 0.0), eps
    if best_z is None:
        lcp = LCPResult(np.zeros(t), r.copy(), LCPStatus.INFEASIBLE, 0, 0.0, np.empty(0, np.intp))
        return MinDiffResult(np.full(x0.shape, np.nan), np.inf, lcp, 0)
    lcp = LCPResult(best_z, Q @ best_z + r, LCPStatus.SOLVED, 2 ** t, 0.0,
                    np.flatnonzero(best_z > 0))
    return MinDiffResult(red.unconstrained(best_z), best_eps, lcp, count)
