"""Regression tests of ``lcp-noslip`` (ID_LCP,inf) found in closed loop (PyBullet and idyn.sim trots).

Each test builds the situation that broke the controller from a standing LINKS and checks the
physics, not the numbers of one implementation.
"""
from __future__ import annotations

import numpy as np
import pytest

from idyn import controllers
from idyn import robots
from idyn.controllers import ControlInfo, ControlOutput, Desired, RobotState, lcp_noslip
from idyn.controllers.warm_start import contact_keys
from idyn.experiments.benchmarks.controllers import foot_contacts, standing_problem
from idyn import Contact, Status, contact_jacobians
from test_controllers import grasp_contacts, step_residual


def weight(model) -> float:
    return model.total_mass * float(np.linalg.norm(model.gravity))


def _foot_jacobian(robot, model, q, leg):
    """``(iv, J)``: the velocity indices of ``leg``'s joints and its foot centre's Jacobian in them."""
    iv = robot.leg_joints[leg]
    centre = robot.foot_centres(q)[list(robot.leg_joints).index(leg)]
    return iv, model.frame_jacobian(q, robot.feet[leg].link, point=centre)[:3, iv]


def _first_foot_moving(p, foot_velocity):
    """The standing problem's velocity with the first leg's foot moving at ``foot_velocity``."""
    v = p.state.v.copy()
    iv, Jf = _foot_jacobian(p.robot, p.model, p.state.q, next(iter(p.robot.leg_joints)))
    v[iv] = np.linalg.solve(Jf, foot_velocity)
    return v


def test_warm_start_survives_a_changing_contact_set():
    """The active set of a 4-contact step must not be replayed as indices into a 2-contact list
    (it raised ShapeError inside Algorithm 2 on every step after a foot lifted)."""
    p = standing_problem("links", 4, 1.0)
    ctrl = controllers.make("lcp-noslip", p.model)
    ctrl.compute(p.state, p.desired, p.contacts)
    for contacts in (p.contacts[1:3], p.contacts[3:], p.contacts):
        out = ctrl.compute(p.state, p.desired, contacts)
        assert out.info.status is Status.SOLVED and out.info.fallback is None, out.info.error


def test_touchdown_a_few_micrometres_above_the_plane_needs_no_huge_impulses():
    """Three feet down, the third 22 um above the plane (idyn.sim trot, step 66): its tangent
    rows are independent of the others only through that height, and keeping them made
    G A^-1 G^T nearly singular (1e8 N s tangential impulses, then divergence)."""
    p = standing_problem("links", 4, np.inf)
    model, robot = p.model, p.robot
    rng = np.random.default_rng(4)
    v = p.state.v.copy()
    v[model.actuated_v] = rng.normal(0, 0.05, model.na)       # slightly inconsistent stance
    contacts = foot_contacts(robot, p.state.q, np.inf)[:3]
    last = contacts[2]
    contacts[2] = Contact(last.body_a, None, last.point + [0, 0, 2.2e-5], (0, 0, 1), np.inf, phi=2.2e-5)
    state = RobotState(p.state.q, v)
    out = controllers.make("lcp-noslip", model).compute(state, p.desired, contacts)
    assert out.info.status is Status.SOLVED and out.info.details.get("consistency_qp") is None
    assert np.abs(out.contact_forces).max() < 10 * weight(model)
    assert np.abs(out.tau).max() < 20.0


