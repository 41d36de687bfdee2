"""``--preset paper|idyn`` (experiments.presets): every listed difference reaches the objects.

Checked on the constructed controllers and references (not on option strings): under "paper"
each restorable difference's option has the paper's value on every controller it applies to,
under "idyn" none does, and options the user gives (``controller_options``, ``friction_limit``,
``reference_options``) override the preset's. The balance in the desired acceleration (Sec. 7.3)
is checked against the balance controller's own output.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from idyn import robots
from idyn.state import RobotState
from idyn.errors import InvalidInputError
from idyn.experiments import presets
from idyn.experiments.references import QuadrupedReference
from idyn.experiments.reproduce import PRESETS
from idyn.experiments.runner import build_controller, build_reference
from idyn.experiments.scenario import (LOCOMOTION_FRICTION_LIMIT, PAPER_CONTROLLERS, Scenario,
                                       manipulator_sweep, paper_sweep, terrain_scenario)


@pytest.fixture(scope="module")
def links():
    return robots.quadruped("links")


def value_on(controller, key):
    """The value ``controller`` holds for the option ``key`` (read from the object)."""
    if key in ("kp", "kv", "ki"):
        gains = getattr(controller.feedback, key)
        assert np.all(gains == gains[0])
        return float(gains[0])
    if key == "budget":
        return None if math.isinf(controller.budget) else controller.budget
    if key == "plausibility_margin":
        return controller.plausibility_margin if controller._bounded else None
    if key in ("impact", "penetration_recovery"):
        return getattr(controller.dynamics, key)
    if key == "no_slip_mu":
        return controller.held_mu
    return getattr(controller, key)


def test_paper_preset_sets_every_controller_difference(links):
    checked = 0
    for name in PAPER_CONTROLLERS + ("qp-coulomb-1stage",):
        paper = build_controller(Scenario(controller=name, preset="paper"), links.model)
        ours = build_controller(Scenario(controller=name, preset="idyn"), links.model)
        for d in presets.DIFFERENCES:
            if d.target != "controller" or name not in d.applies_to:
                continue
            for key, value in d.options.items():
                assert value_on(paper, key) == value, (name, key)
                assert value_on(ours, key) != value, (name, key)      # a real difference
                checked += 1
    assert checked >= 20


def test_paper_preset_sets_the_reference_and_backend(links):
    ref = build_reference(terrain_scenario("rigid-high", preset="paper"), links)
    assert ref.friction_limit is None and ref.balance_target == "acceleration"
    ours = build_reference(terrain_scenario("rigid-high"), links)
    assert ours.friction_limit == LOCOMOTION_FRICTION_LIMIT and ours.balance_target == "torque"
    a1 = robots.quadruped("a1")     # the trot scaled to the robot's size (LINKS: the paper's)
    assert ours.gait.period == ref.gait.period == 0.3
    scaled = build_reference(terrain_scenario("rigid-high", quadruped="a1"), a1)
    paper = build_reference(terrain_scenario("rigid-high", quadruped="a1", preset="paper"), a1)
    assert scaled.gait.step_height > 0.015 and paper.gait.step_height == 0.015
    assert scaled.follower.speed > 0.2 and paper.follower.speed == 0.2
    assert {s.backend for s in paper_sweep(preset="paper")} == {"idyn"}
    assert {s.backend for s in paper_sweep()} == {"pybullet"}
    assert {(s.backend, s.preset) for s in manipulator_sweep(preset="paper")} == {("idyn", "paper")}
    assert {s.backend for s in paper_sweep(preset="paper", backend="pybullet")} == {"pybullet"}


def test_explicit_options_override_the_preset(links):
    s = terrain_scenario("rigid-low", controller="qp-coulomb", preset="paper", friction_limit=0.3,
                         controller_options={"kv": 63.0, "objective": "contact-work"},
                         reference_options={"balance_target": "torque"})
    ctrl, ref = build_controller(s, links.model), build_reference(s, links)
    assert value_on(ctrl, "kv") == 63.0 and ctrl.objective == "contact-work"
    assert ctrl.separation_weight == 0.0            # the rest of the preset still applies
    assert ref.friction_limit == 0.3 and ref.balance_target == "torque"
    s = terrain_scenario("rigid-low", preset="idyn", friction_limit=None)
    assert build_reference(s, links).friction_limit is None


def test_presets_are_validated():
    assert set(PRESETS) == {"paper", "idyn"}
    with pytest.raises(InvalidInputError, match="preset"):
        Scenario(preset="published")
    with pytest.raises(InvalidInputError):
        paper_sweep(preset="moby")
    with pytest.raises(InvalidInputError, match="friction"):
        Scenario(reference_options={"friction_limit": None})


def test_ablation_isolates_one_difference(links):
    base = terrain_scenario("rigid-low", controller="qp-coulomb", backend="idyn")
    kv = next(d for d in presets.DIFFERENCES if "kv" in d.options)
    only, back = presets.ablation(base, kv)
    assert value_on(build_controller(only, links.model), "kv") == 10.0
    back_ctrl = build_controller(back, links.model)
    assert value_on(back_ctrl, "kv") == pytest.approx(2 * 1e3 ** 0.5)
    assert back_ctrl.objective == "kinetic-energy"      # every other paper option kept


def test_balance_in_the_desired_acceleration(links):
    """Sec. 7.3: the stabilisation is added to qdd_des (the same vector the torque path adds
    to the torque) and nothing is added after the controller."""
    model = links.model
    q = links.q_stand.copy()
    q[3:7] = [0.02, -0.03, 0.0, 1.0]                   # tilted base: the balance acts
    q[3:7] /= np.linalg.norm(q[3:7])
    v = np.zeros(model.nv)
    v[3:6] = [0.3, -0.2, 0.0]
    state = RobotState(q, v, 0.0)
    from idyn.robots.sim import QuadrupedTestbed
    contacts = QuadrupedTestbed("links", terrain="rigid", mu=1.0).contacts()
    torque_ref = QuadrupedReference(links, balance_target="torque")
    accel_ref = QuadrupedReference(links, balance_target="acceleration")
    plain = QuadrupedReference(links, balance=False)
    d0 = plain.desired(state, contacts)
    d0 = (d0.q.copy(), d0.v.copy(), d0.vdot.copy())
    torque_ref.desired(state, contacts)
    tau_b = np.array(torque_ref.extra_torque(state, contacts))
    d = accel_ref.desired(state, contacts)
    assert np.linalg.norm(tau_b) > 1e-3
    np.testing.assert_allclose(d.vdot - d0[2], tau_b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.q, d0[0]) and np.testing.assert_allclose(d.v, d0[1])
    assert accel_ref.extra_torque(state, contacts) is None
    with pytest.raises(InvalidInputError):
        QuadrupedReference(links, balance_target="force")
