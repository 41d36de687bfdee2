"""The locomotion planner: leg IK, stance and swing feet, desired q/qd/qdd consistency.

The planner is exercised on a *kinematic rollout*: the base moves exactly with the commanded
twist and the joints take the desired values, so every planned quantity can be checked against
pinocchio through :class:`idyn.RobotModel` (an independent path from the planner's own
batched kinematics).
"""
from functools import lru_cache

import numpy as np
import pinocchio as pin
import pytest

from idyn import robots
from idyn.errors import InvalidInputError
from idyn.state import RobotState
from idyn.planners import BaseCommand, LegKinematics, QuadrupedPlanner, TrotGait


def _planner(robot, **kw):
    return QuadrupedPlanner(robot.model, {leg: f.link for leg, f in robot.feet.items()},
                            robot.leg_joints, robot.q_stand,
                            foot_offsets={leg: f.offset for leg, f in robot.feet.items()}, **kw)


@lru_cache(maxsize=None)
def _rollout(name, cmd=(0.2, 0.0, 0.3), dt=1e-3, steps=600, ik_tol=1e-6, ramp=True):
    """Kinematic rollout of the plan: the base moves exactly with the planned twist (the command,
    reached through the planner's acceleration ramp) and the joints take the desired values.
    Returns (robot, planner, times, q (steps, nq), desired list, stance, IK errors, planned
    base twists (steps, 6) in pinocchio's local base frame)."""
    robot = robots.quadruped(name)
    m = robot.model
    planner = _planner(robot, ik_tol=ik_tol, **({} if ramp else
                                                {"max_acceleration": None, "max_yaw_acceleration": None}))
    command = BaseCommand(*cmd)
    q, v = robot.q_stand.copy(), np.zeros(m.nv)
    qs, des, stance, errs, twists = [], [], [], [], []
    for k in range(steps):
        d = planner.plan(RobotState(q, v, k * dt), command)
        qs.append(q.copy())
        des.append(d)
        stance.append(np.array(list(planner.stance.values())))
        errs.append(planner.ik_error.max())
        goal = planner.base_goal()
        R = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
        v = np.zeros(m.nv)
        v[:3], v[3:6] = R.T @ goal.linear, R.T @ goal.angular
        twists.append(v[:6].copy())
        v[m.actuated_v] = d.v
        q = m.integrate(q, v, dt)
        q[m.actuated_q] = d.q
    return (robot, planner, np.arange(steps) * dt, np.array(qs), des, np.array(stance),
            np.array(errs), np.array(twists))


def _full_q(q_meas, m, d):
    q = q_meas.copy()
    q[m.actuated_q] = d.q
    return q


# ------------------------------------------------------------------ leg kinematics
@pytest.mark.parametrize("name", ["links", "a1"])
def test_leg_kinematics_match_robotmodel(name):
    robot = robots.quadruped(name)
    m = robot.model
    kin = LegKinematics(m, {leg: f.link for leg, f in robot.feet.items()}, robot.leg_joints,
                        {leg: f.offset for leg, f in robot.feet.items()})
    rng = np.random.default_rng(0)
    q = m.neutral()
    q[m.actuated_q] = robot.q_stand[m.actuated_q] + rng.uniform(-0.2, 0.2, m.na)
    ql, qdl = q[kin.leg_q], rng.normal(size=kin.leg_q.shape)
    x, J = kin.jacobians(ql)
    v = np.zeros(m.nv)
    v[kin.leg_v] = qdl
    twist = rng.normal(size=6)
    vb = kin.base_velocity(twist)
    drift = kin.drift(ql, qdl)
    for i, (leg, foot) in enumerate(robot.feet.items()):
        p = pin.SE3(m.frame_placement(q, foot.link)).act(foot.offset)
        np.testing.assert_allclose(x[i], p, atol=1e-12)
        Jm = m.frame_jacobian(q, foot.link, p)[:3]
        np.testing.assert_allclose(J[i], Jm[:, kin.leg_v[i]], atol=1e-12)
        np.testing.assert_allclose(vb[i], Jm[:, :6] @ twist, atol=1e-12)     # J_base twist
        np.testing.assert_allclose(drift[i], m.point_drift(q, v, foot.link, p), atol=1e-10)


@pytest.mark.parametrize("name", ["links", "a1"])
def test_leg_ik_reaches_reachable_targets(name):
    robot = robots.quadruped(name)
    kin = LegKinematics(robot.model, {leg: f.link for leg, f in robot.feet.items()}, robot.leg_joints)
    q0 = robot.q_stand[kin.leg_q]
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(10):
        target = kin.positions(q0 + rng.uniform(-0.3, 0.3, q0.shape))
        q, x, J, err = kin.solve(target, q0, tol=1e-10)
        np.testing.assert_allclose(kin.positions(q), target, atol=1e-9)
        worst = max(worst, err.max())
    assert worst < 1e-9
    # out of reach: no exception, finite angles, a reported error of about the excess distance
    far = kin.positions(q0) + np.array([0.0, 0.0, -1.0])
    q, x, J, err = kin.solve(far, q0)
    assert np.isfinite(q).all() and (err > 0.5).all()


