"""The grasping experiment of paper Sec. 8.4.1 (Fig. 18, issue 5): the manipulator follows its
sinusoid holding the box with mu = 100 and mu = 1 under qp-coulomb, pid and sensed-1. The 3 s
runs are slow tests; a short version of every run is in the default suite."""
import math

import pytest

from idyn.experiments.runner import run_scenario
from idyn.experiments.scenario import Scenario, manipulator_sweep


def _check(scenario):
    m = run_scenario(scenario)
    assert m.get("error") is None, m
    assert m["steps"] == round(scenario.duration / scenario.dt) and not m["fell"], m
    for key in ("pos_error", "vel_error", "torque_rate", "torque_mean"):
        assert math.isfinite(m[key]), (key, m)
    assert isinstance(m["box_dropped"], bool) and (m["box_drop_time"] is None) is not m["box_dropped"], m
    return m


@pytest.mark.parametrize("scenario", manipulator_sweep(duration=0.3), ids=lambda s: f"{s.controller}-mu{s.mu:g}")
def test_grasp_runs_briefly(scenario):
    _check(scenario)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", manipulator_sweep(), ids=lambda s: f"{s.controller}-mu{s.mu:g}")
def test_grasp_runs_three_seconds(scenario):
    """Whether the box stays in the hand is reported for every run (README "Results (grasping
    manipulator)"); ``sensed-1`` holds it at both frictions, as in the paper's Fig. 18."""
    m = _check(scenario)
    print(scenario.controller, scenario.mu, {k: m[k] for k in ("pos_error", "torque_rate", "box_drop_time")})
    if scenario.controller == "sensed-1":
        assert not m["box_dropped"], m


@pytest.mark.slow
def test_qp_coulomb_holds_the_box_at_mu_100_in_idyn_sim():
    """Paper Fig. 18 (top): ID_QP,mu holds the box at mu = inf for the 3-s experiment.  With
    Sec. 4.5's check and Stage II measuring torque from the removed command's effort (the
    defaults) it does in idyn.sim; without the check the box left the hand at 1.43 s, with the
    check alone at 0.099 s (docs/results.md).  A knife edge: one term of Stage II summed in
    another rounding order drops it at 0.102 s (docs/results.md)."""
    m = _check(Scenario(controller="qp-coulomb", robot="manipulator", mu=100.0, duration=3.0, backend="idyn"))
    assert not m["box_dropped"], m


def test_pybullet_follows_qp_coulomb_prediction_on_the_grasp():
    """The PyBullet testbed simulates what its contacts report (gap with contact slop 0, Bullet's
    friction cap 10 as mu): on the first 30 steps of the grasp at mu = 100, PyBullet's velocity
    after each step is ``qp-coulomb``'s predicted ``v+`` within 0.1 rad/s (measured 0.002 on the
    first step, at most 0.06). With Bullet's default slop and mu reported as 100 the first step
    missed by 0.47 rad/s and the tenth by 215 (docs/results.md)."""
    import numpy as np

    from idyn import controllers
    from idyn.experiments.runner import build_reference, build_testbed
    from idyn.robots import manipulator

    scenario = Scenario(controller="qp-coulomb", robot="manipulator", mu=100.0, duration=0.03)
    testbed = build_testbed(scenario)
    try:
        reference = build_reference(scenario, manipulator())
        controller = controllers.make("qp-coulomb", testbed.model, dt=scenario.dt)
        reference.reset(), controller.reset(), testbed.reset()
        errors = []
        for _ in range(30):
            state, contacts = testbed.state(), testbed.contacts()
            out = controller.compute(state, reference.desired(state, contacts), reference.active_contacts(contacts))
            testbed.apply(out.tau)
            testbed.step()
            errors.append(np.abs(out.info.v_next - testbed.state().v).max())
    finally:
        testbed.close()
    assert errors[0] < 5e-3 and max(errors) < 0.1, errors


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="Bullet simulates at most Coulomb mu = 10; qp-coulomb's grasp "
                   "drops the box under Coulomb mu = 5 to 99 in idyn.sim too (docs/results.md)")
def test_qp_coulomb_holds_the_box_at_mu_100_in_pybullet():
    """Issue 24's must-show in PyBullet. Measured: dropped at 0.307 s. idyn.sim holds at mu = 100
    only because it simulates mu >= 100 as no slip; with Coulomb mu = 99 it drops at 0.225 s."""
    m = _check(Scenario(controller="qp-coulomb", robot="manipulator", mu=100.0, duration=3.0, backend="pybullet"))
    assert not m["box_dropped"], m
