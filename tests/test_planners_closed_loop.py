"""The closed loop (experiments.loop) on the PyBullet testbeds: mechanics, not locomotion quality."""
import math

import numpy as np
import pytest

import controllers
import robots
from experiments.loop import run_loop, torque_limits
from experiments.references import ArmReference, QuadrupedReference
from experiments.trace import Trace
from idyn.errors import InvalidInputError

pb = pytest.importorskip("robots.pybullet")


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
