"""Generalized inertia M with a cached factorization, dense or sparse.

Free rigid bodies give a block-diagonal M whose inverse is block diagonal too; keeping both as
scipy.sparse makes G M^-1 G^T for a stack of spheres O(n) (Sec. 6.5). Build one
:class:`MassMatrix` per configuration (or once, when M is constant) and reuse it.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg.lapack import dpotrs

from .. import validation
from ..errors import InvalidInputError, NonFiniteError, ShapeError


class MassMatrix:
    """M (symmetric positive definite) and solves with it.

    ``cholesky``: for a dense M, its upper Cholesky factor U (M = U^T U, only the upper
    triangle is read), e.g. the one a simulator step already computed with LAPACK potrf, which
    is what this class would compute: M is then not factored again.
    """

    def __init__(self, M, cholesky: np.ndarray | None = None):
        if sp.issparse(M):
            M = sp.csc_matrix(M, dtype=float)
            if M.shape[0] != M.shape[1]:
                raise ShapeError(f"M must be square, got {M.shape}")
            if not np.isfinite(M.data).all():
                raise NonFiniteError("M contains NaN or infinite values")
            self._sparse = True
            self._lu = spla.splu(M)
        else:
            M = validation.square(M, "M")
            self._sparse = False
            if cholesky is not None:
                self._cho = (validation.matrix(cholesky, M.shape, "cholesky"), False)
            else:
                try:
                    self._cho = la.cho_factor(M)
                except la.LinAlgError as exc:
                    raise InvalidInputError("M must be symmetric positive definite") from exc
        self.matrix = M
        self._inverse = None

    @property
    def nv(self) -> int:
        return self.matrix.shape[0]

    @property
    def sparse(self) -> bool:
        return self._sparse

    def solve(self, X):
        """M^-1 X for a vector, dense matrix or sparse matrix X (sparse in, sparse out)."""
        if sp.issparse(X):
            return sp.csr_matrix(self.inverse() @ X)
        X = np.asarray(X, dtype=float)
        if self._sparse:
            return self._lu.solve(X)
        # LAPACK potrs, the call scipy's cho_solve makes after its argument checks (which cost
        # far more than the solve on the simulator's 18 x 18 M); the same checks in short
        if X.shape[:1] != (self.nv,):
            raise ShapeError(f"M^-1 X needs {self.nv} rows, got shape {X.shape}")
        if not np.isfinite(X).all():
            raise NonFiniteError("M^-1 X: X contains NaN or infinite values")
        return dpotrs(self._cho[0], X, lower=self._cho[1])[0]

    def inverse(self):
        """M^-1, sparse when M is (exact and fill-free for block-diagonal M), cached."""
        if self._inverse is None:
            if self._sparse:
                self._inverse = sp.csr_matrix(spla.inv(self.matrix))
                self._inverse.eliminate_zeros()
            else:
                self._inverse = la.cho_solve(self._cho, np.eye(self.nv))
        return self._inverse

    def augmented(self, Gb, chi_b: np.ndarray) -> "MassMatrix":
        """M + Gb^T diag(chi_b) Gb, the inverse of Lambda of eq. 189.

        By the Woodbury identity, Lambda = M^-1 (Gb^T C^-1 D + I) with D = -diag(chi_b) Gb M^-1
        and C = I - D Gb^T (eqs. 189-192) equals (M + Gb^T diag(chi_b) Gb)^-1: eliminating the
        bilateral constraints adds their implicit stiffness h^2 K_b + h B_b to the inertia. This
        form needs no inverse of C, keeps sparsity and is symmetric positive definite.
        """
        if self._sparse:
            Gb = sp.csr_matrix(Gb)
            return MassMatrix(self.matrix + sp.csc_matrix(Gb.T @ sp.diags(chi_b) @ Gb))
        Gb = Gb.toarray() if sp.issparse(Gb) else Gb
        return MassMatrix(self.matrix + Gb.T @ (chi_b[:, None] * Gb))
