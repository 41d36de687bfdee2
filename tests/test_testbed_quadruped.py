"""PyBullet quadruped testbed: state conversion, contact geometry, sensed forces, terrains.

Every test runs for LINKS and for a1 (shipped with pybullet_data): nothing may be LINKS-specific.
"""
import math

import numpy as np
import pinocchio as pin
import pybullet as pb
import pytest

from idyn import robots
from idyn import Contact, contact_jacobians
from idyn.errors import IdynError, InvalidInputError, NonFiniteError, ShapeError
from idyn.robots.pybullet import QuadrupedTestbed, rough_heightmap

ROBOTS = ["links", "a1"]


@pytest.fixture(scope="module", params=ROBOTS)
def rigid(request):
    with QuadrupedTestbed(request.param, "rigid", mu=math.inf) as tb:
        yield tb


def random_state(tb, rng):
    """A random floating-base state: any base pose and twist, joints around the stance."""
    model = tb.model
    q = tb.quadruped.q_stand.copy()
    q[:3] = rng.uniform(-0.5, 0.5, 3) + [0, 0, 1.0]
    q[3:7] = pin.Quaternion(pin.exp3(rng.uniform(-np.pi, np.pi, 3))).coeffs()
    q[model.actuated_v + 1] += rng.uniform(-0.5, 0.5, model.na)
    v = rng.normal(0.0, 2.0, model.nv)
    return q, v


def pybullet_foot(tb, leg):
    """World centre and velocity of a foot sphere from PyBullet's own link state."""
    foot = tb.quadruped.feet[leg]
    link = tb.robot.link_index(foot.link)
    assert link == tb.robot.link_of_name[foot.link]   # the foot is its own PyBullet link
    ls = pb.getLinkState(tb.robot.body, link, computeLinkVelocity=1, computeForwardKinematics=1,
                         physicsClientId=tb.client)
    R = np.array(pb.getMatrixFromQuaternion(ls[5])).reshape(3, 3)
    centre = np.array(ls[4]) + R @ foot.offset       # URDF link frame + collision offset
    com, w = np.array(ls[0]), np.array(ls[7])
    vel = np.array(ls[6]) + np.cross(w, centre - com)
    return centre, vel


def test_forward_dynamics_match_pinocchio(rigid):
    """One free-flight step: PyBullet's velocity change equals pinocchio's M^-1 (P^T tau - h) dt.

    This is what makes the testbed a fair judge of model-based controllers (PyBullet's fixed-link
    merging once moved the LINKS shank's centre of mass and broke exactly this)."""
    rng = np.random.default_rng(7)
    model = rigid.model
    for _ in range(3):
        q, v = random_state(rigid, rng)
        v *= 0.1                                      # keep the first-order step error small
        rigid.reset(q, v)
        s0 = rigid.state()
        tau = rng.normal(0.0, 0.2, model.na)
        rigid.apply(tau)
        rigid.step()
        a_pb = (rigid.state().v - s0.v) / rigid.dt
        a_pin = np.linalg.solve(model.mass_matrix(s0.q),
                                model.actuation_matrix().T @ tau - model.bias_forces(s0.q, s0.v))
        assert np.abs(a_pb - a_pin).max() <= 1e-3 * np.abs(a_pin).max() + 1e-6


def test_masses_match_pinocchio(rigid):
    assert rigid.robot.mass == pytest.approx(rigid.model.total_mass, rel=1e-9)


def test_foot_centres_are_pinocchios_frame_placements(rigid):
    """The foot sphere centres are each foot link frame's placement applied to the sphere's
    offset, oMf.act(offset), to 1e-12 relative (the testbed reads its own frames at the centres:
    the same rigid motion composed in another order)."""
    model = rigid.model.pinocchio_model
    data = model.createData()
    rng = np.random.default_rng(8)
    for _ in range(50):
        q, _ = random_state(rigid, rng)
        got = np.array(rigid._foot_centres(q))
        pin.framesForwardKinematics(model, data, q)
        want = np.array([data.oMf[rigid.model.frame_id(f.link)].act(np.asarray(f.offset, dtype=float))
                         for f in rigid._feet])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())


def test_reset_stands_with_feet_touching(rigid):
    s = rigid.reset()
    assert np.allclose(s.v, 0.0) and s.t == 0.0
    cs = rigid.contacts()
    assert [c.body_a for c in cs] == rigid.quadruped.foot_frames
    for c in cs:
        assert abs(c.phi) < 1e-6
        assert np.allclose(c.normal, [0, 0, 1]) and c.body_b is None
        assert c.mu == 100.0  # mu = inf is simulated as 100
        assert abs(c.point[2]) < 1e-9


