"""lcp-noslip's tangent rows against idyn.sim's ``noslip`` model (issue 8's matched pair).

* Consistent desired motion: the no-slip rows Algorithm 1 drops hold in the controller's
  answer (controllers.lcp_noslip, "Consistent desired motion").
* The state rule: ``lcp-noslip`` with ``release="state"`` and ``noslip`` with ``hold="state"``
  choose the same held contacts, so the simulator given the controller's torques reproduces the
  controller's answer; sliding held contacts are stopped by a passive tangential impulse.

Checked by residuals and by running the simulator's model on the controller's torques.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idyn import controllers
from idyn import robots
from idyn.controllers import Desired, RobotState, lcp_noslip
from idyn.experiments.benchmarks.controllers import foot_contacts, standing_problem
from idyn.experiments.prediction_table import relative_prediction_error
from idyn import Contact, RobotModel, Status, contact_jacobians
from idyn.contact import CONTACT_GAP
from idyn.errors import InvalidInputError
from idyn.sim import Box, Plane, Simulator, World, make
from idyn.sim.contact_models import ContactProblem

DT = 1e-3
LINKS = robots.quadruped("links")
#: the matched options (the gap stabilisation of idyn.sim: experiments.prediction_table)
STATE_RULE = {"release": "state", "consistent_desired": True, "penetration_recovery": 1.0}
MATCHED_STATE = ({"release": "state", "consistent_desired": True}, {"hold": "state"})


def weight(model) -> float:
    return model.total_mass * float(np.linalg.norm(model.gravity))


def _stance(rng, gaps, foot_velocities, noise=0.02):
    """LINKS standing with joint noise, foot ``i`` at ``gaps[i]`` above the plane (its contact
    point and gap moved up) and moving at ``foot_velocities[i]`` (the leg's joint velocities)."""
    model = LINKS.model
    q = LINKS.q_stand.copy()
    q[model.actuated_q] += noise * rng.standard_normal(model.na)
    v = np.zeros(model.nv)
    v[model.actuated_v] = noise * rng.standard_normal(model.na)
    for (leg, iv), centre, fv in zip(LINKS.leg_joints.items(), LINKS.foot_centres(q), foot_velocities):
        J = model.frame_jacobian(q, LINKS.feet[leg].link, point=centre)[:3]
        v[iv] = 0.0
        v[iv] = np.linalg.solve(J[:, iv], fv - J @ v)       # the foot's velocity, base included
    contacts = []
    for c, gap in zip(foot_contacts(LINKS, q, math.inf), gaps):
        contacts.append(Contact(c.body_a, None, c.point - [0.0, 0.0, c.phi - gap], c.normal, math.inf, phi=gap))
    return RobotState(q, v), contacts


def _model_answer(model, state, contacts, tau, model_name="noslip", **options):
    """``(impulses (m, 3), v+)`` of idyn.sim's contact model given the torques ``tau``."""
    jac = contact_jacobians(model, state.q, contacts)
    f = -model.bias_forces(state.q, state.v)
    f[model.actuated_v] += tau
    problem = ContactProblem(model.mass_matrix(state.q), state.v, f, DT, np.vstack((jac.N, jac.S, jac.T)),
                             jac.phi, jac.mu)
    sol = make(model_name, **options).solve(problem)
    assert sol.status == "solved"
    return sol.impulses, problem.velocity(sol.impulses)


# ------------------------------------------------------------------ consistent desired motion
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), splay=st.floats(0.0, 80.0), lifted=st.sampled_from([0.0, 2e-7, 2.2e-5]))
def test_dropped_tangent_rows_hold_in_the_answer(seed, splay, lifted):
    """Four feet down (the last raised by ``lifted``: 0.2 um leaves its rows near-dependent),
    hips driven apart by ``splay`` rad/s^2 and random joint accelerations: Algorithm 1 keeps only
    the independent tangent rows, and the desired motion is moved so that the dropped ones hold
    too.  No held foot slips in the answer, beyond the geometric tolerance of the dependence."""
    rng = np.random.default_rng(seed)
    state, contacts = _stance(rng, [0.0, 0.0, 0.0, lifted], np.zeros((4, 3)))
    model = LINKS.model
    vdot = rng.normal(0.0, 20.0, model.na)
    for leg, iv in LINKS.leg_joints.items():
        vdot[np.searchsorted(model.actuated_v, iv)[0]] += splay if leg[0] == "L" else -splay
    desired = Desired(LINKS.q_stand[model.actuated_q], np.zeros(model.na), vdot)
    ctrl = controllers.make("lcp-noslip", model, feedback=False, consistent_desired=True)
    out = ctrl.compute(state, desired, contacts)
    assert out.info.status is Status.SOLVED and out.info.fallback is None
    if out.info.details.get("consistency_qp") is not None:
        return                                  # the normal rows needed the QP: its own tests
    held = out.info.details["held"]
    jac = contact_jacobians(model, state.q, contacts)
    vn = out.info.v_next
    slip = np.hypot(jac.S @ vn, jac.T @ vn)[held]
    base_speed = np.abs(vn[model.unactuated_v]).max()
    assert slip.max() <= 1e-9 + lcp_noslip.TANGENT_DEPENDENCE_TOL * base_speed, (slip, out.info)
    # the minimal change: eqs. 46-51 hold every row and cannot move the desired motion less
    info = {"status": "numerical_failure"}
    step = ctrl._step(state.q, state.v, vdot, contacts)
    lcp_noslip.min_deviation(step, None, None, None, info, sticking=held)
    assert out.info.details.get("tangent_projection", 0.0) <= info["desired_deviation"] + 1e-6


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 5), d=st.integers(1, 4), dependent=st.booleans())
def test_the_projection_kernel_equals_the_pseudo_inverse(seed, k, d, dependent):
    """The compiled least change of ``qd`` (controllers._noslip_kernel.tangent_consistency)
    against numpy's least squares and pseudo-inverse on random rows; with dependent rows of ``B``
    (a dropped row repeated) it declines, ``B`` still formed, and
    :func:`lcp_noslip.consistent_desired` takes its pseudo-inverse."""
    from idyn.controllers import _noslip_kernel as kernel
    rng = np.random.default_rng(seed)
    nu, na, n = 6, 12, k + d + 1
    white, rows = rng.standard_normal((nu, n)), rng.standard_normal((n, nu + na))
    if dependent and d > 1:
        white[:, k + 1], rows[k + 1] = white[:, k], rows[k]
    kept, dropped, a = np.arange(k), np.arange(k, k + d), np.arange(nu, nu + na)
    U = np.linalg.cholesky(white[:, kept].T @ white[:, kept]).T if k else np.zeros((0, 0))
    qd, delta, B_out = rng.standard_normal(na), np.empty(na), np.empty((d, na))
    C = np.linalg.lstsq(white[:, kept], white[:, dropped], rcond=None)[0]
    B = rows[np.ix_(dropped, a)] - C.T @ rows[np.ix_(kept, a)]
    expected = -np.linalg.pinv(B) @ B @ qd
    solved = kernel.tangent_consistency(U, white, rows, kept, dropped, a, qd, B_out, delta)
    np.testing.assert_allclose(B_out, B, atol=1e-9 * (1 + np.abs(B).max()))
    if solved:
        np.testing.assert_allclose(delta, expected, atol=1e-9 * (1 + np.abs(qd).max()))
        np.testing.assert_allclose(B @ (qd + delta), 0.0, atol=1e-9 * np.abs(B).max() * np.abs(qd).max())
    else:
        assert dependent and d > 1


