"""Passive touchdown impacts: an event-driven simulator's impact inside a time step.

A velocity-level time step (:mod:`idyn.sim.simulator`) resolves a contact that closes during the
step together with the torques held over the step: the step's impulse both stops the approaching
body and carries the load, and the actuators' dt * tau takes part in stopping it. An event-driven
simulator, like MOBY, which the paper used ("accurate time of contact calculation for impacting
bodies", Sec. 7), instead stops at the time of contact and resolves the impact as an
instantaneous event to which finite actuator torques deliver no impulse, then continues.

``Simulator(..., impacts="passive")`` models that: when a contact's normal velocity at the start
of the step closes faster than its gap allows by more than ``speed_tol``,

    N v + max(phi, 0) / dt < -speed_tol,

the contacts first receive the inelastic impact of rigid contact with the friction pyramid
(restitution 0, actuators passive): the Anitescu-Potra LCP of paper eqs. 52-56 with no force but
the contact impulses over the instant, :func:`idyn.impact.impact_impulses` (its docstring has the
equations, the treatment of mu = inf, and why it is preferred to the maximal-dissipation
program of Sec. 2.3.4, which launches feet landing while sliding).
The step's own contact model then runs from v', with M, h(q, v) and the Jacobians still those of
the start of the step. The impact happens at the start of the step instead of at the exact time
of contact: a first-order difference, like the step itself. The impact impulse is part of the
step's contact force and is reported in it. If the impact LCP is not solved (Lemke's method and
its regularisation fallback all fail) the step runs without the impact phase, its model resolving
the touchdown, and :attr:`PassiveImpacts.last` keeps the failed solution's status.

This is the touchdown model of the inverse-dynamics controllers (``controllers.impact``, option
``impact=True``, the same test and the same function), so with it a controller predicts its
simulator's forces at touchdown as well (paper Sec. 8.2).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError
from ..impact import IMPACT_SPEED_TOL, ImpactSolution, closing, impact_impulses
from .contact_models import ContactProblem

#: how a simulator treats contacts that close during a step
IMPACT_MODES = ("step", "passive")

__all__ = ["IMPACT_MODES", "IMPACT_SPEED_TOL", "PassiveImpacts"]


class PassiveImpacts:
    """The passive impact phase of the module docstring."""

    def __init__(self, speed_tol: float = IMPACT_SPEED_TOL):
        speed_tol = float(speed_tol)
        if not (math.isfinite(speed_tol) and speed_tol >= 0.0):
            raise InvalidInputError(f"impact speed tolerance must be finite and >= 0, got {speed_tol}")
        self.speed_tol = speed_tol
        #: the last impact's solution (status, pivots, regularisation), None before the first
        self.last: ImpactSolution | None = None

    def closing(self, problem: ContactProblem) -> bool:
        """Does some contact approach faster than its gap allows (by more than ``speed_tol``)?"""
        return closing(problem.J[:problem.m], problem.v, problem.phi, problem.dt, self.speed_tol)

    def resolve(self, problem: ContactProblem) -> tuple[ContactProblem, np.ndarray | None]:
        """``(problem from the post-impact velocity, impact impulses (m, 3))``, or ``(problem,
        None)`` when nothing closes too fast or the impact LCP is not solved (then the step's
        model handles the contact, as without this phase)."""
        if not self.closing(problem):
            return problem, None
        sol = self.last = impact_impulses(problem.W, problem.J @ problem.v, problem.phi, problem.mu, problem.dt)
        if not sol.solved:
            return problem, None
        return problem.restarted(problem.v + problem.Minv_JT @ sol.impulses.T.reshape(-1)), sol.impulses
