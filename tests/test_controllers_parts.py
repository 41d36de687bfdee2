"""Pieces of the controller package: the shared feedback, the sensed-force path, MINDIFF."""
from __future__ import annotations

import numpy as np
import pytest

from idyn import controllers
from idyn.controllers import Desired, ErrorFeedback, RobotState
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn import contact_jacobians
from idyn.errors import InvalidInputError, ShapeError


def test_error_feedback_is_the_pid_of_sec_7_3():
    p = standing_problem()
    model = p.model
    fb = ErrorFeedback(model)                     # kp 1e3, kv 2 sqrt(kp), ki 1
    q = p.state.q.copy()
    q[model.actuated_q] -= 0.01
    v = np.zeros(model.nv)
    v[model.actuated_v] = 0.1
    des = Desired(p.desired.q, np.zeros(model.na), np.full(model.na, 2.0))
    a1 = fb.acceleration(q, v, des, 1e-3)
    assert np.allclose(a1, 2.0 + 1e3 * 0.01 - 2 * 1e3 ** 0.5 * 0.1 + 1 * 0.01 * 1e-3)
    a2 = fb.acceleration(q, v, des, 1e-3)
    assert np.allclose(a2 - a1, 0.01 * 1e-3)      # the integral grows by e dt
    fb.reset()
    assert np.allclose(fb.acceleration(q, v, des, 1e-3), a1)
    fb.reset()                                    # one compiled call: vdot + correction, bit for bit
    other = ErrorFeedback(model)
    assert np.array_equal(fb.acceleration(q, v, des, 1e-3), des.vdot + other.correction(q, v, des.q, des.v, 1e-3))
    with pytest.raises(InvalidInputError):
        ErrorFeedback(model, kp=[1.0, 2.0])


def test_every_id_controller_gets_the_same_feedback():
    """With a joint error, the commanded acceleration (seen in v+) is identical for all."""
    p = standing_problem()
    model = p.model
    q = p.state.q.copy()
    q[model.actuated_q] += 1e-3
    state = RobotState(q, p.state.v)
    expected = p.state.v[model.actuated_v] + 1e-3 * (1e3 * -1e-3 + 1 * -1e-3 * 1e-3)
    for name in ("qp-coulomb", "qp-coulomb-1stage", "lcp-coulomb", "sensed-1"):
        out = controllers.make(name, model).compute(state, p.desired, [])
        assert np.allclose(out.info.v_next[model.actuated_v], expected)


def test_sensed_forces_are_delayed_by_one_or_two_steps():
    p = standing_problem()
    model, contacts = p.model, p.contacts
    w = model.total_mass * 9.81
    f_old = np.tile([w / 4, 0.0, 0.0], (4, 1))
    f_new = np.tile([w / 2, 0.1, -0.1], (4, 1))
    one, two = controllers.make("sensed-1", model), controllers.make("sensed-2", model)
    for ctrl in (one, two):
        ctrl.observe_contact_forces(contacts, f_old)
        ctrl.observe_contact_forces(contacts, f_new)
    assert np.allclose(one.compute(p.state, p.desired, contacts).contact_forces, f_new)
    out = two.compute(p.state, p.desired, contacts)
    assert np.allclose(out.contact_forces, f_old)
    # the torques are inverse dynamics with the sensed generalized force as external force
    jac = contact_jacobians(model, p.state.q, contacts)
    gen = jac.N.T @ f_old[:, 0]
    acc = (out.info.v_next - p.state.v) / 1e-3
    tau_rnea = model.inverse_dynamics(p.state.q, p.state.v, acc) - gen
    assert np.allclose(out.tau, tau_rnea[model.actuated_v], atol=1e-8)
    assert np.abs(tau_rnea[model.unactuated_v]).max() < 1e-8
    two.reset()
    assert two.compute(p.state, p.desired, contacts).info.details["sensed"] == "none yet"
    with pytest.raises(ShapeError):
        one.observe_contact_forces(contacts, np.zeros((3, 3)))


def test_lcp_coulomb_mindiff_picks_a_valid_solution_close_to_the_last():
    p = standing_problem("links", 4, 1.0)
    contacts = p.contacts[:2]                       # two feet: 2^12 index sets
    ctrl = controllers.make("lcp-coulomb", p.model, mindiff=True)
    first = ctrl.compute(p.state, p.desired, contacts)
    second = ctrl.compute(p.state, p.desired, contacts)
    assert first.info.details["solver"] == "mindiff" and first.info.details["solutions"] >= 1
    assert np.allclose(first.tau, second.tau, atol=1e-9)
    lemke = controllers.make("lcp-coulomb", p.model).compute(p.state, p.desired, contacts)
    for out in (first, lemke):                      # both solve the same LCP: same base motion
        assert np.allclose(out.info.v_next, lemke.info.v_next, atol=1e-9)


def test_penetration_recovery_option_pushes_overlap_apart():
    """Default: an overlap is held (N v+ >= 0). With penetration_recovery=1 the controller asks
    for the full separation speed -phi/dt (paper eq. 35 taken literally)."""
    import numpy as np

    from idyn import controllers
    from idyn import robots
    from idyn import Contact, contact_jacobians
    from idyn.state import Desired, RobotState

    quad = robots.quadruped("links")
    model, q = quad.model, quad.q_stand.copy()
    contacts = [Contact(f.link, None, c - [0, 0, f.radius], [0, 0, 1], 1.0, phi=-1e-4)
                for f, c in zip(quad.feet.values(), quad.foot_centres(q))]
    state = RobotState(q, np.zeros(model.nv))
    desired = Desired(q[model.actuated_q], np.zeros(model.na), np.zeros(model.na))
    N = contact_jacobians(model, q, contacts).N
    held = controllers.make("qp-coulomb", model).compute(state, desired, contacts)
    pushed = controllers.make("qp-coulomb", model, penetration_recovery=1.0).compute(state, desired, contacts)
    assert np.all(N @ held.info.v_next >= -1e-9)
    assert np.all(N @ pushed.info.v_next >= 0.1 - 1e-9)          # 1e-4 m / 1e-3 s
    assert pushed.contact_forces[:, 0].sum() > held.contact_forces[:, 0].sum()
