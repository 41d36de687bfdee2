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
    check alone at 0.099 s (docs/results.md)."""
    m = _check(Scenario(controller="qp-coulomb", robot="manipulator", mu=100.0, duration=3.0, backend="idyn"))
    assert not m["box_dropped"], m