def test_contacts_include_near_and_exclude_far(rigid):
    q = rigid.quadruped.q_stand.copy()
    q[2] += 0.005
    rigid.reset(q)
    cs = rigid.contacts(margin=0.01)
    assert len(cs) == 4 and all(abs(c.phi - 0.005) < 1e-6 for c in cs)
    assert rigid.contacts(margin=0.004) == []
    assert np.allclose(rigid.sensed_contact_forces(cs), 0.0)


def hold_stance(tb, steps):
    """Stand under pure torque control: static gravity compensation through the contacts
    (min-norm contact forces balancing the base) plus a stiff joint PD. Returns the forces
    of the last step."""
    s = tb.reset()
    model = tb.model
    cs = tb.contacts()
    J = contact_jacobians(model, s.q, cs).stacked()
    g = model.gravity_forces(s.q)
    lam = np.linalg.lstsq(J[:, :6].T, g[:6], rcond=None)[0]
    tau0 = (g - J.T @ lam)[model.actuated_v]
    ia, iq = model.actuated_v, model.actuated_v + 1
    Md = np.diag(model.mass_matrix(s.q))[ia]
    kp, kd = 2500.0 * Md, 100.0 * Md
    forces = []
    for _ in range(steps):
        s = tb.state()
        tb.apply(tau0 + kp * (tb.quadruped.q_stand[iq] - s.q[iq]) - kd * s.v[ia])
        tb.step()
        forces.append(tb.sensed_contact_forces()[:, 0].sum())
    return np.array(forces)


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("terrain", ["rigid", "compliant"])
def test_standing_normal_forces_equal_weight(robot, terrain):
    with QuadrupedTestbed(robot, terrain, mu=math.inf) as tb:
        normals = hold_stance(tb, 300)
        weight = tb.model.total_mass * 9.81
        assert abs(normals[-1] - weight) < 0.01 * weight
        assert abs(normals[-50:].mean() - weight) < 0.01 * weight
        assert tb.sensed_normal_total() == pytest.approx(normals[-1], rel=1e-9)
        f = tb.sensed_contact_forces()
        assert f.shape == (4, 3) and np.all(f[:, 0] > 0)
        if terrain == "compliant":
            sink = -np.array([c.phi for c in tb.contacts()])
            assert np.all(np.abs(sink - 1e-3) < 0.5e-3), sink


def test_compliant_ground_is_not_bouncy():
    """Dropped from 2 mm, the robot settles without leaving the ground again."""
    with QuadrupedTestbed("links", "compliant") as tb:
        q = tb.quadruped.q_stand.copy()
        q[2] += 0.002
        tb.reset(q)
        tb.apply(np.zeros(tb.na))
        heights = []
        for _ in range(60):
            tb.step()
            heights.append(tb.state().q[2])
        first_touch = int(np.argmax(np.array(heights) < q[2] - 0.002))
        assert np.all(np.diff(heights[first_touch:first_touch + 20]) < 1e-5)


def test_sliding_foot_friction_opposes_motion():
    """Low friction: a foot pushed sideways slides; sensed friction opposes its velocity and
    lies on the cone |f_t| = mu f_n."""
    with QuadrupedTestbed("links", "rigid", mu=0.1) as tb:
        s = tb.reset()
        v = np.zeros(tb.model.nv)
        v[0] = 0.3  # the whole robot slides along +x (base frame = world at the stance)
        tb.reset(s.q, v)
        tb.step()
        tb.contacts()
        tb.step()
        f = tb.sensed_contact_forces()
        assert np.all(f[:, 1] < 0)
        assert np.allclose(np.hypot(f[:, 1], f[:, 2]), 0.1 * f[:, 0], rtol=1e-3)


def test_rough_terrain_is_seeded_and_per_cell_friction():
    h1, h2, h3 = rough_heightmap(3), rough_heightmap(3), rough_heightmap(4)
    assert h1.shape == (151, 151) and np.array_equal(h1, h2) and not np.array_equal(h1, h3)
    assert h1.max() == pytest.approx(0.03) and h1.min() >= 0.0
    with QuadrupedTestbed("links", "rough", seed=3) as tb:
        t = tb.terrain
        assert t.cell_mu.shape == (150, 150)
        assert 0.1 <= t.cell_mu.min() and t.cell_mu.max() <= 1.5
        # the PyBullet heightfield matches the generated heights at the grid nodes
        for ix, iy in [(75, 75), (10, 140), (120, 33)]:
            x, y = -1.5 + 0.02 * ix, -1.5 + 0.02 * iy
            assert t.height_at(x, y) == pytest.approx(h1[iy, ix], abs=1e-6)
        cs = tb.contacts()
        assert cs and min(c.phi for c in cs) == pytest.approx(0.0, abs=1e-6)
        for c in cs:
            assert c.mu == t.friction_at(c.point)
            link = tb.robot.link_index(c.body_a)
            assert pb.getDynamicsInfo(tb.robot.body, link, physicsClientId=tb.client)[1] == \
                pytest.approx(c.mu)
        tb.apply(np.zeros(tb.na))
        for _ in range(5):
            tb.step()


