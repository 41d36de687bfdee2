"""The MuJoCo quadruped testbed beyond the protocol (tests/test_testbed_conformance.py): the model
MuJoCo compiles from the URDF is pinocchio's (masses, forward kinematics of every foot under the
state mapping), and rigid ground stays rigid while standing (penetration, sliding)."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

mujoco = pytest.importorskip("mujoco")

from idyn import robots                                                    # noqa: E402
from idyn.errors import InvalidInputError                        # noqa: E402
from idyn.robots.mujoco import QuadrupedTestbed                       # noqa: E402

ROBOTS = ("links", "a1")
#: joint PD gains (N m/rad, N m s/rad) that keep each robot's stance
GAINS = {"links": (2.0, 0.01), "a1": (50.0, 0.5)}


@pytest.fixture(scope="module", params=ROBOTS)
def testbed(request):
    return QuadrupedTestbed(request.param)


def test_masses_match_pinocchio(testbed):
    assert abs(testbed.robot.mass - testbed.model.total_mass) <= 1e-9 * testbed.model.total_mass


@pytest.mark.parametrize("seed", [0, 1])
def test_foot_kinematics_match_pinocchio(testbed, seed):
    """After reset(q) at a random pose (orientation, joints) MuJoCo's own forward kinematics puts
    every foot body where pinocchio puts the foot frame: the state mapping (quaternion order,
    joint order) and the compiled URDF agree."""
    rng = np.random.default_rng(seed)
    quad = testbed.quadruped
    q = quad.q_stand.copy()
    q[:3] = rng.uniform(-1.0, 1.0, 3) + [0, 0, 1.5]
    q[3:7] = pin.Quaternion(pin.exp3(rng.uniform(-1.0, 1.0, 3))).coeffs()
    q[7:] += rng.uniform(-0.5, 0.5, q.size - 7)
    testbed.reset(q)
    m, d = testbed.robot.mj, testbed.robot.data
    mujoco.mj_kinematics(m, d)
    for foot in quad.feet.values():
        M = testbed.model.frame_placement(q, foot.link)
        body = testbed.robot.body_id(foot.link)
        np.testing.assert_allclose(d.xpos[body], M.translation, atol=1e-9)
        np.testing.assert_allclose(d.xmat[body].reshape(3, 3), M.rotation, atol=1e-9)


def _holding_torques(testbed):
    """``(q0, hold, kp, kd)``: the stance, the quasi-static torques that carry the weight on the
    four feet there, and light PD gains (explicit PD on LINKS's 0.1 kg links needs small ones)."""
    quad = testbed.quadruped
    testbed.reset()
    q0 = testbed.state().q.copy()
    pm = testbed.model.pinocchio_model
    data = pm.createData()
    g = pin.computeGeneralizedGravity(pm, data, q0)
    pin.computeJointJacobians(pm, data, q0)
    pin.updateFramePlacements(pm, data)
    J = np.vstack([pin.getFrameJacobian(pm, data, pm.getFrameId(f.link), pin.LOCAL_WORLD_ALIGNED)[:3]
                   for f in quad.feet.values()])
    hold = (g - J.T @ np.linalg.lstsq(J[:, :6].T, g[:6], rcond=None)[0])[6:]
    return (q0, hold, *GAINS[quad.name])


def test_rigid_ground_standing(testbed):
    """Held in its stance for 1 s by quasi-static torques: the feet penetrate at most 20 um
    (measured: LINKS 7.6 um, a1 4.3 um) and the material point of each foot at its contact
    slides at most 1 um/s (measured: LINKS 5e-8, a1 4e-9 m/s, in the first step), from
    pinocchio's foot velocity at the reported point."""
    q0, hold, kp, kd = _holding_torques(testbed)
    pm = testbed.model.pinocchio_model
    data = pm.createData()
    deepest, slip = 0.0, 0.0
    for _ in range(1000):
        s = testbed.state()
        contacts = testbed.contacts()
        assert len(contacts) == 4
        deepest = min(deepest, min(c.phi for c in contacts))
        pin.forwardKinematics(pm, data, s.q, s.v)
        pin.updateFramePlacements(pm, data)
        for c in contacts:
            fid = pm.getFrameId(c.body_a)
            vel = pin.getFrameVelocity(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
            at = vel.linear + np.cross(vel.angular, c.point - data.oMf[fid].translation)
            slip = max(slip, np.linalg.norm(at - (at @ c.normal) * c.normal))
        testbed.apply(hold + kp * (q0[7:] - s.q[7:]) - kd * s.v[6:])
        testbed.step()
    assert -deepest <= 2e-5
    assert slip <= 1e-6


@pytest.mark.parametrize("name", ["links", "a1"])
def test_compliant_ground_sinks_the_papers_millimetre(name):
    """Compliant ground (the module docstring's time constant from MuJoCo's regulariser): held
    in its stance by quasi-static torques for 1 s, the robot settles with the feet 1 mm deep on
    average (idyn.robots.terrain.COMPLIANT_SINK; measured: LINKS 1.005 mm, a1 0.999 mm) and
    the ground carrying its weight."""
    testbed = QuadrupedTestbed(robots.quadruped(name), terrain="compliant")
    assert testbed.compliant_timeconst >= 2 * testbed.dt
    q0, hold, kp, kd = _holding_torques(testbed)
    for _ in range(1000):
        s = testbed.state()
        testbed.apply(hold + kp * (q0[7:] - s.q[7:]) - kd * s.v[6:])
        testbed.step()
    depths = [-c.phi for c in testbed.contacts()]
    assert len(depths) == 4
    assert 0.7e-3 <= np.mean(depths) <= 1.4e-3, depths
    assert abs(testbed.sensed_normal_total() - testbed.weight) <= 0.05 * testbed.weight
    assert np.abs(testbed.state().v[:6]).max() <= 1e-2      # the base has settled


def test_unsupported_options_raise():
    with pytest.raises(InvalidInputError):
        QuadrupedTestbed("links", terrain="sand")
    with pytest.raises(InvalidInputError):
        QuadrupedTestbed("links", gui=True)
    with pytest.raises(InvalidInputError):
        QuadrupedTestbed("links", contact_margin=math.nan)


def test_friction_is_the_grounds():
    tb = QuadrupedTestbed(robots.quadruped("links"), mu=0.4)
    assert all(c.mu == pytest.approx(0.4) for c in tb.contacts())


def test_cli_runs_on_mujoco(tmp_path, capsys):
    """``--backend mujoco`` reaches the MuJoCo testbed through ``idyn run`` and ``idyn demo``,
    on rigid and compliant ground."""
    import json

    from idyn.experiments.cli import main

    assert main(["run", "--backend", "mujoco", "--quadruped", "a1", "--duration", "0.03",
                 "--out", str(tmp_path / "run")]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["steps"] == 30 and not metrics["fell"]
    assert main(["demo", "--backend", "mujoco", "--duration", "0.02", "--out", str(tmp_path / "demo")]) == 0
    assert "(quadruped, mujoco)" in capsys.readouterr().out
    assert main(["run", "--backend", "mujoco", "--terrain", "compliant", "--duration", "0.01",
                 "--out", str(tmp_path / "compliant")]) == 0
    assert "compliant-high (quadruped, mujoco)" in capsys.readouterr().out


def test_manipulator_box_and_cli(tmp_path):
    """The box MuJoCo simulates is the combined model's (mass, pose read back), and
    ``idyn run --robot manipulator --backend mujoco`` runs."""
    from idyn.experiments.cli import main
    from idyn.robots.mujoco import ManipulatorTestbed

    tb = ManipulatorTestbed()
    d = tb.description
    box = tb.robot.body_id("box")
    assert tb.robot.mj.body_mass[box] == pytest.approx(d.box_mass, rel=1e-12)
    np.testing.assert_allclose(tb.robot.mj.body_inertia[box], np.diag(d.box_inertia), rtol=1e-9)
    mujoco.mj_kinematics(tb.robot.mj, tb.robot.data)
    q = tb.state().q
    np.testing.assert_allclose(tb.robot.data.xpos[box], q[d.model.nq:d.model.nq + 3], atol=1e-12)
    np.testing.assert_allclose(tb.robot.data.xpos[box], d.box_placement(d.q0).translation, atol=1e-12)
    assert main(["run", "--robot", "manipulator", "--backend", "mujoco", "--controller", "pid",
                 "--duration", "0.02", "--out", str(tmp_path)]) == 0


def test_normal_totals_are_the_sensed_normals():
    """``sensed_normal_total`` (paper Table 5's quantity) is the sum of the reported contacts'
    sensed normal forces while every loaded contact is reported (0.05 s: the quadruped sags on
    its feet without torque; the fingers squeeze the box with 1 N m each)."""
    from idyn.robots.mujoco import ManipulatorTestbed

    arm = ManipulatorTestbed()
    squeeze = np.zeros(arm.model.na)
    names = arm.model.actuated_joint_names
    for joint, sign in zip(arm.description.finger_joints, arm.description.finger_close_sign):
        squeeze[names.index(joint)] = sign
    for tb, tau in ((QuadrupedTestbed("links"), np.zeros(12)), (arm, squeeze)):
        loaded = 0
        for _ in range(50):
            tb.contacts()
            tb.apply(tau)
            tb.step()
            total = tb.sensed_normal_total()
            assert total == pytest.approx(tb.sensed_contact_forces()[:, 0].sum(), rel=1e-9, abs=1e-12)
            loaded += total > 0.1
        assert loaded >= 10, type(tb)


def test_readme_loop_runs_and_trots():
    """The README's "Use it in your own loop" runs as printed: 2 s of trot, standing at the end."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text.split("## Use it in your own loop", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) <= 40
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    quad, state = scope["quad"], scope["state"]
    assert state.t == pytest.approx(1.999) and state.q[2] > 0.8 * quad.nominal_base_height
    assert abs(scope["sensed"][:, 0].sum() - quad.model.total_mass * 9.81) < 0.5 * quad.model.total_mass * 9.81


@pytest.mark.parametrize("seed", [0, 3])
def test_rough_terrain_heights_and_cell_friction(seed):
    """The rough heightfield is the seeded heights (MuJoCo's gaps within 0.5 mm of idyn.sim's
    bilinear ones: measured 0.4 mm, triangles against bilinear patches), and every touching foot
    has the friction of the cell under it, wherever the robot stands."""
    from idyn.sim.geometry import sphere_heightmap

    tb = QuadrupedTestbed("links", terrain="rough", seed=seed)
    quad = tb.quadruped
    rng = np.random.default_rng(seed)
    for trial in range(3):
        if trial:
            q = quad.q_stand.copy()
            q[:2] = rng.uniform(-1.0, 1.0, 2)
            q[2] += tb.heightmap.heights.max() + 0.01
            for _ in range(20):             # on a slope, lowering closes only the vertical part
                q[2] -= tb.foot_gaps(q).min()
            tb.reset(q)
        q = tb.state().q
        centres = quad.foot_centres(q)
        bilinear = [sphere_heightmap(c, f.radius, tb.heightmap).phi for c, f in zip(centres, quad.feet.values())]
        np.testing.assert_allclose(tb.foot_gaps(q), bilinear, atol=5e-4)
        contacts = tb.contacts()
        assert contacts and all(abs(c.phi) <= 1e-6 for c in contacts)
        for c in contacts:
            i = quad.foot_frames.index(c.body_a)
            assert c.mu == pytest.approx(tb.heightmap.frictions_at(centres[i:i + 1])[0], rel=1e-12)
            assert c.normal[2] > 0.9


def test_non_physical_inertias_are_made_physical_with_the_least_change():
    """robots.mujoco.base.physical_inertia: a physical inertia comes back as it is; one that
    MuJoCo refuses (a non-positive moment, the triangle inequality broken) gets its smallest
    principal moment raised to C - B (relative margin INERTIA_FLOOR), axes and the other moments
    kept: go1's dummy root link (moments 0, 0, 3e-6) and mini_cheetah's thighs."""
    from idyn.robots.mujoco.base import INERTIA_FLOOR, physical_inertia
    rng = np.random.default_rng(0)
    R = pin.Quaternion(rng.normal(size=4) / np.linalg.norm(rng.normal(size=4))).normalized().toRotationMatrix()
    good = R @ np.diag([1.0, 2.0, 2.5]) @ R.T
    assert physical_inertia(good) is good
    for moments in ([0.0, 0.0, 3e-6], [4.0789e-4, 1.79082e-3, 2.29528e-3], [-1e-22, 8e-23, 3e-3]):
        fixed = physical_inertia(R @ np.diag(moments) @ R.T)
        e = np.linalg.eigvalsh(fixed)
        c = moments[2]
        assert e.min() > 0 and e[0] + e[1] >= e[2] * (1 + 0.5 * INERTIA_FLOOR)
        b = max(moments[1], INERTIA_FLOOR * c)
        np.testing.assert_allclose(e, np.sort([c * (1 + INERTIA_FLOOR) - b, b, c]), rtol=0, atol=1e-9 * c)
        if moments[1] > INERTIA_FLOOR * c:     # three distinct moments: the same principal axes
            D = R.T @ fixed @ R
            np.testing.assert_allclose(D, np.diag(np.diag(D)), rtol=0, atol=1e-12 * c)
            np.testing.assert_allclose(np.diag(D), [c * (1 + INERTIA_FLOOR) - moments[1], moments[1], c], rtol=1e-9)
    zero = np.zeros((3, 3))         # a massless link: left as it is; a point mass (laikago's
    assert physical_inertia(zero) is zero     # chassis): a 1 mm solid sphere of its mass
    np.testing.assert_allclose(physical_inertia(zero, 13.715), 0.4 * 13.715 * 1e-6 * np.eye(3))


@pytest.mark.parametrize("name", ["go2", "anymal_c"])
def test_mesh_feet_get_the_description_sphere_and_mass_is_the_urdf(name):
    """go2's mesh feet collide as the description's spheres (the mesh made non-colliding);
    anymal_c's links without an inertial are massless in MuJoCo as in pinocchio."""
    tb = QuadrupedTestbed(robots.quadruped(name))
    assert abs(tb.robot.mass - tb.model.total_mass) <= 1e-9 * tb.model.total_mass
    m = tb.robot.mj
    for f, g in zip(tb._feet, tb._foot_geoms):
        assert m.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE and m.geom_size[g, 0] == pytest.approx(f.radius)
        np.testing.assert_allclose(m.geom_pos[g], np.asarray(f.offset, dtype=float).reshape(3), atol=1e-12)
        others = [k for k in range(m.ngeom) if m.geom_bodyid[k] == m.geom_bodyid[g] and k != g]
        if name == "go2":           # its feet were meshes
            assert all(m.geom_contype[k] == 0 and m.geom_conaffinity[k] == 0 for k in others)   # or dropped
    assert len(tb.contacts()) == 4


@pytest.mark.parametrize("seed", [0, 1])
def test_a_re_expressed_base_maps_to_mujocos_root_body(seed):
    """laikago's URDF base is y-up: robots.from_urdf moves pinocchio's free flyer to a z-up body
    frame X while MuJoCo's free joint stays on the root link (B = F X).  At a random state
    written through the testbed, MuJoCo's own kinematics put every foot body where pinocchio
    puts the foot frame, moving with pinocchio's frame velocity, and reading the state back
    gives the state written."""
    from idyn import robots
    tb = QuadrupedTestbed(robots.quadruped("laikago"))
    model, pm = tb.model, tb.model.pinocchio_model
    rng = np.random.default_rng(seed)
    dq = np.concatenate((rng.uniform(-1, 1, 6), rng.uniform(-0.5, 0.5, model.nv - 6)))
    q = model.integrate(tb.quadruped.q_stand, dq, 1.0)
    q[2] += 1.5
    v = rng.uniform(-1.0, 1.0, model.nv)
    tb.robot.write(q, v)
    m, d = tb.robot.mj, tb.robot.data
    mujoco.mj_forward(m, d)
    data = pm.createData()
    pin.forwardKinematics(pm, data, q, v)
    pin.updateFramePlacements(pm, data)
    vel = np.zeros(6)
    for foot in tb.quadruped.feet.values():
        fid, body = pm.getFrameId(foot.link), tb.robot.body_id(foot.link)
        np.testing.assert_allclose(d.xpos[body], data.oMf[fid].translation, atol=1e-9)
        np.testing.assert_allclose(d.xmat[body].reshape(3, 3), data.oMf[fid].rotation, atol=1e-9)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, body, vel, 0)   # world axes
        expected = pin.getFrameVelocity(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(vel[3:], expected.linear, atol=1e-9)
        np.testing.assert_allclose(vel[:3], expected.angular, atol=1e-9)
    q_back, v_back = tb.robot.read()
    np.testing.assert_allclose(model.difference(q, q_back), 0.0, atol=1e-12)
    np.testing.assert_allclose(v_back, v, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_free_flyer_mapping_with_any_placement(seed):
    """The free-flyer mapping B = F X for a random X with a translation (laikago's has none): the
    MuJoCo state written from pinocchio's (q, v) is the pose T_F X and the twist X^-1 . v_F
    (MuJoCo: world-frame velocity of B's origin, B-frame angular velocity), and reads back."""
    tb = QuadrupedTestbed(robots.quadruped("a1"))
    rng = np.random.default_rng(seed)
    X = pin.SE3(pin.exp3(rng.uniform(-1, 1, 3)), rng.uniform(-0.2, 0.2, 3))
    i, j, a, b = tb.robot._free[0][:4]
    tb.robot._free[0] = (i, j, a, b, X.rotation.copy(), X.translation.copy(), pin.Quaternion(X.rotation))
    model = tb.model
    q = model.integrate(tb.quadruped.q_stand, rng.uniform(-1, 1, model.nv), 1.0)
    v = rng.uniform(-1, 1, model.nv)
    tb.robot.write(q, v)
    qpos, qvel = tb.robot.data.qpos, tb.robot.data.qvel
    F = pin.XYZQUATToSE3(q[:7])
    B = F * X
    np.testing.assert_allclose(qpos[a:a + 3], B.translation, atol=1e-12)
    RB = pin.Quaternion(qpos[a + 3], qpos[a + 4], qpos[a + 5], qpos[a + 6]).toRotationMatrix()
    np.testing.assert_allclose(RB, B.rotation, atol=1e-12)
    vB = X.actInv(pin.Motion(v[j:j + 3], v[j + 3:j + 6]))       # B's twist in B's frame
    np.testing.assert_allclose(qvel[b:b + 3], B.rotation @ vB.linear, atol=1e-12)
    np.testing.assert_allclose(qvel[b + 3:b + 6], vB.angular, atol=1e-12)
    q_back, v_back = tb.robot.read()
    np.testing.assert_allclose(model.difference(q, q_back), 0.0, atol=1e-12)
    np.testing.assert_allclose(v_back, v, atol=1e-12)
