"""Public quadrupeds from their unedited URDFs (example-robot-data and pybullet_data) through
robots.from_urdf: feet, body axes, leg order and standing pose found from the geometry, then
standing in PyBullet under qp-coulomb with the contact forces carrying the weight.

One default test per robot family (the kind of joints, feet and base the URDF has); the 10 s
trots are marked slow. The figures in the docstrings were measured with these tests' settings.
"""
import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("idyn.robots.pybullet")

from idyn import controllers  # noqa: E402
from idyn import robots  # noqa: E402
from idyn.errors import InvalidInputError, ModelLoadError  # noqa: E402
from idyn.state import Desired  # noqa: E402

#: name -> (what the family exercises, tolerance on predicted normal force / weight). The
#: tolerance is 1 % where PyBullet simulates the robot pinocchio models; two URDFs make PyBullet
#: carry part of the weight elsewhere (measured, 2 s stand, mean over the last 0.5 s):
#: mini_cheetah's thigh inertia violates the triangle inequality (principal moments 4.1e-4,
#: 1.79e-3, 2.30e-3 kg m^2) and PyBullet zeroes it, predicted 1.049 W; laikago_toes' lower legs
#: touch the ground beside the toes, predicted 1.058 W, sensed at the toes 0.77 W.
FAMILIES = {
    "go1": ("Unitree, sphere feet, massless root link", 0.01),
    "go2": ("mesh feet named with a radius", 0.02),
    "a1": ("pybullet_data, standing pose found, not guessed", 0.01),
    "anymal_c": ("revolute joints about unaligned axes", 0.01),
    "solo12": ("mesh feet, 2.5 kg", 0.01),
    "aliengo": ("continuous thigh joints (nq = 2)", 0.01),
    "mini_cheetah": ("every joint continuous", 0.08),
    "laikago": ("base drawn y-up z-forward", 0.08),
}


#: the families MuJoCo simulates as pinocchio models them (MuJoCo's total mass is the URDF's; the
#: few non-physical inertias made physical, robots.mujoco.base.physical_inertia; laikago's 13.7 kg
#: chassis, which has none, a 1 mm sphere's). Measured, 2 s stand (mean over the last 0.5 s):
#: predicted and sensed normal totals within 0.05 % of the weight, the base within 0.1 mm of its
#: start.
MUJOCO_FAMILIES = list(FAMILIES)


def _robot(name):
    if name == "a1":
        return robots.from_urdf("pybullet_data:a1/a1.urdf")
    return robots.quadruped(name)


def stand(quad, duration, controller="qp-coulomb", backend="pybullet"):
    """Hold the standing pose on rigid ground (mu 1, the controller planning with 0.3) in PyBullet
    or MuJoCo; return the testbed's weight, the first and last states and the predicted and
    sensed normal totals."""
    if backend == "mujoco":
        from idyn.robots.mujoco import QuadrupedTestbed
    else:
        from idyn.robots.pybullet import QuadrupedTestbed
    tb = QuadrupedTestbed(quad, terrain="rigid", mu=1.0)
    try:
        m = quad.model
        ctrl = controllers.make(controller, m)
        desired = Desired(m.joint_positions(quad.q_stand), np.zeros(m.na), np.zeros(m.na))
        first = tb.reset()
        pred, sensed = [], []
        for _ in range(int(round(duration / tb.dt))):
            state = tb.state()
            contacts = [c.with_friction(0.3) for c in tb.contacts()]
            out = ctrl.compute(state, desired, contacts)
            tb.apply(out.tau)
            tb.step()
            pred.append(out.contact_forces[:, 0].sum())
            sensed.append(tb.sensed_contact_forces()[:, 0].sum())
        return tb.weight, first, tb.state(), np.array(pred), np.array(sensed)
    finally:
        tb.close()


