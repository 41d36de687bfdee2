"""Touchdown: the passive impact that precedes a control step (paper Sec. 3.2, eqs. 52-56).

The inverse-dynamics models of the paper prescribe the actuated velocities at the end of the
step (``P v+ = qd_des``, eq. 38).  When a contact closes with an approach speed (a swing foot
landing, a fingertip reaching the box), the model can only meet that prescription if the
actuators deliver, within one control period, the impulse that stops the contact: a stiff
joint meeting the ground.  Sec. 3.2 warns of exactly this ("an impact occurred ... actuators
attached to the contacted link ... are heavily loaded").  In closed loop it is what launched
LINKS: a foot landing at 0.3 m/s made ``lcp-noslip`` command 3.8e3 N m (1 kN of predicted force
and up to 2.9e4 N tangential) in PyBullet.

Finite actuators cannot act impulsively, so the impulse that stops a closing contact is
delivered by the contact alone, with the actuators passive over the instant of impact: the
inelastic impact of rigid contact with the friction pyramid, :func:`idyn.impact.inelastic_impact`
(the Anitescu-Potra LCP of eqs. 52-56 with only the contact impulses acting; the very function
idyn.sim's passive impacts use, so a controller predicts its matched simulator's touchdowns).
Its normal complementarity is why it is preferred to the maximally dissipative program of
Sec. 2.3.4, which launches feet landing while sliding (:mod:`idyn.impact` says why).  The controller then solves its own model from the post-impact ``v'`` instead of
the measured ``v``.  The impulse is applied only when some contact closes faster than
``speed_tol`` beyond what its gap allows (``N v + phi/dt < -speed_tol``): for feet already at
rest on the ground, the common case, it is exactly zero and nothing changes.  The impulse is part
of the contact force over the step, so it is reported in ``contact_forces`` (a simulator applies
it too).  If the impact LCP is not solved, the step is built from the measured ``v`` as without
the impact, and :attr:`idyn.controllers.dynamics.StepDynamics.last_impact_status` says why.
"""
from __future__ import annotations

import numpy as np

from idyn.contact import ContactJacobians
from idyn.impact import IMPACT_SPEED_TOL, ImpactSolution, checked_impact

__all__ = ["IMPACT_SPEED_TOL", "passive_impact"]


def passive_impact(M: np.ndarray, v: np.ndarray, jac: ContactJacobians, dt: float
                   ) -> tuple[np.ndarray, ImpactSolution]:
    """``(v', solution)``: the impact of the module docstring for the contacts of ``jac`` (their
    gaps ``jac.phi`` as the step uses them); ``solution.impulses`` (m, 3) [normal, s, t] in N s,
    and ``v' = v`` if the LCP is not solved (``solution.status``). Its inputs are a control
    step's, which :meth:`idyn.controllers.Controller.compute`, the contacts and
    :class:`idyn.controllers.dynamics.StepDynamics` have checked: no second validation."""
    J = jac.rows if jac.rows is not None else jac.stacked()
    return checked_impact(M, v, J, jac.phi, jac.mu, dt)
