"""The leg inverse's fast paths give the inverse its definition asks for, and the leg Jacobians
are the derivatives of the foot points.

:meth:`idyn.planners.LegKinematics.inverse` is exact for a leg whose smallest singular value exceeds
10 sqrt(damping) and damped otherwise; it recognises regular legs by a determinant bound
(:func:`idyn.planners.kernels.regular_inverses`) instead of an SVD. These tests hold it to the
definition, computed here with the SVD and numpy's inverse, to round-off.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idyn import robots
from idyn.planners import BaseGoal, LegKinematics
import pinocchio as pin

from idyn.planners.kernels import regular_inverses
from idyn.errors import NonFiniteError


def _kin():
    robot = robots.quadruped("links")
    return LegKinematics(robot.model, {leg: f.link for leg, f in robot.feet.items()}, robot.leg_joints)


def _definition(J, damping):
    """The inverse by its definition: SVD test, exact or damped per leg."""
    Jt = np.transpose(J, (0, 2, 1))
    damped = Jt @ np.linalg.inv(J @ Jt + damping * np.eye(3))
    ok = np.linalg.svd(J, compute_uv=False)[:, -1] > 10.0 * np.sqrt(damping)
    if ok.any():
        damped[ok] = np.linalg.inv(J[ok])
    return damped


# legs from regular to singular: J = U diag(s) V^T with chosen singular values
_sigmas = st.lists(st.floats(1e-6, 0.3), min_size=3, max_size=3)


@settings(max_examples=200, deadline=None)
@given(legs=st.lists(_sigmas, min_size=1, max_size=4), seed=st.integers(0, 2**31))
def test_inverse_is_the_definition(legs, seed):
    """The same exact / damped choice per leg as the SVD makes, and the same inverses to 1e-12 of
    their size (an exact leg here has condition number at most 0.3 / 0.01 = 30)."""
    rng = np.random.default_rng(seed)
    J = []
    for s in legs:
        U, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        V, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        J.append(U @ np.diag(s) @ V.T)
    J = np.array(J)
    kin = _kin()
    got, want = kin.inverse(J), _definition(J, kin._damping)
    for g, w in zip(got, want):
        assert np.abs(g - w).max() <= 1e-12 * np.abs(w).max()


def test_compiled_inverse_inverts():
    """J^-1 J = I to round-off times the condition number, and numpy's inverse agrees."""
    rng = np.random.default_rng(11)
    J = rng.normal(size=(5000, 3, 3)) * 10.0 ** rng.uniform(-2, 1, size=(5000, 1, 1))
    out, ok = np.empty_like(J), np.empty(len(J), dtype=bool)
    assert regular_inverses(J, 0.0, ok, out) and ok.all()
    cond = np.linalg.cond(J)
    residual = np.abs(out @ J - np.eye(3)).max(axis=(1, 2))
    assert (residual <= 64 * np.finfo(float).eps * cond).all()
    want = np.linalg.inv(J)
    assert (np.abs(out - want).max(axis=(1, 2)) <= 64 * np.finfo(float).eps * cond * np.abs(want).max(axis=(1, 2))).all()
    assert not regular_inverses(np.zeros((2, 3, 3)), 1e-3, ok[:2], out[:2])       # a singular leg: not certain


@settings(max_examples=300, deadline=None)
@given(s=_sigmas, threshold=st.floats(1e-4, 0.1), seed=st.integers(0, 2**31))
def test_the_determinant_bound_never_calls_a_near_singular_leg_regular(s, threshold, seed):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    V, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    J = (U @ np.diag(s) @ V.T)[None]
    out = np.zeros(1, dtype=bool)
    regular_inverses(J, threshold, out, np.empty((1, 3, 3)))
    if out[0]:
        assert np.linalg.svd(J[0], compute_uv=False)[-1] > threshold
    if min(s) > threshold and np.prod(s) / np.sum(np.square(s)) > 1.01 * threshold:
        assert out[0]                     # the bound is tight enough to decide the usual legs


@pytest.mark.parametrize("name", ["links", "a1"])
def test_foot_points_and_jacobians_are_pinocchios_frames(name):
    """The foot points are pinocchio's placements of the feet's frames (the foot link's frame
    moved by the offset, oMf.act(offset)), the leg Jacobians its frame Jacobians
    (LOCAL_WORLD_ALIGNED, linear rows, the leg's columns), both to 1e-12 relative; and the
    Jacobians are the points' derivatives (central differences, to 1e-7)."""
    robot = robots.quadruped(name)
    feet = {leg: f.link for leg, f in robot.feet.items()}
    offsets = {leg: f.offset for leg, f in robot.feet.items()}
    kin = LegKinematics(robot.model, feet, robot.leg_joints, offsets)
    pm = robot.model.pinocchio_model
    data = pm.createData()
    rng = np.random.default_rng(4)
    q_stand = robot.q_stand[kin.leg_q]
    for _ in range(20):
        q_legs = q_stand + rng.uniform(-0.4, 0.4, size=q_stand.shape)
        x, J = kin.jacobians(q_legs)
        q = pin.neutral(pm)
        q[kin.leg_q] = q_legs
        pin.computeJointJacobians(pm, data, q)
        pin.updateFramePlacements(pm, data)
        for i, leg in enumerate(kin.legs):
            f = robot.model.frame_id(feet[leg])
            p = data.oMf[f].act(np.asarray(offsets[leg], dtype=float))
            assert np.abs(x[i] - p).max() <= 1e-12 * max(1.0, np.abs(p).max())
            Jf = pin.getFrameJacobian(pm, data, f, pin.LOCAL_WORLD_ALIGNED)
            omega = Jf[3:, kin.leg_v[i]]
            Jp = Jf[:3, kin.leg_v[i]] - np.cross(p - data.oMf[f].translation, omega.T).T   # moved to p
            assert np.abs(J[i] - Jp).max() <= 1e-12 * max(1.0, np.abs(Jp).max())
        h = 1e-6
        for k in range(q_legs.shape[1]):
            dq = np.zeros_like(q_legs)
            dq[:, k] = h
            fd = (kin.positions(q_legs + dq) - kin.positions(q_legs - dq)) / (2 * h)
            np.testing.assert_allclose(J[:, :, k], fd, rtol=0, atol=1e-7)


def test_base_goal_validates_what_users_build():
    with pytest.raises(NonFiniteError):
        BaseGoal(np.zeros(3), np.array([0.0, np.nan, 0.0]), np.zeros(3), np.zeros(3))
    goal = BaseGoal([0.0, 0.0, 0.3], [0.0, 0.0, 1.0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.2])
    assert goal.position.dtype == float and goal.rpy[2] == 1.0
