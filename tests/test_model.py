"""RobotModel and contact Jacobians against finite differences of pinocchio kinematics."""
import numpy as np
import pinocchio as pin
import pytest

from idyn import robots
from idyn import Contact, RobotModel, contact_drift, contact_jacobians
from idyn.errors import ModelLoadError, NonFiniteError, ShapeError, UnknownFrameError

ROBOTS = ["links", "a1"]
H = 1e-6


@pytest.fixture(scope="module", params=ROBOTS)
def quad(request):
    return robots.quadruped(request.param)


def random_q(model, rng):
    """A random configuration around the neutral one (any base pose, joints within 1 rad)."""
    return model.integrate(model.neutral(), rng.uniform(-1.0, 1.0, model.nv), 1.0)


def test_links_mass_is_4_8_kg():
    assert robots.quadruped("links").model.total_mass == pytest.approx(4.8, abs=1e-12)


def test_mass_matrix_symmetric_positive_definite(quad):
    rng = np.random.default_rng(0)
    for _ in range(5):
        M = quad.model.mass_matrix(random_q(quad.model, rng))
        assert np.array_equal(M, M.T)
        assert np.linalg.eigvalsh(M).min() > 0


def test_bias_forces_at_rest_equal_gravity(quad):
    rng = np.random.default_rng(1)
    m = quad.model
    q = random_q(m, rng)
    h = m.bias_forces(q, np.zeros(m.nv))
    assert np.allclose(h, m.gravity_forces(q), atol=1e-12)
    # at the neutral pose the base row is the weight along the base z axis
    q0 = m.neutral()
    assert m.gravity_forces(q0)[2] == pytest.approx(m.total_mass * 9.81, rel=1e-12)


def fd_point_velocity(model, q, frame, point_local, dq):
    """d/dt of the world position of a body-fixed point along q (+) dq t, by central differences."""
    def pos(qq):
        return model.frame_placement(qq, frame).act(point_local)
    return (pos(model.integrate(q, dq, H)) - pos(model.integrate(q, dq, -H))) / (2 * H)


def test_frame_jacobian_matches_finite_differences(quad):
    rng = np.random.default_rng(2)
    m = quad.model
    for frame in quad.foot_frames[:2] + [m.pinocchio_model.frames[2].name]:
        q = random_q(m, rng)
        dq = rng.normal(size=m.nv)
        # origin
        J = m.frame_jacobian(q, frame)
        assert np.allclose(J[:3] @ dq, fd_point_velocity(m, q, frame, np.zeros(3), dq), atol=1e-6)
        # angular part: rotation derivative
        Rp = m.frame_placement(m.integrate(q, dq, H), frame).rotation
        Rm = m.frame_placement(m.integrate(q, dq, -H), frame).rotation
        w = pin.log3(Rp @ Rm.T) / (2 * H)
        assert np.allclose(J[3:] @ dq, w, atol=1e-6)
        # with a point (world coordinates) fixed to the body
        local = rng.normal(scale=0.05, size=3)
        point = m.frame_placement(q, frame).act(local)
        Jp = m.frame_jacobian(q, frame, point)
        assert np.allclose(Jp[:3] @ dq, fd_point_velocity(m, q, frame, local, dq), atol=1e-6)
        assert np.allclose(Jp[3:], J[3:])
        assert np.allclose(m.point_jacobians(q, [frame], [point])[0], Jp[:3])


def test_point_drift_matches_finite_differences_of_J_v(quad):
    """Jdot v = d/dt (J(q(t)) v) along q(t) = q (+) v t, for a body-fixed point."""
    rng = np.random.default_rng(3)
    m = quad.model
    frame = quad.foot_frames[0]
    q = random_q(m, rng)
    v = rng.normal(size=m.nv)
    local = rng.normal(scale=0.05, size=3)

    def Jv(t):
        qt = m.integrate(q, v, t)
        return m.frame_jacobian(qt, frame, m.frame_placement(qt, frame).act(local))[:3] @ v

    fd = (Jv(H) - Jv(-H)) / (2 * H)
    drift = m.point_drift(q, v, frame, m.frame_placement(q, frame).act(local))
    assert np.allclose(drift, fd, atol=1e-5 * max(1.0, np.abs(fd).max()))