def test_without_the_projection_the_dropped_rows_slip():
    """The literal Algorithm 1 (``consistent_desired=False``) on the splaying stance with every
    foot held (the state rule): the rows it drops are not implied by the kept ones, and the
    predicted feet slide."""
    state, contacts = _stance(np.random.default_rng(1), np.zeros(4), np.zeros((4, 3)), noise=0.0)
    model = LINKS.model
    vdot = np.zeros(model.na)
    for leg, iv in LINKS.leg_joints.items():
        vdot[np.searchsorted(model.actuated_v, iv)[0]] = 50.0 if leg[0] == "L" else -50.0
    desired = Desired(LINKS.q_stand[model.actuated_q], np.zeros(model.na), vdot)
    jac = contact_jacobians(model, state.q, contacts)
    slips = {}
    for projected in (True, False):
        out = controllers.make("lcp-noslip", model, feedback=False,
                               **{**STATE_RULE, "consistent_desired": projected}).compute(state, desired, contacts)
        assert out.info.details["held"].all() and out.info.details["kept_tangent_rows"] == (1, 2)
        slips[projected] = np.abs(np.concatenate((jac.S, jac.T)) @ out.info.v_next).max()
    assert slips[True] < 1e-9 and slips[False] > 1e-3, slips


def test_fingers_closing_on_a_rigid_box_are_stopped_by_the_projection():
    """The grasp of test_controllers_noslip's consistency-QP test (fingers closing on a rigid box
    from both sides, which no impulse allows): by default the tangent rows Algorithm 1 drops stop
    the closing (the whole desired increment, |vdot| dt) and the LCP answers, consistent and
    bounded, without the QP of eqs. 46-51: the no-slip LCP's residuals (the touching fingertips,
    unloaded and not separating, keep their rows: friction without normal force, the no-slip
    grasp of paper Sec. 8.4.1)."""
    from test_controllers_noslip import _grasp
    man, mb, q, contacts = _grasp(0.0)
    vdot = np.zeros(mb.na)
    vdot[7:] = 50.0
    state = RobotState(q, np.zeros(mb.nv))
    out = controllers.make("lcp-noslip", mb).compute(state, Desired(man.q0, np.zeros(mb.na), vdot), contacts)
    assert out.info.status is Status.SOLVED and "consistency_qp" not in out.info.details
    assert out.info.details["tangent_projection"] == pytest.approx(np.linalg.norm(vdot) * DT, rel=1e-6)
    f, vn = out.contact_forces, out.info.v_next
    assert np.abs(f).max() < man.box_mass * float(np.linalg.norm(mb.gravity))
    jac = contact_jacobians(mb, q, contacts)
    w = jac.N @ vn + jac.phi / DT
    assert f[:, 0].min() >= 0.0 and w.min() >= -1e-9 and np.abs(f[:, 0] * DT * w).max() < 1e-12
    assert np.abs(np.concatenate((jac.S, jac.T)) @ vn).max() < 1e-9
    gen = -mb.bias_forces(q, state.v)
    gen[mb.actuated_v] += out.tau
    residual = mb.mass_matrix(q) @ (vn - state.v) - np.vstack((jac.N, jac.S, jac.T)).T @ (f.T.ravel() * DT) - DT * gen
    assert np.abs(residual).max() < 1e-9
    np.testing.assert_allclose(vn[mb.actuated_v], 0.0, atol=1e-12)      # the fingers do not close


