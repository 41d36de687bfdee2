"""Conformance of every testbed to :class:`idyn.robots.testbed.Testbed`, clause by clause, with physics.

Parametrised over the quadruped testbeds of PyBullet, idyn.sim and MuJoCo on LINKS; a user's
testbed passes the same checks by adding its factory to ``FACTORIES``. Oracles are pinocchio's
kinematics (the reported gaps and points, the velocity convention) and Newton's laws (free fall,
the weight carried by the sensed forces).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from idyn import robots
from idyn.errors import InvalidInputError
from idyn.robots import testbed as protocol

GRAVITY = 9.81


def _pybullet():
    from idyn.robots.pybullet import QuadrupedTestbed
    return QuadrupedTestbed("links")


def _idyn():
    from idyn.robots.sim import QuadrupedTestbed
    return QuadrupedTestbed("links")


def _mujoco():
    from idyn.robots.mujoco import QuadrupedTestbed
    return QuadrupedTestbed("links")


FACTORIES = {"pybullet": _pybullet, "idyn": _idyn, "mujoco": _mujoco}


def _testbeds(name: str, factories: dict):
    """A module-scoped fixture ``name`` over every testbed of ``factories``, closed after use."""
    @pytest.fixture(scope="module", params=sorted(factories), name=name)
    def fixture(request):
        tb = factories[request.param]()
        yield tb
        tb.close()
    return fixture


testbed_fixture = _testbeds("testbed", FACTORIES)


@pytest.fixture(autouse=True)
def _fresh(testbed):
    testbed.reset()


def _quad():
    return robots.quadruped("links")


def _gaps(q) -> np.ndarray:
    """Pinocchio's gap of each foot sphere to the plane z = 0 (legs LF, RF, LH, RH)."""
    quad = _quad()
    return quad.foot_centres(q)[:, 2] - np.array([f.radius for f in quad.feet.values()])


def _random_pose(seed: int) -> np.ndarray:
    """A configuration with a random base orientation (up to ~0.3 rad) and joint offsets,
    lowered so that its lowest foot touches z = 0."""
    quad = _quad()
    rng = np.random.default_rng(seed)
    q = quad.q_stand.copy()
    q[3:7] = pin.Quaternion(pin.exp3(rng.uniform(-0.3, 0.3, 3))).coeffs()
    q[7:] += rng.uniform(-0.2, 0.2, q.size - 7)
    q[2] += 0.1
    q[2] -= _gaps(q).min()
    return q


def _hold_torques(model, q) -> np.ndarray:
    """Joint torques holding ``q`` at rest on its four feet: feet forces f (min-norm, world frame)
    balancing gravity on the base, tau = g_a - J_a^T f (the quasi-static equation of motion)."""
    quad = _quad()
    pm, data = model.pinocchio_model, model.pinocchio_model.createData()
    g = pin.computeGeneralizedGravity(pm, data, q)
    pin.computeJointJacobians(pm, data, q)
    pin.updateFramePlacements(pm, data)
    J = np.vstack([pin.getFrameJacobian(pm, data, pm.getFrameId(f.link), pin.LOCAL_WORLD_ALIGNED)[:3]
                   for f in quad.feet.values()])
    f = np.linalg.lstsq(J[:, :6].T, g[:6], rcond=None)[0]
    return (g - J.T @ f)[6:]


def test_is_a_testbed(testbed):
    assert isinstance(testbed, protocol.Testbed)
    assert 0 < testbed.dt <= 0.01 and testbed.contact_margin >= 0


def test_reset_stands_with_one_contact_per_foot(testbed):
    """Standing: every foot reported, normal +z, gap 0, point under the foot's centre."""
    quad = _quad()
    state = testbed.state()
    contacts = testbed.contacts()
    assert [c.body_a for c in contacts] == quad.foot_frames
    centres = quad.foot_centres(state.q)
    for c, centre in zip(contacts, centres):
        assert c.body_b is None
        np.testing.assert_allclose(c.normal, [0, 0, 1], atol=1e-9)
        assert abs(c.phi) <= 1e-6
        np.testing.assert_allclose(c.point, [centre[0], centre[1], 0.0], atol=1e-6)
    assert state.t == 0.0
    assert not np.any(testbed.sensed_contact_forces())       # no step yet


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_contact_rule_and_quaternion_order(testbed, seed):
    """On a tilted pose the reported feet are those within the margin (pinocchio's gaps, which
    depend on the x-y-z-w quaternion being read correctly), with pinocchio's gaps and points."""
    quad = _quad()
    q = _random_pose(seed)
    testbed.reset(q)
    gaps = _gaps(q)
    contacts = testbed.contacts()
    names = quad.foot_frames
    expected = [n for n, g in zip(names, gaps) if g <= testbed.contact_margin]
    assert [c.body_a for c in contacts] == expected
    centres = quad.foot_centres(q)
    for c in contacts:
        i = names.index(c.body_a)
        assert abs(c.phi - gaps[i]) <= 1e-6
        np.testing.assert_allclose(c.point[:2], centres[i, :2], atol=1e-6)


