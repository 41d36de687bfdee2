"""What Algorithms 1 and 2 share about Gram matrices ``G_a^T G_a`` of whitened columns.

For the contact problems ``G = L^-1 N^T`` with ``M = L L^T``, so that ``G_a^T G_a =
N_a M^-1 N_a^T``: a column is linearly dependent on a set when its distance from their span is
below ``DEFAULT_DEPENDENCE_TOL`` times its norm (Alg. 1 lines 6 and 10; Appendix F for Alg. 2),
the pivot of the Cholesky update that would append it.  Algorithm 1's scan is
:mod:`idyn.lcp.find_indices`; Algorithm 2's updated factor lives in its compiled loop
(:mod:`idyn.lcp._ppm_kernel`).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .. import validation
from ..errors import InvalidInputError

#: A column whose distance from the current span is below this fraction of its norm is treated
#: as linearly dependent (the sine of its angle to the span).
DEFAULT_DEPENDENCE_TOL = 1e-6


def cholesky_factor(M: np.ndarray, cholesky=None) -> np.ndarray:
    """The lower Cholesky factor of ``M``: ``cholesky`` itself when given (shape-checked), else
    LAPACK ``potrf``; InvalidInputError if ``M`` is not positive definite."""
    if cholesky is not None:
        return validation.matrix(cholesky, M.shape, "cholesky")
    L, info = lapack.dpotrf(M, lower=1, clean=1)
    if info != 0:
        raise InvalidInputError("M must be symmetric positive definite")
    return L
