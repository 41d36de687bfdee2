"""Waypoint task, balance term and the manipulator's reference motion (paper Sec. 7.2-7.6)."""
import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings, strategies as st

from idyn import robots
from idyn import Contact
from idyn.contact import contact_jacobians
from idyn.errors import InvalidInputError
from idyn.state import RobotState
from idyn.planners import ArmSinusoid, BalanceController, BaseGoal, PAPER_WAYPOINTS, WaypointFollower


def _state(x=0.0, y=0.0, yaw=0.0, z=0.16, rpy=(0.0, 0.0), nq=19, nv=18, v=None):
    q = np.zeros(nq)
    q[:3] = x, y, z
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(rpy[0], rpy[1], yaw)).coeffs()
    return RobotState(q, np.zeros(nv) if v is None else v, 0.0)


# ------------------------------------------------------------------ waypoints
def test_waypoints_are_the_papers_and_switch_within_tolerance():
    w = WaypointFollower()
    assert PAPER_WAYPOINTS == ((0.0, 0.0), (0.25, 0.0), (0.0, 0.25), (0.0, -0.25), (-0.25, 0.0))
    c = w.command(_state())                    # (0, 0) is reached at once; head for (0.25, 0)
    assert w.reached == 1 and tuple(w.target) == (0.25, 0.0)
    assert (c.vx, c.vy, c.wz) == (0.2, 0.0, 0.0)
    w.command(_state(x=0.25 - 0.026))         # 2.6 cm short: not yet
    assert w.reached == 1
    c = w.command(_state(x=0.25 - 0.024))     # 2.4 cm: switch to (0, 0.25), turn in place
    assert w.reached == 2 and tuple(w.target) == (0.0, 0.25)
    assert c.vx == 0.0 and c.wz == pytest.approx(1.5)   # error 3 pi / 4 -> capped rate


def test_walk_or_turn_rule():
    w = WaypointFollower(waypoints=[(1.0, 0.0)])
    err = 0.9 * math.pi / 8                                  # walk, steering at error / period
    c = w.command(_state(yaw=-err))
    assert c.vx == 0.2 and c.wz == pytest.approx(err / 0.3)
    err = 1.1 * math.pi / 8                                  # turn in place, uncapped (1.44 rad/s)
    c = w.command(_state(yaw=err))
    assert c.vx == 0.0 and c.wz == pytest.approx(-err / 0.3)
    c = w.command(_state(x=2.0, yaw=0.0))                    # behind: error pi, capped
    assert c.vx == 0.0 and abs(c.wz) == pytest.approx(1.5)


def test_waypoints_without_cycling_stop_at_the_end():
    w = WaypointFollower(waypoints=[(0.0, 0.0), (0.1, 0.0)], cycle=False)
    w.command(_state())
    c = w.command(_state(x=0.1))
    assert w.done and w.reached == 2 and (c.vx, c.wz) == (0.0, 0.0)
    cyc = WaypointFollower(waypoints=[(0.0, 0.0)])           # every waypoint within reach: no hang
    cyc.command(_state())
    assert not cyc.done


@pytest.mark.parametrize("kwargs", [dict(waypoints=[]), dict(waypoints=[(0, 0, 0)]),
                                    dict(tolerance=0.0), dict(speed=math.nan)])
def test_waypoints_reject_bad_input(kwargs):
    with pytest.raises(InvalidInputError):
        WaypointFollower(**kwargs)


# ------------------------------------------------------------------ balance
def _links_contacts(q, robot):
    out = []
    for f in robot.feet.values():
        c = pin.SE3(robot.model.frame_placement(q, f.link)).act(f.offset)
        out.append(Contact(f.link, None, c - [0, 0, f.radius], [0, 0, 1], 1.0))
    return out


def _goal(robot, yaw=0.0):
    return BaseGoal(np.array([0.0, 0.0, robot.q_stand[2]]), np.array([0.0, 0.0, yaw]),
                    np.zeros(3), np.zeros(3))


def test_balance_is_silent_at_the_goal_and_lifts_a_sagging_base():
    robot = robots.quadruped("links")
    bal = BalanceController(robot.model)
    q = robot.q_stand.copy()
    state = RobotState(q, np.zeros(robot.model.nv))
    out = bal.compute(state, _links_contacts(q, robot), _goal(robot))
    np.testing.assert_allclose(out.tau, 0.0, atol=1e-12)
    q[2] -= 0.01                                           # 1 cm low (feet follow the base)
    state = RobotState(q, np.zeros(robot.model.nv))
    contacts = _links_contacts(q, robot)
    out = bal.compute(state, contacts, _goal(robot))
    assert (out.normal_forces > 0).all()
    np.testing.assert_allclose(out.normal_forces, 100.0 * 0.01, rtol=1e-9)   # kp_z * 1 cm each
    N = contact_jacobians(robot.model, q, contacts).N
    base_force = N.T @ out.normal_forces
    R = pin.Quaternion(q[3:7]).toRotationMatrix()
    assert (R @ base_force[:3])[2] == pytest.approx(4.0)  # 4 feet x 1 N upward on the base
    # joints push the feet down: P^T tau + N^T c has no joint component (static consistency)
    gen = np.zeros(robot.model.nv)
    gen[robot.model.actuated_v] = out.tau
    np.testing.assert_allclose((gen + base_force)[robot.model.actuated_v], 0.0, atol=1e-12)


