"""Quadruped descriptions: the LINKS robot of the paper and any point-footed quadruped URDF.

A :class:`Quadruped` bundles a floating-base :class:`idyn.RobotModel`, its feet (discovered
from the URDF, see :mod:`idyn.robots.description`) and a standing configuration. The registry
:data:`KNOWN` holds the facts that are per robot (a joint-angle guess for standing and, for LINKS,
the nominal stance of docs/robots.md); all behaviour is generic.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pinocchio as pin

from idyn import RobotModel
from idyn.errors import InvalidInputError, ModelLoadError
from idyn.kinematics import solve_points_ik

from .description import SphereFoot, body_axes, leaves, order_legs, package_asset, sphere_leaves


@dataclass(frozen=True)
class QuadrupedFacts:
    """Per-robot data: where the URDF is and how the robot stands."""

    urdf: str                          #: file name in robots/assets, or an absolute path
    leg_joint_guess: dict[str, tuple[float, ...]]   #: standing joint angles per leg label
    base_height: float | None = None   #: nominal base height (m); None: feet just touch
    stance_length: float | None = None  #: x distance between front and hind feet (m)
    stance_width: float | None = None   #: y distance between left and right feet (m)


def _pybullet_data(*parts) -> str:
    import pybullet_data  # the URDFs ship with pybullet; importing it does not start a simulator
    return str(Path(pybullet_data.getDataPath(), *parts))


#: Robot facts. LINKS stands at the authors' initial joint angles (docs/robots.md: about
#: (+-0.1, +-0.8, +-1.2) rad; Pacer's LINKS configuration), base at 0.155 m. The authors' "nominal
#: stance" (base 0.161853 m, feet 0.309926 x 0.1344496 m apart) comes from a different LINKS file;
#: with this file's 0.077 + 0.100 m legs it leaves each leg at 91 % of its reach, and the 6 cm
#: step of the 0.2 m/s trot then needs 98 %: the leg Jacobian goes singular mid-swing. The
#: authors' angles leave the legs at 83 % of reach.
KNOWN: dict[str, QuadrupedFacts] = {
    "links": QuadrupedFacts(
        urdf="links.urdf",
        leg_joint_guess={"LF": (0.1, 0.8, 1.2), "RF": (-0.1, 0.8, 1.2),
                         "LH": (0.1, -0.8, -1.2), "RH": (-0.1, -0.8, -1.2)}),
    "a1": QuadrupedFacts(
        urdf="pybullet_data:a1/a1.urdf",
        leg_joint_guess={leg: (0.0, 0.9, -1.8) for leg in ("LF", "RF", "LH", "RH")}),
}


def _example_robot_data(*parts) -> str:
    """A file of the example-robot-data package (its URDFs ship as data of the PyPI package)."""
    from importlib import metadata
    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError as exc:
        raise ModelLoadError("example-robot-data is not installed: pip install example-robot-data") from exc
    return str(Path(dist.locate_file(Path("cmeel.prefix", "share", "example-robot-data", "robots", *parts))))


#: Public quadruped URDFs, loaded unedited by :func:`from_urdf` (feet, body axes, leg order and
#: standing configuration found from the geometry). ``feet`` and ``foot_radius``: the foot frames
#: of robots whose feet have mesh collisions (no sphere to find), with the ball fitted to the
#: mesh (least squares on its support distance towards the ground over +-70 deg of tilt) plus the
#: 1 mm collision margin PyBullet adds around a convex mesh; how the fits were checked is in
#: docs/robots.md ("Mesh feet").
PUBLIC: dict[str, dict] = {
    "go1": {"urdf": "example-robot-data:go1_description/urdf/go1.urdf"},
    "go2": {"urdf": "example-robot-data:go2_description/urdf/go2.urdf",
            "feet": {f: (0.0238, (-0.0015, 0.0, 0.0)) for f in ("FL_foot", "FR_foot", "RL_foot", "RR_foot")}},
    "a1-erd": {"urdf": "example-robot-data:a1_description/urdf/a1.urdf"},
    "anymal_b": {"urdf": "example-robot-data:anymal_b_simple_description/robots/anymal.urdf"},
    "anymal_c": {"urdf": "example-robot-data:anymal_c_simple_description/urdf/anymal.urdf"},
    "solo12": {"urdf": "example-robot-data:solo_description/robots/solo12.urdf",
               "feet": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), "foot_radius": 0.0175},
    "b1": {"urdf": "example-robot-data:b1_description/urdf/b1.urdf"},
    "hyq": {"urdf": "example-robot-data:hyq_description/robots/hyq_no_sensors.urdf"},
    "laikago-erd": {"urdf": "example-robot-data:laikago_description/urdf/laikago.urdf"},
    "aliengo": {"urdf": "pybullet_data:aliengo/aliengo.urdf"},
    "laikago": {"urdf": "pybullet_data:laikago/laikago_toes.urdf"},
    "mini_cheetah": {"urdf": "pybullet_data:mini_cheetah/mini_cheetah.urdf"},
}


def _resolve(urdf) -> Path:
    urdf = str(urdf)
    if urdf.startswith("pybullet_data:"):
        return Path(_pybullet_data(urdf.split(":", 1)[1]))
    if urdf.startswith("example-robot-data:"):
        return Path(_example_robot_data(urdf.split(":", 1)[1]))
    p = Path(urdf)
    return p if p.is_absolute() else package_asset(urdf)


@dataclass(frozen=True)
class Quadruped:
    """A floating-base quadruped: model, feet and standing configuration."""

    name: str
    urdf: Path
    model: RobotModel
    feet: dict[str, SphereFoot]        #: leg label (LF, RF, LH, RH) -> foot
    q_stand: np.ndarray = field(repr=False)
    leg_joints: dict[str, np.ndarray] = field(repr=False)  #: leg label -> actuated v indices
    leg_q: dict[str, np.ndarray] = field(repr=False)       #: leg label -> its joints' q coordinates

    @property
    def foot_frames(self) -> list[str]:
        return [f.link for f in self.feet.values()]

    @property
    def foot_radius(self) -> float:
        return float(np.mean([f.radius for f in self.feet.values()]))

    @property
    def nominal_base_height(self) -> float:
        return float(self.q_stand[2])

    def foot_centres(self, q) -> np.ndarray:
        """(4, 3) world positions of the foot sphere centres, legs in LF, RF, LH, RH order."""
        out = []
        for f in self.feet.values():
            M = self.model.frame_placement(q, f.link)
            out.append(M.act(f.offset))
        return np.array(out)


def _leg_indices(model: RobotModel, foot: str) -> tuple[np.ndarray, np.ndarray]:
    """(v indices, q indices) of the actuated joints between the base and ``foot`` (a continuous
    joint has one velocity and two configuration coordinates)."""
    pm = model.pinocchio_model
    jid = pm.frames[model.frame_id(foot)].parentJoint
    iv, iq = [], []
    while jid > 0 and pm.names[jid] not in model.unactuated_joints:
        j = pm.joints[jid]
        if j.nv != 1:
            raise InvalidInputError(f"leg joint {pm.names[jid]!r} ({j.shortname()}) is not a 1-DOF joint")
        iv.extend(range(j.idx_v, j.idx_v + j.nv))
        iq.extend(range(j.idx_q, j.idx_q + j.nq))
        jid = pm.parents[jid]
    return np.sort(iv), np.sort(iq)


def _reframe_base(model: RobotModel, axes: np.ndarray) -> RobotModel:
    """The model with its free flyer moved from the base link's frame to the body frame whose
    axes (rows forward, left, up) are ``axes`` in base-link coordinates: the base's inertia, its
    child joints and its frames are re-expressed by X = (axes, 0), so the free flyer's z is up
    and x forward (what the planners take a level base to be). The base link stays a frame."""
    pm = pin.Model(model.pinocchio_model)
    X = pin.SE3(np.asarray(axes, dtype=float), np.zeros(3))
    root = pm.getJointId("root_joint")
    for j in range(1, pm.njoints):
        if pm.parents[j] == root:
            pm.jointPlacements[j] = X * pm.jointPlacements[j]
    pm.inertias[root] = X.act(pm.inertias[root])
    for f in pm.frames:
        if f.parentJoint == root and f.type != pin.FrameType.JOINT:
            f.placement = X * f.placement
    return RobotModel(pm, model.unactuated_joints, source=model.source)


def _auto_stand(model: RobotModel, feet: dict, leg_joints: dict, height: float) -> np.ndarray:
    """Joint positions (na) of a standing pose found from the geometry: each foot below its leg's
    second joint (the hip, its first joint being the abduction), at ``height`` times the
    hip-to-foot distance of the neutral configuration, by inverse kinematics of the legs from a
    knee (the leg's last joint) bent +1 rad and -1 rad; per leg the solution within the joint
    limits whose knee points backward (the mammalian stance) is kept, else any within limits."""
    q0 = model.neutral()
    pm = model.pinocchio_model
    lower = np.full(model.na, -np.inf)
    upper = np.full(model.na, np.inf)
    if model.flat_actuation:
        lower, upper = pm.lowerPositionLimit[model.actuated_q], pm.upperPositionLimit[model.actuated_q]
    start = np.clip(np.zeros(model.na), lower, upper)
    data = pm.createData()
    pin.forwardKinematics(pm, data, q0)
    joint_of_v = {pm.joints[j].idx_v: j for j in range(1, pm.njoints)}
    actuated = list(model.actuated_v)
    frames, targets, hips, knees = [], [], {}, {}
    for leg, foot in feet.items():
        iv = leg_joints[leg]
        hip = data.oMi[joint_of_v[iv[1]]].translation
        p = model.frame_placement(q0, foot.link).act(foot.offset)
        reach = float(np.linalg.norm(p - hip))
        frames.append(foot.link)
        targets.append([hip[0], p[1], hip[2] - height * reach])
        hips[leg], knees[leg] = iv[1], actuated.index(iv[-1])
    best = {}
    for bend in (1.0, -1.0):
        positions = start.copy()
        for leg in feet:
            k = knees[leg]
            positions[k] = np.clip(bend if start[k] == 0 else start[k], lower[k], upper[k])
        q = model.with_joint_positions(q0, positions)
        for _ in range(3):      # the IK places frame origins; the targets are the sphere centres
            origins = [np.asarray(t) - model.frame_placement(q, f.link).rotation @ f.offset
                       for t, f in zip(targets, feet.values())]
            q, _ = solve_points_ik(model, q, frames, origins, tol=1e-9)
        sol = model.joint_positions(q)
        pin.forwardKinematics(pm, data, q)
        for i, (leg, foot) in enumerate(feet.items()):
            idx = [actuated.index(j) for j in leg_joints[leg]]
            err = np.linalg.norm(model.frame_placement(q, foot.link).act(foot.offset) - targets[i])
            inside = np.all(sol[idx] >= lower[idx] - 1e-9) and np.all(sol[idx] <= upper[idx] + 1e-9)
            knee_x = data.oMi[joint_of_v[leg_joints[leg][-1]]].translation[0]
            backward = knee_x < targets[i][0]
            score = (err < 1e-6 and inside, backward)
            if leg not in best or score > best[leg][0]:
                best[leg] = (score, sol[idx])
    out = start.copy()
    for leg, (score, sol) in best.items():
        if not score[0]:
            raise ModelLoadError(f"no standing pose of leg {leg} within its joint limits; give leg_joint_guess")
        out[[actuated.index(j) for j in leg_joints[leg]]] = sol
    return out


def _frame_feet(model: RobotModel, feet, foot_radius) -> list[SphereFoot]:
    """Feet given as frame names (with ``foot_radius``) or as a mapping frame -> radius, or
    frame -> (radius, centre of the foot's ball in the frame)."""
    if isinstance(feet, dict):
        items = list(feet.items())
    else:
        if foot_radius is None:
            raise InvalidInputError("feet given as frame names need foot_radius (m), the radius of the foot's ball")
        items = [(name, foot_radius) for name in feet]
    out = []
    for name, value in items:
        model.frame_id(name)                     # UnknownFrameError for a name the URDF lacks
        radius, centre = value if isinstance(value, (tuple, list)) else (value, np.zeros(3))
        centre = np.asarray(centre, dtype=float).reshape(3)
        if not (np.isfinite(radius) and radius >= 0 and np.all(np.isfinite(centre))):
            raise InvalidInputError(f"foot {name!r}: radius must be finite and >= 0, centre finite, got {value}")
        out.append(SphereFoot(name, float(radius), centre))
    return out


def from_urdf(urdf, feet=None, *, foot_radius: float | None = None, name: str | None = None,
              leg_joint_guess: dict | None = None, stand_height: float = 0.7) -> Quadruped:
    """A :class:`Quadruped` from any quadruped URDF, unedited.

    ``urdf``: a path, or ``pybullet_data:REL`` / ``example-robot-data:REL`` for the URDFs those
    packages ship. ``feet``: None (the URDF's leaf links with a sphere collision), frame names
    (links or joints of the URDF; mesh feet) with ``foot_radius``, or a mapping frame -> radius.
    The body frame (forward, left, up) and the leg labels LF, RF, LH, RH are found from the
    feet's and hips' positions at the neutral configuration (:func:`idyn.robots.description.body_axes`);
    a base link drawn along other axes gets its free flyer re-expressed in the body frame.
    The standing pose is ``leg_joint_guess`` (leg -> joint positions, feet then lowered onto the
    ground) or, by default, found by inverse kinematics with each foot below its hip at
    ``stand_height`` times the leg's length."""
    path = _resolve(urdf)
    model = RobotModel.from_urdf(path, floating_base=True)
    if feet is None:
        found = sphere_leaves(path)
        if len(found) != 4:
            names = [n for n in leaves(path) if model.has_frame(n)]
            raise ModelLoadError(f"{path}: found {len(found)} leaf links with a sphere collision, not 4; "
                                 f"name the four foot frames (feet=..., foot_radius=...), e.g. among the "
                                 f"leaf links {names}")
    else:
        found = _frame_feet(model, feet, foot_radius)
    if len(found) != 4:
        raise InvalidInputError(f"a quadruped has 4 feet, got {len(found)}")
    q0 = model.neutral()
    pm = model.pinocchio_model
    data = pm.createData()
    pin.forwardKinematics(pm, data, q0)
    positions, hips = {}, []
    for f in found:
        positions[f.link] = model.frame_placement(q0, f.link).act(f.offset)
        iv, _ = _leg_indices(model, f.link)
        if iv.size < 3:
            raise ModelLoadError(f"{path}: foot {f.link!r} has {iv.size} actuated joints, a leg needs >= 3")
        first = next(j for j in range(1, pm.njoints) if pm.joints[j].idx_v == iv[0])
        hips.append(data.oMi[first].translation)
    axes = body_axes(np.array(list(positions.values())), np.array(hips))
    labels = order_legs(positions, axes)
    if not np.allclose(axes, np.eye(3)):
        model = _reframe_base(model, axes)
    by_link = {f.link: f for f in found}
    feet_by_leg = {leg: by_link[link] for leg, link in labels.items()}
    facts = QuadrupedFacts(str(path), leg_joint_guess or {})
    return _assemble(facts, model, path, feet_by_leg, name or path.stem, stand_height)


def build(facts: QuadrupedFacts, name: str = "custom") -> Quadruped:
    """Assemble a :class:`Quadruped` from facts: sphere-leaf feet, legs ordered by the signs of
    their base-frame positions, standing at ``facts.leg_joint_guess`` (see :func:`from_urdf` for
    any URDF, mesh feet and other base axes)."""
    urdf = _resolve(facts.urdf)
    model = RobotModel.from_urdf(urdf, floating_base=True)
    leaves_ = {f.link: f for f in sphere_leaves(urdf)}
    q0 = model.neutral()
    labels = order_legs({k: model.frame_position(q0, k) for k in leaves_})
    return _assemble(facts, model, urdf, {leg: leaves_[link] for leg, link in labels.items()}, name, None)


def _assemble(facts: QuadrupedFacts, model: RobotModel, urdf: Path, feet: dict, name: str,
              stand_height: float | None) -> Quadruped:
    legs = {leg: _leg_indices(model, f.link) for leg, f in feet.items()}
    leg_joints = {leg: iv for leg, (iv, _) in legs.items()}
    leg_q = {leg: iq for leg, (_, iq) in legs.items()}
    actuated = list(model.actuated_v)
    if facts.leg_joint_guess or stand_height is None:
        positions = model.joint_positions(model.neutral())
        for leg, angles in facts.leg_joint_guess.items():
            if len(angles) != leg_joints[leg].size:
                raise InvalidInputError(
                    f"{name}: leg {leg} has {leg_joints[leg].size} joints, guess has {len(angles)}")
            positions[[actuated.index(i) for i in leg_joints[leg]]] = angles
    else:
        positions = _auto_stand(model, feet, leg_joints, stand_height)
    q = model.with_joint_positions(model.neutral(), positions)
    stance = (facts.base_height, facts.stance_length, facts.stance_width)
    if any(s is not None for s in stance) and any(s is None for s in stance):
        raise InvalidInputError(f"{name}: base_height, stance_length and stance_width go together")
    if facts.stance_length is not None:
        # docs/robots.md: feet at (+-L/2, +-W/2) on the ground with the base at the nominal height
        q[2] = facts.base_height
        r = np.mean([f.radius for f in feet.values()])
        targets = [[0.5 * facts.stance_length * (1 if leg[1] == "F" else -1),
                    0.5 * facts.stance_width * (1 if leg[0] == "L" else -1), r] for leg in feet]
        q, _ = solve_points_ik(model, q, [f.link for f in feet.values()], targets)
    else:
        centres = [pin.SE3(model.frame_placement(q, f.link)).act(f.offset) for f in feet.values()]
        lowest = min(c[2] - f.radius for c, f in zip(centres, feet.values()))
        q[2] -= lowest
    return Quadruped(name, urdf, model, feet, q, leg_joints, leg_q)


@lru_cache(maxsize=None)
def quadruped(name: str = "links") -> Quadruped:
    """A quadruped by name: ``links`` and ``a1`` (:data:`KNOWN`), a public one (:data:`PUBLIC`:
    go1, go2, anymal_c, solo12, aliengo, mini_cheetah, ...) or the path of any URDF
    (:func:`from_urdf`); cached, since models are immutable."""
    if name in KNOWN:
        return build(KNOWN[name], name)
    if name in PUBLIC:
        options = dict(PUBLIC[name])
        return from_urdf(options.pop("urdf"), name=name, **options)
    if name.endswith(".urdf"):
        return from_urdf(name)
    raise InvalidInputError(f"unknown quadruped {name!r}; known: {sorted(KNOWN) + sorted(PUBLIC)}, or a .urdf path")


def resolve_quadruped(robot) -> Quadruped:
    """A :class:`Quadruped` from itself, a name or a URDF path (what the testbeds accept)."""
    if isinstance(robot, Quadruped):
        return robot
    if isinstance(robot, (str, Path)):
        return quadruped(str(robot))
    raise InvalidInputError(f"robot must be a quadruped name or a robots.Quadruped, got {robot!r}")


def quadruped_urdf(name: str = "links") -> Path:
    """Path of a known or public quadruped's URDF file."""
    if name in KNOWN:
        return _resolve(KNOWN[name].urdf)
    if name in PUBLIC:
        return _resolve(PUBLIC[name]["urdf"])
    raise InvalidInputError(f"unknown quadruped {name!r}; known: {sorted(KNOWN) + sorted(PUBLIC)}")