def test_a_receding_contact_carries_no_tangential_force():
    """A stance foot the simulator already lifts and slides (PyBullet trot, step 25): with
    f_N = 0 and N v+ > 0 it cannot transmit friction (|f_t| <= mu f_N for every finite mu);
    the literal eqs. 40-41 put 1 kN of tangential force on it and the loop diverged."""
    p = standing_problem("links", 4, np.inf)
    model = p.model
    q, v = p.state.q, _first_foot_moving(p, [0.3, 0.0, 0.2])   # foot sliding 0.3 m/s, lifting
    state = RobotState(q, v)
    desired = Desired(p.desired.q, v[model.actuated_v], np.zeros(model.na))  # keep moving
    ctrl = controllers.make("lcp-noslip", model, feedback=False)
    out = ctrl.compute(state, desired, p.contacts)
    assert out.info.status is Status.SOLVED and out.info.details["slip_released"] >= 1
    f, vn = out.contact_forces, out.info.v_next
    jac = contact_jacobians(model, q, p.contacts)
    receding = (f[:, 0] == 0.0) & (jac.N @ vn > 1e-6)
    assert receding[0]                                           # the lifted foot leaves
    assert np.all(f[receding, 1:] == 0.0)                        # ... and transmits nothing
    loaded = f[:, 0] > 0.0
    assert loaded.sum() >= 2 and abs(f[:, 0].sum() - weight(model)) < 0.1 * weight(model)
    assert np.abs(jac.S[loaded] @ vn).max() < 1e-9 and np.abs(jac.T[loaded] @ vn).max() < 1e-9


def _diagonal_pair_pushing_forward():
    """LF and RH on the ground, their legs accelerating the base forward at 1 m/s^2 with the
    feet at rest (a trot's stance phase, consistent with no slip)."""
    p = standing_problem("links", 4, np.inf)
    model, robot = p.model, p.robot
    contacts = [c for c in p.contacts if c.body_a.startswith(("LF", "RH"))]
    jac = contact_jacobians(model, p.state.q, contacts)
    u, a_base = np.asarray(model.unactuated_v), np.array([1.0, 0, 0, 0, 0, 0])
    vdot = np.zeros(model.na)
    for i, c in enumerate(contacts):
        iv = next(robot.leg_joints[leg] for leg in robot.leg_joints if c.body_a.startswith(leg))
        rows = np.vstack((jac.N[i], jac.S[i], jac.T[i]))
        a_leg = np.linalg.solve(rows[:, iv], -rows[:, u] @ a_base)
        vdot[[list(model.actuated_v).index(j) for j in iv]] = a_leg
    return p, contacts, Desired(p.desired.q, p.desired.v, vdot)


def test_qp_noslip_holds_the_feet_where_removing_the_cone_lets_them_slide():
    """ID_QP,inf is Sec. 6's impact model with the no-slip equalities (eqs. 40-41): with two
    feet down every tangent row is independent, so both feet must be at rest at the end of the
    step (three rows are kept, the fourth is implied by this consistent motion).  Sec. 6 with
    mu = inf but without those rows and with eqs. 95-98's literal kinetic-energy objective
    minimises the robot's energy by letting the feet slide under a base that does not follow;
    the default contact-work objective holds them as the equalities do."""
    p, contacts, desired = _diagonal_pair_pushing_forward()
    jac = contact_jacobians(p.model, p.state.q, contacts)
    out = controllers.make("qp-noslip", p.model, feedback=False).compute(p.state, desired, contacts)
    assert out.info.status is Status.SOLVED and sum(out.info.details["kept_tangent_rows"]) == 3
    vn = out.info.v_next
    assert np.abs(jac.S @ vn).max() < 1e-9 and np.abs(jac.T @ vn).max() < 1e-9
    literal = controllers.make("qp-coulomb", p.model, feedback=False, objective="kinetic-energy")
    vf = literal.compute(p.state, desired, contacts).info.v_next
    # the commanded base speed change is 1 m/s^2 * 1 ms: the feet slide by most of it
    assert max(np.abs(jac.S @ vf).max(), np.abs(jac.T @ vf).max()) > 0.5e-3
    work = controllers.make("qp-coulomb", p.model, feedback=False).compute(p.state, desired, contacts)
    vw = work.info.v_next
    assert max(np.abs(jac.S @ vw).max(), np.abs(jac.T @ vw).max()) < 1e-9


