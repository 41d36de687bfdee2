"""PyBullet testbed for any point-footed quadruped on rigid, compliant or rough terrain.

Nothing here is specific to LINKS: the robot is a :class:`idyn.robots.Quadruped` (from its URDF), the
feet are its leaf sphere links, and PyBullet joints are mapped to pinocchio's order by name.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pybullet as pb

from idyn.contact import Contact, contact_batch
from idyn.errors import InvalidInputError
from idyn.placements import frame_translations
from idyn.state import RobotState

from ..quadruped import resolve_quadruped
from .base import GRAVITY, BodyLink, MultiBodyMap, SphereProbe, Testbed, contact_stacks, owner_pairs
from .terrain import Terrain

#: default margin (m) within which a foot is a contact candidate
CONTACT_MARGIN = 0.01
#: height (m) above the terrain's top from which reset() lowers the standing robot
PLACEMENT_CLEARANCE = 0.01
#: rough terrain: feet within this distance (m) get their cell's friction before a step
FRICTION_LOOKAHEAD = 0.02


class QuadrupedTestbed(Testbed):
    """A quadruped in its own PyBullet client, torque controlled, on one terrain.

    Parameters
    ----------
    robot: a :class:`idyn.robots.Quadruped`, or what :func:`idyn.robots.quadruped` takes (``"links"``, ``"a1"``,
        a public name such as ``"go1"``, a URDF path).
    terrain: ``"rigid"``, ``"compliant"`` or ``"rough"`` (see :mod:`idyn.robots.pybullet.terrain`).
    mu: Coulomb friction of the planar terrains (``math.inf`` = no slip, simulated as 100);
        ignored on rough terrain, whose friction is per cell.
    seed: seed of the rough terrain (heights and frictions).
    """

    #: (m) :meth:`contacts` reports the feet within this gap (:class:`idyn.robots.testbed.Testbed`)
    contact_margin = CONTACT_MARGIN

    def __init__(self, robot="links", terrain: str = "rigid", mu=math.inf, seed: int = 0,
                 dt: float = 0.001, gui: bool = False):
        self.quadruped = resolve_quadruped(robot)
        super().__init__(dt, gui)
        try:
            model = self.quadruped.model
            self._start(MultiBodyMap(self.client, model, self.quadruped.urdf))
            self.terrain = Terrain(self.client, terrain, mu, seed, load=self.weight)
        except Exception:
            self.close()
            raise
        self.model = model
        self.legs = list(self.quadruped.feet)
        self._feet = [self.quadruped.feet[leg] for leg in self.legs]
        self._foot_links = [self.robot.link_index(f.link) for f in self._feet]
        # the testbed's own kinematics: a copy of the model with a frame at each foot sphere's
        # centre, and live views of their translations (idyn.placements)
        self._pin_model = pm = pin.Model(model.pinocchio_model)
        for f in self._feet:
            parent = pm.frames[model.frame_id(f.link)]
            placement = parent.placement * pin.SE3(np.eye(3), np.asarray(f.offset, dtype=float).reshape(3))
            pm.addFrame(pin.Frame(f"{f.link}_sphere_centre", parent.parentJoint, model.frame_id(f.link),
                                  placement, pin.FrameType.OP_FRAME))
        self._data = pm.createData()
        self._centres = frame_translations(self._data, [pm.getFrameId(f"{f.link}_sphere_centre")
                                                        for f in self._feet])
        self._probes = {r: SphereProbe(self.client, r) for r in {f.radius for f in self._feet}}
        self._foot_probes = [self._probes[f.radius] for f in self._feet]
        #: PyBullet (A, B) of each foot's contact, and the radius that attributes forces to it
        self._foot_names = [f.link for f in self._feet]
        self._foot_pairs = owner_pairs([(BodyLink(self.robot.body, link), BodyLink(self.terrain.body))
                                        for link in self._foot_links])
        self._found_feet: dict[tuple[int, ...], tuple[tuple[str, ...], np.ndarray]] = {}
        self._sensed_radius = 2.0 * max(f.radius for f in self._feet) + CONTACT_MARGIN
        self.reset()

    # ---------------------------------------------------------------- state
    @property
    def weight(self) -> float:
        """Robot weight (N) from the PyBullet masses."""
        return self.robot.mass * GRAVITY

    def reset(self, q=None, v=None) -> RobotState:
        """Put the robot at ``q`` (default: standing on the terrain) with velocity ``v`` (0).

        The default stance is the description's ``q_stand`` moved vertically so the lowest foot
        touches the terrain; on compliant ground it is lowered further by the static sink
        m g / (k n) of the n feet then touching, so the robot starts at rest on its springs.
        """
        model = self.model
        stand = q is None
        q = self.quadruped.q_stand.copy() if stand else model.check_q(q).copy()
        v = np.zeros(model.nv) if v is None else model.check_v(v).copy()
        self._reset_time()
        if stand:
            # start above the highest terrain point, then lower until the first foot touches
            # (iterated: on a slope, lowering by the gap closes only its vertical part)
            q[2] += self.terrain.max_height + PLACEMENT_CLEARANCE
            for _ in range(50):
                gaps = np.array([self._gap(i, q) for i in range(len(self._feet))])
                q[2] -= gaps.min()
                if abs(gaps.min()) < 1e-9:
                    break
            if self.terrain.kind == "compliant":
                down = int(np.sum(gaps - gaps.min() < 1e-6))
                q[2] -= self.weight / (self.terrain.stiffness * down)
        self.robot.write(q, v)
        self._update_foot_friction(q)
        return self.state()

    # ---------------------------------------------------------------- contacts
    def _gap(self, i: int, q) -> float:
        cp = self._closest(i, q, 2.0 * PLACEMENT_CLEARANCE + self.terrain.max_height)
        if cp is None:
            raise InvalidInputError(f"foot {self._feet[i].link} is not over the terrain")
        return cp.distance

    def _foot_centres(self, q) -> list[list[float]]:
        """The world centres of the foot spheres at ``q``: pinocchio's placements of the centres'
        frames (one forward-kinematics pass)."""
        pin.framesForwardKinematics(self._pin_model, self._data, q)
        return [centre.tolist() for centre in self._centres]

    def _closest(self, i: int, q, margin: float, centres=None):
        foot = self._feet[i]
        centre = (self._foot_centres(q) if centres is None else centres)[i]
        return self._probes[foot.radius].closest(centre, self.terrain.body, margin, self.terrain.max_height)

    def contacts(self, margin: float = CONTACT_MARGIN) -> list[Contact]:
        """Geometric contact candidates: every foot whose sphere is within ``margin`` of the terrain.

        Each :class:`idyn.Contact` has body_a = the foot frame, body_b = None (terrain), point =
        the closest terrain point, normal = the terrain normal there, mu = the terrain friction
        there and phi = the signed gap (negative when the sphere penetrates). Feet are in the
        order LF, RF, LH, RH among those present. The list is remembered for
        :meth:`sensed_contact_forces`.
        """
        margin = float(margin)
        if not (math.isfinite(margin) and margin >= 0):
            raise InvalidInputError(f"margin must be finite and >= 0, got {margin}")
        body, top = self.terrain.body, self.terrain.max_height
        found, rows = [], []
        for i, (probe, centre) in enumerate(zip(self._foot_probes, self._foot_centres(self.state().q))):
            if (cp := probe.nearest(centre, body, margin, top)) is not None:
                found.append(i)
                rows += cp[6]
                rows += cp[7]
                rows.append(cp[8])
        names, pairs = self._feet_of(tuple(found))
        out, points, frames = _foot_contacts(names, rows, self.terrain.frictions)
        self._remember(out, pairs, points, frames)
        return list(out)

    def _feet_of(self, found: tuple[int, ...]) -> tuple[tuple[str, ...], np.ndarray]:
        """The frame names and PyBullet pairs (:func:`owner_pairs`) of the feet ``found``,
        remembered per set of feet (at most 16 for four feet)."""
        feet = self._found_feet.get(found)
        if feet is None:
            feet = self._found_feet[found] = (tuple(self._foot_names[i] for i in found),
                                              self._foot_pairs[list(found)])
        return feet

    def sensed_contact_forces(self, contacts=None) -> np.ndarray:
        """(n, 3) forces [normal, s, t] in N on each foot from the terrain in the last step.

        Aligned with ``contacts`` (default: the list last returned by :meth:`contacts`): the
        PyBullet normal force and both lateral friction forces of every PyBullet contact point of
        that foot are summed and projected onto the Contact's (normal, s, t) frame. Zero rows
        where PyBullet reports no contact.
        """
        if contacts is None:
            return self._sensed(self._points, self._frames, self._pairs, self._sensed_radius)
        contacts = list(contacts)
        index = {name: i for i, name in enumerate(self._foot_names)}
        unknown = [c.body_a for c in contacts if c.body_a not in index]
        if unknown:
            raise InvalidInputError(f"contacts on unknown feet {unknown}")
        return self._sensed(*contact_stacks(contacts), self._foot_pairs[[index[c.body_a] for c in contacts]],
                            self._sensed_radius)

    def sensed_normal_total(self) -> float:
        """Sum of all PyBullet normal forces between the robot and the terrain (N)."""
        return self._normal_total(BodyLink(self.robot.body), BodyLink(self.terrain.body))

    # ---------------------------------------------------------------- per-cell friction
    def _update_foot_friction(self, q) -> None:
        """Rough terrain: give each foot link the friction of the cell under it (terrain.py)."""
        if not self.terrain.per_cell_friction:
            return
        centres = self._foot_centres(q)
        for i, link in enumerate(self._foot_links):
            cp = self._closest(i, q, FRICTION_LOOKAHEAD, centres)
            if cp is not None:  # a foot further away cannot touch in this step
                pb.changeDynamics(self.robot.body, link, lateralFriction=self.terrain.friction_at(cp.point_on_b),
                                  physicsClientId=self.client)

    def _before_step(self) -> None:
        if self.terrain.per_cell_friction:
            self._update_foot_friction(self.state().q)


def _foot_contacts(links: list[str], rows: list[float], frictions) -> tuple[list[Contact], np.ndarray, np.ndarray]:
    """Terrain contacts of the feet ``links`` from the numbers of PyBullet's closest points, seven
    per foot (the point on the terrain, the normal towards the foot, the signed gap), with their
    point and frame stacks: validated, normalised and framed as one batch
    (:func:`idyn.contact.contact_batch`, the stacks of :meth:`idyn.Contact.batch`).
    ``frictions(points)``: the terrain's coefficients (float64) at the (m, 3) points."""
    rows = np.fromiter(rows, float).reshape(-1, 7)
    points = rows[:, :3]
    return contact_batch(links, points, rows[:, 3:6], frictions(points), rows[:, 6])
