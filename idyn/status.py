"""How a solve finished: the one status enum of the LCP solvers, the QP adapter and the controllers.

Solvers never raise on non-convergence (paper Sec. 4-6: a controller falls back to a regularised
problem, another solver or a simpler model); they report one of these members instead.
:attr:`idyn.lcp.LCPResult.status` and :attr:`idyn.controllers.ControlInfo.status` are this enum.
Each member's value is a stable lower-case name, the one saved in traces and recorded replays.
"""
from __future__ import annotations

import enum


class Status(enum.Enum):
    """How a solver, or a controller step, finished."""

    SOLVED = "solved"
    """The answer passed its acceptance check (:func:`idyn.lcp.lcp_residuals` for an LCP, the
    feasibility check of :func:`idyn.qp.solve_qp` for a QP); for a controller step: the torques
    come from a solved contact model (its own, or the one named by ``ControlInfo.fallback``)."""
    REGULARIZED = "regularized"
    """The answer solves a regularised problem, not the one posed: the LCP ``(q, M + eps I)``
    (:func:`idyn.lcp.lemke_regularized`; ``LCPResult.regularization`` is ``eps`` and
    ``LCPResult.original_residual`` the answer's worst residual on ``(q, M)``, which may exceed
    the tolerance).  Physically a small compliance added to every contact; callers may use the
    answer (:attr:`solved` is True), and a controller step that did reports this status."""
    MAX_PIVOTS = "max_pivots"
    """A pivoting method reached its pivot limit before a solution was found, or a QP backend
    its iteration cap (an active-set iteration is one pivot) with no answer that passed."""
    RAY_TERMINATION = "ray_termination"
    """Lemke's path left along a secondary ray (or a principal pivoting method found an
    unbounded direction): the LCP has no solution that this method can reach."""
    NUMERICAL_FAILURE = "numerical_failure"
    """The method terminated but its answer failed the residual (or QP feasibility) check
    (ill-conditioning), or the data were not finite and no solver was called."""
    INFEASIBLE = "infeasible"
    """No point satisfies the constraints: exhaustive enumeration (:func:`idyn.lcp.mindiff`)
    found no complementary solution, or every QP backend reported infeasibility."""
    FAILED = "failed"
    """The solve gave up without a verdict: a QP backend stalled or rejected the problem, or a
    controller's model raised (``ControlInfo.error`` holds the message)."""
    NON_FINITE = "non-finite"
    """A controller's model returned non-finite torques or forces, so they were replaced by
    ``ControlInfo.fallback``'s."""
    OVER_BUDGET = "over_budget"
    """A controller step's time budget was spent before its contact model had an answer
    (``budget``, :mod:`idyn.controllers.base`), so ``ControlInfo.fallback``'s torques were used."""
    IMPLAUSIBLE = "implausible"
    """A controller's model returned contact impulses beyond the physical plausibility bound of
    the step (:meth:`idyn.controllers.Controller.impulse_bound`: what could stop the robot's
    momentum and gravity over the step, times a margin), so its torques and forces were replaced
    by ``ControlInfo.fallback``'s; ``ControlInfo.details`` holds ``"rejected_status"`` (what the
    model reported) and ``"impulse_ratio"`` (its impulses over the bound)."""

    @property
    def solved(self) -> bool:
        """An answer to the problem the result states: SOLVED, or REGULARIZED (the regularised one)."""
        return self is Status.SOLVED or self is Status.REGULARIZED


__all__ = ["Status"]
