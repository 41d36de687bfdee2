"""Every joint pinocchio builds from a URDF (continuous, unaligned revolute, prismatic, fixed) and
the free-flyer quaternion check, on the small robot of tests/data/joints.urdf.

The oracle for the continuous joint is the same URDF with the joint declared revolute (pinocchio
then builds a one-coordinate revolute joint): both describe the same mechanism, so M, h and the
contact Jacobians must agree at matching configurations, to rounding.
"""
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from idyn import controllers
from idyn.controllers.feedback import ErrorFeedback
from idyn import Contact, RobotModel, contact_jacobians
from idyn.errors import InvalidInputError, ModelLoadError, QuaternionError
from idyn.state import Desired, RobotState

URDF = Path(__file__).parent / "data" / "joints.urdf"


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf(URDF, floating_base=True)


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """The same robot with its continuous joint declared revolute (a one-coordinate angle)."""
    text = URDF.read_text().replace(
        'type="continuous">', 'type="revolute"><limit lower="-10" upper="10" effort="1" velocity="1"/>')
    path = tmp_path_factory.mktemp("twin") / "joints_revolute.urdf"
    path.write_text(text)
    return RobotModel.from_urdf(path, floating_base=True)


def wrap(a):
    """The angle a in (-pi, pi] (oracle for the continuous joint's difference)."""
    return np.arctan2(np.sin(a), np.cos(a))


def test_every_joint_kind_loads(model):
    kinds = [j.shortname() for j in model.pinocchio_model.joints[1:]]
    assert kinds == ["JointModelFreeFlyer", "JointModelRUBY", "JointModelRevoluteUnaligned", "JointModelPZ"]
    assert (model.nq, model.nv, model.na) == (7 + 2 + 1 + 1, 6 + 3, 3)
    assert model.actuated_joint_names == ["wheel_joint", "arm_joint", "slider_joint"]
    assert list(model.actuated_v) == [6, 7, 8]
    assert list(model.actuated_q) == [7, 8, 9, 10]          # cos, sin of the wheel; the arm; the slider
    assert not model.flat_actuation
    assert model.quaternion_q == (3,)


def test_joint_positions_round_trip(model):
    rng = np.random.default_rng(0)
    base = model.integrate(model.neutral(), rng.normal(size=model.nv), 1.0)
    for _ in range(20):
        p = rng.uniform([-np.pi + 1e-9, -2, -0.1], [np.pi, 2, 0.1])
        q = model.with_joint_positions(base, p)
        assert np.allclose(q[[7, 8]], [np.cos(p[0]), np.sin(p[0])], atol=1e-15)
        assert np.array_equal(q[:7], base[:7])
        assert np.allclose(model.joint_positions(q), p, atol=1e-12, rtol=0)
        # an angle and the same angle plus a turn are one configuration of a continuous joint
        q2 = model.with_joint_positions(base, p + [2 * np.pi, 0, 0])
        assert np.allclose(q2, q, atol=1e-14)


def test_joint_error_is_the_shortest_angle(model):
    rng = np.random.default_rng(1)
    for _ in range(50):
        p, p_des = rng.uniform(-3 * np.pi, 3 * np.pi, 3), rng.uniform(-3 * np.pi, 3 * np.pi, 3)
        q = model.with_joint_positions(model.neutral(), p)
        e = model.joint_error(q, p_des)
        assert e[0] == pytest.approx(wrap(p_des[0] - p[0]), abs=1e-12)
        assert e[1:] == pytest.approx(p_des[1:] - p[1:], abs=1e-12)
    # across the cut at pi: 0.2 rad, not 2 pi - 0.2
    q = model.with_joint_positions(model.neutral(), [np.pi - 0.1, 0, 0])
    assert model.joint_error(q, [-np.pi + 0.1, 0, 0])[0] == pytest.approx(0.2, abs=1e-12)


def test_dynamics_match_the_revolute_twin(model, twin):
    rng = np.random.default_rng(2)
    for _ in range(10):
        qt = twin.integrate(twin.neutral(), rng.uniform(-2, 2, twin.nv), 1.0)
        qt[7] = rng.uniform(-3 * np.pi, 3 * np.pi)            # the twin's angle, any turn
        q = model.with_joint_positions(np.r_[qt[:7], 1.0, 0.0, qt[8:]], twin.joint_positions(qt))
        v = rng.normal(size=model.nv)
        assert np.allclose(model.mass_matrix(q), twin.mass_matrix(qt), atol=1e-12)
        assert np.allclose(model.bias_forces(q, v), twin.bias_forces(qt, v), atol=1e-10)
        p = model.frame_position(q, "tip")
        assert np.allclose(p, twin.frame_position(qt, "tip"), atol=1e-14)
        c = [Contact("tip", None, p, [0, 0, 1], mu=1.0)]
        a, b = contact_jacobians(model, q, c), contact_jacobians(twin, qt, c)
        for name in ("N", "S", "T"):
            assert np.allclose(getattr(a, name), getattr(b, name), atol=1e-12)


