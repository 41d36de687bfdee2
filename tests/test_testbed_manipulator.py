"""PyBullet manipulator testbed: combined arm + box state, fingertip contacts, sensed forces."""
import numpy as np
import pinocchio as pin
import pybullet as pb
import pytest

from idyn import contact_jacobians
from idyn.errors import InvalidInputError, NonFiniteError, ShapeError
from idyn.robots.pybullet import ManipulatorTestbed
from idyn.robots.pybullet.base import BULLET_CONTACT_SLOP, BULLET_MAX_FRICTION, configure_engine, exact_gaps


@pytest.fixture(scope="module")
def bed():
    with ManipulatorTestbed(mu_grasp=100.0) as tb:
        yield tb


def test_reference_grasp_touches_all_four_fingertips(bed):
    s = bed.reset()
    assert s.q.shape == (18,) and s.v.shape == (17,)
    cs = bed.contacts()
    assert [c.body_a for c in cs] == [t.link for t in bed.description.fingertips.values()]
    for c in cs:
        # mu = 100 is simulated as Bullet's largest coefficient, and reported as such
        assert c.body_b == "box" and abs(c.phi) < 1e-6 and c.mu == BULLET_MAX_FRICTION
        # the normal points from the box to the fingertip: horizontal squeeze (world y)
        assert abs(abs(c.normal[1]) - 1.0) < 1e-6
        tip = bed.description.model.frame_position(s.q[:11], c.body_a)
        assert np.allclose(tip, c.point + 0.01 * c.normal, atol=1e-6)


def test_round_trip_state_box_and_fingertips(bed):
    """Random arm and box states: state() reads back what was written, and fingertip and box
    velocities through the contact Jacobians match PyBullet's link and base velocities."""
    rng = np.random.default_rng(3)
    d = bed.description
    for _ in range(5):
        q = d.combined_q(d.q0 + rng.uniform(-0.3, 0.3, 11))
        q[11:14] += rng.uniform(-0.1, 0.1, 3)
        q[14:18] = pin.Quaternion(pin.exp3(rng.uniform(-3, 3, 3))).coeffs()
        v = rng.normal(0.0, 1.0, 17)
        s = bed.reset(q, v)
        assert np.allclose(bed.model.difference(q, s.q), 0.0, atol=1e-9)
        assert np.allclose(s.v, v, atol=1e-9)
        lin, ang = pb.getBaseVelocity(bed.box, physicsClientId=bed.client)
        box = pin.XYZQUATToSE3(s.q[11:])
        assert np.allclose(box.rotation @ s.v[14:], ang, atol=1e-9)
        assert np.allclose(box.rotation @ s.v[11:14], lin, atol=1e-9)
        for tip in d.fingertips.values():
            link = bed.robot.link_index(tip.link)
            assert link == bed.robot.link_of_name[tip.link]  # the fingertip is its own link
            ls = pb.getLinkState(bed.robot.body, link, computeLinkVelocity=1,
                                 computeForwardKinematics=1, physicsClientId=bed.client)
            R = np.array(pb.getMatrixFromQuaternion(ls[5])).reshape(3, 3)
            centre = np.array(ls[4]) + R @ tip.offset
            assert np.allclose(bed.model.frame_position(s.q, tip.link), centre, atol=1e-6)
            pb_v = np.array(ls[6]) + np.cross(ls[7], centre - np.array(ls[0]))
            J = bed.model.frame_jacobian(s.q, tip.link)[:3]
            assert np.allclose(J @ s.v, pb_v, atol=1e-6)


def static_grasp_torques(bed, squeeze):
    """Torques holding the box still: fingertip normal forces ``squeeze``, friction (min-norm)
    carrying the box weight, arm gravity compensated (box rows: J_box^T lambda = g_box)."""
    s = bed.state()
    cs = bed.contacts()
    cj = contact_jacobians(bed.model, s.q, cs)
    g = bed.model.gravity_forces(s.q)
    box = slice(11, 17)
    J = np.vstack((cj.N, cj.S, cj.T))            # rows: normals, then s, then t
    lam0 = np.concatenate((np.full(len(cs), squeeze), np.zeros(2 * len(cs))))
    A = J[:, box].T
    lam = lam0 + np.linalg.lstsq(A, g[box] - A @ lam0, rcond=None)[0]
    wrench = J.T @ lam
    assert np.allclose(wrench[box], g[box], atol=1e-9)
    m = len(cs)
    ft = lam[m:]
    fn = lam[:m]
    return (g - wrench)[:11], np.column_stack((fn, ft[:len(cs)], ft[len(cs):]))


@pytest.mark.parametrize("mu", [100.0, 1.0])
def test_static_grasp_holds_box_and_sensed_forces_match(mu):
    with ManipulatorTestbed(mu_grasp=mu) as bed:
        s0 = bed.reset()
        tau0, planned = static_grasp_torques(bed, squeeze=6.0)
        arm = bed.description.model
        Md = np.diag(arm.mass_matrix(s0.q[:11]))
        for _ in range(300):
            s = bed.state()
            bed.apply(tau0 + 400.0 * Md * (s0.q[:11] - s.q[:11]) - 40.0 * Md * s.v[:11])
            bed.step()
        s = bed.state()
        assert np.linalg.norm(s.q[11:14] - s0.q[11:14]) < 1e-3  # the box is still held
        f = bed.sensed_contact_forces()
        assert f.shape == (4, 3)
        weight = bed.description.box_mass * 9.81
        # friction carries the weight: vertical components of the sensed forces on the box
        frames = np.array([c.frame() for c in bed.contacts()])
        on_box = -np.einsum("mji,mj->mi", frames, f)
        assert on_box[:, 2].sum() == pytest.approx(weight, rel=0.02)
        assert f[:, 0].sum() == pytest.approx(planned[:, 0].sum(), rel=0.05)
        assert bed.sensed_normal_total() == pytest.approx(f[:, 0].sum(), rel=1e-6)