def test_no_slip_rows_are_chosen_well_conditioned():
    """Two feet at nearly the same lateral position (PyBullet trot, RF and RH 3.4 mm apart in y):
    Algorithm 1 in the order S_1, T_1, S_2 kept the second foot's S row, which constrains yaw
    only through the 3.4 mm lever, and the step took 5.9e5 N of opposing tangential force.  In
    pivoted order the kept rows span the same space with bounded forces."""
    p = standing_problem("links", 4, np.inf)
    model, robot = p.model, p.robot
    right = [c for c in foot_contacts(robot, p.state.q, np.inf) if c.body_a.startswith(("RF", "RH"))]
    rf, rh = right
    rh = Contact(rh.body_a, None, rh.point + [0.0, rf.point[1] - rh.point[1] - 3.4e-3, 0.0],
                 (0, 0, 1), np.inf, phi=0.0)
    vdot = np.random.default_rng(5).normal(0, 20.0, model.na)
    out = controllers.make("lcp-noslip", model).compute(p.state, Desired(p.desired.q, p.desired.v, vdot),
                                                          [rf, rh])
    assert out.info.status is Status.SOLVED
    assert np.abs(out.contact_forces[:, 1:]).max() < 10 * weight(model)


def test_touchdown_impact_is_not_fought_by_the_actuators():
    """A swing foot landing at 0.3 m/s while the others stand (PyBullet trot, t = 0.068 s): with
    the joint velocities prescribed through the impact (eq. 38) the rigid model asks the
    actuators for the impulse that stops the foot (3.8e3 N m in closed loop).  With the passive
    touchdown impact of controllers.impact the torques stay those of the stance, and the
    impulse still appears in the predicted contact forces: it stops the landing foot, which ends
    the impact touching, not launched (normal complementarity: a foot that separates, at most
    a stance foot rocked up by 0.8 mm/s here, takes no impulse).
    (lcp-coulomb is left out: with mu = inf simulated as 100 its tangential forces between
    stance feet are indeterminate up to 100 f_N, and Lemke returns such internal forces,
    hundreds of N m, with or without impact.)"""
    p = standing_problem("links", 4, np.inf)
    model = p.model
    q, v = p.state.q, _first_foot_moving(p, [0.0, 0.0, -0.3])  # landing at 0.3 m/s
    state = RobotState(q, v)
    desired = Desired(p.desired.q, np.zeros(model.na), np.zeros(model.na))
    jac = contact_jacobians(model, q, p.contacts)
    J, M = jac.stacked(), model.mass_matrix(q)
    for name in ("lcp-noslip", "qp-noslip", "qp-coulomb"):
        rigid = controllers.make(name, model, feedback=False, impact=False).compute(state, desired, p.contacts)
        ctrl = controllers.make(name, model, feedback=False)
        out = ctrl.compute(state, desired, p.contacts)
        assert out.info.impact_forces is not None and rigid.info.impact_forces is None
        assert ctrl.dynamics.last_impact_status == "solved"
        assert np.abs(out.tau).max() < 0.2 * np.abs(rigid.tau).max(), name
        impulses = out.info.impact_forces * 1e-3
        assert impulses[0, 0] > 0.0
        v_after = v + np.linalg.solve(M, J.T @ impulses.T.ravel())
        w_n = jac.N @ v_after                          # gaps are zero: the post-impact normal speeds
        assert abs(w_n[0]) < 1e-9 and w_n.min() > -1e-9, (name, w_n)        # stopped, not launched
        assert np.abs(impulses[:, 0] * w_n).max() < 1e-12, (name, impulses, w_n)  # only touching feet loaded
        assert np.all(np.isfinite(out.contact_forces))


def _press_foot(robot, model, q, leg, down):
    """Desired actuated accelerations moving ``leg``'s foot vertically at ``down`` m/s^2 (the
    other joints held)."""
    iv, Jf = _foot_jacobian(robot, model, q, leg)
    vdot = np.zeros(model.na)
    vdot[[list(model.actuated_v).index(j) for j in iv]] = np.linalg.solve(Jf, [0.0, 0.0, -down])
    return vdot


