"""MuJoCo testbed for any point-footed quadruped on a rigid or compliant plane or the rough heightfield.

Same constructor, methods and conventions as :class:`idyn.robots.pybullet.QuadrupedTestbed`
(:class:`idyn.robots.testbed.Testbed`). The MuJoCo model is compiled from the quadruped's own URDF
(:func:`.base.urdf_spec`), on a ground plane whose contact parameters make rigid ground behave
rigidly (module constants, measured in docs/robots.md):

* ``solref`` (2 dt, 1): the stiffest critically damped constraint MuJoCo allows at the step dt
  (its time constant must be at least twice the step);
* ``solimp`` (0.99, 0.999, 1 mm): impedance near 1, so little of the constraint is softened;
* elliptic friction cones (condim 3: the Coulomb cone, as PyBullet's cone friction), with
  ``noslip_iterations`` to remove the creep of MuJoCo's soft friction at standstill.

Terrains: ``"rigid"``, the plane; ``"rough"``, the seeded heights of
:func:`idyn.robots.terrain.rough_heightmap` as a MuJoCo heightfield (MuJoCo triangulates the grid
where idyn.sim interpolates it bilinearly) with the same per-cell friction: a heightfield has one
coefficient, so, as the PyBullet testbed does, each foot takes the friction of the cell under its
centre (:class:`idyn.sim.Heightmap`'s lookup) before every collision, and the feet outrank the
ground.

``"compliant"`` is the nearest MuJoCo has to the penalty ground of PyBullet and idyn.sim (a spring
of W / (4 x 1 mm) N/m per foot with critical damping, :mod:`idyn.robots.terrain`): MuJoCo's
softness is set per unit of effective mass, not in N/m.  A soft contact at rest carrying ``f``
sinks ``r = R f / (d k)`` (MuJoCo's documentation, "Soft constraints": ``R f = a_ref`` with
``a_ref = -d k r`` at rest), with the regulariser ``R = (1 - d) / d`` times MuJoCo's approximate
inverse effective mass of the contact (``efc_R``), impedance ``d`` (:data:`COMPLIANT_IMPEDANCE`,
constant) and, for a critically damped time constant ``tau``, ``k = 1 / (d tau)^2``:
``r = R f d tau^2``.  The testbed reads ``R`` at the feet of the standing robot and takes the
``tau`` that gives ``f = W / 4`` the sink :data:`idyn.robots.terrain.COMPLIANT_SINK` on average.
"""
from __future__ import annotations

import math

import numpy as np

from idyn.contact import CONTACT_GAP, contact_batch
from idyn.errors import InvalidInputError, ModelLoadError
from idyn.sim.geometry import Heightmap, sphere_heightmap
from idyn.state import RobotState

from ..quadruped import resolve_quadruped
from ..terrain import COMPLIANT_SINK, ROUGH_SIZE, rough_friction, rough_heightmap, simulated_mu
from .base import GRAVITY, MjRobot, Testbed, mujoco, urdf_spec

#: (m) a foot within this signed distance of the ground is reported as a contact: touching
#: (idyn.contact.CONTACT_GAP). MuJoCo has no speculative contacts: it pushes only on contacts that
#: penetrate at the start of a step, so a foot still above the ground gets no force in the coming
#: step, however fast it closes. Reported, such a foot is one the controller plans to stop within
#: the step, which MuJoCo will not do (the measured effect on the force error: docs/robots.md).
CONTACT_MARGIN = CONTACT_GAP
#: ground contact: solref time constant in steps dt, damping ratio; solimp; noslip iterations
SOLREF_STEPS, SOLREF_DAMPING = 2.0, 1.0
SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)
NOSLIP_ITERATIONS = 10
#: (m) the default stance's lowest foot starts this deep in the ground: MuJoCo's contacts act only
#: strictly below zero, and a stance at gap 0 (or 1e-17 above, by round-off) starts with a step
#: of free fall in which the held torques splay the light legs (LINKS: feet slipping at 0.17 m/s)
STAND_DEPTH = 1e-9
#: (m) the farthest gap :meth:`QuadrupedTestbed.foot_gaps` measures (MuJoCo's distance to a
#: heightfield is unreliable beyond a few centimetres: 0.97 m reported for a foot 4 cm above)
GAP_RANGE = 0.05
#: compliant ground: MuJoCo's constant impedance d (solimp d0 = dwidth; module docstring)
COMPLIANT_IMPEDANCE = 0.9
#: constraint solver iterations and tolerance
SOLVER_ITERATIONS, SOLVER_TOLERANCE = 100, 1e-10


