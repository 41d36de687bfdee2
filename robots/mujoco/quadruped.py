"""MuJoCo testbed for any point-footed quadruped on a rigid plane.

Same constructor, methods and conventions as :class:`robots.pybullet.QuadrupedTestbed`
(:class:`robots.testbed.Testbed`). The MuJoCo model is compiled from the quadruped's own URDF
(:func:`.base.urdf_spec`), on a ground plane whose contact parameters make rigid ground behave
rigidly (module constants, measured in docs/robots.md):

* ``solref`` (2 dt, 1): the stiffest critically damped constraint MuJoCo allows at the step dt
  (its time constant must be at least twice the step);
* ``solimp`` (0.99, 0.999, 1 mm): impedance near 1, so little of the constraint is softened;
* elliptic friction cones (condim 3: the Coulomb cone, as PyBullet's cone friction), with
  ``noslip_iterations`` to remove the creep of MuJoCo's soft friction at standstill.

Only terrain ``"rigid"`` exists here: MuJoCo's compliant contact is set per contact as a time
constant or as stiffness per unit of effective mass, not in N/m as the compliant terrain of
:mod:`robots.terrain`, and a heightfield has one friction coefficient, not one per cell (the
rough terrain).
"""
from __future__ import annotations

import math

import numpy as np

from idyn.contact import CONTACT_GAP, framed_contacts_prechecked
from idyn.errors import InvalidInputError, ModelLoadError
from idyn.state import RobotState

from ..quadruped import resolve_quadruped
from ..terrain import simulated_mu
from .base import GRAVITY, MjRobot, Testbed, mujoco, urdf_spec

#: (m) a foot within this signed distance of the ground is reported as a contact: touching
#: (idyn.contact.CONTACT_GAP). MuJoCo has no speculative contacts: it pushes only on contacts that
#: penetrate at the start of a step, so a foot still above the ground gets no force in the coming
#: step, however fast it closes. Reported, such a foot is one the controller plans to stop within
#: the step; with PyBullet's 1 cm, qp-coulomb's trot had 6.4 % (LINKS) and 7.4 % (a1) normal
#: force error against 3.0 % and 1.8 % with this margin (docs/robots.md).
CONTACT_MARGIN = CONTACT_GAP
#: ground contact: solref time constant in steps dt, damping ratio; solimp; noslip iterations
SOLREF_STEPS, SOLREF_DAMPING = 2.0, 1.0
SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)
NOSLIP_ITERATIONS = 10
#: constraint solver iterations and tolerance
SOLVER_ITERATIONS, SOLVER_TOLERANCE = 100, 1e-10