def test_contact_jacobians_and_drift_for_a_two_body_contact():
    """Manipulator with the box: N, S, T of fingertip-box contacts are relative velocities, and
    the drift is the finite difference of (N v, S v, T v) with the contact frame held fixed."""
    d = robots.manipulator()
    m = d.model_with_box
    rng = np.random.default_rng(4)
    q = d.combined_q(d.q0)
    v = rng.normal(size=m.nv)
    c = Contact("FINGERTIP_1", "box", m.frame_position(q, "FINGERTIP_1"), [0.0, -1.0, 0.0], 1.0)
    cj = contact_jacobians(m, q, [c])
    rel = m.point_velocity(q, v, "FINGERTIP_1", c.point) - m.point_velocity(q, v, "box", c.point)
    assert np.allclose(cj.stacked() @ v, c.frame() @ rel, atol=1e-12)
    # drift: the material points of both bodies that are at c.point at time 0
    la = m.frame_placement(q, "FINGERTIP_1").actInv(c.point)
    lb = m.frame_placement(q, "box").actInv(c.point)

    def rel_v(t):
        qt = m.integrate(q, v, t)
        pa = m.frame_placement(qt, "FINGERTIP_1").act(la)
        pb = m.frame_placement(qt, "box").act(lb)
        return c.frame() @ (m.point_velocity(qt, v, "FINGERTIP_1", pa) - m.point_velocity(qt, v, "box", pb))

    fd = (rel_v(H) - rel_v(-H)) / (2 * H)
    assert np.allclose(contact_drift(m, q, v, [c])[0], fd, atol=1e-5)


def test_actuation_matrix_selects_joints(quad):
    P = quad.model.actuation_matrix()
    assert P.shape == (12, 18) and np.array_equal(P[:, 6:], np.eye(12)) and not P[:, :6].any()


def test_bad_inputs_raise_typed_errors(tmp_path):
    m = robots.quadruped("links").model
    with pytest.raises(ShapeError):
        m.mass_matrix(np.zeros(m.nq - 1))
    with pytest.raises(ShapeError):
        m.bias_forces(m.neutral(), np.zeros((m.nv, 1)))
    q = m.neutral()
    q[8] = np.nan
    with pytest.raises(NonFiniteError):
        m.mass_matrix(q)
    with pytest.raises(NonFiniteError):
        m.frame_jacobian(m.neutral(), "LF_FOOT", [0.0, np.inf, 0.0])
    with pytest.raises(UnknownFrameError):
        m.frame_jacobian(m.neutral(), "no_such_frame")
    with pytest.raises(ModelLoadError):
        RobotModel.from_urdf(tmp_path / "missing.urdf", floating_base=True)
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'></robot>")
    with pytest.raises(ModelLoadError):
        RobotModel.from_urdf(bad, floating_base=False)


def test_a_workspace_pass_leaves_the_previous_arrays_alone(quad):
    """M, h and J of one pass are arrays of their own (pinocchio 4 returns fresh arrays, kept
    without a copy; older ones are copied): the next pass does not change them."""
    model = quad.model
    rng = np.random.default_rng(3)
    ws = model.workspace()
    q1, v1 = random_q(model, rng), rng.standard_normal(model.nv)
    ws.compute(q1, v1, drift=False)
    held = (ws.M, ws.h, ws.J)
    kept = tuple(a.copy() for a in held)
    ws.compute(random_q(model, rng), rng.standard_normal(model.nv), drift=False)
    assert all(np.array_equal(a, b) for a, b in zip(held, kept))
    assert not any(np.shares_memory(a, b) for a, b in zip(held, (ws.M, ws.h, ws.J)))
    assert np.array_equal(held[0], held[0].T)                        # symmetric by construction
    np.testing.assert_allclose(held[0], model.mass_matrix(q1), rtol=0, atol=1e-12 * np.abs(held[0]).max())


def test_vector_validation_fast_path_is_the_same_check():
    """idyn.validation.vector returns a finite float64 vector itself (as np.asarray does) and
    rejects the same inputs with the same errors whichever path it takes."""
    from idyn import validation
    x = np.linspace(0.0, 1.0, 7)
    assert validation.vector(x, 7, "x") is x and validation.vector(x, None, "x") is x
    for bad, err in ((np.array([0.0, np.nan]), NonFiniteError), (np.array([np.inf]), NonFiniteError),
                     (np.ones((2, 2)), ShapeError), (np.ones(3), ShapeError)):
        with pytest.raises(err):
            validation.vector(bad, 2 if bad.ndim == 1 and bad.size == 3 else None, "x")
    assert validation.vector([1, 2], 2, "x").dtype == np.float64
