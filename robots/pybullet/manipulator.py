"""PyBullet testbed of the fixed-base manipulator grasping a heavy box (paper Sec. 8.4.1).

The arm is loaded from ``robots/assets/manipulator.urdf`` (fixed base); the box is a separate
PyBullet body. Friction: PyBullet multiplies the two bodies' coefficients, so the fingertip
links carry ``mu_grasp`` and the box, arm links and ground carry 1; fingertip-box contacts then
have mu_grasp, box-ground and arm-ground contacts 1 (docs/robots.md). Bullet clamps a combined
coefficient at 10, so mu_grasp = 100 acts as 10 in the simulator, and :meth:`contacts` reports
the 10 Bullet simulates (a controller told 100 plans friction Bullet cannot give). The contact slop
is 0 (:func:`.base.exact_gaps`), so Bullet's contacts obey the gap :meth:`contacts` reports.

The state is that of the combined model ``Manipulator.model_with_box``: the 11 arm and finger
joints, then the box free-flyer (pinocchio conventions).
"""
from __future__ import annotations

import itertools

import numpy as np
import pinocchio as pin
import pybullet as pb

from idyn.contact import contact_batch
from idyn.errors import InvalidInputError

from ..manipulator import BOX_FRAME, GROUND_MU, manipulator
from .base import (BULLET_MAX_FRICTION, BodyLink, MultiBodyMap, SphereProbe, StateReader, Testbed, base_raw,
                   com_from_free_flyer, exact_gaps, owner_pairs)
from .terrain import Terrain, simulated_mu

#: default margin (m) within which a fingertip or box corner is a contact candidate
CONTACT_MARGIN = 0.005