@pytest.mark.parametrize("lift", [0.5, 2.0])
def test_margin_both_sides(testbed, lift):
    """At rest with the feet lift * margin (+ 0.1 mm) above the ground: reported below the
    margin, not above it (at rest nothing closes speculatively)."""
    q = _quad().q_stand.copy()
    q[2] -= _gaps(q).min()
    height = lift * testbed.contact_margin + (1e-4 if lift > 1 else 0.0)
    q[2] += height
    testbed.reset(q)
    contacts = testbed.contacts()
    assert len(contacts) == (4 if lift < 1 else 0)
    for c in contacts:
        assert abs(c.phi - height) <= 1e-6


def test_foot_lifted_5cm_not_reported(testbed):
    q = _quad().q_stand.copy()
    q[2] += 0.05 - _gaps(q).min()
    testbed.reset(q)
    assert testbed.contacts() == []
    testbed.apply(np.zeros(testbed.model.na))
    testbed.step()
    assert testbed.sensed_contact_forces().shape == (0, 3)


def test_state_round_trip(testbed):
    """reset(q, v) then state() returns (q, v) for a random pose and velocity."""
    rng = np.random.default_rng(7)
    q = _random_pose(4)
    q[2] += 0.5
    v = rng.normal(0.0, 1.0, testbed.model.nv)
    state = testbed.reset(q, v)
    pm = testbed.model.pinocchio_model
    assert np.abs(pin.difference(pm, q, state.q)).max() <= 1e-9
    np.testing.assert_allclose(state.v, v, atol=1e-9)
    assert abs(np.linalg.norm(state.q[3:7]) - 1.0) <= 1e-12


def test_velocity_convention_and_free_fall(testbed):
    """In the air with zero torque: q advances by pinocchio's integrate of v (base-frame
    velocities), and the base falls g t^2 / 2 in 0.1 s (dt and gravity)."""
    rng = np.random.default_rng(8)
    q = _random_pose(5)
    q[2] += 1.0
    v = np.zeros(testbed.model.nv)
    v[:6] = rng.normal(0.0, 0.5, 6)
    s0 = testbed.reset(q, v)
    testbed.apply(np.zeros(testbed.model.na))
    testbed.step()
    s1 = testbed.state()
    pm = testbed.model.pinocchio_model
    rate = pin.difference(pm, s0.q, s1.q) / testbed.dt
    # a step of symplectic Euler moves q by dt v(t + dt); measured deviation 4.4e-4 (PyBullet,
    # MuJoCo: their base moves along the world velocity, not the twist), against 9e-3 from v(t)
    assert np.abs(rate[:6] - s1.v[:6]).max() <= 1e-3 * max(1.0, np.abs(v).max())
    assert abs(s1.t - testbed.dt) <= 1e-12
    testbed.reset(q, np.zeros(testbed.model.nv))
    n = int(round(0.1 / testbed.dt))
    for _ in range(n):
        testbed.apply(np.zeros(testbed.model.na))
        testbed.step()
    s = testbed.state()
    drop = q[2] - s.q[2]
    # measured: 1.0 % more on every backend, symplectic Euler's g dt t / 2
    assert abs(drop - 0.5 * GRAVITY * 0.1 ** 2) <= 0.02 * 0.5 * GRAVITY * 0.1 ** 2
    assert abs(s.t - 0.1) <= 1e-9


def test_zero_torque_sags(testbed):
    """Standing with zero torque for 0.1 s: the base sinks and the feet stay reported."""
    z0 = testbed.state().q[2]
    for _ in range(int(round(0.1 / testbed.dt))):
        testbed.state()
        testbed.contacts()
        testbed.apply(np.zeros(testbed.model.na))
        testbed.step()
    assert testbed.state().q[2] < z0 - 0.005
    assert len(testbed.contacts()) == 4