def test_error_feedback_uses_the_manifold_difference(model):
    kp, kv, ki, dt = 100.0, 20.0, 1.0, 1e-3
    fb = ErrorFeedback(model, kp, kv, ki)
    q = model.with_joint_positions(model.neutral(), [np.pi - 0.05, 0.3, 0.02])
    v = np.r_[np.zeros(6), 0.1, -0.2, 0.3]
    d = Desired([-np.pi + 0.05, 0.2, 0.0], [0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    e = np.array([0.1, -0.1, -0.02])                          # oracle: shortest angle, differences
    out = fb.acceleration(q, v, d, dt)
    assert out == pytest.approx(d.vdot + kp * e + kv * (d.v - v[6:]) + ki * e * dt, abs=1e-9)


def test_a_controller_runs_on_a_continuous_joint(model):
    ctrl = controllers.make("qp-coulomb", model)
    q = model.with_joint_positions(model.neutral(), [2.0, 0.1, 0.0])
    q[2] = 0.5
    c = [Contact("tip", None, model.frame_position(q, "tip"), [0, 0, 1], mu=0.5)]
    out = ctrl.compute(RobotState(q, np.zeros(model.nv)), Desired(model.joint_positions(q), np.zeros(3), np.zeros(3)),
                       c)
    assert np.all(np.isfinite(out.tau)) and out.tau.shape == (3,)


def test_unsupported_actuated_joint_is_named():
    pm = pin.Model()
    jid = pm.addJoint(0, pin.JointModelSpherical(), pin.SE3.Identity(), "ball")
    pm.appendBodyToJoint(jid, pin.Inertia.Random(), pin.SE3.Identity())
    with pytest.raises(InvalidInputError, match="'ball'"):
        RobotModel(pm)


def test_quaternion_norm_is_checked(model):
    q = model.neutral()
    q[3:7] = [0.1, 0.2, 0.3, 0.9]
    q[3:7] /= np.linalg.norm(q[3:7])
    model.check_q(q)                                          # unit: accepted
    near = q.copy()
    near[3:7] *= 1.0 + 0.5e-6
    model.check_q(near)                                       # within 1e-6: accepted
    for bad in (2.0 * q[3:7], (1.0 + 2e-6) * q[3:7], np.zeros(4)):
        wrong = q.copy()
        wrong[3:7] = bad
        with pytest.raises(QuaternionError, match=r"q\[3:7\]"):
            model.check_q(wrong)
        with pytest.raises(QuaternionError):
            model.check_state(RobotState(wrong, np.zeros(model.nv)))
        with pytest.raises(QuaternionError):
            model.mass_matrix(wrong)


def test_continuous_joint_cos_sin_norm_is_checked(model):
    """A continuous joint's (cos, sin) is a point of the circle: scaled, it changes the torques,
    so it is refused like a quaternion, naming the joint; a unit one at any angle passes."""
    blocks = [b for b in model.unit_blocks if b[1] == 2]
    assert blocks, "the fixture has a continuous joint"
    i, _, joint = blocks[0]
    q = model.neutral()
    for angle in (0.0, 2.5, -3.0):
        q[i:i + 2] = np.cos(angle), np.sin(angle)
        model.check_q(q)
    for scale in (1.5, 1.0 + 2e-6, 0.0):
        wrong = q.copy()
        wrong[i:i + 2] *= scale
        with pytest.raises(QuaternionError, match=joint):
            model.check_q(wrong)


def test_urdf_error_names_the_file(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'/></robot")
    with pytest.raises(ModelLoadError, match="bad.urdf"):
        RobotModel.from_urdf(bad, floating_base=True)


@pytest.mark.parametrize("urdf", [URDF, "mini_cheetah"])
def test_revolute_chart_has_the_same_kinematics(urdf):
    """idyn.model.revolute_chart (continuous joints as revolute ones, for leg IK on angles): the
    same frame placements and mass matrix at matching configurations, for pinocchio's RUBY and
    its unbounded unaligned revolute (every mini_cheetah joint)."""
    from idyn.model import revolute_chart
    if urdf == "mini_cheetah":
        pybullet_data = pytest.importorskip("pybullet_data")
        urdf = Path(pybullet_data.getDataPath()) / "mini_cheetah" / "mini_cheetah.urdf"
    model = RobotModel.from_urdf(urdf, floating_base=True)
    pm = model.pinocchio_model
    chart = revolute_chart(pm)
    assert chart.nq == chart.nv + 1 and chart.nv == pm.nv and len(chart.frames) == len(pm.frames)
    rng = np.random.default_rng(3)
    d1, d2 = pm.createData(), chart.createData()
    for _ in range(5):
        q = model.integrate(model.neutral(), rng.uniform(-3, 3, model.nv), 1.0)
        qc = np.r_[q[:7], model.joint_positions(q)]
        pin.framesForwardKinematics(pm, d1, q)
        pin.framesForwardKinematics(chart, d2, qc)
        for a, b in zip(d1.oMf, d2.oMf):
            assert np.allclose(a.homogeneous, b.homogeneous, atol=1e-14)
        assert np.allclose(pin.crba(pm, d1, q), pin.crba(chart, d2, qc), atol=1e-14)
