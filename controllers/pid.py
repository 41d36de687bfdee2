"""The configuration-space PID baseline of the paper (Sec. 7.3, Fig. 10): joint torques from
joint errors, with no contact model and no feed-forward dynamics.

    tau = kp (q_des - q) + kv (qd_des - qd) + ki * integral (q_des - q) dt

The gains are *torque* gains (N m/rad, N m s/rad, N m/(rad s)). Their defaults are LINKS's, for
every robot: the authors' joint PID gains for the 4.8 kg LINKS (Pacer,
``example/models/links-moby/vars.xml``, joint-PID-controller: kp 20, kv 0.1, ki 0.003 on every
joint), also used for the paper's grasping arm. Give another robot its own (``kp``, ``kv``,
``ki``; ``--controller-option kp=...``): the torque a joint needs to hold a stance grows with
the robot's mass times its leg length, so LINKS's gains let a heavier robot sag. The inverse-dynamics controllers instead add the
shared feedback of :mod:`idyn.controllers.feedback` (kp 1e3, kv 63.2, ki 1) to a desired
*acceleration*; mapping those acceleration gains through the legs' own joint inertia (about
1e-4 kg m^2) gave about 0.1 N m/rad, far too weak to carry LINKS (it sagged to 0.04 m), which
is why the baseline has gains of its own. ``gravity_compensation=True`` adds ``g_a(q)`` (off by
default: the paper's baseline is pure error feedback).
"""
from __future__ import annotations

import numpy as np

from idyn.errors import InvalidInputError

from .base import Controller, Solution, register

#: Pacer's joint-PID gains for LINKS (N m/rad, N m s/rad, N m/(rad s)).
PACER_LINKS_GAINS = {"kp": 20.0, "kv": 0.1, "ki": 0.003}


@register
class PID(Controller):
    name = "pid"
    predicts_contact_forces = False

    def __init__(self, model, *, kp=PACER_LINKS_GAINS["kp"], kv=PACER_LINKS_GAINS["kv"],
                 ki=PACER_LINKS_GAINS["ki"], gravity_compensation: bool = False, **common):
        if common.get("feedback") is False:
            raise InvalidInputError("the PID controller is its feedback; feedback=False is meaningless")
        super().__init__(model, kp=kp, kv=kv, ki=ki, **common)
        self.gravity_compensation = gravity_compensation

    def command(self, q, v, desired) -> np.ndarray:
        """The PID torque (the base class calls it the commanded 'acceleration')."""
        return self.feedback.correction(q, v, desired.q, desired.v, self.dt)

    def _solve(self, q, v, tau_pid, contacts) -> Solution:
        tau = np.array(tau_pid, dtype=float)
        if self.gravity_compensation:
            tau += self.model.gravity_forces(q)[self.model.actuated_v]
        return Solution(tau, np.zeros((len(contacts), 3)), None)
