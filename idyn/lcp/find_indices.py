"""Algorithm 1 (FIND-INDICES): tangent rows that keep the no-slip MLCP solvable (Sec. 4.4).

The no-slip MLCP (eq. 42) can be reduced to an LCP only if the matrix ``A`` of eq. 116 (built
from ``M``, ``P``, ``S``, ``T``) is non-singular, which holds when
``X^T M^-1 X`` is non-singular for ``X = [P^T  S_S^T  T_T^T]``.  Algorithm 1 walks over the
contacts and keeps the ``i``-th row of ``S`` (then of ``T``) only if it leaves that matrix
non-singular; Appendix E proves that dropping the others does not change the MLCP solution.

With ``M = L L^T`` and ``H = L^-1 X`` we have ``X^T M^-1 X = H^T H``; the singularity test of
lines 6 and 10 is the pivot of the Cholesky update that appends a column, i.e. the distance of
the new whitened column from the span of the kept ones (Sec. 4.4 prescribes "O(m^2) updates to
an initial O(m^3) Cholesky factorization").  We keep an orthonormal basis of that span and test
all remaining candidates in one matrix product per accepted row: a candidate dependent on the
span stays dependent when it grows, so the visiting order and the answer are Algorithm 1's,
with at most ``m`` vectorised passes (``O(m^3 + n m^2)`` flops, no per-row Python loop; at 48
contacts the loop was most of the controller's time).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .. import validation
from ..errors import InvalidInputError
from .gram import DEFAULT_DEPENDENCE_TOL, cholesky_factor


def find_indices(M, P, S, T, *, dependence_tol: float = DEFAULT_DEPENDENCE_TOL, cholesky=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Return the row indices ``(s_idx, t_idx)`` of ``S`` and ``T`` kept by Algorithm 1.

    Args:
        M: (m, m) symmetric positive definite generalized inertia.
        P: (p, m) actuation (selection) matrix, or None / zero rows for none; its rows are
            always kept and must be linearly independent.
        S, T: (n, m) first and second tangent-direction wrenches, one row per contact.
        dependence_tol: sine of the angle below which a row counts as dependent.
        cholesky: the lower Cholesky factor of ``M``, if already computed (not recomputed).

    Raises:
        InvalidInputError: ``M`` not positive definite or ``P`` rank deficient.
    """
    M = validation.square(M, "M")
    m = M.shape[0]
    P = np.zeros((0, m)) if P is None else validation.matrix(P, (None, m), "P")
    S = validation.matrix(S, (None, m), "S")
    T = validation.matrix(T, (S.shape[0], m), "T")
    L = cholesky_factor(M, cholesky)
    p, n = P.shape[0], S.shape[0]
    # whitened candidate columns in Algorithm 1's order: S_1, T_1, S_2, T_2, ...
    rows = np.empty((2 * n, m))
    rows[0::2], rows[1::2] = S, T
    H, _ = lapack.dtrtrs(L, np.asfortranarray(np.vstack([P, rows]).T), lower=1)
    kept = independent_columns(H, dependence_tol, required=p)
    return kept[kept % 2 == 0] // 2, kept[kept % 2 == 1] // 2


def independent_columns(H: np.ndarray, dependence_tol: float = DEFAULT_DEPENDENCE_TOL,
                        required: int = 0) -> np.ndarray:
    """Algorithm 1's scan on whitened columns: indices (among ``H[:, required:]``, visited in
    order) of the columns it keeps, a column being kept when its distance from the span of the
    kept ones exceeds ``dependence_tol`` times its norm.

    ``H = L^-1 X`` for ``M = L L^T``, so ``X^T M^-1 X = H^T H``; a caller that has already
    whitened its rows (a controller step) calls this instead of :func:`find_indices`.  The first
    ``required`` columns (``P``'s) must all be kept (InvalidInputError otherwise).
    """
    basis = _Span(H.shape[0], dependence_tol)
    for j in range(required):
        if not basis.try_add(H[:, j]):
            raise InvalidInputError("the rows of P must be linearly independent")
    return basis.scan(H[:, required:])


class _Span:
    """Orthonormal basis of the accepted whitened columns (``X^T M^-1 X = H^T H``).

    A column is independent when its distance from the span exceeds ``tol`` times its norm:
    the same number as the pivot of the updated Cholesky factor of ``H^T H`` (the squared
    distance is that pivot squared), computed here for all candidates at once.
    """

    def __init__(self, m: int, tol: float):
        self.Q = np.zeros((m, 0))
        self.tol2 = tol * tol
        self.m = m

    def _residual_sq(self, C: np.ndarray) -> np.ndarray:
        R = C - self.Q @ (self.Q.T @ C)
        R -= self.Q @ (self.Q.T @ R)          # second Gram-Schmidt pass (round-off)
        return np.einsum("ij,ij->j", R, R), R

    def try_add(self, c: np.ndarray) -> bool:
        return self.scan(c[:, None]).size == 1

    def scan(self, C: np.ndarray) -> np.ndarray:
        """Indices of the columns of ``C`` that Algorithm 1, visiting them in order, keeps.

        A column dependent on the span stays dependent when the span grows, so after each
        acceptance only the later columns need testing again: at most ``m`` vectorised passes.
        """
        norms2 = np.einsum("ij,ij->j", C, C)
        kept, start = [], 0
        while start < C.shape[1] and self.Q.shape[1] < self.m:
            res2, R = self._residual_sq(C[:, start:])
            ok = np.flatnonzero((res2 > self.tol2 * norms2[start:]) & (norms2[start:] > 0.0))
            if ok.size == 0:
                break
            j = start + int(ok[0])
            r = R[:, ok[0]]
            self.Q = np.column_stack((self.Q, r / np.sqrt(res2[ok[0]])))
            kept.append(j)
            start = j + 1
        return np.array(kept, dtype=np.intp)
