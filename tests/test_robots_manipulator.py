"""The manipulator description: SPEC section 4 facts, the reference grasp, the box model."""
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from idyn import robots
from idyn.robots.manipulator import BOX_FRAME


@pytest.fixture(scope="module")
def arm():
    return robots.manipulator()


def test_urdf_path_and_sizes(arm):
    assert robots.manipulator_urdf().is_file()
    assert (arm.model.nq, arm.model.nv, arm.model.na) == (11, 11, 11)
    assert not arm.model.floating_base
    assert (arm.model_with_box.nq, arm.model_with_box.nv, arm.model_with_box.na) == (18, 17, 11)
    assert arm.model_with_box.has_frame(BOX_FRAME)


def test_spec_facts(arm):
    pm = arm.model.pinocchio_model
    urdf = {j.get("name"): j for j in ET.parse(str(arm.urdf)).getroot().findall("joint")}
    axes = [urdf[name].find("axis").get("xyz") for name in arm.arm_joints]
    assert axes == ["1 0 0", "0 1 0", "0 0 1", "1 0 0", "0 1 0", "0 0 1", "1 0 0"]
    fingers = [urdf[name].find("axis").get("xyz") for name in arm.finger_joints]
    assert sorted(fingers) == ["0 -1 0", "0 -1 0", "0 1 0", "0 1 0"]
    masses = {pm.names[i]: pm.inertias[i].mass for i in range(1, pm.njoints)}
    assert all(masses[j] == pytest.approx(0.1) for j in arm.finger_joints)
    assert all(masses[j] == pytest.approx(0.1) for j in arm.arm_joints)  # six links + the hand
    assert arm.box_mass == pytest.approx(0.7824, abs=1e-4)
    assert np.allclose(arm.q0[:7], 1.5708) and np.allclose(np.abs(arm.q0[7:]), np.pi / 4)


def test_hand_at_0_65_along_straight_arm(arm):
    q = np.zeros(11)
    base = arm.model.frame_placement(q, "ARM_LINK_1").translation
    hand = arm.model.frame_placement(q, "ARM_LINK_7").act(np.array([0.05, 0.0, 0.0]))
    assert np.allclose(hand - base, [0.65, 0.0, 0.0])
    # fingertips around (0.70, +-0.02, 0) in the arm frame, by the 45 degree fingers of q0
    q[7:] = arm.q0[7:]
    for tip in arm.fingertips.values():
        p = arm.model.frame_position(q, tip.link) - base
        assert p[0] == pytest.approx(0.685355, abs=1e-6) and abs(abs(p[1]) - 0.02) < 1e-12


def test_reference_grasp_touches_box_faces(arm):
    q = arm.combined_q(arm.q0)
    box = arm.model_with_box.frame_placement(q, BOX_FRAME)
    for tip in arm.fingertips.values():
        local = box.actInv(arm.model_with_box.frame_position(q, tip.link))
        # on a face: |z| = half side + radius, inside the face in x and y
        # (the side 0.05071 m is 0.1 sin(pi/4) - 0.02 rounded: a 0.3 um gap)
        assert abs(local[2]) == pytest.approx(arm.box_side / 2 + tip.radius, abs=1e-6)
        assert np.all(np.abs(local[:2]) < arm.box_side / 2)
    # squeeze horizontal, the box above the ground
    assert abs(box.rotation[:, 2] @ [0, 0, 1]) < 1e-4 and box.translation[2] > 0.5


def test_closing_direction_presses_on_box(arm):
    q = arm.combined_q(arm.q0)
    box = arm.box_placement(arm.q0)
    q_closed = arm.q0.copy()
    q_closed[7:] += 0.01 * arm.finger_close_sign
    for tip in arm.fingertips.values():
        before = abs(box.actInv(arm.model.frame_position(arm.q0, tip.link))[2])
        after = abs(box.actInv(arm.model.frame_position(q_closed, tip.link))[2])
        assert after < before
    assert q.shape == (18,)


def test_box_inertia_in_combined_model(arm):
    pm = arm.model_with_box.pinocchio_model
    inertia = pm.inertias[pm.getJointId(BOX_FRAME + "_joint")]
    assert inertia.mass == pytest.approx(arm.box_mass)
    assert np.allclose(inertia.inertia, arm.box_inertia)
    assert np.allclose(arm.box_inertia, np.eye(3) * arm.box_mass * arm.box_side ** 2 / 6)
    assert isinstance(arm.box_placement(arm.q0), pin.SE3)