# ------------------------------------------------------------------ the state rule
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       gaps=st.lists(st.sampled_from([-3e-7, 0.0, 4e-7, 3e-6, 4e-5]), min_size=4, max_size=4),
       sliding=st.lists(st.floats(0.0, 0.3), min_size=4, max_size=4),
       lifting=st.lists(st.sampled_from([0.0, 0.002, 0.05]), min_size=4, max_size=4))
def test_the_simulator_given_the_torques_reproduces_the_state_rule_answer(seed, gaps, sliding, lifting):
    """Feet touching, overlapping, arriving or open, some sliding (up to 0.3 m/s, beyond
    ``slide_speed``: stopped by the passive impulse), some lifting: idyn.sim's ``noslip`` model
    with ``hold="state"``, given lcp-noslip's torques (``release="state"``), finds the
    controller's contact forces and end velocity."""
    rng = np.random.default_rng(seed)
    heading = rng.uniform(0.0, 2 * np.pi, 4)
    fv = np.column_stack((np.multiply(sliding, np.cos(heading)), np.multiply(sliding, np.sin(heading)), lifting))
    state, contacts = _stance(rng, gaps, fv)
    model = LINKS.model
    desired = Desired(LINKS.q_stand[model.actuated_q], np.zeros(model.na), rng.normal(0.0, 20.0, model.na))
    out = controllers.make("lcp-noslip", model, **STATE_RULE).compute(state, desired, contacts)
    assert out.info.status is Status.SOLVED and out.info.fallback is None
    assert out.info.details.get("consistency_qp") is None
    impulses, v_plus = _model_answer(model, state, contacts, out.tau, hold="state")
    # the held contacts are those touching and not moving apart at the start of the step
    jac = contact_jacobians(model, state.q, contacts)
    held = np.maximum(jac.phi, jac.phi + DT * (jac.N @ state.v)) <= CONTACT_GAP
    np.testing.assert_array_equal(out.info.details["held"], held)
    assert np.abs(np.concatenate((jac.S[held], jac.T[held])) @ v_plus).max(initial=0.0) < 1e-12
    # the controller's held feet hold up to the dependence tolerance of Algorithm 1 (feet at
    # slightly different heights); the simulator removes that slip with the light legs' joints
    slip = np.abs(np.concatenate((jac.S[held], jac.T[held])) @ out.info.v_next).max(initial=0.0)
    speed = max(np.abs(state.v).max(), np.abs(out.info.v_next).max())
    assert slip <= lcp_noslip.TANGENT_DEPENDENCE_TOL * speed + 1e-12
    np.testing.assert_allclose(out.contact_forces[:, 0], impulses[:, 0] / DT, atol=1e-6 * weight(model))
    np.testing.assert_allclose(out.info.v_next, v_plus, atol=1e-12 + 100 * slip)
    assert np.all(np.abs(out.contact_forces[~held, 1:]) < 1e-9 * weight(model))   # the others: frictionless


