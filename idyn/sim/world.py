"""A simulated world: collision shapes attached to model frames, and a static environment.

:class:`World` turns a configuration into the contact set of one time step (paper Sec. 3.3,
Fig. 4): every pair of a shape on the multibody with the environment, and every pair of shapes on
different, non-adjacent bodies, whose gap is within the detection margin. A pair that is still
apart is included *speculatively* when its approach speed would close the gap within the step
(``phi + dt * min(0, phi_dot) <= margin``); the velocity-level models of paper eqs. 36 and 54 then
let it close (``N v+ >= -phi / dt``) but never overlap, so bodies are not found overlapping after
fast approaches.

Supported pairs: sphere against plane, heightmap, static box, attached box and sphere; an attached
box against the terrain by its corners (vertex-face contacts; edge-edge contact is not modelled,
which is exact for a box lying on a plane). Friction of an environment pair is the environment's (per heightmap cell
for rough terrain); of a pair of attached shapes it is looked up in ``friction`` by the two frame
names, else ``default_mu``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pinocchio as pin

from .. import validation
from ..contact import Contact
from ..errors import InvalidInputError
from ..model import RobotModel
from .geometry import (BOX_CORNERS, Feature, Heightmap, Plane, StaticBox, sphere_box, sphere_heightmap,
                       sphere_plane, sphere_sphere)


@dataclass(frozen=True)
class Sphere:
    """A sphere rigidly attached to a model frame, centred at ``offset`` in that frame."""

    frame: str
    radius: float
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        if not (np.isfinite(self.radius) and self.radius > 0):
            raise InvalidInputError(f"sphere radius must be positive, got {self.radius}")
        object.__setattr__(self, "offset", validation.vector(self.offset, 3, "sphere offset"))


@dataclass(frozen=True)
class Box:
    """A box rigidly attached to a model frame: half extents and pose in that frame."""

    frame: str
    half_extents: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        half = validation.vector(self.half_extents, 3, "box half extents")
        if (half <= 0).any():
            raise InvalidInputError(f"box half extents must be positive, got {half}")
        object.__setattr__(self, "half_extents", half)
        object.__setattr__(self, "rotation", validation.matrix(self.rotation, (3, 3), "box rotation"))
        object.__setattr__(self, "offset", validation.vector(self.offset, 3, "box offset"))


Terrain = Plane | Heightmap | StaticBox


@dataclass
class ContactSet:
    """The contacts of one step as arrays (m contacts), plus the bodies they join."""

    body_a: list[str]
    body_b: list[str | None]
    points: np.ndarray      #: (m, 3)
    normals: np.ndarray     #: (m, 3), force on A from B
    phi: np.ndarray         #: (m,)
    mu: np.ndarray          #: (m,)

    @property
    def m(self) -> int:
        return len(self.body_a)

    def contacts(self) -> list[Contact]:
        """The same contacts as :class:`idyn.Contact` objects (what controllers receive)."""
        return [Contact(a, b, p, n, mu, phi) for a, b, p, n, mu, phi in
                zip(self.body_a, self.body_b, self.points, self.normals, self.mu, self.phi)]


def _against_terrain(centre: np.ndarray, radius: float, t) -> Feature:
    if isinstance(t, Plane):
        return sphere_plane(centre, radius, t)
    if isinstance(t, Heightmap):
        return sphere_heightmap(centre, radius, t)
    return sphere_box(centre, radius, t.rotation, t.translation, t.half_extents)


class World:
    """Shapes on a :class:`idyn.RobotModel` and a static environment.

    Parameters
    ----------
    model: the multibody (robot plus any appended free bodies).
    shapes: :class:`Sphere` and :class:`Box` attached to frames of ``model``.
    terrain: static :class:`Plane`, :class:`Heightmap` and :class:`StaticBox` objects.
    friction: ``{(frame_a, frame_b): mu}`` for pairs of attached shapes (order irrelevant).
    default_mu: friction of attached-shape pairs missing from ``friction``.
    margin: gap (m) below which a pair is a contact candidate.
    self_collision: test pairs of attached shapes (on non-adjacent bodies).
    max_speed: approach speed (m/s) above which a pair farther than ``margin + dt * max_speed``
        is not tested for speculative inclusion (a cheap bound that skips distant pairs).
    """

    def __init__(self, model: RobotModel, shapes, terrain=(), *, friction=None, default_mu: float = 1.0,
                 margin: float = 1e-4, self_collision: bool = True, max_speed: float = 20.0):
        self.model = model
        self.shapes = tuple(shapes)
        self.terrain = tuple(terrain)
        for s in self.shapes:
            if not isinstance(s, (Sphere, Box)):
                raise InvalidInputError(f"attached shapes must be Sphere or Box, got {type(s).__name__}")
            model.frame_id(s.frame)
        for t in self.terrain:
            if not isinstance(t, (Plane, Heightmap, StaticBox)):
                raise InvalidInputError(f"terrain must be Plane, Heightmap or StaticBox, got {type(t).__name__}")
        if not (np.isfinite(margin) and margin >= 0):
            raise InvalidInputError(f"margin must be >= 0, got {margin}")
        self.margin = float(margin)
        self.max_speed = float(max_speed)
        self.default_mu = float(default_mu)
        self.friction = {frozenset(k): float(v) for k, v in (friction or {}).items()}
        pm = model.pinocchio_model
        self._pm = pm
        self._data = pm.createData()
        self._fids = [model.frame_id(s.frame) for s in self.shapes]
        joints = [pm.frames[f].parentJoint for f in self._fids]
        self._pairs = []
        if self_collision:
            for i, j in combinations(range(len(self.shapes)), 2):
                a, b = self.shapes[i], self.shapes[j]
                ja, jb = joints[i], joints[j]
                if ja == jb or pm.parents[ja] == jb or pm.parents[jb] == ja:
                    continue
                if isinstance(a, Box) and isinstance(b, Box):
                    continue  # box-box is not supported; such bodies never touch in our scenes
                self._pairs.append((j, i) if isinstance(a, Box) else (i, j))

    def _pair_mu(self, frame_a: str, frame_b: str) -> float:
        return self.friction.get(frozenset((frame_a, frame_b)), self.default_mu)

    def detect(self, q, v=None, dt: float = 0.0) -> ContactSet:
        """Contact candidates at configuration ``q`` (speculative ones too if ``v`` is given)."""
        q = self.model.check_q(q)
        pm, data = self._pm, self._data
        if v is None:
            pin.framesForwardKinematics(pm, data, q)
        else:
            pin.forwardKinematics(pm, data, q, self.model.check_v(v))
            pin.updateFramePlacements(pm, data)
        poses = [data.oMf[f] for f in self._fids]
        found: list[tuple[int, int | None, Feature, float]] = []   # (shape a, shape b or None, feature, mu)
        for i, (shape, M) in enumerate(zip(self.shapes, poses)):
            if isinstance(shape, Sphere):
                probes, radius = [M.act(shape.offset)], shape.radius
            else:  # vertex-face contacts: the corners are spheres of radius 0
                R, p = M.rotation @ shape.rotation, M.act(shape.offset)
                probes, radius = p + (BOX_CORNERS * shape.half_extents) @ R.T, 0.0
            for c in probes:
                for t in self.terrain:
                    f = _against_terrain(c, radius, t)
                    found.append((i, None, f, t.friction_at(f.point)))
        for i, j in self._pairs:
            a, b = self.shapes[i], self.shapes[j]
            ca = poses[i].act(a.offset)
            if isinstance(b, Sphere):
                f = sphere_sphere(ca, a.radius, poses[j].act(b.offset), b.radius)
            else:
                f = sphere_box(ca, a.radius, poses[j].rotation @ b.rotation, poses[j].act(b.offset),
                               b.half_extents)
            found.append((i, j, f, self._pair_mu(a.frame, b.frame)))

        keep = []
        reach = self.margin + dt * self.max_speed
        for i, j, f, mu in found:
            gap = f.phi
            if v is not None and self.margin < gap <= reach:
                gap += dt * min(0.0, self._normal_speed(i, j, f))
            if gap <= self.margin:
                keep.append((i, j, f, mu))
        return ContactSet(
            body_a=[self.shapes[i].frame for i, _, _, _ in keep],
            body_b=[None if j is None else self.shapes[j].frame for _, j, _, _ in keep],
            points=np.array([f.point for _, _, f, _ in keep]).reshape(-1, 3),
            normals=np.array([f.normal for _, _, f, _ in keep]).reshape(-1, 3),
            phi=np.array([f.phi for _, _, f, _ in keep]),
            mu=np.array([mu for _, _, _, mu in keep]),
        )

    def _point_velocity(self, shape_index: int, point: np.ndarray) -> np.ndarray:
        fid = self._fids[shape_index]
        vel = pin.getFrameVelocity(self._pm, self._data, fid, pin.LOCAL_WORLD_ALIGNED)
        return vel.linear + pin.skew(vel.angular) @ (point - self._data.oMf[fid].translation)

    def _normal_speed(self, i: int, j: int | None, f: Feature) -> float:
        """d(phi)/dt of a pair: normal component of A's point velocity relative to B's."""
        rel = self._point_velocity(i, f.point)
        if j is not None:
            rel = rel - self._point_velocity(j, f.point)
        return float(f.normal @ rel)
