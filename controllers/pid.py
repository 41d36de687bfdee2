"""The configuration-space PID baseline of the paper (Sec. 7.3, Fig. 10).

The baseline has no contact model and no feed-forward dynamics: it applies the shared error
feedback of :mod:`controllers.feedback` (same gains as every other controller, kp 1e3, kv 10,
ki 1) as torques.  Those gains are accelerations, so they are mapped to torques through the
actuated joint-space inertia ``M_aa(q)``; this keeps one gain set meaningful across robots and
controllers (SPEC section 5).  ``gravity_compensation=True`` adds ``g_a(q)`` (off by default:
the paper's baseline is pure error feedback).
"""
from __future__ import annotations

import numpy as np

from idyn.errors import InvalidInputError

from .base import Controller, Solution, register


@register
class PID(Controller):
    name = "pid"
    predicts_contact_forces = False

    def __init__(self, model, *, gravity_compensation: bool = False, **common):
        if common.get("feedback") is False:
            raise InvalidInputError("the PID controller is its feedback; feedback=False is meaningless")
        super().__init__(model, **common)
        self.gravity_compensation = gravity_compensation

    def command(self, q, v, desired) -> np.ndarray:
        return self.feedback.correction(q, v, desired.q, desired.v, self.dt)

    def _solve(self, q, v, vdot, contacts) -> Solution:
        a = self.model.actuated_v
        Maa = self.model.mass_matrix(q)[np.ix_(a, a)]
        tau = Maa @ vdot
        if self.gravity_compensation:
            tau += self.model.gravity_forces(q)[a]
        return Solution(tau, np.zeros((len(contacts), 3)), None)
