"""idyn.sim testbed of the fixed-base manipulator grasping a heavy box (paper Sec. 8.4.1).

Same constructor, methods and conventions as :class:`idyn.robots.pybullet.ManipulatorTestbed`: the
state is that of ``Manipulator.model_with_box`` (11 arm and finger joints, then the box
free-flyer); fingertip-box contacts have ``mu_grasp`` (100 = no slip), box and arm against the
ground mu = 1 (docs/robots.md). Unlike PyBullet, which clamps a combined friction at 10, mu = 100
is simulated as no-slip by every rigid model here, as the authors' simulator did.
"""
from __future__ import annotations

import numpy as np

from idyn.errors import InvalidInputError
from idyn.sim import Box, Plane, Simulator, Sphere, World

from ..manipulator import BOX_FRAME, GROUND_MU, manipulator
from ..terrain import simulated_mu
from .base import SimTestbed


class ManipulatorTestbed(SimTestbed):
    """The 11-DOF manipulator and its box in an :class:`idyn.sim.Simulator`, torque controlled.

    contact_model: a name of :data:`idyn.sim.MODELS` (default ``ap-lcp``, no-slip where
    mu >= 100).
    impacts: ``"step"`` or ``"passive"`` (:mod:`idyn.sim.impact`).
    """

    def __init__(self, mu_grasp=100.0, dt: float = 0.001, gui: bool = False,
                 contact_model: str = "ap-lcp", impacts: str = "step"):
        if gui:
            raise InvalidInputError("the idyn backend has no viewer; use --backend pybullet for a GUI")
        self.mu_grasp = simulated_mu(mu_grasp)
        self.description = d = manipulator()
        model = d.model_with_box
        tips = list(d.fingertips.values())
        shapes = [Sphere(t.link, t.radius, t.offset) for t in tips]
        shapes.append(Box(BOX_FRAME, np.full(3, d.box_side / 2)))
        friction = {(t.link, BOX_FRAME): self.mu_grasp for t in tips}
        world = World(model, shapes, [Plane(mu=GROUND_MU)], friction=friction, default_mu=GROUND_MU)
        super().__init__(Simulator(model, world, contact_model, dt, impacts=impacts))
        self._tip_links = {t.link for t in tips}
        self.reset()

    def reset(self, q=None, v=None):
        """Set the combined state (default: reference pose q0 holding the box, at rest)."""
        d = self.description
        q = d.combined_q(d.q0) if q is None else self.model.check_q(q).copy()
        v = np.zeros(self.model.nv) if v is None else self.model.check_v(v).copy()
        self._restart(q, v)
        return self.state()

    def sensed_normal_total(self) -> float:
        """Sum of the normal forces between the fingertips and the box in the last step (N)."""
        last = self.sim.last
        if last is None:
            return 0.0
        cs = last.contact_set
        return float(sum(f[0] for a, b, f in zip(cs.body_a, cs.body_b, last.forces)
                         if b == BOX_FRAME and a in self._tip_links))