def test_an_approaching_contact_whose_gap_stays_open_carries_no_friction():
    """A swing foot 1 mm above the ground descending at 0.1 m/s (the simulator's contact set
    includes it): at the end of the step it is still 0.9 mm up, so with f_N = 0 it cannot
    transmit friction.  The former release test (``N v+ > 0``) kept its no-slip rows, and
    tangential impulses through the gap held the foot's sideways motion (idyn.sim trot: the
    matched prediction error of 2.7 % and the fall at 0.23 s)."""
    p = standing_problem("links", 4, np.inf)
    model = p.model
    q, v = p.state.q, _first_foot_moving(p, [0.3, 0.0, -0.1])  # swinging forward, descending
    contacts = list(p.contacts)
    c = contacts[0]
    contacts[0] = Contact(c.body_a, None, c.point, c.normal, np.inf, phi=1e-3)
    desired = Desired(p.desired.q, v[model.actuated_v], np.zeros(model.na))  # keep swinging
    out = controllers.make("lcp-noslip", model, feedback=False).compute(RobotState(q, v), desired, contacts)
    assert out.info.status is Status.SOLVED and out.info.details["slip_released"] >= 1
    jac = contact_jacobians(model, q, contacts)
    gap_after = jac.phi + 1e-3 * (jac.N @ out.info.v_next)
    assert gap_after[0] > 5e-4 and np.all(out.contact_forces[0] == 0.0)
    assert abs(out.contact_forces[1:, 0].sum() - weight(model)) < 0.1 * weight(model)


def _grasp(gap):
    """The manipulator's reference grasp with the fingertip-box gaps set to ``gap`` (m)."""
    man = robots.manipulator()
    mb = man.model_with_box
    q = man.combined_q(man.q0)
    contacts = [Contact(c.body_a, c.body_b, c.point, c.normal, c.mu, phi=gap) for c in grasp_contacts(man, q, 100.0)]
    return man, mb, q, contacts


def test_fingertips_touching_hold_the_box_and_open_fingers_let_it_fall():
    """Paper Sec. 8.4.1, no-slip grasp.  Fingertips a fraction of a micrometre from the box
    (contact detection's resolution, ``contact_gap`` = 1 um) are touching: their no-slip rows
    hold the box at rest.  Fingers 50 um away, held still, touch nothing at the end of the
    step: no force, and the box falls at g (a simulator does the same, whatever mu is)."""
    for gap, held in ((3.4e-7, True), (5e-5, False)):
        man, mb, q, contacts = _grasp(gap)
        hold = Desired(man.q0, np.zeros(mb.na), np.zeros(mb.na))
        out = controllers.make("lcp-noslip", mb).compute(RobotState(q, np.zeros(mb.nv)), hold, contacts)
        assert out.info.status is Status.SOLVED
        box_v = out.info.v_next[mb.unactuated_v][:3]
        g_dt = float(np.linalg.norm(mb.gravity)) * 1e-3
        if held:
            assert np.abs(box_v).max() < 1e-6 and out.info.details["slip_released"] == 0
        else:
            assert np.all(out.contact_forces == 0.0) and np.linalg.norm(box_v) == pytest.approx(g_dt, rel=1e-6)


