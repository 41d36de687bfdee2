"""Mixed LCP to pure LCP (paper Appendix C, eqs. 116-122).

The MLCP

    A x + C z + g = 0            (116)
    D x + B z + h >= 0           (117)
    z >= 0                       (118)
    z^T (D x + B z + h) = 0      (119)

with non-singular ``A`` is the LCP ``(r, Q)`` with

    Q = B - D A^-1 C             (121)
    r = h - D A^-1 g             (122)

and, given its solution ``z``, the unconstrained variables are ``x = -A^-1 (C z + g)`` (120).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from .. import validation
from ..errors import InvalidInputError

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class ReducedLCP:
    """The LCP ``(r, Q)`` of an MLCP, plus what is needed to recover ``x`` (eq. 120).

    Unpacks as ``Q, r = mlcp_to_lcp(...)``.
    """

    Q: np.ndarray
    r: np.ndarray
    _lu: tuple
    _C: np.ndarray
    _g: np.ndarray

    def __iter__(self):
        return iter((self.Q, self.r))

    def unconstrained(self, z) -> np.ndarray:
        """Return ``x = -A^-1 (C z + g)`` (eq. 120) for an LCP solution ``z``."""
        z = validation.vector(z, self._C.shape[1], "z")
        return -_lu_solve(self._lu, self._C.dot(z) + self._g)


def mlcp_to_lcp(A, B, C, D, g, h) -> ReducedLCP:
    """Reduce the MLCP (116)-(119) to the LCP ``(r, Q)`` of eqs. 121-122.

    Shapes: ``A`` (s, s), ``C`` (s, t), ``D`` (t, s), ``B`` (t, t), ``g`` (s,), ``h`` (t,).
    Raises :class:`idyn.errors.InvalidInputError` if ``A`` is singular (use
    :func:`idyn.lcp.find_indices` to drop dependent constraints first, Appendix E).
    """
    A = validation.square(A, "A")
    s = A.shape[0]
    B = validation.square(B, "B")
    t = B.shape[0]
    C = validation.matrix(C, (s, t), "C")
    D = validation.matrix(D, (t, s), "D")
    g = validation.vector(g, s, "g")
    h = validation.vector(h, t, "h")
    return reduce_checked(A, B, C, D, g, h)


def reduce_checked(A, B, C, D, g, h) -> ReducedLCP:
    """:func:`mlcp_to_lcp` for blocks a caller built itself (finite float arrays of consistent
    shapes): no second input check, the same singularity test and reduction."""
    s, t = A.shape[0], B.shape[0]
    lu = lapack.dgetrf(A)[:2]     # LAPACK as scipy's lu_factor calls it, without its wrapper
    piv = np.abs(lu[0].diagonal())
    if s and piv.min() <= s * _EPS * piv.max():   # also catches getrf's info > 0
        raise InvalidInputError("A is singular: the MLCP cannot be reduced to an LCP")
    X = _lu_solve(lu, np.column_stack([C, g]))
    return ReducedLCP(Q=B - D @ X[:, :t], r=h - D @ X[:, t], _lu=lu, _C=C, _g=g)


def _lu_solve(lu: tuple, b: np.ndarray) -> np.ndarray:
    """``scipy.linalg.lu_solve`` (LAPACK getrs) without its wrapper's checks."""
    return lapack.dgetrs(lu[0], lu[1], b)[0]