def configure_solver(spec, dt: float) -> None:
    """The options every idyn MuJoCo testbed shares: time step ``dt``, gravity, elliptic
    friction cones, the no-slip pass and the solver's iterations and tolerance above, and MuJoCo's
    semi-implicit Euler integrator."""
    spec.option.timestep = dt
    spec.option.gravity = [0.0, 0.0, -GRAVITY]
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.noslip_iterations = NOSLIP_ITERATIONS
    spec.option.iterations = SOLVER_ITERATIONS
    spec.option.tolerance = SOLVER_TOLERANCE
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER


class QuadrupedTestbed(Testbed):
    """A quadruped in MuJoCo, torque controlled, on a rigid or compliant plane or the rough heightfield.

    Parameters
    ----------
    robot: ``"links"``, ``"a1"`` or a :class:`idyn.robots.Quadruped`.
    terrain: ``"rigid"``, ``"compliant"`` (module docstring) or ``"rough"``.
    mu: Coulomb friction of the plane (``math.inf`` = no slip, simulated as 100); ignored on
        rough terrain, whose friction is per cell.
    seed: seed of the rough terrain (heights and frictions).
    dt: time step (s).
    gui: must be False (use ``mujoco.viewer`` on :attr:`robot` ``.mj``/``.data`` to watch).
    contact_margin: (m) feet within this signed distance of the ground are reported.
    """

    def __init__(self, robot="links", terrain: str = "rigid", mu=math.inf, seed: int = 0,
                 dt: float = 0.001, gui: bool = False, contact_margin: float = CONTACT_MARGIN):
        if gui:
            raise InvalidInputError("the MuJoCo testbed has no built-in viewer; open mujoco.viewer on it")
        if terrain not in ("rigid", "compliant", "rough"):
            raise InvalidInputError(f"terrain must be 'rigid', 'compliant' or 'rough', got {terrain!r}")
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
        configure_solver(spec, self.dt)
        self.terrain_kind = terrain
        ground = spec.worldbody.add_geom()
        ground.name = "ground"
        self.heightmap = None
        if terrain == "rough":
            heights = rough_heightmap(seed)
            self.heightmap = Heightmap.centred(heights, ROUGH_SIZE, rough_friction(seed, heights.shape[0]))
            top = float(heights.max())
            field = spec.add_hfield()
            field.name, field.nrow, field.ncol = "rough", heights.shape[0], heights.shape[1]
            field.size = [ROUGH_SIZE / 2, ROUGH_SIZE / 2, top, 0.05]
            field.userdata = (heights / top).ravel().tolist()     # row iy at y = -size/2 + iy spacing
            ground.type, ground.hfieldname = mujoco.mjtGeom.mjGEOM_HFIELD, "rough"
        else:
            ground.type, ground.size = mujoco.mjtGeom.mjGEOM_PLANE, [0.0, 0.0, 1.0]
        ground.contype, ground.conaffinity, ground.priority, ground.condim = 1, 1, 1, 3
        ground.friction = [self.mu, 0.0, 0.0]
        contact = {"solref": [SOLREF_STEPS * self.dt, SOLREF_DAMPING], "solimp": list(SOLIMP)}
        if terrain == "compliant":     # the time constant is set once the model is compiled
            d = COMPLIANT_IMPEDANCE
            contact["solimp"] = [d, d, SOLIMP[2], SOLIMP[3], SOLIMP[4]]
        ground.solref, ground.solimp = contact["solref"], contact["solimp"]
        # every foot's sphere geom: detected within the margin (MuJoCo's gap, added to the
        # ground's 0), a force only when touching (MuJoCo's margin 0)
        names = [f.link for f in self._feet]
        foot_geoms = []
        for f in self._feet:
            body = spec.body(f.link)
            if body is None:
                raise ModelLoadError(f"MuJoCo's model of {self.quadruped.urdf} has no body {f.link}")
            spheres = [g for g in body.geoms if g.type == mujoco.mjtGeom.mjGEOM_SPHERE]
            if not spheres:     # a mesh foot: the description's sphere (robots.from_urdf) replaces it
                for g in body.geoms:
                    g.contype, g.conaffinity = 0, 0
                spheres = [body.add_geom()]
                spheres[0].type, spheres[0].size = mujoco.mjtGeom.mjGEOM_SPHERE, [f.radius, 0.0, 0.0]
                spheres[0].pos = np.asarray(f.offset, dtype=float).reshape(3)
                spheres[0].contype, spheres[0].conaffinity, spheres[0].priority = 1, 0, 0
                spheres[0].mass = 0.0        # the URDF link's inertial stays the body's
            spheres[0].name = f"{f.link}_sphere"
            spheres[0].margin, spheres[0].gap = 0.0, self.contact_margin
            if self.heightmap is not None:      # the feet's per-cell friction is the contact's
                spheres[0].priority, spheres[0].condim = 2, 3
                spheres[0].solref, spheres[0].solimp = contact["solref"], contact["solimp"]
            foot_geoms.append(spheres[0].name)
        self._start(MjRobot(model, spec, self.dt))
        m = self.robot.mj
        self._ground = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "ground")
        self._foot_geoms = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in foot_geoms])
        self._foot_names = names
        self._scratch = mujoco.MjData(m)
        if terrain == "compliant":
            self._soften()
        self.reset()

    def _soften(self) -> None:
        """Set the compliant ground's time constant from the inverse effective masses MuJoCo
        gives the feet of the standing robot (module docstring), at least 2 dt."""
        self.reset()
        m, d = self.robot.mj, self.robot.data
        con = d.contact
        rows = [con.efc_address[k] for k in range(d.ncon)
                if con.efc_address[k] >= 0 and self._ground in (con.geom1[k], con.geom2[k])]
        if not rows:
            raise ModelLoadError(f"no foot of {self.quadruped.urdf} touches the ground when standing")
        R = float(np.mean(d.efc_R[rows]))          # the normal rows (first of each contact's block)
        tau = math.sqrt(COMPLIANT_SINK / (R * COMPLIANT_IMPEDANCE * self.weight / len(self._feet)))
        m.geom_solref[self._ground] = [max(tau, SOLREF_STEPS * self.dt), 1.0]
        self.compliant_timeconst = float(m.geom_solref[self._ground, 0])

    @property
    def weight(self) -> float:
        """Robot weight (N) from MuJoCo's masses."""
        return self.robot.mass * GRAVITY

    def reset(self, q=None, v=None) -> RobotState:
        """Put the robot at ``q`` (default: ``q_stand`` moved vertically so the lowest foot
        touches the ground, :data:`STAND_DEPTH` deep) with velocity ``v`` (0)."""
        model = self.model
        stand = q is None
        q = self.quadruped.q_stand.copy() if stand else model.check_q(q).copy()
        v = np.zeros(model.nv) if v is None else model.check_v(v).copy()
        if stand:
            # lower until the first foot touches: first on the plane z = 0 or idyn.sim's bilinear
            # heights, then on MuJoCo's own surface (iterated: on a slope, lowering by the gap
            # closes only its vertical part)
            centres = self.quadruped.foot_centres(q)
            if self.heightmap is None:
                q[2] -= min(c[2] - f.radius for c, f in zip(centres, self._feet))
            else:
                q[2] -= min(sphere_heightmap(c, f.radius, self.heightmap).phi for c, f in zip(centres, self._feet))
            for _ in range(50):
                low = self.foot_gaps(q).min()
                q[2] -= low
                if abs(low) < 1e-12:
                    break
            q[2] -= STAND_DEPTH
        self.robot.write(q, v)
        self._restart()
        return self.state()

    def foot_gaps(self, q) -> np.ndarray:
        """Signed gap (MuJoCo's distance, at most :data:`GAP_RANGE`) of each foot sphere to the
        ground at ``q``, legs in LF, RF, LH, RH order (on a scratch copy of MuJoCo's data)."""
        m, d = self.robot.mj, self._scratch
        self.robot.write(self.model.check_q(q), np.zeros(self.model.nv), d)
        mujoco.mj_kinematics(m, d)
        return np.array([mujoco.mj_geomDistance(m, d, int(g), self._ground, GAP_RANGE, None)
                         for g in self._foot_geoms])

    def _before_collision(self) -> None:
        """Rough terrain: each foot takes the friction of the cell under its centre."""
        if self.heightmap is None:
            return
        m, d = self.robot.mj, self.robot.data
        mujoco.mj_kinematics(m, d)
        m.geom_friction[self._foot_geoms, 0] = self.heightmap.frictions_at(d.geom_xpos[self._foot_geoms])

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
        found, ks = [], []
        ground = self._ground
        for i, geom in enumerate(self._foot_geoms):
            hits = np.flatnonzero(((g1 == geom) & (g2 == ground)) | ((g2 == geom) & (g1 == ground)))
            hits = hits[dist[hits] <= self.contact_margin]
            if hits.size:
                ks.append(hits[np.argmin(dist[hits])])
                found.append(i)
        gaps = dist[ks]
        normals = con.frame[ks, :3] * np.where(g1[ks] == ground, 1.0, -1.0)[:, None]
        out, points, frames = contact_batch([self._foot_names[i] for i in found],
                                            con.pos[ks] - 0.5 * gaps[:, None] * normals, normals,
                                            con.friction[ks, 0], gaps)
        owners = np.column_stack((self._foot_geoms[found], np.full(len(found), ground))).astype(int)
        self._remember(out, owners.reshape(-1, 2), points, frames)
        return list(out)

    def sensed_normal_total(self) -> float:
        """Sum of MuJoCo's normal forces between the robot and the ground in the last step (N)."""
        return self._normal_total(range(self.robot.mj.ngeom), [self._ground])