def test_algorithm_2_failing_on_a_dependent_contact_falls_back_to_lemke():
    """Four feet on a plane with three tangent rows kept leave the base three motions (height,
    roll, pitch), so the four normals are dependent.  Warm-started with three feet active and
    a desired motion that presses the fourth down, Algorithm 2 must exchange feet; it skips the
    dependent index instead (right only when its ``w`` is then zero, Appendix F) and fails.
    Lemke's method solves the same LCP: the answer is the cold-started one, complementary."""
    p = standing_problem("links", 4, np.inf)
    model, robot = p.model, p.robot
    keys = contact_keys(p.contacts)
    desired = Desired(p.desired.q, p.desired.v, _press_foot(robot, model, p.state.q, "RF", 5.0))
    cold = controllers.make("lcp-noslip", model, feedback=False).compute(p.state, desired, p.contacts)
    ctrl = controllers.make("lcp-noslip", model, feedback=False)
    ctrl._active.store(keys, np.array([0, 2, 3]))              # LF, LH, RH active last step
    out = ctrl.compute(p.state, desired, p.contacts)
    assert out.info.details["lcp_fallback"] == "lemke" and out.info.status is Status.SOLVED
    assert "consistency_qp" not in out.info.details
    np.testing.assert_allclose(out.contact_forces, cold.contact_forces, atol=1e-6 * weight(model))
    jac = contact_jacobians(model, p.state.q, p.contacts)
    w = jac.N @ out.info.v_next + jac.phi / 1e-3
    assert w.min() > -1e-9 and np.abs(out.contact_forces[:, 0] * w).max() < 1e-9


def _check_consistent(model, state, contacts, out, sticking, dt=1e-3, tol=1e-7):
    """The residuals of eqs. 46-51's answer: z_N >= 0, N v+ >= -phi/dt, no slip at the sticking
    contacts, |f_t| <= CONSISTENCY_FRICTION f_N there, and the dynamics of eq. 37."""
    jac = contact_jacobians(model, state.q, contacts)
    f, vn = out.contact_forces, out.info.v_next
    assert f[:, 0].min() >= 0.0
    assert (jac.N @ vn + jac.phi / dt).min() >= -tol
    assert np.abs(jac.S[sticking] @ vn).max() <= tol and np.abs(jac.T[sticking] @ vn).max() <= tol
    assert np.all(np.abs(f[:, 1:]) <= lcp_noslip.CONSISTENCY_FRICTION * f[:, :1] + 1e-9)
    M = model.mass_matrix(state.q)
    residual = step_residual(model, state, contacts, out, dt)   # eq. 37
    assert np.abs(residual).max() < 1e-9 * (1.0 + np.abs(M @ vn).max())


def test_consistency_qp_after_a_numerical_failure_is_bounded_and_consistent():
    """Fingers closing on a rigid box from opposite sides: no impulse lets both close, the LCP
    of eq. 45 has no solution (Algorithm 2 and Lemke fail), and the minimal-deviation QP of
    eqs. 46-51 answers: the finger closing slows to what the box allows, with bounded forces
    that satisfy every constraint.  (The paper's path, ``consistent_desired=False``: by default
    the tangent rows Algorithm 1 drops already stop the closing fingers and the LCP is solved.)"""
    man, mb, q, contacts = _grasp(0.0)
    vdot = np.zeros(mb.na)
    vdot[7:] = 50.0                                  # every finger joint closes at 50 rad/s^2
    out = controllers.make("lcp-noslip", mb, consistent_desired=False).compute(
        RobotState(q, np.zeros(mb.nv)), Desired(man.q0, np.zeros(mb.na), vdot), contacts)
    assert out.info.status is Status.NUMERICAL_FAILURE and out.info.details["consistency_qp"] == "solved"
    assert 0.0 < out.info.details["desired_deviation"] <= (1 + 1e-6) * np.linalg.norm(vdot) * 1e-3
    box_weight = man.box_mass * float(np.linalg.norm(mb.gravity))
    assert np.abs(out.contact_forces).max() < 10 * box_weight
    _check_consistent(mb, RobotState(q, np.zeros(mb.nv)), contacts, out, np.arange(len(contacts)))


