"""idyn.sim testbed for any point-footed quadruped on rigid, compliant or rough terrain.

Same constructor, methods and conventions as :class:`idyn.robots.pybullet.QuadrupedTestbed`, with the
terrains of :mod:`idyn.robots.terrain` rebuilt as idyn.sim geometry:

* ``rigid``: a plane with friction mu (inf is simulated as 100, i.e. no slip);
* ``compliant``: the same plane with the ``penalty`` contact model, stiffness and damping
  computed as for PyBullet (sink of 1 mm under the robot's weight on four feet, critically
  damped per foot);
* ``rough``: the same seeded heightmap (:func:`idyn.robots.terrain.rough_heightmap`) with
  per-cell friction, bilinear heights and gradient normals.

The contact model defaults to ``ap-lcp`` on rigid terrain (no-slip contacts where mu >= 100, as
the authors' simulator) and ``penalty`` on compliant terrain; any model of
:data:`idyn.sim.MODELS` can be chosen with ``contact_model``. Collision shapes are the feet and
the base's URDF collision boxes (so a fallen robot rests on its body, as in PyBullet).
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from idyn.errors import InvalidInputError
from idyn.sim import Box, Heightmap, Plane, Simulator, Sphere, World
from idyn.sim.geometry import sphere_heightmap, sphere_plane
from idyn.state import RobotState

from ..description import collisions
from ..quadruped import resolve_quadruped
from ..terrain import (COMPLIANT_CONTACTS, COMPLIANT_SINK, ROUGH_SIZE, TERRAINS, rough_friction,
                       rough_heightmap, simulated_mu)
from .base import SimTestbed


def collision_boxes(urdf, link: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(half extents, rotation, offset) of the box collision geometries of ``link`` in a URDF."""
    return [(0.5 * np.array([float(x) for x in box.get("size").split()]), pin.rpy.rpyToMatrix(*rpy), xyz)
            for name, box, xyz, rpy in collisions(urdf, "box") if name == link]


class QuadrupedTestbed(SimTestbed):
    """A quadruped in an :class:`idyn.sim.Simulator`, torque controlled, on one terrain.

    Parameters
    ----------
    robot: a :class:`idyn.robots.Quadruped`, or what :func:`idyn.robots.quadruped` takes (``"links"``, ``"a1"``,
        a public name such as ``"go1"``, a URDF path).
    terrain: ``"rigid"``, ``"compliant"`` or ``"rough"``.
    mu: Coulomb friction of the planar terrains (``math.inf`` = no slip, simulated as 100);
        ignored on rough terrain, whose friction is per cell.
    seed: seed of the rough terrain.
    dt: time step (s).
    gui: accepted for parity with PyBullet; idyn.sim has no viewer (must be False).
    contact_model: a name of :data:`idyn.sim.MODELS`, or None for the terrain's default.
    impacts: ``"step"`` (touchdowns resolved by the contact model with the held torques) or
        ``"passive"`` (first a passive inelastic impact, as an event-driven simulator;
        :mod:`idyn.sim.impact`).
    """

    def __init__(self, robot="links", terrain: str = "rigid", mu=math.inf, seed: int = 0,
                 dt: float = 0.001, gui: bool = False, contact_model: str | None = None,
                 impacts: str = "step"):
        if gui:
            raise InvalidInputError("the idyn backend has no viewer; use --backend pybullet for a GUI")
        if terrain not in TERRAINS:
            raise InvalidInputError(f"unknown terrain {terrain!r}; known: {list(TERRAINS)}")
        self.quadruped = resolve_quadruped(robot)
        model = self.quadruped.model
        self.legs = list(self.quadruped.feet)
        self._feet = [self.quadruped.feet[leg] for leg in self.legs]
        base = model.pinocchio_model.frames[model.pinocchio_model.getFrameId("root_joint")]
        base_link = next(f.name for f in model.pinocchio_model.frames
                         if f.parentJoint == base.parentJoint and f.type == pin.FrameType.BODY)
        shapes = [Sphere(f.link, f.radius, f.offset) for f in self._feet]
        shapes += [Box(base_link, half, R, p) for half, R, p in collision_boxes(self.quadruped.urdf, base_link)]
        self.terrain_kind = terrain
        self.stiffness = self.damping = None
        options = {}
        if terrain == "rough":
            heights = rough_heightmap(seed)
            ground = Heightmap.centred(heights, ROUGH_SIZE, rough_friction(seed, heights.shape[0]))
            self.mu = None
        else:
            self.mu = simulated_mu(mu)
            ground = Plane(mu=self.mu)
        if terrain == "compliant":
            # the PyBullet terrain's values: 1 mm sink on four feet, critical damping per foot
            load = model.total_mass * float(-model.gravity[2])
            self.stiffness = load / (COMPLIANT_CONTACTS * COMPLIANT_SINK)
            self.damping = 2.0 * np.sqrt(self.stiffness * model.total_mass / COMPLIANT_CONTACTS)
            options = {"stiffness": self.stiffness, "damping": self.damping}
        name = contact_model or ("penalty" if terrain == "compliant" else "ap-lcp")
        if name != "penalty":
            options = {}
        world = World(model, shapes, [ground], self_collision=False)
        super().__init__(Simulator(model, world, name, dt, impacts=impacts, **options))
        self.ground = ground
        self._foot_links = {f.link for f in self._feet}
        self.reset()

    @property
    def weight(self) -> float:
        """Robot weight (N)."""
        return self.model.total_mass * float(-self.model.gravity[2])

    def reset(self, q=None, v=None) -> RobotState:
        """Put the robot at ``q`` (default: standing on the terrain) with velocity ``v`` (0).

        As in PyBullet: the default stance is ``q_stand`` moved vertically so the lowest foot
        touches the terrain, lowered by the static sink m g / (k n) on compliant ground.
        """
        model = self.model
        stand = q is None
        q = self.quadruped.q_stand.copy() if stand else model.check_q(q).copy()
        v = np.zeros(model.nv) if v is None else model.check_v(v).copy()
        if stand:
            gaps = self.foot_gaps(q)
            q[2] -= gaps.min()
            if self.stiffness is not None:
                down = int(np.sum(gaps - gaps.min() < 1e-6))
                q[2] -= self.weight / (self.stiffness * down)
        self._restart(q, v)
        return self.state()

    def foot_gaps(self, q) -> np.ndarray:
        """Signed gap of each foot sphere to the terrain, legs in LF, RF, LH, RH order."""
        gap = sphere_heightmap if isinstance(self.ground, Heightmap) else sphere_plane
        centres = self.quadruped.foot_centres(q)
        return np.array([gap(c, f.radius, self.ground).phi for c, f in zip(centres, self._feet)])

    def contacts(self, margin: float | None = None):
        """The foot contacts of the next step, as in PyBullet (a base touching the ground after a
        fall is simulated but, as there, not reported).

        ``margin`` is accepted for interface parity but must be None: the list is the simulator's
        own contact set, which is what makes matched-model force verification exact.
        """
        if margin is not None:
            raise InvalidInputError("the idyn backend reports its own contact set; do not pass margin")
        self._contacts = [c for c in self.sim.contacts() if c.body_a in self._foot_links]
        return list(self._contacts)