def test_balance_restores_roll_using_only_compressive_forces():
    robot = robots.quadruped("links")
    bal = BalanceController(robot.model)
    q = robot.q_stand.copy()
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.1, 0.0, 0.0)).coeffs()   # rolled left side up
    contacts = _links_contacts(robot.q_stand, robot)
    out = bal.compute(RobotState(q, np.zeros(robot.model.nv)), contacts, _goal(robot))
    N = contact_jacobians(robot.model, q, contacts).N
    torque = pin.Quaternion(q[3:7]).toRotationMatrix() @ (N.T @ out.normal_forces)[3:6]
    assert torque[0] < 0                                   # moment rolls the base back
    assert (out.normal_forces >= 0).all() and (out.normal_forces == 0).any()  # one side clipped


@settings(max_examples=40, deadline=None)
@given(dz=st.floats(-0.03, 0.03), roll=st.floats(-0.3, 0.3), pitch=st.floats(-0.3, 0.3),
       yaw=st.floats(-1, 1), vel=st.lists(st.floats(-1, 1), min_size=6, max_size=6))
def test_balance_forces_are_compressive_and_never_oppose_the_wrench(dz, roll, pitch, yaw, vel):
    robot = robots.quadruped("links")
    bal = BalanceController(robot.model, kp=[50.0] * 6, kv=[5.0] * 6)
    q = robot.q_stand.copy()
    q[2] += dz
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(roll, pitch, yaw)).coeffs()
    v = np.zeros(robot.model.nv)
    v[:6] = vel
    contacts = _links_contacts(robot.q_stand, robot)
    out = bal.compute(RobotState(q, v), contacts, _goal(robot))
    assert (out.normal_forces >= 0).all()
    N = contact_jacobians(robot.model, q, contacts).N
    assert out.wrench @ (N[:, :6].T @ out.normal_forces) >= -1e-12
    assert np.isfinite(out.tau).all()


def test_balance_uses_only_stance_feet_and_handles_no_contacts():
    robot = robots.quadruped("links")
    bal = BalanceController(robot.model)
    q = robot.q_stand.copy()
    q[2] -= 0.01
    state = RobotState(q, np.zeros(robot.model.nv))
    contacts = _links_contacts(q, robot)
    out = bal.compute(state, contacts, _goal(robot), stance_bodies={"LF_FOOT", "RH_FOOT"})
    assert [contacts[i].body_a for i in out.contacts_used] == ["LF_FOOT", "RH_FOOT"]
    rf = robot.leg_joints["RF"] - 6                          # RF joints carry no balance torque
    np.testing.assert_allclose(out.tau[rf], 0.0)
    none = bal.compute(state, [], _goal(robot))
    assert none.tau.shape == (robot.model.na,) and not none.tau.any()
    with pytest.raises(InvalidInputError):
        BalanceController(robot.model, kp=[-1.0] * 6)


# ------------------------------------------------------------------ arm
def _arm():
    q0 = np.array([1.5708] * 7 + [-math.pi / 4, math.pi / 4, math.pi / 4, -math.pi / 4])
    return ArmSinusoid(q0, finger_joints=range(7, 11), close_sign=[1, -1, -1, 1])


def test_arm_sinusoid_is_the_papers_and_its_derivatives_are_analytic():
    arm = _arm()
    d = arm.desired(0.0)
    np.testing.assert_allclose(d.q[:7], 1.5708)             # starts at rest at q0
    np.testing.assert_allclose(d.v[:7], 0.0)
    t, h = 0.37, 1e-6
    q, v, a = arm.arm_reference(t)
    np.testing.assert_allclose(q, 1.5708 + 0.1 * math.cos(10 * t) - 0.1)
    np.testing.assert_allclose((arm.arm_reference(t + h)[0] - arm.arm_reference(t - h)[0]) / (2 * h), v, atol=1e-7)
    np.testing.assert_allclose((arm.arm_reference(t + h)[1] - arm.arm_reference(t - h)[1]) / (2 * h), a, atol=1e-6)


def test_fingers_hold_while_touching_and_close_further_otherwise():
    arm = _arm()
    q0f = arm.q0[7:]
    d = arm.desired(0.0, touching=[True] * 4)
    np.testing.assert_allclose(d.q[7:], q0f + np.array([1, -1, -1, 1]) * 0.01)   # q0 - 0.01 inward
    assert not d.v[7:].any() and not d.vdot[7:].any()
    d = arm.desired(0.1, touching=[True, False, True, True])
    assert d.q[8] == pytest.approx(q0f[1] - 0.01 - 0.5 * 0.1)                   # closing at 0.5 rad/s
    assert d.v[8] == pytest.approx(-0.5) and d.v[7] == 0.0
    d = arm.desired(0.2, touching=[True] * 4)                                    # keeps the extra closure
    assert d.q[8] == pytest.approx(q0f[1] - 0.06) and d.v[8] == 0.0
    d = arm.desired(10.0, touching=[False] * 4)                                  # bounded closure
    np.testing.assert_allclose(np.abs(d.q[7:] - q0f), 0.01 + 0.3)
    with pytest.raises(InvalidInputError):
        arm.desired(11.0, touching=[True])
    with pytest.raises(InvalidInputError):
        ArmSinusoid(arm.q0, finger_joints=[12])
