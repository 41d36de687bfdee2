"""Passive touchdown impacts: an event-driven simulator's impact inside a time step.

A velocity-level time step (:mod:`idyn.sim.simulator`) resolves a contact that closes during the
step together with the torques held over the step: the step's impulse both stops the approaching
body and carries the load, and the actuators' dt * tau takes part in stopping it. An event-driven
simulator, like MOBY, which the paper used ("accurate time of contact calculation for impacting
bodies", Sec. 7), instead stops at the time of contact and resolves the impact as an
instantaneous event to which finite actuator torques deliver no impulse, then continues.

``Simulator(..., impacts="passive")`` models that: a contact whose normal velocity at the start
of the step closes faster than its gap allows by more than ``speed_tol``,

    N v + max(phi, 0) / dt < -speed_tol,

first receives the inelastic, maximally dissipative impact of paper Sec. 2.3.4 (Drumwright &
Shell; restitution 0), with the actuators passive:

    minimize 1/2 v'^T M v'   with v' = v + M^-1 J^T f
    subject to N v' >= -max(phi, 0) / dt,  f_N >= 0,  pyramid |f_S| + |f_T| <= mu f_N,

which is the ``qp`` contact model with no non-contact force over the step (every finite mu
bounded, mu = 100 included). The step's own contact model then runs from v', with M, h(q, v)
and the Jacobians still those of the start of the step. The impact happens at the start of the
step instead of at the exact time of contact: a first-order difference, like the step itself.
The impact impulse is part of the step's contact force and is reported in it.

This is the touchdown model of the inverse-dynamics controllers (``controllers.impact``, option
``impact=True``, same test, same program), so with it a controller predicts its simulator's
forces at touchdown as well (paper Sec. 8.2).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError
from .contact_models import ContactProblem, MaximalDissipation

#: approach speed (m/s) beyond what the gap allows that makes a contact an impact
IMPACT_SPEED_TOL = 1e-2

#: how a simulator treats contacts that close during a step
IMPACT_MODES = ("step", "passive")


class PassiveImpacts:
    """The passive impact phase of the module docstring (``qp_backend`` as in ``qp``)."""

    def __init__(self, speed_tol: float = IMPACT_SPEED_TOL, qp_backend: str = "quadprog"):
        speed_tol = float(speed_tol)
        if not (math.isfinite(speed_tol) and speed_tol >= 0.0):
            raise InvalidInputError(f"impact speed tolerance must be finite and >= 0, got {speed_tol}")
        self.speed_tol = speed_tol
        self._model = MaximalDissipation(no_slip_mu=math.inf, backend=qp_backend)

    def closing(self, problem: ContactProblem) -> bool:
        """Does some contact approach faster than its gap allows (by more than ``speed_tol``)?"""
        m = problem.m
        if m == 0:
            return False
        gap_speed = problem.J[:m] @ problem.v + np.maximum(problem.phi, 0.0) / problem.dt
        return bool((gap_speed < -self.speed_tol).any())

    def resolve(self, problem: ContactProblem) -> tuple[ContactProblem, np.ndarray | None]:
        """``(problem from the post-impact velocity, impact impulses (m, 3))``, or ``(problem,
        None)`` when nothing closes too fast (or the impact program fails: then the step's model
        handles the contact, as without this phase)."""
        if not self.closing(problem):
            return problem, None
        impact = problem.restarted(problem.v, forces=False, phi=np.maximum(problem.phi, 0.0))
        sol = self._model.solve(impact)
        if sol.status != "solved":
            return problem, None
        return problem.restarted(impact.velocity(sol.impulses)), sol.impulses