class ManipulatorTestbed(Testbed):
    """The 11-DOF manipulator and its box in their own PyBullet client, torque controlled."""

    #: (m) :meth:`contacts` reports the features within this gap (:class:`idyn.robots.testbed.Testbed`)
    contact_margin = CONTACT_MARGIN

    def __init__(self, mu_grasp=100.0, dt: float = 0.001, gui: bool = False):
        self.mu_grasp = simulated_mu(mu_grasp)
        #: the fingertip-box coefficient Bullet simulates, which :meth:`contacts` reports
        self.mu_simulated = min(self.mu_grasp, BULLET_MAX_FRICTION)
        self.description = manipulator()
        super().__init__(dt, gui)
        try:
            exact_gaps(self.client)
            d = self.description
            self._start(MultiBodyMap(self.client, d.model, d.urdf))
            self.ground = Terrain(self.client, "rigid", GROUND_MU)
            half = d.box_side / 2
            shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[half] * 3, physicsClientId=self.client)
            self.box = pb.createMultiBody(d.box_mass, shape, physicsClientId=self.client)
        except Exception:
            self.close()
            raise
        pb.changeDynamics(self.box, -1, lateralFriction=1.0, restitution=0.0, linearDamping=0.0,
                          angularDamping=0.0, localInertiaDiagonal=np.diag(d.box_inertia).tolist(),
                          physicsClientId=self.client)
        self.model = d.model_with_box
        self._tips = list(d.fingertips.values())
        self._tip_links = [self.robot.link_index(t.link) for t in self._tips]
        for link in self._tip_links:
            pb.changeDynamics(self.robot.body, link, lateralFriction=self.mu_grasp, physicsClientId=self.client)
        self._tip_ids = [d.model.frame_id(t.link) for t in self._tips]
        self._data = d.model.pinocchio_model.createData()
        self._probes = {r: SphereProbe(self.client, r) for r in {t.radius for t in self._tips}}
        self._corners = np.array(list(itertools.product((-half, half), repeat=3)))
        self._na_q = d.model.nq
        arm = self.robot
        self._reader = StateReader(arm.iq, arm.iv, self.model.nq, self.model.nv, (d.model.nq, d.model.nv),
                                   pin.SE3.Identity())
        self.reset()

    # ---------------------------------------------------------------- state
    def reset(self, q=None, v=None):
        """Set the combined state (default: reference pose q0 holding the box, at rest)."""
        d = self.description
        q = d.combined_q(d.q0) if q is None else self.model.check_q(q).copy()
        v = np.zeros(self.model.nv) if v is None else self.model.check_v(v).copy()
        n = self._na_q
        self.robot.write(q[:n], v[:n])
        com, lin, ang = com_from_free_flyer(q[n:], v[n:], pin.SE3.Identity())
        xyzquat = pin.SE3ToXYZQUAT(com)
        pb.resetBasePositionAndOrientation(self.box, xyzquat[:3].tolist(), xyzquat[3:].tolist(),
                                           physicsClientId=self.client)
        pb.resetBaseVelocity(self.box, lin.tolist(), ang.tolist(), physicsClientId=self.client)
        self._reset_time()
        return self.state()

    def _read(self):
        raw = self.robot.raw_state()
        raw += base_raw(self.client, self.box)
        return self._reader.read(raw)

    # ---------------------------------------------------------------- contacts
    def contacts(self, margin: float = CONTACT_MARGIN) -> list:
        """Fingertip spheres against the box faces (body_b = "box"), then box corners near the
        ground (body_a = "box", body_b = None), each with its signed gap phi.

        Fingertip contacts: point = the closest point on the box, normal = from the box towards
        the fingertip (the direction of the box's force on the fingertip), mu = the coefficient
        Bullet simulates, ``min(mu_grasp, 10)`` (:data:`BULLET_MAX_FRICTION`); phi = the distance,
        which Bullet's solver uses as the gap (contact slop 0, :func:`exact_gaps`).
        """
        margin = float(margin)
        if not (np.isfinite(margin) and margin >= 0):
            raise InvalidInputError(f"margin must be finite and >= 0, got {margin}")
        q = self.state().q
        pin.framesForwardKinematics(self.description.model.pinocchio_model, self._data, q[:self._na_q])
        body_a, body_b, points, normals, mus, gaps, owners = [], [], [], [], [], [], []
        for tip, fid, link in zip(self._tips, self._tip_ids, self._tip_links):
            centre = self._data.oMf[fid].act(tip.offset)
            cp = self._probes[tip.radius].closest(centre, self.box, margin)
            if cp is not None:
                body_a.append(tip.link), body_b.append(BOX_FRAME), mus.append(self.mu_simulated)
                points.append(cp.point_on_b), normals.append(cp.normal), gaps.append(cp.distance)
                owners.append((BodyLink(self.robot.body, link), BodyLink(self.box)))
        box = pin.XYZQUATToSE3(q[self._na_q:])
        for corner in self._corners:
            p = box.act(corner)
            if p[2] <= margin:
                body_a.append(BOX_FRAME), body_b.append(None), mus.append(GROUND_MU)
                points.append((p[0], p[1], 0.0)), normals.append((0.0, 0.0, 1.0)), gaps.append(p[2])
                owners.append((BodyLink(self.box), BodyLink(self.ground.body)))
        m = len(body_a)
        out, points, frames = contact_batch(body_a, np.reshape(points, (m, 3)), np.reshape(normals, (m, 3)),
                                            mus, gaps, body_b)
        self._remember(out, owner_pairs(owners), points, frames)
        return list(out)

    def sensed_contact_forces(self) -> np.ndarray:
        """(n, 3) forces [normal, s, t] in N on body A of each contact of the last
        :meth:`contacts` list, from PyBullet's normal and friction forces of the last step."""
        return self._sensed(self._points, self._frames, self._pairs, 0.02)

    def sensed_normal_total(self) -> float:
        """Sum of PyBullet normal forces between the fingertips and the box (N)."""
        return sum(self._normal_total(BodyLink(self.robot.body, link), BodyLink(self.box))
                   for link in self._tip_links)