class QuadrupedTestbed(Testbed):
    """A quadruped in MuJoCo, torque controlled, on a rigid plane.

    Parameters
    ----------
    robot: ``"links"``, ``"a1"`` or a :class:`robots.Quadruped`.
    terrain: ``"rigid"`` (the only terrain of this backend).
    mu: Coulomb friction of the plane (``math.inf`` = no slip, simulated as 100).
    seed: accepted for parity with the other backends (no random terrain here).
    dt: time step (s).
    gui: must be False (use ``mujoco.viewer`` on :attr:`robot` ``.mj``/``.data`` to watch).
    contact_margin: (m) feet within this signed distance of the ground are reported.
    """

    def __init__(self, robot="links", terrain: str = "rigid", mu=math.inf, seed: int = 0,
                 dt: float = 0.001, gui: bool = False, contact_margin: float = CONTACT_MARGIN):
        if gui:
            raise InvalidInputError("the MuJoCo testbed has no built-in viewer; open mujoco.viewer on it")
        if terrain != "rigid":
            raise InvalidInputError(f"the MuJoCo backend has only the rigid terrain, not {terrain!r}")
        self.contact_margin = float(contact_margin)
        if not (math.isfinite(self.contact_margin) and self.contact_margin >= 0):
            raise InvalidInputError(f"contact_margin must be finite and >= 0, got {contact_margin}")
        super().__init__(dt)
        self.quadruped = resolve_quadruped(robot)
        self.model = model = self.quadruped.model
        self.mu = simulated_mu(mu)
        self.legs = list(self.quadruped.feet)
        self._feet = [self.quadruped.feet[leg] for leg in self.legs]
        spec = urdf_spec(self.quadruped.urdf, floating_base=True)
        spec.option.timestep = self.dt
        spec.option.gravity = [0.0, 0.0, -GRAVITY]
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        spec.option.noslip_iterations = NOSLIP_ITERATIONS
        spec.option.iterations = SOLVER_ITERATIONS
        spec.option.tolerance = SOLVER_TOLERANCE
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
        ground = spec.worldbody.add_geom()
        ground.name = "ground"
        ground.type = mujoco.mjtGeom.mjGEOM_PLANE
        ground.size = [0.0, 0.0, 1.0]
        ground.contype, ground.conaffinity, ground.priority, ground.condim = 1, 1, 1, 3
        ground.friction = [self.mu, 0.0, 0.0]
        ground.solref = [SOLREF_STEPS * self.dt, SOLREF_DAMPING]
        ground.solimp = list(SOLIMP)
        # every foot's sphere geom: detected within the margin (MuJoCo's gap, added to the
        # ground's 0), a force only when touching (MuJoCo's margin 0)
        names = [f.link for f in self._feet]
        foot_geoms = []
        for f in self._feet:
            body = spec.body(f.link)
            sphere = mujoco.mjtGeom.mjGEOM_SPHERE
            spheres = [] if body is None else [g for g in body.geoms if g.type == sphere]
            if not spheres:
                raise ModelLoadError(f"MuJoCo's model of {self.quadruped.urdf} has no sphere on {f.link}")
            spheres[0].name = f"{f.link}_sphere"
            spheres[0].margin, spheres[0].gap = 0.0, self.contact_margin
            foot_geoms.append(spheres[0].name)
        self._start(MjRobot(model, spec, self.dt))
        m = self.robot.mj
        self._ground = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "ground")
        self._foot_geoms = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in foot_geoms])
        self._foot_names = names
        self.reset()

    @property
    def weight(self) -> float:
        """Robot weight (N) from MuJoCo's masses."""
        return self.robot.mass * GRAVITY

    def reset(self, q=None, v=None) -> RobotState:
        """Put the robot at ``q`` (default: ``q_stand`` moved vertically so the lowest foot
        touches the plane) with velocity ``v`` (0)."""
        model = self.model
        stand = q is None
        q = self.quadruped.q_stand.copy() if stand else model.check_q(q).copy()
        v = np.zeros(model.nv) if v is None else model.check_v(v).copy()
        if stand:
            q[2] -= self.foot_gaps(q).min()
        self.robot.write(q, v)
        self._restart()
        return self.state()

    def foot_gaps(self, q) -> np.ndarray:
        """Signed gap of each foot sphere to the plane z = 0, legs in LF, RF, LH, RH order."""
        centres = self.quadruped.foot_centres(q)
        return centres[:, 2] - np.array([f.radius for f in self._feet])

    def contacts(self) -> list:
        """Every foot whose sphere is within ``contact_margin`` of the ground, as an
        :class:`idyn.Contact` (body_a = the foot frame, body_b = None): point = the closest
        ground point, normal = from the ground to the foot, mu = the ground's, phi = the signed
        gap, from MuJoCo's collision at the current state (its deepest contact for the foot).
        Feet in LF, RF, LH, RH order among those present; remembered for
        :meth:`sensed_contact_forces`."""
        d = self.robot.data
        con = d.contact
        g1, g2, dist = con.geom1, con.geom2, con.dist
        found, rows, mus, owners = [], [], [], []
        for i, geom in enumerate(self._foot_geoms):
            ground = self._ground
            hits = np.flatnonzero(((g1 == geom) & (g2 == ground)) | ((g2 == geom) & (g1 == ground)))
            hits = hits[dist[hits] <= self.contact_margin]
            if not hits.size:
                continue
            k = hits[np.argmin(dist[hits])]
            n = con.frame[k, :3] * (1.0 if g1[k] == ground else -1.0)
            rows.append(np.concatenate((con.pos[k] - 0.5 * dist[k] * n, n, [dist[k]])))
            mus.append(con.friction[k, 0])
            found.append(self._foot_names[i])
            owners.append((geom, self._ground))
        rows = np.array(rows, dtype=float).reshape(-1, 7)
        out, points, frames = framed_contacts_prechecked(found, (None,) * len(found), rows,
                                                    np.array(mus, dtype=float))
        self._remember(out, np.array(owners, dtype=int).reshape(-1, 2), points, frames)
        return list(out)

    def sensed_normal_total(self) -> float:
        """Sum of MuJoCo's normal forces between the robot and the ground in the last step (N)."""
        return self._normal_total(range(self.robot.mj.ngeom), [self._ground])
