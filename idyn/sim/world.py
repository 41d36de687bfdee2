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

from .. import validation
from ..contact import ContactSet, tangent_frames
from ..errors import InvalidInputError
from ..model import RobotModel, Workspace
from ._step_kernel import place_points, speculative_keep
from .geometry import (BOX_CORNERS, Features, Heightmap, Plane, StaticBox, checked_box, spheres_box,
                       spheres_heightmap, spheres_plane, spheres_spheres)


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
        half, rotation = checked_box(self.half_extents, self.rotation)
        object.__setattr__(self, "half_extents", half)
        object.__setattr__(self, "rotation", rotation)
        object.__setattr__(self, "offset", validation.vector(self.offset, 3, "box offset"))


Terrain = Plane | Heightmap | StaticBox

#: the velocity of :meth:`World.detect_at` without speculative pairs (never read)
_NO_V = np.zeros(0)
#: contact patterns a world remembers (a quadruped's feet on a plane: 16)
_PATTERNS = 64


def _against_terrain(centres: np.ndarray, radii: np.ndarray, t) -> Features:
    if isinstance(t, Plane):
        return spheres_plane(centres, radii, t)
    if isinstance(t, Heightmap):
        return spheres_heightmap(centres, radii, t)
    return spheres_box(centres, radii, t.rotation, t.translation, t.half_extents)


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
        self._workspace = model.workspace()
        self._fids = [model.frame_id(s.frame) for s in self.shapes]
        self._joints = model.body_joints([s.frame for s in self.shapes])
        joints = self._joints
        # probes: the points tested against the terrain, rigidly attached to a shape's frame:
        # sphere centres (with their radii) and box corners (vertex-face contacts, radius 0)
        owner, local, radius = [], [], []
        for i, shape in enumerate(self.shapes):
            if isinstance(shape, Sphere):
                owner.append(i)
                local.append(shape.offset)
                radius.append(shape.radius)
            else:
                corners = shape.offset + (BOX_CORNERS * shape.half_extents) @ shape.rotation.T
                owner += [i] * len(corners)
                local += list(corners)
                radius += [0.0] * len(corners)
        self._probe_shape = np.array(owner, dtype=np.intp)
        self._probe_local = np.array(local, dtype=float).reshape(-1, 3)
        self._probe_radius = np.array(radius, dtype=float)
        self._world_probe = np.full(self._probe_shape.size, -1)
        #: frame names by shape index; index -1 (the static world) is None
        self._frames = [s.frame for s in self.shapes] + [None]
        self._pairs = []
        if self_collision:
            for i, j in combinations(range(len(self.shapes)), 2):
                a, b = self.shapes[i], self.shapes[j]
                ja, jb = int(joints[i]), int(joints[j])
                if ja == jb or pm.parents[ja] == jb or pm.parents[jb] == ja:
                    continue
                if isinstance(a, Box) and isinstance(b, Box):
                    continue  # box-box is not supported; such bodies never touch in our scenes
                self._pairs.append((j, i) if isinstance(a, Box) else (i, j))
        self._pair_mus = np.array([self._pair_mu(self.shapes[i].frame, self.shapes[j].frame)
                                   for i, j in self._pairs])
        # the pairs' constant data, built once: shapes A and B, sphere pairs, pairs per attached box
        self._pair_a = np.array([i for i, _ in self._pairs], dtype=np.intp)
        self._pair_b = np.array([j for _, j in self._pairs], dtype=np.intp)
        self._shape_offsets = np.array([s.offset for s in self.shapes]).reshape(-1, 3)
        self._shape_radii = np.array([getattr(s, "radius", 0.0) for s in self.shapes])
        on_sphere = np.array([isinstance(self.shapes[j], Sphere) for j in self._pair_b], dtype=bool)
        self._sphere_pairs = np.flatnonzero(on_sphere)
        self._box_pairs = [(j, np.flatnonzero(~on_sphere & (self._pair_b == j)))
                           for j in np.unique(self._pair_b[~on_sphere])]
        self._placements_of, self._placement_refs = None, []
        #: contact data by pattern of shapes in contact (:meth:`_pattern`)
        self._patterns = {}
        #: joint of each shape, and (index -1) the static world's joint 0
        self._body_joints = np.append(self._joints, 0).astype(np.intp)

    def _pair_mu(self, frame_a: str, frame_b: str) -> float:
        return self.friction.get(frozenset((frame_a, frame_b)), self.default_mu)

    def detect(self, q, v=None, dt: float = 0.0, workspace: Workspace | None = None) -> ContactSet:
        """Contact candidates at configuration ``q`` (speculative ones too if ``v`` is given).

        ``workspace``: a :class:`idyn.model.Workspace` of this model already computed at (q, v)
        (the simulator's step pass) is reused instead of running pinocchio again.
        """
        q = self.model.check_q(q)
        v = None if v is None else self.model.check_v(v)
        ws = workspace
        if ws is None or ws.model is not self.model or not ws.is_at(q, v) or (v is not None and ws.v is None) \
                or not ws.placed:
            ws = self._workspace.compute(q, v, dynamics=False)
        return self.detect_at(ws, dt if v is not None else None)

    def detect_at(self, ws: Workspace, dt: float | None) -> ContactSet:
        """:meth:`detect` at the state of ``ws``, a workspace of this model computed there (not
        checked: the simulator's own pass); ``dt`` None: no speculative pairs."""
        return self.detect_joints_at(ws, dt)[0]

    def detect_joints_at(self, ws: Workspace, dt: float | None
                         ) -> tuple[ContactSet, np.ndarray, np.ndarray, bool, np.ndarray]:
        """:meth:`detect_at`, the joints carrying each contact's bodies A and B (0: the world),
        whether any B is a body and the contact frames (m, 3, 3), which the contact Jacobian
        needs (:func:`idyn.kernels.contact_rows`)."""
        poses = np.array([placement.homogeneous for placement in self._placements(ws.data)]).reshape(-1, 4, 4)
        reach = self.margin + dt * self.max_speed if dt is not None else self.margin
        parts = []         # (shape a, shape b or -1, features, mu)
        if self.terrain:
            parts.append(self._terrain_features(poses))
        if self._pairs:
            parts.append(self._pair_features(poses[:, :3, :3], poses[:, :3, 3]))
        if not parts:
            empty = np.zeros(0, dtype=np.intp)
            return ContactSet._trusted((), (), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0)), \
                empty, empty, False, np.zeros((0, 3, 3))
        if len(parts) == 1:
            (a, b, (points, normals, phi), mu), = parts
            a, b, mu = a.copy(), b.copy(), mu.copy()       # compacted in place below
        else:
            a, b, mu = (np.concatenate(x) for x in ([p[0] for p in parts], [p[1] for p in parts],
                                                     [p[3] for p in parts]))
            points, normals, phi = (np.concatenate(x) for x in zip(*[p[2] for p in parts]))
        # speculative (dt given): a pair apart by at most margin + dt max_speed is kept if it
        # would close within the step
        m = speculative_keep(phi, a, b, self._joints, points, normals, mu, ws.J, self.model.support,
                             ws.v if dt is not None else _NO_V, self.margin, reach, 0.0 if dt is None else dt)
        a, b, normals, mu = a[:m], b[:m], normals[:m], mu[:m]
        key = a.tobytes() + b.tobytes() + normals.tobytes() + mu.tobytes()
        pattern = self._patterns.get(key)
        if pattern is None:
            if len(self._patterns) >= _PATTERNS:
                self._patterns.clear()
            pattern = self._patterns[key] = self._pattern(a, b, normals, mu)
        cs = ContactSet.__new__(ContactSet)    # ContactSet._trusted with the pattern's data shared
        cs.body_a, cs.body_b, cs.normals, cs.mu, cs.tangents, ja, jb, two_bodies, frames = pattern
        cs.points, cs.phi = points[:m], phi[:m]
        return cs, ja, jb, two_bodies, frames

    def _pattern(self, a: np.ndarray, b: np.ndarray, normals: np.ndarray, mu: np.ndarray) -> tuple:
        """The data of a contact set with shapes ``a`` against ``b``, ``normals`` and ``mu``, shared
        (read-only) by every contact set with the same ones, as on planes from step to step:
        body names, normals, mu, tangents, joints of bodies A and B, whether any B is a body, the
        contact frames (m, 3, 3; :meth:`ContactSet.frames`)."""
        normals, mu, ja, jb = normals.copy(), mu.copy(), self._joints[a], self._body_joints[b]
        tangents = tangent_frames(normals)
        frames = np.stack((normals,) + tuple(tangents), axis=1)
        for x in (normals, mu, ja, jb, frames) + tuple(tangents):
            x.flags.writeable = False
        names = self._frames
        return (tuple(names[i] for i in a), tuple(names[j] for j in b), normals, mu, tangents, ja, jb,
                bool(jb.any()), frames)

    def _placements(self, data) -> list:
        """The shapes' frame placements in ``data.oMf``, as live references: pinocchio updates
        them in place, so they are looked up once per Data (a lookup costs more than the read)."""
        if self._placements_of is not data:
            self._placements_of = data
            self._placement_refs = [data.oMf[f] for f in self._fids]
        return self._placement_refs

    def _terrain_features(self, poses: np.ndarray):
        """Every probe against every terrain shape, probe-major (each probe against each terrain
        shape in turn), vectorized per terrain shape; ``poses`` are the shapes' frames (k, 4, 4)."""
        owner = self._probe_shape
        probes = np.empty((owner.size, 3))
        place_points(poses, owner, self._probe_local, probes)
        fs = [_against_terrain(probes, self._probe_radius, terrain) for terrain in self.terrain]
        mus = [terrain.frictions_at(f.points) for terrain, f in zip(self.terrain, fs)]
        if len(fs) == 1:
            return owner, self._world_probe, fs[0], mus[0]
        nt, count = len(fs), owner.size * len(fs)
        features = Features(*(np.stack(x, axis=1).reshape((count,) + x[0].shape[1:]) for x in zip(*fs)))
        return np.repeat(owner, nt), np.full(count, -1), features, np.stack(mus, axis=1).reshape(-1)

    def _pair_features(self, R: np.ndarray, t: np.ndarray):
        """Features of the pairs of attached shapes (sphere-sphere, sphere-box), batched: all
        sphere pairs in one call, the spheres against each attached box in one call per box."""
        centre = np.einsum("kij,kj->ki", R, self._shape_offsets) + t
        ia, ib, radii = self._pair_a, self._pair_b, self._shape_radii
        points, normals, phi = np.empty((ia.size, 3)), np.empty((ia.size, 3)), np.empty(ia.size)
        k = self._sphere_pairs
        if k.size:
            points[k], normals[k], phi[k] = spheres_spheres(centre[ia[k]], radii[ia[k]], centre[ib[k]], radii[ib[k]])
        for j, k in self._box_pairs:
            box = self.shapes[j]
            points[k], normals[k], phi[k] = spheres_box(centre[ia[k]], radii[ia[k]], R[j] @ box.rotation, centre[j],
                                                        box.half_extents)
        return ia, ib, Features(points, normals, phi), self._pair_mus