def test_consistency_qp_keeps_impulses_physical_on_near_dependent_rows():
    """Eqs. 46-51 hold *every* tangent row, including those Algorithm 1 drops as near-dependent
    (a foot 22 um above the plane).  With the former 1e-8 ridge on |z|^2 the QP met slightly
    inconsistent desired motion by 1e6 N of opposing impulses (after an Algorithm 2 failure in
    the idyn.sim trot: 1.8e5 N); weighting the impulses by their kinetic energy keeps them at
    the size of the robot's weight."""
    p = standing_problem("links", 4, np.inf)
    model, robot = p.model, p.robot
    v = p.state.v.copy()
    v[model.actuated_v] = np.random.default_rng(4).normal(0, 0.05, model.na)
    contacts = foot_contacts(robot, p.state.q, np.inf)[:3]
    last = contacts[2]
    contacts[2] = Contact(last.body_a, None, last.point + [0, 0, 2.2e-5], (0, 0, 1), np.inf, phi=2.2e-5)
    state = RobotState(p.state.q, v)
    ctrl = controllers.make("lcp-noslip", model)
    step = ctrl._step(state.q, state.v, np.zeros(model.na), contacts)
    info = {"status": "numerical_failure"}
    z, tau, v_next = lcp_noslip.min_deviation(step, None, None, None, info)
    assert info["consistency_qp"] == "solved"
    f = step.forces_from_impulses(z)
    assert np.abs(f).max() < 3 * weight(model) and np.abs(tau).max() < 20.0
    _check_consistent(model, state, contacts, ControlOutput(tau, f, ControlInfo("lcp-noslip", Status.NUMERICAL_FAILURE, v_next=v_next)), np.arange(3))


def _sliding_touchdown():
    """``(model, state, desired, contacts)``: LINKS standing, its first foot 20 um above
    the ground sliding at 0.65 m/s, the desired motion keeping the leg's swing and pressing the
    foot down (the PyBullet trot at t = 9.649 s)."""
    p = standing_problem("links", 4, np.inf)
    model = p.model
    q, v = p.state.q, _first_foot_moving(p, [0.65, 0.0, -0.003])
    contacts = list(p.contacts)
    c = contacts[0]
    contacts[0] = Contact(c.body_a, None, c.point, c.normal, np.inf, phi=2e-5)
    leg = next(iter(p.robot.leg_joints))                # the leg keeps its swing and lowers the foot
    desired = Desired(p.desired.q, v[model.actuated_v], _press_foot(p.robot, model, q, leg, 50.0))
    return model, RobotState(q, v), desired, contacts


def test_a_foot_arriving_sliding_is_not_stopped_by_the_actuators():
    """A planned stance foot 20 um above the ground, sliding at 0.65 m/s, that the desired motion
    brings down and holds (PyBullet trot, t = 9.649 s): its no-slip rows stop the slide within one
    step, and with the joint velocities prescribed the actuators deliver that tangential impulse
    (471 N, 58 N m; the knee then spun at 92 rad/s and LINKS fell).  Stopping it is the world's
    plastic tangential impact; the controller models the contact without friction for the step
    (``slide_speed``) and the torques stay those of the stance."""
    model, state, desired, contacts = _sliding_touchdown()
    held = controllers.make("lcp-noslip", model, feedback=False, slide_speed=np.inf).compute(state, desired, contacts)
    out = controllers.make("lcp-noslip", model, feedback=False).compute(state, desired, contacts)
    assert out.info.status is Status.SOLVED and out.info.details["slip_released"] >= 1
    assert np.all(out.contact_forces[0, 1:] == 0.0)
    assert np.abs(held.contact_forces[0, 1:]).max() > 5 * weight(model)      # the impulse of the stop
    assert np.abs(out.tau).max() < 0.2 * np.abs(held.tau).max()
    assert out.contact_forces[0, 0] > 0.0                                      # it lands, frictionless


