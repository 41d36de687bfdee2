"""An incrementally updated Cholesky factor of a Gram matrix ``G_a^T G_a``.

Algorithms 1 and 2 of the paper repeatedly grow or shrink an ordered set ``a`` of columns of a
fixed matrix ``G`` (for the contact problems ``G = L^-1 N^T`` with ``M = L L^T``, so that
``G_a^T G_a = N_a M^-1 N_a^T``) and need (i) to know whether a new column is linearly
independent of the current ones (Alg. 1 lines 6 and 10; Appendix F for Alg. 2) and (ii) to
solve with ``G_a^T G_a`` (Alg. 2 line 12).  The paper prescribes "O(m^2) updates to an initial
O(m^3) Cholesky factorization" (Sec. 4.4).  :class:`GramFactor` keeps the upper triangular
``R`` with ``R^T R = G_a^T G_a``:

* append ``g``: ``c = G_a^T g``, ``R^T l = c`` (one triangular solve), new diagonal
  ``sqrt(|g|^2 - |l|^2)``; ``|g|^2 - |l|^2`` is the squared distance of ``g`` from
  ``span(G_a)``, so the singularity test of Algorithm 1 is the same number: the column is
  dependent when that distance is below ``dependence_tol * |g|`` (the sine of the angle);
* delete column ``p``: the remaining columns of ``R`` form an upper Hessenberg matrix that
  Givens rotations return to triangular form (LAPACK-backed ``qr_delete`` on ``R``);
* solve: two triangular solves (BLAS ``dtrsv``).

Each operation is ``O(m k)`` or ``O(k^2)`` with ``k <= m``; nothing is refactorised.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas, lapack
from scipy.linalg._decomp_update import qr_delete as _qr_delete

from .. import validation
from ..errors import InvalidInputError

#: A column whose distance from the current span is below this fraction of its norm is treated
#: as linearly dependent (the sine of its angle to the span).
DEFAULT_DEPENDENCE_TOL = 1e-6


class GramFactor:
    """Cholesky factor of ``G_a^T G_a`` for an ordered set of columns of length-``rows`` vectors."""

    def __init__(self, rows: int, dependence_tol: float = DEFAULT_DEPENDENCE_TOL):
        self.rows = rows
        self.dependence_tol = dependence_tol
        self.columns = np.zeros((rows, rows))  # row j holds the j-th column of G_a
        self.R = np.zeros((rows, rows), order="F")
        self.size = 0

    def append(self, g: np.ndarray) -> bool:
        """Append column ``g`` unless it is numerically dependent; return whether it was."""
        k = self.size
        gg = float(g @ g)
        if k >= self.rows or gg == 0.0:
            return False
        if k:
            l = blas.dtrsv(self.R[:k, :k], self.columns[:k] @ g, lower=0, trans=1)
            s = gg - float(l @ l)
        else:
            l, s = None, gg
        if s <= (self.dependence_tol ** 2) * gg:
            return False
        if k:
            self.R[:k, k] = l
        self.R[k, k] = np.sqrt(s)
        self.columns[k] = g
        self.size = k + 1
        return True

    def delete(self, position: int) -> None:
        """Remove the column at ``position`` (its order in ``a``)."""
        k = self.size
        if position < k - 1:
            _, R = _qr_delete(np.eye(k), self.R[:k, :k], position, 1, "col", False, False)
            self.R[:k - 1, :k - 1] = R[:k - 1]
            self.columns[position:k - 1] = self.columns[position + 1:k]
        self.R[:, k - 1] = 0.0
        self.R[k - 1, :] = 0.0
        self.size = k - 1

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve ``(G_a^T G_a) x = b`` with two triangular solves (empty ``a``: empty ``x``;
        BLAS rejects a 0 x 0 triangle)."""
        if self.size == 0:
            return np.zeros(0)
        Rk = self.R[:self.size, :self.size]
        return blas.dtrsv(Rk, blas.dtrsv(Rk, b, lower=0, trans=1), lower=0, trans=0)


def cholesky_factor(M: np.ndarray, cholesky=None) -> np.ndarray:
    """The lower Cholesky factor of ``M``: ``cholesky`` itself when given (shape-checked), else
    LAPACK ``potrf``; InvalidInputError if ``M`` is not positive definite."""
    if cholesky is not None:
        return validation.matrix(cholesky, M.shape, "cholesky")
    L, info = lapack.dpotrf(M, lower=1, clean=1)
    if info != 0:
        raise InvalidInputError("M must be symmetric positive definite")
    return L