def test_sensed_forces_carry_the_weight(testbed):
    """Held in its stance for 0.3 s by the quasi-static torques (plus light PD): the sensed
    forces, rotated out of each contact's frame, sum to (0, 0, m g) over the last 0.1 s."""
    model = testbed.model
    q0 = testbed.state().q.copy()
    hold = _hold_torques(model, q0)
    weight = model.total_mass * GRAVITY
    totals = []
    steps = int(round(0.3 / testbed.dt))
    for k in range(steps):
        s = testbed.state()
        contacts = testbed.contacts()
        testbed.apply(hold + 2.0 * (q0[7:] - s.q[7:]) - 0.01 * s.v[6:])
        testbed.step()
        forces = testbed.sensed_contact_forces()
        assert forces.shape == (len(contacts), 3)
        if k >= steps - int(round(0.1 / testbed.dt)):
            assert len(contacts) == 4
            totals.append(sum(c.frame().T @ f for c, f in zip(contacts, forces)))
            assert np.all(forces[:, 0] >= -1e-9)
    total = np.mean(totals, axis=0)
    # measured: within 5e-5 of the weight (PyBullet, MuJoCo), 1e-15 (idyn.sim)
    np.testing.assert_allclose(total, [0.0, 0.0, weight], atol=1e-3 * weight)


def test_apply_rejects_bad_torques(testbed):
    with pytest.raises(InvalidInputError):
        testbed.apply(np.zeros(testbed.model.na + 1))
    with pytest.raises(InvalidInputError):
        testbed.apply(np.full(testbed.model.na, np.nan))


# ---------------------------------------------------------------- the manipulator and its box
def _pybullet_arm():
    from idyn.robots.pybullet import ManipulatorTestbed
    return ManipulatorTestbed()


def _idyn_arm():
    from idyn.robots.sim import ManipulatorTestbed
    return ManipulatorTestbed()


def _mujoco_arm():
    from idyn.robots.mujoco import ManipulatorTestbed
    return ManipulatorTestbed()


ARM_FACTORIES = {"pybullet": _pybullet_arm, "idyn": _idyn_arm, "mujoco": _mujoco_arm}


arm_fixture = _testbeds("arm", ARM_FACTORIES)


def _box_q(arm, position, rotation=np.eye(3)) -> np.ndarray:
    d = arm.description
    return d.combined_q(d.q0, pin.SE3(rotation, np.asarray(position, dtype=float)))


def test_arm_is_a_testbed_holding_the_box(arm):
    """At the reference grasp every fingertip touches the box: body B the box, the point on the
    box's surface, the normal from the box's face towards the fingertip's centre."""
    assert isinstance(arm, protocol.Testbed)
    d = arm.description
    state = arm.reset()
    contacts = arm.contacts()
    tips = {t.link: t for t in d.fingertips.values()}
    assert sorted(c.body_a for c in contacts) == sorted(tips)
    box = pin.XYZQUATToSE3(state.q[d.model.nq:])
    for c in contacts:
        assert c.body_b == "box" and abs(c.phi) <= 1e-6
        tip = tips[c.body_a]
        centre = d.model.frame_placement(state.q[:d.model.nq], tip.link).act(tip.offset)
        np.testing.assert_allclose(centre - c.point, (tip.radius + c.phi) * c.normal, atol=1e-6)
        local = box.actInv(c.point)
        assert abs(np.abs(local).max() - d.box_side / 2) <= 1e-6      # on a face


def test_arm_state_round_trip(arm):
    rng = np.random.default_rng(3)
    q = _box_q(arm, [1.5, 1.5, 0.5], pin.exp3(rng.uniform(-1, 1, 3)))
    q[:arm.description.model.nq] += rng.uniform(-0.2, 0.2, arm.description.model.nq)
    v = rng.normal(0.0, 1.0, arm.model.nv)
    state = arm.reset(q, v)
    assert np.abs(pin.difference(arm.model.pinocchio_model, q, state.q)).max() <= 1e-9
    np.testing.assert_allclose(state.v, v, atol=1e-9)


def test_box_on_the_ground_carries_its_weight(arm):
    """The box set down far from the arm: its four bottom corners are reported (normal +z, gap
    0) and, over 0.2 s at rest, the sensed forces on them sum to the box's weight; no fingertip
    is reported."""
    d = arm.description
    half = d.box_side / 2
    q = _box_q(arm, [1.5, 1.5, half])
    arm.reset(q)
    hold = np.zeros(arm.model.na)
    totals = []
    for k in range(200):
        contacts = arm.contacts()
        arm.apply(hold)
        arm.step()
        forces = arm.sensed_contact_forces()
        box = [(c, f) for c, f in zip(contacts, forces) if c.body_a == "box" and c.body_b is None]
        assert len(box) == 4 and all(c.body_b is None for c in contacts)
        if k == 0:
            assert all(abs(c.phi) <= 1e-6 and c.normal[2] == pytest.approx(1.0) for c, _ in box)
        if k >= 100:
            totals.append(sum(c.frame().T @ f for c, f in box))
    weight = d.box_mass * GRAVITY
    np.testing.assert_allclose(np.mean(totals, axis=0), [0.0, 0.0, weight], atol=1e-3 * weight)