def test_release_update_kernel_equals_the_release_rule_in_numpy():
    """The compiled pass of the release rule gives the boolean arrays of its numpy statement
    (f_N <= 0, gaps opening or wider than contact_gap, loaded contacts sticking again), NaN
    speeds and zero impulses included."""
    from idyn.controllers._noslip_kernel import release_update

    rng = np.random.default_rng(5)
    for m in range(1, 9):
        for _ in range(50):
            z = rng.choice([-1.0, 0.0, 1.0], size=3 * m) * rng.random(3 * m)
            w, gap_speed = rng.standard_normal(m), rng.standard_normal(m) * 0.1
            w[rng.random(m) < 0.1] = np.nan
            sliding, released = rng.random(m) < 0.2, rng.random(m) < 0.5
            opening, tol = 0.05, 1e-6
            unloaded = z[:m] <= 0.0
            expected_open = unloaded & ((w > opening) | (w - gap_speed > tol))
            expected = sliding | (released & unloaded) | expected_open
            update, unloaded_open = np.empty(m, dtype=bool), np.empty(m, dtype=bool)
            changed = release_update(z, w, gap_speed, opening, tol, sliding, released, update, unloaded_open)
            np.testing.assert_array_equal(unloaded_open, expected_open)
            np.testing.assert_array_equal(update, expected)
            assert changed == bool(np.any(expected != released))


@pytest.mark.parametrize("n_contacts", [4, 8])
def test_kept_tangent_rows_are_independent_and_span_the_offered_ones(n_contacts):
    """Algorithm 1 as lcp-noslip calls it (Appendix E's premise), checked by numpy's SVD and least
    squares in the ``A^-1`` metric (the whitened columns): the kept rows are independent (each at
    least ``tol`` of its norm from the span of the others) and every offered row left out lies
    within ``tol`` of their span; ``S`` rows first, on a quadruped's stances (perturbed joints,
    duplicated contacts, every subset of feet offered, near-dependent and dependent rows)."""
    rng = np.random.default_rng(n_contacts)
    for trial in range(4):
        p = standing_problem("links", n_contacts, np.inf, rng=rng, noise=0.05 * trial)
        ctrl = controllers.make("lcp-noslip", p.model)
        step = ctrl._step(p.state.q, p.state.v, np.zeros(p.model.na), p.contacts)
        m, white = step.m, step.white
        for tol in (lcp_noslip.TANGENT_DEPENDENCE_TOL, 0.3):
            ctrl.tangent_dependence_tol = tol
            for subset in range(1, 2 ** min(m, 8), 3):
                contacts = np.flatnonzero([(subset >> i) & 1 for i in range(m)]).astype(np.intp)
                rows, s_count = ctrl._kept_rows(step, contacts)
                assert np.all((rows[:s_count] >= m) & (rows[:s_count] < 2 * m)) and np.all(rows[s_count:] >= 2 * m)
                offered = np.concatenate((contacts + m, contacts + 2 * m))
                assert set(rows.tolist()) <= set(offered.tolist())
                K = white[:, rows]
                assert rows.size <= white.shape[0]
                for j in range(rows.size):        # independent: each kept row far from the others' span
                    others = np.delete(K, j, axis=1)
                    res = K[:, j] - others @ np.linalg.lstsq(others, K[:, j], rcond=None)[0] if others.size else K[:, j]
                    assert np.linalg.norm(res) > 0.5 * tol * tol * np.linalg.norm(K[:, j])
                for r in set(offered.tolist()) - set(rows.tolist()):    # dropped: implied by the kept
                    g = white[:, r]
                    res = g - K @ np.linalg.lstsq(K, g, rcond=None)[0] if rows.size else g
                    assert np.linalg.norm(res) <= tol * np.linalg.norm(g) * (1 + 1e-9) + 1e-12


# ---------------------------------------------------------------------- qp-noslip (ID_QP,inf)
def _pyramid_bound_holds(forces, mu):
    """Eq. 101 on the pyramid: |f_S| + |f_T| <= mu f_N for every contact (1e-9 N slack)."""
    return bool(np.all(np.abs(forces[:, 1]) + np.abs(forces[:, 2]) <= mu * forces[:, 0] + 1e-9))


