"""Algorithm 1 (FIND-INDICES): tangent rows that keep the no-slip MLCP solvable (Sec. 4.4).

The no-slip MLCP (eq. 42) can be reduced to an LCP only if the matrix ``A`` of eq. 116 (built
from ``M``, ``P``, ``S``, ``T``) is non-singular, which holds when
``X^T M^-1 X`` is non-singular for ``X = [P^T  S_S^T  T_T^T]``.  Algorithm 1 walks over the
contacts and keeps the ``i``-th row of ``S`` (then of ``T``) only if it leaves that matrix
non-singular; Appendix E proves that dropping the others does not change the MLCP solution.

With ``M = L L^T`` and ``H = L^-1 X`` we have ``X^T M^-1 X = H^T H``, whose Cholesky factor is
grown one column at a time by :class:`idyn.lcp.gram.GramFactor` ("O(m^2) updates to an initial
O(m^3) Cholesky factorization", Sec. 4.4): the test of lines 6 and 10 is the pivot of that
update.  At most ``m`` columns fit, so the total cost is ``O(m^3 + n m^2)``.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .. import validation
from ..errors import InvalidInputError
from .gram import DEFAULT_DEPENDENCE_TOL, GramFactor


def find_indices(M, P, S, T, *, dependence_tol: float = DEFAULT_DEPENDENCE_TOL
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Return the row indices ``(s_idx, t_idx)`` of ``S`` and ``T`` kept by Algorithm 1.

    Args:
        M: (m, m) symmetric positive definite generalized inertia.
        P: (p, m) actuation (selection) matrix, or None / zero rows for none; its rows are
            always kept and must be linearly independent.
        S, T: (n, m) first and second tangent-direction wrenches, one row per contact.
        dependence_tol: sine of the angle below which a row counts as dependent.

    Raises:
        InvalidInputError: ``M`` not positive definite or ``P`` rank deficient.
    """
    M = validation.square(M, "M")
    m = M.shape[0]
    P = np.zeros((0, m)) if P is None else validation.matrix(P, (None, m), "P")
    S = validation.matrix(S, (None, m), "S")
    T = validation.matrix(T, (S.shape[0], m), "T")
    L, info = lapack.dpotrf(M, lower=1, clean=1)
    if info != 0:
        raise InvalidInputError("M must be symmetric positive definite")
    H, _ = lapack.dtrtrs(L, np.asfortranarray(np.vstack([P, S, T]).T), lower=1)
    gram = GramFactor(m, dependence_tol)
    p, n = P.shape[0], S.shape[0]
    for j in range(p):
        if not gram.append(H[:, j]):
            raise InvalidInputError("the rows of P must be linearly independent")
    keep_s, keep_t = [], []
    for i in range(n):  # Algorithm 1 lines 3-11
        if gram.append(H[:, p + i]):
            keep_s.append(i)
        if gram.append(H[:, p + n + i]):
            keep_t.append(i)
    return np.array(keep_s, dtype=np.intp), np.array(keep_t, dtype=np.intp)