# ------------------------------------------------------------------ planner
@pytest.mark.parametrize("name", ["links", "a1"])
def test_stance_feet_hold_still_and_move_at_minus_jbase_twist(name):
    robot, planner, times, qs, des, stance, errs, twists = _rollout(name)
    m = robot.model
    assert errs.max() < 1e-6                                   # IK tolerance met every step
    frames = [f.link for f in robot.feet.values()]
    held = {}
    for k in range(0, len(times), 7):
        qd = _full_q(qs[k], m, des[k])
        for i, (leg, foot) in enumerate(robot.feet.items()):
            if not stance[k, i]:
                held.pop(leg, None)
                continue
            p = pin.SE3(m.frame_placement(qd, foot.link)).act(foot.offset)
            J = m.frame_jacobian(qd, foot.link, p)[:3]
            j_leg = robot.leg_joints[leg]
            v_leg = J[:, j_leg] @ des[k].v[np.searchsorted(m.actuated_v, j_leg)]
            # relative foot velocity from the joints equals -J_base twist (SPEC section 5) ...
            np.testing.assert_allclose(v_leg, -J[:, :6] @ twists[k], atol=1e-6)
            # ... so the stance foot stays where it touched down (world frame)
            np.testing.assert_allclose(p, held.setdefault(leg, p), atol=2e-6)
    assert frames and held


@pytest.mark.parametrize("name", ["links", "a1"])
def test_desired_q_v_vdot_are_consistent_by_finite_differences(name):
    # a tight IK tolerance: with the default 1e-6 m, Newton corrections of that size show up
    # as 1e-3-relative finite-difference noise at 0.2 ms steps; no command ramp, whose
    # acceleration steps would add discontinuities to the spline knots' (tested below)
    robot, planner, times, qs, des, stance, errs, _ = _rollout(name, dt=2e-4, steps=1500,
                                                              ik_tol=1e-10, ramp=False)
    dt = times[1]
    Q = np.array([d.q for d in des])
    V = np.array([d.v for d in des])
    A = np.array([d.vdot for d in des])
    fd_v = (Q[2:] - Q[:-2]) / (2 * dt)
    fd_a = (V[2:] - V[:-2]) / (2 * dt)
    ev = np.abs(fd_v - V[1:-1]).max(axis=1) / np.abs(V).max()
    ea = np.abs(fd_a - A[1:-1]).max(axis=1) / np.abs(A).max()
    # O(dt^2) away from spline knots; O(dt) jerk jumps at the knots (the spline is only C2)
    assert np.median(ev) < 1e-4 and ev.max() < 1e-3
    assert np.median(ea) < 1e-4 and np.percentile(ea, 99) < 1e-3 and ea.max() < 2e-2


def test_swing_foot_follows_the_control_points():
    dt = 5e-4                                # a control step on each knot (the lift takes 12.5 ms)
    robot, planner, times, qs, des, stance, errs, _ = _rollout("links", dt=dt, steps=800)
    m = robot.model
    gait = planner.gait
    lf = robot.feet["LF"]
    z = np.array([pin.SE3(m.frame_placement(_full_q(qs[k], m, des[k]), lf.link)).act(lf.offset)[2]
                  for k in range(len(times))])
    lift, touch = gait.swing_window("LF", 0.3)           # second swing: 0.3 .. 0.375
    fractions = np.array([0.0, *planner.swing_timing, 1.0])
    k0, k1, k2, k3 = (int(round(t / dt)) for t in lift + fractions * (touch - lift))
    assert z[k1] - z[k0] == pytest.approx(gait.step_height, abs=1e-6)   # start + h up
    assert z[k2] - z[k0] == pytest.approx(gait.step_height, abs=1e-6)   # goal + h up (+overstep)
    assert z[k3 - 1] == pytest.approx(z[k0], abs=1e-5)                    # lands at its height


