"""Quadruped descriptions: the LINKS robot of the paper and any point-footed quadruped URDF.

A :class:`Quadruped` bundles a floating-base :class:`idyn.RobotModel`, its feet (discovered
from the URDF, see :mod:`robots.description`) and a standing configuration. The registry
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
from idyn.errors import InvalidInputError
from idyn.kinematics import solve_points_ik

from .description import SphereFoot, order_legs, package_asset, sphere_leaves


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


def _resolve(urdf: str) -> Path:
    if urdf.startswith("pybullet_data:"):
        return Path(_pybullet_data(urdf.split(":", 1)[1]))
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
    leg_q: dict[str, np.ndarray] = field(repr=False)       #: leg label -> matching q indices

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
    """(v indices, q indices) of the actuated joints between the base and ``foot``."""
    pm = model.pinocchio_model
    jid = pm.frames[model.frame_id(foot)].parentJoint
    iv, iq = [], []
    while jid > 0 and pm.names[jid] not in model.unactuated_joints:
        j = pm.joints[jid]
        if j.nq != j.nv:
            raise InvalidInputError(f"leg joint {pm.names[jid]} is not a 1-DOF joint")
        iv.extend(range(j.idx_v, j.idx_v + j.nv))
        iq.extend(range(j.idx_q, j.idx_q + j.nq))
        jid = pm.parents[jid]
    order = np.argsort(iv)
    return np.array(iv)[order], np.array(iq)[order]


def build(facts: QuadrupedFacts, name: str = "custom") -> Quadruped:
    """Assemble a :class:`Quadruped` from facts (generic for any point-footed URDF)."""
    urdf = _resolve(facts.urdf)
    model = RobotModel.from_urdf(urdf, floating_base=True)
    leaves = {f.link: f for f in sphere_leaves(urdf)}
    q0 = model.neutral()
    base_pos = {k: model.frame_position(q0, k) for k in leaves}
    labels = order_legs(base_pos)
    feet = {leg: leaves[link] for leg, link in labels.items()}
    legs = {leg: _leg_indices(model, f.link) for leg, f in feet.items()}
    leg_joints = {leg: iv for leg, (iv, _) in legs.items()}
    leg_q = {leg: iq for leg, (_, iq) in legs.items()}

    q = model.neutral()
    for leg, angles in facts.leg_joint_guess.items():
        if len(angles) != leg_q[leg].size:
            raise InvalidInputError(
                f"{name}: leg {leg} has {leg_q[leg].size} joints, guess has {len(angles)}")
        q[leg_q[leg]] = angles
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
    """A known quadruped by name (``links`` or ``a1``); cached, since models are immutable."""
    if name not in KNOWN:
        raise InvalidInputError(f"unknown quadruped {name!r}; known: {sorted(KNOWN)}")
    return build(KNOWN[name], name)


def resolve_quadruped(robot) -> Quadruped:
    """A :class:`Quadruped` from itself or from a known name (what the testbeds accept)."""
    if isinstance(robot, Quadruped):
        return robot
    if isinstance(robot, str):
        return quadruped(robot)
    raise InvalidInputError(f"robot must be a quadruped name or a robots.Quadruped, got {robot!r}")


def quadruped_urdf(name: str = "links") -> Path:
    """Path of a known quadruped's URDF file."""
    if name not in KNOWN:
        raise InvalidInputError(f"unknown quadruped {name!r}; known: {sorted(KNOWN)}")
    return _resolve(KNOWN[name].urdf)