def test_a_sliding_stance_foot_is_stopped_passively():
    """A touching stance foot sliding at 0.3 m/s under the state rule: the impulse that stops it
    acts with the actuators passive (reported as contact force, against the slide), so the
    torques stay those of a stance; holding it with the joint velocities prescribed
    (``slide_speed=inf``) asks the actuators for the stop."""
    state, contacts = _stance(np.random.default_rng(2), np.zeros(4), [[0.3, 0.0, 0.0]] + [[0.0] * 3] * 3,
                              noise=0.0)
    model = LINKS.model
    desired = Desired(LINKS.q_stand[model.actuated_q], state.v[model.actuated_v], np.zeros(model.na))
    out = controllers.make("lcp-noslip", model, feedback=False, **STATE_RULE).compute(state, desired, contacts)
    actuated = controllers.make("lcp-noslip", model, feedback=False, slide_speed=np.inf, **STATE_RULE).compute(
        state, desired, contacts)
    assert out.info.details["slide_stopped"] == 1 and "slide_stopped" not in actuated.info.details
    assert out.contact_forces[0, 1] < -0.05 * weight(model) / DT * 1e-3      # against the +x slide
    assert np.abs(out.tau).max() < 0.2 * np.abs(actuated.tau).max()
    jac = contact_jacobians(model, state.q, contacts)
    for o in (out, actuated):   # both end with every foot held
        assert np.abs(np.concatenate((jac.S, jac.T)) @ o.info.v_next).max() < 1e-9


def test_bad_release_and_hold_rules_raise():
    with pytest.raises(InvalidInputError):
        controllers.make("lcp-noslip", LINKS.model, release="sometimes")
    with pytest.raises(InvalidInputError):
        make("noslip", hold="sometimes")


# ------------------------------------------------------------------ the model's state rule
HALF = np.array([0.1, 0.08, 0.05])


