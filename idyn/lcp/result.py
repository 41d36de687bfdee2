"""The result every LCP solver in :mod:`idyn.lcp` returns.

An LCP ``(q, M)`` (paper Sec. 2.1, eq. 115) asks for ``z >= 0`` and ``w = M z + q >= 0`` with
``z . w = 0``.  Solvers never raise on non-convergence: they report it in :attr:`LCPResult.status`
and hand back their best iterate, so a controller can fall back (regularisation, another solver)
exactly as the paper does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..status import Status

#: the solvers' status is the package's one :class:`idyn.Status` (this name kept for the LCP API)
LCPStatus = Status


@dataclass(frozen=True)
class LCPResult:
    """Answer of an LCP solver.

    Attributes:
        z: the complementary variable (length n), clipped to ``z >= 0``.
        w: ``M z + q`` for the problem the solver actually solved (see ``regularization``).
        status: :class:`idyn.Status` (SOLVED, REGULARIZED, MAX_PIVOTS, RAY_TERMINATION,
            NUMERICAL_FAILURE or INFEASIBLE).
        pivots: number of pivots (basis exchanges) performed.
        regularization: ``eps`` if ``(z, w)`` solve the regularised LCP ``(q, M + eps I)``,
            0.0 for the original problem.
        basis: sorted indices ``i`` whose ``z_i`` is basic (may be positive) at termination;
            pass it back as ``warm_start`` to the next solve of a nearby problem.
        original_residual: for a REGULARIZED answer, the worst residual
            (:func:`idyn.lcp.lcp_residuals`) of ``z`` on the original LCP ``(q, M)``; NaN otherwise.
        basic: Lemke's method only (else None): sorted indices of the ``z`` in its terminal
            complementary basis, including basic ``z`` at zero (a degenerate answer), whose
            ``w`` the basis holds at zero; the pattern :func:`idyn.lcp.lemke.basis_checked`
            warm-starts from.
    """

    z: np.ndarray
    w: np.ndarray
    status: Status
    pivots: int
    regularization: float
    basis: np.ndarray
    original_residual: float = float("nan")
    basic: np.ndarray | None = None

    @property
    def solved(self) -> bool:
        """SOLVED, or REGULARIZED (an answer to ``(q, M + eps I)``; see :attr:`status`)."""
        return self.status.solved