@pytest.mark.parametrize("robot", ROBOTS)
def test_bare_links_out_of_collision_detection_change_nothing(robot, monkeypatch):
    """The links without a collision shape are filtered out of collision detection
    (:func:`idyn.robots.pybullet.base.exclude_bare_links`): a stance under PD control gives the same
    states and sensed forces, to the bit, as with them left in (as PyBullet loads them)."""
    runs = []
    for exclude in (True, False):
        if not exclude:
            monkeypatch.setattr(robots.pybullet.base, "exclude_bare_links", lambda client, body: [])
        with QuadrupedTestbed(robot, "rigid", mu=math.inf) as tb:
            normals = hold_stance(tb, 200)
            s = tb.state()
            runs.append((normals.tobytes(), s.q.tobytes(), s.v.tobytes(), tb.sensed_contact_forces().tobytes()))
            if exclude:
                bare = tb.robot.bare_links
                names = {link: name for name, link in tb.robot.link_of_name.items()}
                assert all(pb.getCollisionShapeData(tb.robot.body, k, physicsClientId=tb.client) == ()
                           for k in bare)
    assert runs[0] == runs[1]
    if robot == "links":             # the leg links have no <collision>, the base and feet do
        assert len(bare) == 12 and all("_LEG_" in names[k] for k in bare)


@pytest.mark.parametrize("terrain", ["rigid", "rough"])
def test_probe_skips_pybullet_only_where_it_finds_nothing(terrain):
    """SphereProbe.nearest given the terrain's top answers a sphere out of reach without PyBullet:
    around the threshold (margin + TOP_SLACK above the top, over the highest node of the rough
    ground) the answers are PyBullet's, point for point, and both sides of it occur."""
    from idyn.robots.pybullet.base import TOP_SLACK
    from idyn.robots.terrain import ROUGH_RESOLUTION, ROUGH_SIZE
    with QuadrupedTestbed("links", terrain, mu=math.inf if terrain == "rigid" else math.nan) as tb:
        probe, body, top = tb._foot_probes[0], tb.terrain.body, tb.terrain.max_height
        x, y = 0.1, -0.2
        if terrain == "rough":
            iy, ix = np.unravel_index(np.argmax(tb.terrain.heights), tb.terrain.heights.shape)
            x, y = ix * ROUGH_RESOLUTION - ROUGH_SIZE / 2, iy * ROUGH_RESOLUTION - ROUGH_SIZE / 2
        answers = []
        for margin in (0.0, 0.01):
            for excess in (-1e-3, -1e-6, -1e-9, 0.0, 1e-9, 0.5 * TOP_SLACK, TOP_SLACK, 2 * TOP_SLACK, 1e-3):
                centre = [x, y, top + probe.radius + margin + excess]
                got = probe.nearest(centre, body, margin, top)
                assert got == probe.nearest(centre, body, margin)
                answers.append(got is not None)
        assert any(answers) and not all(answers)


def test_several_testbeds_coexist():
    with QuadrupedTestbed("links") as a, QuadrupedTestbed("a1", "compliant") as b:
        assert a.client != b.client
        a.apply(np.zeros(a.na))
        a.step()
        assert b.t == 0.0 and a.t == pytest.approx(0.001)
        assert b.state().q.size == b.model.nq


def test_bad_inputs_raise_typed_errors(rigid):
    with pytest.raises(ShapeError):
        rigid.apply(np.zeros(rigid.na + 1))
    tau = np.zeros(rigid.na)
    tau[3] = np.nan
    with pytest.raises(NonFiniteError):
        rigid.apply(tau)
    with pytest.raises(ShapeError):
        rigid.reset(np.zeros(3))
    with pytest.raises(InvalidInputError):
        rigid.contacts(margin=-1.0)
    with pytest.raises(InvalidInputError):
        QuadrupedTestbed("no-such-robot")
    with pytest.raises(InvalidInputError):
        QuadrupedTestbed("links", terrain="lava")
    with pytest.raises(InvalidInputError):
        QuadrupedTestbed("links", mu=-1.0)
    with pytest.raises(InvalidInputError):
        QuadrupedTestbed("links", dt=0.0)
    with pytest.raises(IdynError):
        QuadrupedTestbed(42)