def _box(v0, lift=0.0, hold="state"):
    """A free box on a plane, ``lift`` above it, with velocity ``v0``."""
    model = RobotModel(pin.Model()).append_free_body("box", 1.0, np.diag([0.003, 0.004, 0.005]))
    sim = Simulator(model, World(model, [Box("box", HALF)], [Plane.inclined(0.0, 1.0)]), "noslip", DT, hold=hold)
    q = model.neutral()
    q[2] = HALF[2] + lift
    sim.reset(q, np.asarray(v0, dtype=float))
    return sim


@pytest.mark.parametrize("hold", ["force", "state"])
def test_a_resting_box_stays_and_a_sliding_one_is_stopped(hold):
    rest = _box(np.zeros(6), hold=hold)
    for _ in range(200):
        rest.step(np.zeros(0))
    assert np.abs(rest.v).max() < 1e-12 and rest.last.normal_total == pytest.approx(9.81, rel=1e-9)
    slide = _box([0.3, -0.1, 0.0, 0.0, 0.0, 0.5], hold=hold)
    centre = slide.q[:3].copy()                                # the box starts unrotated
    last = slide.step(np.zeros(0))
    # the loaded corners stick (the box pitches over them): no tangential velocity at the end
    loaded = [c for c, f in zip(last.contacts, last.forces) if f[0] > 0]
    assert len(loaded) >= 2
    for c in loaded:
        np.testing.assert_allclose((slide.v[:3] + np.cross(slide.v[3:], c.point - centre))[:2], 0.0, atol=1e-9)


def test_the_state_rule_gives_no_friction_to_open_and_lifting_contacts():
    """Contacts 40 um above the plane, or touching and moving apart at 2 mm/s (beyond
    CONTACT_GAP / dt) at the start of the step, keep no no-slip rows: the box's horizontal
    velocity and spin are those of free flight, although gravity closes the lifting contacts
    again within the step (normal impulse, no friction); the force rule holds those, loaded."""
    def horizontal(sim):
        R = pin.Quaternion(sim.q[3:7]).toRotationMatrix()
        return np.append((R @ sim.v[:3])[:2], sim.v[5])

    for lift, vz, loaded in ((4e-5, 0.0, False), (0.0, 2e-3, True)):
        v0 = [0.3, -0.1, vz, 0.0, 0.0, 0.5]
        free = _box(v0, 1.0)
        free.step(np.zeros(0))
        sim = _box(v0, lift)
        last = sim.step(np.zeros(0))
        assert len(last.contacts) == 4 and (last.normal_total > 0) == loaded
        assert np.abs(last.forces[:, 1:]).max() == 0.0
        np.testing.assert_allclose(horizontal(sim), horizontal(free), atol=1e-6)
        if loaded:
            held = _box(v0, lift, "force")
            held.step(np.zeros(0))
            assert np.abs(horizontal(held) - horizontal(free)).max() > 0.01


# ------------------------------------------------------------------ closed loop
def test_matched_trot_predicts_the_model_to_round_off():
    """0.3 s of the trot on idyn.sim's ``noslip`` model (start, lift-off, touchdowns), both
    sides on the state rule, balance term off (torque the prediction does not see)."""
    row = relative_prediction_error("lcp-noslip", "noslip", math.inf, 0.3, balance=False,
                                    controller_options=MATCHED_STATE[0], model_options=MATCHED_STATE[1])
    assert row["error"] is None and not row["fell"] and row["steps"] > 150, row
    assert row["max_rel_pct"] < 1e-4, row


@pytest.mark.slow
def test_matched_trot_predicts_the_model_for_30_s():
    row = relative_prediction_error("lcp-noslip", "noslip", math.inf, 30.0, balance=False,
                                    controller_options=MATCHED_STATE[0], model_options=MATCHED_STATE[1])
    print(row)
    assert not row["fell"] and row["mean_rel_pct"] < 1e-4, row
