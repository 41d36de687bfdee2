"""MuJoCo testbed of the fixed-base manipulator grasping a heavy box (paper Sec. 8.4.1).

Same constructor, methods and conventions as :class:`idyn.robots.pybullet.ManipulatorTestbed`
(:class:`idyn.robots.testbed.Testbed`): the state is that of ``Manipulator.model_with_box`` (the 11
arm and finger joints, then the box free-flyer, MuJoCo's free joint of the same name). Contact
parameters are the quadruped's rigid ones (:mod:`.quadruped`) on every geom. Friction
(docs/robots.md): fingertip-box ``mu_grasp`` (MuJoCo has no cap: 100 is simulated as 100), box
and arm against the ground 1; MuJoCo takes a contact's parameters from the geom of higher
priority (ground 3, fingertips 2, box 1, other arm geoms 0).

Reported contacts: fingertip spheres against the box from MuJoCo's collision at the current
state, then the box corners against the plane z = 0 from the box pose (as PyBullet), each within
``contact_margin`` (default touching, as the MuJoCo quadruped and for the same reason).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pinocchio as pin

from idyn.contact import contact_batch
from idyn.errors import InvalidInputError, ModelLoadError
from idyn.state import RobotState

from ..manipulator import BOX_FRAME, GROUND_MU, manipulator
from ..terrain import simulated_mu
from .base import MjRobot, Testbed, mujoco, urdf_spec
from .quadruped import CONTACT_MARGIN, SOLIMP, SOLREF_DAMPING, SOLREF_STEPS, configure_solver


class ManipulatorTestbed(Testbed):
    """The 11-DOF manipulator and its box in MuJoCo, torque controlled."""

    def __init__(self, mu_grasp=100.0, dt: float = 0.001, gui: bool = False,
                 contact_margin: float = CONTACT_MARGIN):
        if gui:
            raise InvalidInputError("the MuJoCo testbed has no built-in viewer; open mujoco.viewer on it")
        self.contact_margin = float(contact_margin)
        if not (math.isfinite(self.contact_margin) and self.contact_margin >= 0):
            raise InvalidInputError(f"contact_margin must be finite and >= 0, got {contact_margin}")
        super().__init__(dt)
        self.mu_grasp = simulated_mu(mu_grasp)
        self.description = d = manipulator()
        self.model = d.model_with_box
        spec = urdf_spec(d.urdf, floating_base=False)
        configure_solver(spec, self.dt)
        self._tips = list(d.fingertips.values())
        tip_geoms = []
        for tip in self._tips:
            body = spec.body(tip.link)
            spheres = [] if body is None else [g for g in body.geoms if g.type == mujoco.mjtGeom.mjGEOM_SPHERE]
            if not spheres:
                raise ModelLoadError(f"MuJoCo's model of {d.urdf} has no sphere on {tip.link}")
            spheres[0].name = f"{tip.link}_sphere"
            spheres[0].priority, spheres[0].friction = 2, [self.mu_grasp, 0.0, 0.0]
            spheres[0].margin, spheres[0].gap = 0.0, self.contact_margin
            tip_geoms.append(spheres[0].name)
        ground = spec.worldbody.add_geom()
        ground.name, ground.type, ground.size = "ground", mujoco.mjtGeom.mjGEOM_PLANE, [0.0, 0.0, 1.0]
        ground.contype, ground.conaffinity, ground.priority = 1, 1, 3
        ground.friction = [GROUND_MU, 0.0, 0.0]
        box_body = spec.worldbody.add_body()
        box_body.name = BOX_FRAME
        box_body.add_freejoint().name = f"{BOX_FRAME}_joint"
        box = box_body.add_geom()
        box.name, box.type, box.size = "box", mujoco.mjtGeom.mjGEOM_BOX, [d.box_side / 2] * 3
        box_body.mass, box_body.explicitinertial = d.box_mass, True     # a solid cube's inertia
        box_body.inertia = np.diag(d.box_inertia).tolist()
        box.contype, box.conaffinity, box.priority = 1, 1, 1
        box.friction = [GROUND_MU, 0.0, 0.0]
        for geom in spec.geoms:
            geom.condim = 3
            geom.solref = [SOLREF_STEPS * self.dt, SOLREF_DAMPING]
            geom.solimp = list(SOLIMP)
        self._start(MjRobot(self.model, spec, self.dt))
        m = self.robot.mj
        name2id = lambda n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, n)  # noqa: E731
        self._tip_geoms = [name2id(g) for g in tip_geoms]
        self._box, self._ground = name2id("box"), name2id("ground")
        self._corners = np.array(list(itertools.product((-d.box_side / 2, d.box_side / 2), repeat=3)))
        self._arm_nq = d.model.nq
        self.reset()

    def reset(self, q=None, v=None) -> RobotState:
        """Set the combined state (default: reference pose q0 holding the box, at rest)."""
        d = self.description
        q = d.combined_q(d.q0) if q is None else self.model.check_q(q).copy()
        v = np.zeros(self.model.nv) if v is None else self.model.check_v(v).copy()
        self.robot.write(q, v)
        self._restart()
        return self.state()

    def contacts(self) -> list:
        """Fingertip spheres against the box (body_b = "box"; normal from the box towards the
        fingertip, mu = mu_grasp), then the box corners on the ground (body_a = "box", body_b =
        None), each within ``contact_margin``, with its signed gap phi. Remembered for
        :meth:`sensed_contact_forces`."""
        con = self.robot.data.contact
        g1, g2, dist = con.geom1, con.geom2, con.dist
        body_a, body_b, rows, mus, owners = [], [], [], [], []
        for tip, geom in zip(self._tips, self._tip_geoms):
            hits = np.flatnonzero(((g1 == geom) & (g2 == self._box)) | ((g2 == geom) & (g1 == self._box)))
            hits = hits[dist[hits] <= self.contact_margin]
            if not hits.size:
                continue
            k = hits[np.argmin(dist[hits])]
            n = con.frame[k, :3] * (1.0 if g1[k] == self._box else -1.0)
            rows.append(np.concatenate((con.pos[k] - 0.5 * dist[k] * n, n, [dist[k]])))
            mus.append(con.friction[k, 0])
            body_a.append(tip.link)
            body_b.append(BOX_FRAME)
            owners.append((geom, self._box))
        box = pin.XYZQUATToSE3(self.state().q[self._arm_nq:])
        for corner in self._corners:
            p = box.act(corner)
            if p[2] <= self.contact_margin:
                rows.append([p[0], p[1], 0.0, 0.0, 0.0, 1.0, p[2]])
                mus.append(GROUND_MU)
                body_a.append(BOX_FRAME)
                body_b.append(None)
                owners.append((self._box, self._ground))
        rows = np.array(rows, dtype=float).reshape(-1, 7)
        out, points, frames = contact_batch(body_a, rows[:, :3], rows[:, 3:6], mus, rows[:, 6], body_b)
        self._remember(out, np.array(owners, dtype=int).reshape(-1, 2), points, frames)
        return list(out)

    def sensed_normal_total(self) -> float:
        """Sum of the normal forces between the fingertips and the box in the last step (N)."""
        return self._normal_total(self._tip_geoms, [self._box])
