"""The compiled state conversion of the PyBullet testbeds (robots/pybullet/kernels.py) gives
the numbers of pinocchio's SE3 chain to round-off, on random poses and inertial frames."""
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idyn.errors import NonFiniteError
from idyn.robots.pybullet.base import StateReader

finite = st.floats(-10.0, 10.0, allow_nan=False)


def pinocchio_chain(raw13, inertial: pin.SE3):
    """The free-flyer conversion through pinocchio's SE3 objects and numpy (what the kernel replaces):
    T_link = T_com T_inertial^-1, v = R^T (v_com - w x (c - o)), w_b = R^T w."""
    com = pin.XYZQUATToSE3(np.array(raw13[:7]))
    base = com * inertial.inverse()
    RT = base.rotation.T
    d = com.translation - base.translation
    a = raw13[10:13]
    cross = np.array([a[1] * d[2] - a[2] * d[1], a[2] * d[0] - a[0] * d[2], a[0] * d[1] - a[1] * d[0]])
    v_origin = np.subtract(raw13[7:10], cross)
    return pin.SE3ToXYZQUAT(base), np.concatenate((RT.dot(v_origin), RT.dot(a)))


def _agree(a, b) -> bool:
    """Equal to round-off: 64 units in the last place of the largest entry (measured: at most 8)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 64 * np.finfo(float).eps * max(1.0, np.abs(b).max())))


def _same_pose(q7, want7) -> bool:
    """The same base pose: position to round-off and the same rotation (q and -q are one
    rotation; the reader returns the quaternion with w >= 0, unit to round-off)."""
    q7 = np.asarray(q7, dtype=float)
    R, R_want = pin.Quaternion(q7[3:7]).toRotationMatrix(), pin.Quaternion(np.asarray(want7)[3:7]).toRotationMatrix()
    return (_agree(q7[:3], want7[:3]) and _agree(R, R_want) and q7[6] >= 0.0
            and abs(np.linalg.norm(q7[3:7]) - 1.0) <= 4 * np.finfo(float).eps)


@settings(max_examples=300, deadline=None)
@given(pose=st.lists(finite, min_size=13, max_size=13), quat=st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4),
       seed=st.integers(0, 2**31 - 1), identity=st.booleans(), joints=st.lists(finite, min_size=4, max_size=4))
def test_free_flyer_first_matches_the_pinocchio_chain(pose, quat, seed, identity, joints):
    """A quadruped-like layout: free flyer first (q[:7], v[:6]), two joints after it in any order."""
    quat = np.array(quat)
    if np.linalg.norm(quat) < 1e-3:
        quat = np.array([0.0, 0.0, 0.0, 1.0])
    pose[3:7] = (quat / np.linalg.norm(quat)).tolist()
    np.random.seed(seed)                           # pin.SE3.Random draws from numpy's global state
    inertial = pin.SE3.Identity() if identity else pin.SE3.Random()
    reader = StateReader(np.array([8, 7]), np.array([6, 7]), 9, 8, (0, 0), inertial)
    q, v = reader.read(joints + pose)
    q7, v6 = pinocchio_chain(pose, inertial)
    assert _same_pose(q[:7], q7) and _agree(v[:6], v6)
    assert q[[8, 7]].tolist() == joints[:2] and v[[6, 7]].tolist() == joints[2:]


def test_degenerate_rotations_take_every_branch():
    """Quaternions whose rotation has a non-positive trace (each diagonal entry largest), and
    exact axis rotations."""
    inertial = pin.SE3.Random()
    reader = StateReader(np.array([], dtype=int), np.array([], dtype=int), 7, 6, (0, 0), inertial)
    rng = np.random.default_rng(5)
    quats = [np.array(c, dtype=float) for c in
             ([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0.5, 0.5, 0.5, 0.5], [0.5, -0.5, 0.5, -0.5],
              [0.9, 0.1, 0.0, 0.1], [0.1, 0.9, 0.1, 0.0], [0.0, 0.1, 0.9, 0.1])]
    for quat in quats:
        for _ in range(20):
            pose = np.concatenate((rng.normal(size=3), quat / np.linalg.norm(quat), rng.normal(size=6)))
            q, v = reader.read(pose.tolist())
            q7, v6 = pinocchio_chain(pose, inertial)
            assert _same_pose(q, q7) and _agree(v, v6)


def test_many_random_poses_and_inertial_frames():
    """2000 random poses, velocities and inertial frames."""
    rng = np.random.default_rng(11)
    np.random.seed(11)
    for _ in range(40):
        inertial = pin.SE3.Random()
        reader = StateReader(np.array([], dtype=int), np.array([], dtype=int), 7, 6, (0, 0), inertial)
        for _ in range(50):
            quat = rng.normal(size=4)
            pose = np.concatenate((rng.normal(scale=3.0, size=3), quat / np.linalg.norm(quat),
                                   rng.normal(scale=3.0, size=6)))
            q, v = reader.read(pose.tolist())
            q7, v6 = pinocchio_chain(pose, inertial)
            assert _same_pose(q, q7) and _agree(v, v6)


def test_fixed_base_scatters_joints_and_non_finite_state_raises():
    reader = StateReader(np.array([1, 0]), np.array([0, 1]), 2, 2, None, pin.SE3.Identity())
    q, v = reader.read([1.0, 2.0, 3.0, 4.0])
    assert q.tolist() == [2.0, 1.0] and v.tolist() == [3.0, 4.0]
    with pytest.raises(NonFiniteError):
        reader.read([1.0, np.nan, 3.0, 4.0])


def test_non_finite_free_flyer_raises():
    """A NaN or infinity anywhere in PyBullet's base numbers reaches q or v and is caught in the
    compiled call."""
    reader = StateReader(np.array([7]), np.array([6]), 8, 7, (0, 0), pin.SE3.Random())
    pose = [0.1, 0.0, 0.2, 0.0, 0.0, 0.0, 1.0, 0.1, 0.2, 0.3, 0.0, 0.1, 0.0]
    reader.read([0.5, 0.1] + pose)
    for k, bad in ((0, np.nan), (3, np.inf), (8, np.nan), (12, -np.inf)):
        with pytest.raises(NonFiniteError):
            reader.read([0.5, 0.1] + pose[:k] + [bad] + pose[k + 1:])
