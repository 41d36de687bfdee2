"""The closed loop (experiments.loop) on the PyBullet testbeds: mechanics, not locomotion quality."""
import math

import numpy as np
import pytest

from idyn import controllers
from idyn import robots
from idyn.experiments.loop import run_loop, torque_limits
from idyn.experiments.references import ArmReference, QuadrupedReference
from idyn.experiments.scenario import LOCOMOTION_FRICTION_LIMIT
from idyn.experiments.trace import Trace
from idyn.errors import InvalidInputError

pb = pytest.importorskip("idyn.robots.pybullet")


def test_quadruped_loop_records_a_loadable_trace_with_limited_torques(tmp_path):
    quad = robots.quadruped("links")
    model = quad.model
    ref = QuadrupedReference(quad)
    ctrl = controllers.make("sensed-1", model)
    seen = []
    observe = ctrl.observe_contact_forces
    ctrl.observe_contact_forces = lambda c, f: (seen.append(len(c)), observe(c, f))
    with pb.QuadrupedTestbed("links", "rigid", mu=math.inf) as tb:
        res = run_loop(tb, model, ref, ctrl, 0.03, limit=0.5, trace_path=tmp_path / "t.npz",
                       meta={"controller": "sensed-1"})
    assert res.steps == 30 and len(seen) == 30               # sensed forces fed back every step
    tr = Trace.load(tmp_path / "t.npz")
    assert tr.q.shape == (30, model.nq) and tr.q_des.shape == (30, model.na)
    assert np.all(np.abs(tr.tau) <= 0.5 + 1e-12)
    np.testing.assert_allclose(np.diff(tr.t), 1e-3)
    assert tr.meta == {"controller": "sensed-1"} and tr.status_names
    assert np.all(tr.n_contacts[:15] == 4) and np.all(tr.n_contacts >= 2)   # swing feet leave
    assert np.all(tr.sensed_normal[1:] > 0)
    assert tr.q_des[0] == pytest.approx(quad.q_stand[model.actuated_q], abs=1e-3)


def test_manipulator_loop_runs_with_the_arm_reference():
    manip = robots.manipulator()
    with pb.ManipulatorTestbed() as tb:
        model = tb.model
        ref = ArmReference(manip)
        res = run_loop(tb, model, ref, controllers.make("pid", model), 0.01)
    tr = res.trace
    assert tr.q_des.shape == (10, model.na)
    arm = 1.5708 + 0.1 * np.cos(10 * tr.t)[:, None] - 0.1
    np.testing.assert_allclose(tr.q_des[:, :7], np.broadcast_to(arm, (10, 7)), atol=1e-12)


def test_torque_limit_options():
    model = robots.quadruped("links").model
    assert torque_limits(model, None) is None
    np.testing.assert_allclose(torque_limits(model, 2.0), 2.0)
    with pytest.raises(InvalidInputError):
        torque_limits(model, -1.0)


def _foot_contacts(quad, mus):
    q = quad.q_stand
    from idyn import Contact
    return [Contact(f.link, None, c - [0.0, 0.0, f.radius], [0.0, 0.0, 1.0], mu=mu)
            for (f, c), mu in zip(zip(quad.feet.values(), quad.foot_centres(q)), mus)]


@pytest.mark.parametrize("selection", ["schedule", "all"])
def test_reference_caps_the_friction_the_controller_is_told(selection):
    quad = robots.quadruped("links")
    contacts = _foot_contacts(quad, [math.inf, 100.0, 0.1, 0.3])   # LF RF LH RH
    ref = QuadrupedReference(quad, contacts=selection)       # default: the command line's 0.3
    assert ref.friction_limit == LOCOMOTION_FRICTION_LIMIT == 0.3
    ref.desired(controllers.RobotState(quad.q_stand, np.zeros(quad.model.nv), 0.0), contacts)
    active = ref.active_contacts(contacts)
    literal = QuadrupedReference(quad, contacts=selection, friction_limit=None)   # the terrain's mu
    literal.desired(controllers.RobotState(quad.q_stand, np.zeros(quad.model.nv), 0.0), contacts)
    uncapped = literal.active_contacts(contacts)
    # "schedule": the trot starts with one diagonal pair in swing
    assert len(active) == len(uncapped) == (4 if selection == "all" else 2)
    by_foot = {c.body_a: c for c in contacts}
    for a, u in zip(active, uncapped):
        c = by_foot[a.body_a]
        assert u is c                                            # the literal setting passes it on
        assert a.mu == min(c.mu, 0.3)                            # only mu changes
        assert a.phi == c.phi and a.body_b == c.body_b
        np.testing.assert_array_equal(a.point, c.point)
        np.testing.assert_array_equal(a.frame(), c.frame())
    assert {a.mu for a in active} == {0.3, 0.1}                 # capped and kept both seen


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_reference_rejects_a_bad_friction_limit(bad):
    with pytest.raises(InvalidInputError, match="friction_limit"):
        QuadrupedReference(robots.quadruped("links"), friction_limit=bad)