@pytest.mark.parametrize("name", list(FAMILIES))
def test_public_quadruped_stands_2_s(name):
    quad = _robot(name)
    m = quad.model
    assert m.na == 12 and set(quad.feet) == {"LF", "RF", "LH", "RH"}
    # legs labelled from the geometry: left feet at +y, front feet at +x of the standing body
    centres = quad.foot_centres(quad.q_stand)
    for (leg, _), c in zip(quad.feet.items(), centres):
        assert (c[1] > 0) == (leg[0] == "L") and (c[0] > np.mean(centres[:, 0])) == (leg[1] == "F")
    assert np.allclose(centres[:, 2], quad.foot_radius, atol=1e-6)     # every foot on the ground
    weight, first, last, pred, sensed = stand(quad, 2.0)
    assert weight == pytest.approx(m.total_mass * 9.81, rel=1e-6)
    assert abs(last.q[2] - first.q[2]) < 0.01                         # m: neither fell nor sank
    R = pin.Quaternion(last.q[3:7]).toRotationMatrix()
    assert R[2, 2] > np.cos(np.radians(3.0))                           # base level within 3 deg
    tol = FAMILIES[name][1]
    assert np.mean(pred[-500:]) / weight == pytest.approx(1.0, abs=tol)
    if tol <= 0.02:
        assert np.mean(sensed[-500:]) / weight == pytest.approx(1.0, abs=tol)


@pytest.mark.parametrize("name", MUJOCO_FAMILIES)
def test_public_quadruped_stands_2_s_in_mujoco(name):
    """The same stand in MuJoCo (robots.mujoco): mesh feet get the description's sphere, MuJoCo's
    masses are the URDF's (no mass from the collision geometry), forces within 1 % of the weight."""
    pytest.importorskip("mujoco")
    quad = _robot(name)
    weight, first, last, pred, sensed = stand(quad, 2.0, backend="mujoco")
    assert weight == pytest.approx(quad.model.total_mass * 9.81, rel=1e-6)
    assert abs(last.q[2] - first.q[2]) < 0.01
    R = pin.Quaternion(last.q[3:7]).toRotationMatrix()
    assert R[2, 2] > np.cos(np.radians(3.0))
    assert np.mean(pred[-500:]) / weight == pytest.approx(1.0, abs=0.01)
    assert np.mean(sensed[-500:]) / weight == pytest.approx(1.0, abs=0.01)


def test_body_axes_of_a_y_up_base():
    """PyBullet's laikago_toes is drawn with y up and z forward: the free flyer is re-expressed in
    the body frame, so the standing base is level and the legs are labelled as named."""
    quad = robots.quadruped("laikago")
    assert np.allclose(quad.q_stand[3:7], [0, 0, 0, 1])
    assert {leg: f.link for leg, f in quad.feet.items()} == {"LF": "toeFL", "RF": "toeFR", "LH": "toeRL",
                                                             "RH": "toeRR"}
    trunk = quad.model.pinocchio_model.frames[quad.model.frame_id("chassis")]
    # the base link's frame in the body frame: its y axis is up, its z axis forward
    assert np.allclose(trunk.placement.rotation, [[0, 0, 1], [1, 0, 0], [0, 1, 0]])


def test_a_urdf_path_is_a_quadruped_name():
    """What the testbeds and ``idyn run --quadruped`` accept: a .urdf path goes to from_urdf."""
    path = robots.quadruped_urdf("go1")
    quad = robots.quadruped(str(path))
    assert quad.urdf == path and quad.name == "go1"
    named = robots.quadruped("go1")
    assert {leg: f.link for leg, f in quad.feet.items()} == {leg: f.link for leg, f in named.feet.items()}
    with pytest.raises(InvalidInputError, match="unknown quadruped"):
        robots.quadruped("no-such-robot")


def test_mesh_feet_need_their_frames():
    with pytest.raises(ModelLoadError, match="FL_foot"):
        robots.from_urdf(robots.quadruped_urdf("go2"))
    quad = robots.from_urdf(robots.quadruped_urdf("go2"), ["FL_foot", "FR_foot", "RL_foot", "RR_foot"],
                            foot_radius=0.0245)
    assert quad.foot_radius == 0.0245 and quad.feet["LH"].link == "RL_foot"
    ball = {f: (0.0238, (-0.0015, 0.0, 0.0)) for f in ("FL_foot", "FR_foot", "RL_foot", "RR_foot")}
    quad = robots.from_urdf(robots.quadruped_urdf("go2"), ball)
    lf = quad.model.frame_placement(quad.q_stand, "FL_foot").act(np.array([-0.0015, 0.0, 0.0]))
    assert np.allclose(quad.foot_centres(quad.q_stand)[0], lf) and lf[2] == pytest.approx(0.0238, abs=1e-9)


