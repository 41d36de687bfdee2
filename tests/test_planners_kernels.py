"""The planner's and the balance term's compiled loops compute what their equations say.

Each is checked against numpy written from the equations (random inputs, to 1e-13 of the
operands' scale), or against an independent computation: the IK by its residual, the foot
drifts by differencing the Jacobians, the balance torques by the contact Jacobians formed here
from pinocchio's joint Jacobians.
"""
import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idyn import robots
from idyn import Contact
from idyn.errors import NonFiniteError, ShapeError
from idyn.state import RobotState
from idyn.planners import BalanceController, ClampedCubicSpline, LegKinematics
from idyn.planners.kernels import gait_frame_motion, plan_dtype
from idyn.planners.base_motion import base_rotation, rot_z

TOL = 1e-13


def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _kin(name):
    robot = robots.quadruped(name)
    kin = LegKinematics(robot.model, {leg: f.link for leg, f in robot.feet.items()}, robot.leg_joints,
                        {leg: f.offset for leg, f in robot.feet.items()})
    return robot, kin


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_gait_frame_motion_is_the_rotating_frame_formula(seed):
    rng = np.random.default_rng(seed)
    feet, pd, pdd = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    origin, yaw, vz = rng.normal(size=3), rng.uniform(-4, 4), rng.normal()
    twist, rate = tuple(rng.normal(size=3)), tuple(rng.normal(size=3))
    R = rot_z(yaw)
    planar = R @ np.array([twist[0], twist[1], 0.0])
    V = planar + np.array([0.0, 0.0, vz])
    A = R @ np.array([rate[0], rate[1], 0.0]) + twist[2] * np.array([-planar[1], planar[0], 0.0])
    W, Wd = _skew([0.0, 0.0, twist[2]]), _skew([0.0, 0.0, rate[2]])
    x_rel = (feet - origin) @ R
    v_rel = (pd - V) @ R
    xd = v_rel - x_rel @ W.T
    xdd = (pdd - A) @ R - (2.0 * v_rel) @ W.T - x_rel @ Wd.T + x_rel @ (W @ W).T
    ws = np.zeros(1, plan_dtype(4, 3, 6))
    w = ws[0]
    w["feet"], w["pd"], w["pdd"], w["pose"] = feet, pd, pdd, (origin[0], origin[1], yaw)
    w["z"], w["twist"], w["twist_rate"], w["vz"] = origin[2], twist, rate, vz
    gait_frame_motion(ws)
    out = [ws[0][name] for name in ("linear", "x_rel", "xd", "xdd")]
    for got, want in zip(out, (V, x_rel, xd, xdd)):
        np.testing.assert_allclose(got, want, rtol=0, atol=TOL * 100)


@pytest.mark.parametrize("name", ["links", "a1"])
def test_ik_reaches_reachable_targets(name):
    """Newton IK from a perturbed start reaches foot targets made by the forward kinematics: the
    returned error is the residual at the returned angles, and below the tolerance."""
    robot, kin = _kin(name)
    rng = np.random.default_rng(3)
    q_stand = robot.q_stand[kin.leg_q]
    for _ in range(30):
        q_true = q_stand + rng.uniform(-0.3, 0.3, q_stand.shape)
        targets = kin.positions(q_true)
        q, x, J, err = kin.solve(targets, q_true + rng.uniform(-0.05, 0.05, q_true.shape), tol=1e-10)
        np.testing.assert_allclose(x, kin.positions(q), rtol=0, atol=1e-12)
        np.testing.assert_allclose(err, np.linalg.norm(targets - x, axis=1), rtol=1e-12, atol=1e-15)
        assert (err <= 1e-10).all()
        np.testing.assert_allclose(J, kin.jacobians(q)[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["links", "a1"])
def test_foot_drifts_are_the_jacobians_time_derivative(name):
    """LegKinematics.drift(q, qd) is Jdot qd: the central difference of J(q) qd along qd (the base
    at rest at the origin, as the planner holds it), to 1e-6 of its size."""
    robot, kin = _kin(name)
    rng = np.random.default_rng(11)
    q_stand = robot.q_stand[kin.leg_q]
    h = 1e-6
    for _ in range(30):
        q = q_stand + rng.uniform(-0.4, 0.4, q_stand.shape)
        qd = rng.normal(0.0, 3.0, q.shape)
        got = kin.drift(q, qd)
        Jp, Jm = kin.jacobians(q + h * qd)[1], kin.jacobians(q - h * qd)[1]
        want = ((Jp - Jm) @ qd[..., None])[..., 0] / (2 * h)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * max(1.0, np.abs(want).max()))


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_balance_is_the_pd_law_through_the_contact_normals(seed):
    """BalanceController.compute against numpy from the equations: the PD wrench in the goal's
    heading frame, c_n = max(0, N_b w) and tau = -(N^T c_n)[actuated], with the rows of N formed
    here from pinocchio's joint Jacobians (n^T (J_lin - [p]x J_ang))."""
    rng = np.random.default_rng(seed)
    robot = robots.quadruped("links")
    model = robot.model
    pm = model.pinocchio_model
    kp, kv = rng.uniform(0, 200, 6), rng.uniform(0, 20, 6)
    bal = BalanceController(model, kp, kv)
    q = robot.q_stand.copy()
    q[:3] += 0.01 * rng.normal(size=3)
    q[3:7] = pin.Quaternion(*rng.normal(size=4)).normalized().coeffs()
    v = rng.normal(size=model.nv)
    rows = np.array([[0.0, 0.0, 0.3], [0.0, 0.0, rng.uniform(-4, 4)], rng.normal(size=3), rng.normal(size=3)])
    goal = type("Goal", (), dict(zip(("position", "rpy", "linear", "angular"), rows)))
    contacts = [Contact(f.link, None, rng.normal(scale=0.3, size=3), rng.normal(size=3) + [0, 0, 3], 1.0)
                for f in robot.feet.values()]
    out = bal.compute(RobotState(q, v), contacts, goal)
    R = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
    H = rot_z(rows[1, 2])
    e_r = pin.log3(pin.rpy.rpyToMatrix(rows[1]) @ R.T)
    e_p, e_v, e_w = rows[0] - q[:3], rows[2] - R @ v[:3], rows[3] - R @ v[3:6]
    force = H @ (kp[:3] * (H.T @ e_p) + kv[:3] * (H.T @ e_v))
    torque = H @ (kp[3:] * (H.T @ e_r) + kv[3:] * (H.T @ e_w))
    wrench = np.concatenate((R.T @ force, R.T @ torque))
    np.testing.assert_allclose(out.wrench, wrench, rtol=0, atol=TOL * 10 * max(1.0, np.abs(wrench).max()))
    data = pm.createData()
    pin.computeJointJacobians(pm, data, q)
    N = []
    for c in contacts:
        J6 = pin.getJointJacobian(pm, data, pm.frames[model.frame_id(c.body_a)].parentJoint, pin.WORLD)
        N.append(c.normal @ (J6[:3] - _skew(c.point) @ J6[3:]))
    N = np.array(N)
    c_n = np.maximum(N[:, :6] @ out.wrench, 0.0)
    tau = -(N.T @ c_n)[model.actuated_v]
    np.testing.assert_allclose(out.normal_forces, c_n, rtol=0, atol=1e-12 * max(1.0, np.abs(c_n).max()))
    np.testing.assert_allclose(out.tau, tau, rtol=0, atol=1e-12 * max(1.0, np.abs(tau).max()))


