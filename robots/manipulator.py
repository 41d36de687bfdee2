"""The fixed-base manipulator grasping a heavy box (paper Sec. 7.1 and 8.4.1, docs/robots.md).

:func:`manipulator` returns a :class:`Manipulator`: the arm's fixed-base :class:`idyn.RobotModel`
(11 actuated joints), the same model with the grasped box appended as an unactuated free body
(``RobotModel.append_free_body``, frame ``"box"``; paper eqs. 1-3), the fingertip spheres
(discovered generically as leaf links with sphere collisions), the reference configuration q0 and
the box pose that q0 grasps. Geometry choices are documented in ``assets/manipulator.urdf``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pinocchio as pin

from idyn import RobotModel
from idyn.errors import InvalidInputError

from .description import SphereFoot, package_asset, sphere_leaves

#: the grasped cube (docs/robots.md)
BOX_SIDE = 0.05071
BOX_DENSITY = 6000.0
#: box and arm against the ground (docs/robots.md)
GROUND_MU = 1.0
#: frame (and free-flyer joint prefix) of the box in the combined model
BOX_FRAME = "box"
#: arm joints sit at 1.5708 rad in the reference pose; fingers at 45 degrees (URDF comment)
ARM_Q0 = 1.5708
FINGER_Q0 = {"FINGER_1": -np.pi / 4, "FINGER_2": np.pi / 4,
             "FINGER_3": np.pi / 4, "FINGER_4": -np.pi / 4}
#: the hand frame (link carrying the fingers) and the box centre in it at the reference pose
HAND_LINK = "ARM_LINK_7"
BOX_IN_HAND = np.array([0.05 + 0.05 * np.sin(np.pi / 4), 0.0, 0.0])


@dataclass(frozen=True)
class Manipulator:
    """The arm, the arm + box model, fingertips and the reference grasp."""

    name: str
    urdf: Path
    model: RobotModel                 #: fixed-base arm + fingers (nq = nv = na = 11)
    model_with_box: RobotModel        #: arm + fingers, then the box free-flyer (nq 18, nv 17)
    fingertips: dict[str, SphereFoot]  #: finger joint name -> fingertip sphere
    q0: np.ndarray = field(repr=False)           #: reference arm + finger configuration (11)
    box_side: float = BOX_SIDE
    box_mass: float = BOX_SIDE ** 3 * BOX_DENSITY

    @property
    def arm_joints(self) -> list[str]:
        return [j for j in self.model.actuated_joint_names if j.startswith("ARM_")]

    @property
    def finger_joints(self) -> list[str]:
        return list(self.fingertips)

    @property
    def finger_close_sign(self) -> np.ndarray:
        """Per finger (in ``finger_joints`` order): the sign of dq that presses on the box."""
        return np.array([-np.sign(FINGER_Q0[j]) for j in self.finger_joints])

    @property
    def box_inertia(self) -> np.ndarray:
        """Rotational inertia of the solid cube about its centre."""
        return np.eye(3) * self.box_mass * self.box_side ** 2 / 6.0

    def box_placement(self, q_arm) -> pin.SE3:
        """World pose of the box held by the hand at arm configuration ``q_arm`` (hand frame)."""
        hand = self.model.frame_placement(q_arm, HAND_LINK)
        return pin.SE3(hand.rotation, hand.act(BOX_IN_HAND))

    def combined_q(self, q_arm, box: pin.SE3 | None = None) -> np.ndarray:
        """Configuration of ``model_with_box``: arm joints, then the box [position, quaternion]."""
        q_arm = self.model.check_q(q_arm)
        box = self.box_placement(q_arm) if box is None else box
        return np.concatenate((q_arm, pin.SE3ToXYZQUAT(box)))


def _fingertips(model: RobotModel, urdf: Path) -> dict[str, SphereFoot]:
    """Fingertip spheres keyed by the finger joint that moves them, in actuated order."""
    pm = model.pinocchio_model
    tips = {}
    for leaf in sphere_leaves(urdf):
        joint = pm.names[pm.frames[model.frame_id(leaf.link)].parentJoint]
        tips[joint] = leaf
    order = [j for j in model.actuated_joint_names if j in tips]
    return {j: tips[j] for j in order}


@lru_cache(maxsize=None)
def manipulator() -> Manipulator:
    """The manipulator of docs/robots.md (cached: models are immutable)."""
    urdf = manipulator_urdf()
    model = RobotModel.from_urdf(urdf, floating_base=False)
    tips = _fingertips(model, urdf)
    if len(tips) != 4:
        raise InvalidInputError(f"expected four fingertips in {urdf}, found {list(tips)}")
    q0 = np.array([FINGER_Q0.get(j, ARM_Q0) for j in model.actuated_joint_names])
    mass = BOX_SIDE ** 3 * BOX_DENSITY
    with_box = model.append_free_body(BOX_FRAME, mass, np.eye(3) * mass * BOX_SIDE ** 2 / 6.0)
    return Manipulator("manipulator", urdf, model, with_box, tips, q0)


def manipulator_urdf() -> Path:
    """Path of the manipulator URDF shipped in robots/assets."""
    return package_asset("manipulator.urdf")