def test_dropped_box_lands_on_ground_contacts():
    with ManipulatorTestbed() as bed:
        d = bed.description
        q = d.combined_q(d.q0)
        q[13] = d.box_side / 2 + 0.002  # box just above the ground, fingers far away
        bed.reset(q)
        for _ in range(200):
            bed.step()
        cs = bed.contacts()
        ground = [c for c in cs if c.body_b is None]
        assert len(ground) == 4 and all(c.body_a == "box" and c.mu == 1.0 for c in ground)
        f = bed.sensed_contact_forces()[[i for i, c in enumerate(cs) if c.body_b is None]]
        assert f[:, 0].sum() == pytest.approx(d.box_mass * 9.81, rel=0.01)


@pytest.mark.parametrize("ratio, slides", [(9.0, False), (11.0, True)])
def test_bullet_caps_combined_friction_at_the_reported_coefficient(ratio, slides):
    """What :data:`BULLET_MAX_FRICTION` claims, measured: a 1 kg slab (4 mm thick, 10 cm wide, so
    it does not tip below 25 weights) with lateral friction 100 on a plane of 1 (product 100),
    pushed sideways at its centre by ``ratio`` times its weight, stays at ``ratio`` = 9 and slides
    at 11 with ``a = (ratio - 10) g``: Bullet's coefficient is 10."""
    client = pb.connect(pb.DIRECT)
    try:
        configure_engine(client, 1e-3)
        plane = pb.createMultiBody(0, pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=client),
                                   physicsClientId=client)
        box = pb.createMultiBody(1.0, pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[0.05, 0.05, 0.002],
                                                              physicsClientId=client),
                                 basePosition=[0, 0, 0.002], physicsClientId=client)
        pb.changeDynamics(plane, -1, lateralFriction=1.0, restitution=0.0, physicsClientId=client)
        pb.changeDynamics(box, -1, lateralFriction=100.0, restitution=0.0, physicsClientId=client)
        for _ in range(50):                              # settle
            pb.stepSimulation(physicsClientId=client)
        v0 = pb.getBaseVelocity(box, physicsClientId=client)[0][0]
        steps = 100
        for _ in range(steps):
            pb.applyExternalForce(box, -1, [ratio * 9.81, 0, 0], [0, 0, 0], pb.LINK_FRAME,
                                  physicsClientId=client)
            pb.stepSimulation(physicsClientId=client)
        a = (pb.getBaseVelocity(box, physicsClientId=client)[0][0] - v0) / (steps * 1e-3)
        assert (a > 1.0) is slides
        if slides:          # a = (ratio - mu) g
            assert ratio - a / 9.81 == pytest.approx(BULLET_MAX_FRICTION, rel=0.02)
        else:
            assert abs(a) < 1e-3
    finally:
        pb.disconnect(client)


@pytest.mark.parametrize("exact", [True, False])
def test_contacts_obey_the_reported_gap(exact):
    """With contact slop 0 (:func:`exact_gaps`, the manipulator testbed's setting) Bullet's
    contact at distance phi allows a closing speed of at most phi/dt, eq. 47 as the controllers
    model it: a sphere 0.2 mm above a plane falling at 1 m/s ends the step touching (gap within
    1e-8 m), at 0.2 m/s. With Bullet's default it ends :data:`BULLET_CONTACT_SLOP` deep."""
    client = pb.connect(pb.DIRECT)
    try:
        configure_engine(client, 1e-3)
        if exact:
            exact_gaps(client)
        pb.createMultiBody(0, pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=client),
                           physicsClientId=client)
        r, gap = 0.01, 2e-4
        ball = pb.createMultiBody(0.1, pb.createCollisionShape(pb.GEOM_SPHERE, radius=r, physicsClientId=client),
                                  basePosition=[0, 0, r + gap], physicsClientId=client)
        pb.changeDynamics(ball, -1, restitution=0.0, linearDamping=0.0, physicsClientId=client)
        pb.resetBaseVelocity(ball, [0, 0, -1.0], [0, 0, 0], physicsClientId=client)
        pb.stepSimulation(physicsClientId=client)
        z = pb.getBasePositionAndOrientation(ball, physicsClientId=client)[0][2] - r
        vz = pb.getBaseVelocity(ball, physicsClientId=client)[0][2]
        slop = 0.0 if exact else BULLET_CONTACT_SLOP
        assert z == pytest.approx(-slop, abs=1e-8)
        assert vz == pytest.approx(-(gap + slop) / 1e-3, rel=1e-4)
    finally:
        pb.disconnect(client)


def test_bad_inputs(bed):
    with pytest.raises(ShapeError):
        bed.apply(np.zeros(7))
    with pytest.raises(NonFiniteError):
        bed.apply(np.full(11, np.inf))
    with pytest.raises(ShapeError):
        bed.reset(np.zeros(11))
    with pytest.raises(InvalidInputError):
        ManipulatorTestbed(mu_grasp=-1.0)