def test_qp_noslip_receding_contact_carries_no_tangential_force():
    """The situation of ``test_a_receding_contact_carries_no_tangential_force`` for ID_QP,inf:
    a stance foot sliding at 0.3 m/s and lifting.  Eqs. 40-41 read literally (``release=False``,
    no cone) give it tangential force without normal force, which no finite friction allows (in
    the idyn.sim trot: 16 N at f_N = 0, then a 636 N stop of the slide and a divergence at
    0.18 s); the default releases it and every contact keeps eq. 101 with mu = 100."""
    p = standing_problem("links", 4, np.inf)
    model = p.model
    q, v = p.state.q, _first_foot_moving(p, [0.3, 0.0, 0.2])
    state = RobotState(q, v)
    desired = Desired(p.desired.q, v[model.actuated_v], np.zeros(model.na))
    literal = controllers.make("qp-noslip", model, feedback=False, release=False, no_slip_mu=np.inf)
    f_lit = literal.compute(state, desired, p.contacts).contact_forces
    assert f_lit[0, 0] < 1e-9 and np.abs(f_lit[0, 1:]).max() > 1.0   # the defect: 4.6 N at f_N = 0
    out = controllers.make("qp-noslip", model, feedback=False).compute(state, desired, p.contacts)
    assert out.info.status is Status.SOLVED and not out.info.details["held"][0]
    assert out.info.details["slip_released"] >= 1
    f = out.contact_forces
    assert np.abs(f[0, 1:]).max() < 1e-9                      # released: no friction
    assert _pyramid_bound_holds(f, 100.0)
    jac = contact_jacobians(model, q, p.contacts)
    held = out.info.details["held"] & (f[:, 0] > 0.0)
    assert held.sum() >= 2 and abs(f[:, 0].sum() - weight(model)) < 0.1 * weight(model)
    vn = out.info.v_next                                      # the loaded held feet do not slip
    assert np.abs(jac.S[held] @ vn).max() < 1e-9 and np.abs(jac.T[held] @ vn).max() < 1e-9


def test_qp_noslip_foot_arriving_sliding_is_not_stopped_by_the_actuators():
    """The sliding touchdown of ``test_a_foot_arriving_sliding_is_not_stopped_by_the_actuators``
    for ID_QP,inf: held, the foot is stopped within one step by the actuators (the literal model's
    tangential force is several robot weights); released (``slide_speed``), it lands without
    friction (the other feet, held, keep eq. 101)."""
    model, state, desired, contacts = _sliding_touchdown()
    held = controllers.make("qp-noslip", model, feedback=False, release=False).compute(state, desired, contacts)
    out = controllers.make("qp-noslip", model, feedback=False).compute(state, desired, contacts)
    assert out.info.status is Status.SOLVED and out.info.details["slip_released"] >= 1
    assert np.abs(out.contact_forces[0, 1:]).max() < 1e-9
    assert np.abs(held.contact_forces[0, 1:]).max() > 5 * weight(model)
    assert _pyramid_bound_holds(out.contact_forces, 100.0)


@pytest.mark.parametrize("no_slip_mu", [100.0, 1.0])
def test_qp_noslip_held_contacts_keep_the_friction_bound_after_stage_two(no_slip_mu):
    """Stage II moves the impulses in the nullspace of the Stage I Hessian, where opposite
    tangential impulses at two held feet cost no energy; with the cone rows of the held contacts
    (eq. 101 at ``no_slip_mu``) its answer keeps |f_S| + |f_T| <= mu f_N at every contact, on
    perturbed four-foot stances."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        p = standing_problem("links", 4, np.inf, rng=rng, noise=1e-3)
        out = controllers.make("qp-noslip", p.model, no_slip_mu=no_slip_mu).compute(p.state, p.desired, p.contacts)
        assert out.info.status.solved
        assert _pyramid_bound_holds(out.contact_forces, no_slip_mu)


def test_qp_noslip_options_are_validated():
    from idyn.errors import InvalidInputError
    model = standing_problem("links", 4, np.inf).model
    for bad in ({"no_slip_mu": 0.0}, {"no_slip_mu": np.nan}, {"release": "yes"}, {"slide_speed": 0.0},
                {"contact_gap": -1.0}):
        with pytest.raises(InvalidInputError):
            controllers.make("qp-noslip", model, **bad)