def test_continuous_joint_robot_trots_in_the_closed_loop():
    """aliengo's thighs are continuous joints: the planner's leg IK, the testbed's state and the
    error feedback work on their angles (pinocchio's difference), 1.5 s of the trot."""
    from idyn.experiments.runner import run_scenario
    from idyn.experiments.scenario import terrain_scenario
    m = run_scenario(terrain_scenario("rigid-high", quadruped="aliengo", duration=1.5, friction_limit=0.3))
    assert not m["fell"]
    assert m["pos_error"] < 0.02
    assert m["force_error_rel"] < 3.0                 # %: 0.96 % over 3 s measured
    assert m["distance"] > 0.1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["go1", "go2", "a1", "anymal_c", "solo12", "aliengo", "mini_cheetah", "laikago"])
def test_public_quadruped_trots_10_s(name):
    from idyn.experiments.runner import run_scenario
    from idyn.experiments.scenario import terrain_scenario
    m = run_scenario(terrain_scenario("rigid-high", quadruped=name, duration=10.0, friction_limit=0.3))
    assert not m["fell"], m
    assert m["distance"] > 1.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["go1", "go2", "anymal_c", "solo12", "aliengo"])
def test_public_quadruped_stands_3_s_under_lcp_coulomb(name):
    weight, first, last, pred, _ = stand(_robot(name), 3.0, "lcp-coulomb")
    assert abs(last.q[2] - first.q[2]) < 0.01
    assert np.mean(pred[-500:]) / weight == pytest.approx(1.0, abs=0.02)


def test_pybullet_state_of_continuous_joints_round_trips():
    """PyBullet's joint positions are angles; aliengo's continuous thighs have (cos, sin) in q:
    the testbed writes q's angles and reads back pinocchio's q, for angles beyond pi too."""
    from idyn.robots.pybullet import QuadrupedTestbed
    quad = robots.quadruped("aliengo")
    m = quad.model
    assert not m.flat_actuation
    rng = np.random.default_rng(5)
    tb = QuadrupedTestbed(quad, terrain="rigid", mu=1.0)
    try:
        for _ in range(3):
            q = quad.q_stand.copy()
            q[2] += 0.5
            q = m.with_joint_positions(q, rng.uniform(-4.0, 4.0, m.na))
            v = rng.normal(size=m.nv)
            state = tb.reset(q, v)
            assert np.abs(m.difference(state.q, q)).max() < 1e-12
            assert np.allclose(state.v, v, atol=1e-12)
    finally:
        tb.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", MUJOCO_FAMILIES)
def test_public_quadruped_trots_10_s_in_mujoco(name):
    """README's MuJoCo table: ``idyn run --backend mujoco --quadruped NAME --duration 10
    --friction-limit 0.3``."""
    pytest.importorskip("mujoco")
    from idyn.experiments.runner import run_scenario
    from idyn.experiments.scenario import terrain_scenario
    m = run_scenario(terrain_scenario("rigid-high", quadruped=name, duration=10.0, friction_limit=0.3,
                                      backend="mujoco"))
    assert not m["fell"], m
    assert m["distance"] > 1.0
    assert m["force_error_rel"] < 10.0          # %: 0.8-7.1 % measured (README)


@pytest.mark.slow
@pytest.mark.parametrize("name", MUJOCO_FAMILIES)
def test_public_quadruped_stands_3_s_under_lcp_coulomb_in_mujoco(name):
    pytest.importorskip("mujoco")
    weight, first, last, pred, sensed = stand(_robot(name), 3.0, "lcp-coulomb", backend="mujoco")
    assert abs(last.q[2] - first.q[2]) < 0.01
    assert np.mean(pred[-500:]) / weight == pytest.approx(1.0, abs=0.01)
