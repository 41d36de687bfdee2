"""Linear complementarity problem solvers of Zapolsky & Drumwright (paper Sec. 4-5, App. C-F).

* :func:`lemke` - Lemke's method, lexicographic (no cycling), warm-startable.
* :func:`lemke_regularized` - Lemke with the ``M + eps I`` fallback.
* :func:`ppm` - Principal Pivoting Method I (Appendix D) for P and symmetric PSD matrices.
* :func:`ppm_contact` - Algorithm 2, ``O(m^3 + n m^2)`` for contact LCPs ``N W N^T``.
* :func:`find_indices` - Algorithm 1, the tangent rows that keep the no-slip MLCP solvable.
* :func:`mindiff` - Algorithm 3, exhaustive minimum-change solution (exponential).
* :func:`mlcp_to_lcp` - Appendix C, eqs. 116-122.
* :func:`lcp_residuals` / :func:`is_lcp_solution` - the one acceptance check everyone uses.
"""
from .find_indices import find_indices
from .lemke import lemke
from .mindiff import MinDiffResult, mindiff
from .mlcp import ReducedLCP, mlcp_to_lcp
from .ppm import ppm
from .ppm_contact import contact_factor, ppm_contact
from .regularized import REGULARIZATION_SCHEDULE, lemke_regularized
from .residuals import LCPResiduals, is_lcp_solution, lcp_residuals
from .result import LCPResult, LCPStatus

__all__ = [
    "LCPResult", "LCPStatus", "LCPResiduals", "MinDiffResult", "ReducedLCP",
    "REGULARIZATION_SCHEDULE", "contact_factor", "find_indices", "is_lcp_solution", "lcp_residuals",
    "lemke", "lemke_regularized", "mindiff", "mlcp_to_lcp", "ppm", "ppm_contact",
]