def test_swing_foot_arrives_slowly():
    """Touchdown is gentle: feet land up to ~20 ms early (tracking error, uneven ground), so the
    planned descent over the last 20 ms of a swing is the speed a foot strikes with. With the
    control points equally spaced in time it is 1.08 m/s (a foot 1 mm low strikes at 0.34 m/s);
    the bounds ask for less than half of that, and a foot 1 mm low below 0.25 m/s, while the foot
    still clears the step height."""
    robot, planner, times, qs, des, stance, errs, _ = _rollout("links")
    m = robot.model
    gait = planner.gait
    checked = 0
    for i, (leg, foot) in enumerate(robot.feet.items()):
        z = np.array([pin.SE3(m.frame_placement(_full_q(qs[k], m, des[k]), foot.link))
                      .act(foot.offset)[2] for k in range(len(times))])
        vz = np.diff(z) / 1e-3                      # vz[k]: mean speed over step k .. k+1
        for k in np.nonzero(stance[1:, i] & ~stance[:-1, i])[0] + 1:   # planned touchdowns
            if k < 100:                             # the swing began before the planner did
                continue
            k_lift = k - int(round(gait.swing_duration / 1e-3))
            height = z[k_lift:k] - z[k]
            assert height.max() >= gait.step_height
            assert -vz[k - 20:k].min() < 0.5, (leg, times[k])
            low = np.nonzero(height[:-1] < 1e-3)[0][0] + k_lift   # first step 1 mm above
            assert -vz[low] < 0.25, (leg, times[k])
            checked += 1
    assert checked >= 6


def test_touchdown_is_nominal_at_mid_stance():
    """Swing goal = the nominal foot position under the base pose of the next mid-stance."""
    robot, planner, times, qs, des, stance, errs, _ = _rollout("links", cmd=(0.2, 0.0, 0.3))
    m = robot.model
    q_stand = robot.q_stand
    lf = robot.feet["LF"]
    nominal = pin.SE3(m.frame_placement(q_stand, lf.link)).act(lf.offset) - q_stand[:3]
    t_mid = 0.375 + 0.5 * planner.gait.stance_duration     # mid-stance after the second swing
    k = int(round(t_mid / 1e-3))
    qd = _full_q(qs[k], m, des[k])
    R = pin.Quaternion(qs[k][3:7]).toRotationMatrix()
    rel = R.T @ (pin.SE3(m.frame_placement(qd, lf.link)).act(lf.offset) - qs[k][:3])
    np.testing.assert_allclose(rel[:2], nominal[:2], atol=2e-4)


def test_planner_state_queries_and_gait_pose():
    robot, planner, times, qs, *_ = _rollout("links")
    goal = planner.base_goal()
    assert goal.position[2] == pytest.approx(robot.q_stand[2], abs=1e-9)   # nominal height
    assert np.hypot(*(goal.position[:2] - qs[-1][:2])) <= planner.max_lead + 1e-9
    assert set(planner.stance) == {"LF", "RF", "LH", "RH"}
    assert planner.foot_targets.shape == (4, 3)


def test_planner_rejects_bad_input():
    robot = robots.quadruped("links")
    feet = {leg: f.link for leg, f in robot.feet.items()}
    with pytest.raises(InvalidInputError):
        QuadrupedPlanner(robot.model, feet, robot.leg_joints, robot.q_stand,
                         gait=TrotGait(touchdown={"LF": 0.0, "RF": 0.5}))
    tilted = robot.q_stand.copy()
    tilted[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.2, 0.0, 0.0)).coeffs()
    with pytest.raises(InvalidInputError):
        QuadrupedPlanner(robot.model, feet, robot.leg_joints, tilted)
    for timing in [(0.5, 0.5), (0.0, 0.5), (0.5, 1.0)]:
        with pytest.raises(InvalidInputError):
            _planner(robot, swing_timing=timing)
    p = _planner(robot)
    state = RobotState(robot.q_stand, np.zeros(robot.model.nv), 1.0)
    p.plan(state)
    with pytest.raises(InvalidInputError):
        p.plan(RobotState(robot.q_stand, np.zeros(robot.model.nv), 0.5))   # time went back
    with pytest.raises(InvalidInputError):
        p.plan(RobotState(robot.q_stand[:-1], np.zeros(robot.model.nv), 2.0))
    with pytest.raises(InvalidInputError):
        p.set_command((0.2, 0.0, 0.0))
    p.reset()
    assert isinstance(p.plan(state).q, np.ndarray)


def test_command_ramp_reaches_the_command_at_the_acceleration_limit():
    """Acceleration from rest (paper Sec. 7.6): the planned twist ramps, continuous in velocity."""
    robot, planner, times, qs, des, stance, errs, twists = _rollout("links", cmd=(0.2, 0.0, 0.3))
    speed = np.hypot(twists[:, 0], twists[:, 1])
    dv = np.diff(speed) / (times[1] - times[0])
    assert speed[0] == 0.0                                                  # from rest
    assert speed[1] == pytest.approx(1e-3 * planner.max_acceleration, rel=1e-6)
    assert dv.max() <= planner.max_acceleration * (1 + 1e-9)
    k_full = int(np.argmax(speed >= 0.2 - 1e-12))
    assert times[k_full] == pytest.approx(0.2 / planner.max_acceleration, abs=2e-3)
    np.testing.assert_allclose(twists[k_full:, 5], 0.3, atol=1e-12)             # yaw reached first
