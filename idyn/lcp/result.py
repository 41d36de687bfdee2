"""The result every LCP solver in :mod:`idyn.lcp` returns.

An LCP ``(q, M)`` (paper Sec. 2.1, eq. 115) asks for ``z >= 0`` and ``w = M z + q >= 0`` with
``z . w = 0``.  Solvers never raise on non-convergence: they report it in :attr:`LCPResult.status`
and hand back their best iterate, so a controller can fall back (regularisation, another solver)
exactly as the paper does.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


class LCPStatus(enum.Enum):
    """How a solver finished."""

    SOLVED = "solved"
    """``(z, w)`` passed the residual check of :func:`idyn.lcp.lcp_residuals`."""
    MAX_PIVOTS = "max_pivots"
    """The pivot limit was reached before a solution was found."""
    RAY_TERMINATION = "ray_termination"
    """Lemke's path left along a secondary ray (or a principal pivoting method found an
    unbounded direction): the LCP has no solution that this method can reach."""
    NUMERICAL_FAILURE = "numerical_failure"
    """The method terminated but its answer failed the residual check (ill-conditioning)."""
    INFEASIBLE = "infeasible"
    """Exhaustive enumeration (:func:`idyn.lcp.mindiff`) found no complementary solution."""


@dataclass(frozen=True)
class LCPResult:
    """Answer of an LCP solver.

    Attributes:
        z: the complementary variable (length n), clipped to ``z >= 0``.
        w: ``M z + q`` for the problem the solver actually solved (see ``regularization``).
        status: :class:`LCPStatus`.
        pivots: number of pivots (basis exchanges) performed.
        regularization: ``eps`` if ``(z, w)`` solve the regularised LCP ``(q, M + eps I)``,
            0.0 for the original problem.
        basis: sorted indices ``i`` whose ``z_i`` is basic (may be positive) at termination;
            pass it back as ``warm_start`` to the next solve of a nearby problem.
    """

    z: np.ndarray
    w: np.ndarray
    status: LCPStatus
    pivots: int
    regularization: float
    basis: np.ndarray

    @property
    def solved(self) -> bool:
        return self.status is LCPStatus.SOLVED