def test_spline_passes_its_points_and_is_its_cubic():
    """The swing spline interpolates its control points at their times, and between knots it is
    the cubic of its segment (to 1e-13 of the operands' scale); outside it continues linearly."""
    rng = np.random.default_rng(5)
    times = np.array([0.0, 0.0125, 0.0375, 0.075])
    points = rng.normal(size=(4, 3))
    spline = ClampedCubicSpline(times, points, np.zeros(3), np.zeros(3))
    for t, p in zip(times, points):
        np.testing.assert_allclose(spline(t)[0], p, rtol=0, atol=1e-12)
    knots = spline._knots
    for t in np.concatenate((rng.uniform(-0.01, 0.085, 500), knots)):
        x, xd, xdd = spline(t)
        if t < knots[0] or t > knots[-1]:
            (p, v), t_end = (spline._ends[:2], knots[0]) if t < knots[0] else (spline._ends[2:], knots[-1])
            want = (p + v * (t - t_end), v, np.zeros(3))
        else:
            k = min(int(np.searchsorted(knots, t, side="right")) - 1, knots.size - 2)
            s = t - knots[k]
            c0, c1, c2, c3 = spline._coef[k]
            want = (c0 + c1 * s + c2 * s**2 + c3 * s**3, c1 + 2 * c2 * s + 3 * c3 * s**2, 2 * c2 + 6 * c3 * s)
        for got, exp in zip((x, xd, xdd), want):
            np.testing.assert_allclose(got, exp, rtol=0, atol=TOL * 10 * max(1.0, np.abs(exp).max()))


def test_base_rotation_is_the_quaternions_rotation():
    """base_rotation gives pinocchio's rotation of the normalised quaternion q[3:7] to 8 ulps, for
    unit, nearly unit (as a simulator's state holds) and arbitrary quaternions."""
    rng = np.random.default_rng(13)
    q, out = np.zeros(7), np.empty((3, 3))
    for k in range(5000):
        c = rng.normal(size=4)
        if k % 2:
            c *= (1.0 + 1e-9 * rng.normal()) / np.linalg.norm(c)
        q[3:7] = c
        base_rotation(q, out)
        want = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
        np.testing.assert_allclose(out, want, rtol=0, atol=8 * np.finfo(float).eps)


def test_check_state_keeps_the_typed_errors():
    quad = robots.quadruped("links")
    model = quad.model
    state = RobotState(quad.q_stand.copy(), np.zeros(model.nv), 0.0)
    q, v = model.check_state(state)
    assert q is state.q and v is state.v
    state.q[2] = math.nan                     # arrays changed in place after construction
    with pytest.raises(NonFiniteError):
        model.check_state(state)
    with pytest.raises(ShapeError):
        model.check_state(RobotState(np.zeros(5), np.zeros(model.nv), 0.0))
    with pytest.raises(ShapeError):
        model.check_q(np.zeros(model.nq + 1))
    assert model.check_q(list(quad.q_stand)).dtype == float          # other inputs still converted
