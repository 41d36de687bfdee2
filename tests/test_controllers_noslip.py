"""Regression tests of ``lcp-noslip`` (ID_LCP,inf) found in closed loop (PyBullet and idyn.sim trots).

Each test builds the situation that broke the controller from a standing LINKS and checks the
physics, not the numbers of one implementation.
"""
from __future__ import annotations

import numpy as np

import controllers
from controllers import Desired, RobotState
from experiments.benchmarks.controllers import foot_contacts, standing_problem
from idyn import Contact, contact_jacobians


def weight(model) -> float:
    return model.total_mass * float(np.linalg.norm(model.gravity))


def test_warm_start_survives_a_changing_contact_set():
    """The active set of a 4-contact step must not be replayed as indices into a 2-contact list
    (it raised ShapeError inside Algorithm 2 on every step after a foot lifted)."""
    p = standing_problem("links", 4, 1.0)
    ctrl = controllers.make("lcp-noslip", p.model)
    ctrl.compute(p.state, p.desired, p.contacts)
    for contacts in (p.contacts[1:3], p.contacts[3:], p.contacts):
        out = ctrl.compute(p.state, p.desired, contacts)
        assert out.info["status"] == "solved" and out.info["fallback"] is None, out.info.get("error")


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
    assert out.info["status"] == "solved" and out.info.get("consistency_qp") is None
    assert np.abs(out.contact_forces).max() < 10 * weight(model)
    assert np.abs(out.tau).max() < 20.0


def test_a_receding_contact_carries_no_tangential_force():
    """A stance foot the simulator already lifts and slides (PyBullet trot, step 25): with
    f_N = 0 and N v+ > 0 it cannot transmit friction (|f_t| <= mu f_N for every finite mu);
    the literal eqs. 40-41 put 1 kN of tangential force on it and the loop diverged."""
    p = standing_problem("links", 4, np.inf)
    model, robot = p.model, p.robot
    q, v = p.state.q, p.state.v.copy()
    leg = next(iter(robot.leg_joints))
    iv = robot.leg_joints[leg]
    foot = robot.feet[leg]
    Jf = model.frame_jacobian(q, foot.link, point=robot.foot_centres(q)[0])[:3, iv]
    v[iv] = np.linalg.solve(Jf, [0.3, 0.0, 0.2])               # foot sliding 0.3 m/s, lifting
    state = RobotState(q, v)
    desired = Desired(p.desired.q, v[model.actuated_v], np.zeros(model.na))  # keep moving
    ctrl = controllers.make("lcp-noslip", model, feedback=False)
    out = ctrl.compute(state, desired, p.contacts)
    assert out.info["status"] == "solved" and out.info["slip_released"] >= 1
    f, vn = out.contact_forces, out.info["v_next"]
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
    assert out.info["status"] == "solved" and sum(out.info["kept_tangent_rows"]) == 3
    vn = out.info["v_next"]
    assert np.abs(jac.S @ vn).max() < 1e-9 and np.abs(jac.T @ vn).max() < 1e-9
    literal = controllers.make("qp-coulomb", p.model, feedback=False, objective="kinetic-energy")
    vf = literal.compute(p.state, desired, contacts).info["v_next"]
    # the commanded base speed change is 1 m/s^2 * 1 ms: the feet slide by most of it
    assert max(np.abs(jac.S @ vf).max(), np.abs(jac.T @ vf).max()) > 0.5e-3
    work = controllers.make("qp-coulomb", p.model, feedback=False).compute(p.state, desired, contacts)
    vw = work.info["v_next"]
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
    assert out.info["status"] == "solved"
    assert np.abs(out.contact_forces[:, 1:]).max() < 10 * weight(model)


def test_touchdown_impact_is_not_fought_by_the_actuators():
    """A swing foot landing at 0.3 m/s while the others stand (PyBullet trot, t = 0.068 s): with
    the joint velocities prescribed through the impact (eq. 38) the rigid model asks the
    actuators for the impulse that stops the foot (3.8e3 N m in closed loop).  With the passive
    touchdown impact of controllers.impact the torques stay those of the stance, and the
    impulse still appears in the predicted contact forces.  (lcp-coulomb is left out: with
    mu = inf simulated as 100 its tangential forces between stance feet are indeterminate up to
    100 f_N, and Lemke returns such internal forces, hundreds of N m, with or without impact.)"""
    p = standing_problem("links", 4, np.inf)
    model, robot = p.model, p.robot
    q, v = p.state.q, p.state.v.copy()
    leg = next(iter(robot.leg_joints))
    iv = robot.leg_joints[leg]
    Jf = model.frame_jacobian(q, robot.feet[leg].link, point=robot.foot_centres(q)[0])[:3, iv]
    v[iv] = np.linalg.solve(Jf, [0.0, 0.0, -0.3])              # landing at 0.3 m/s
    state = RobotState(q, v)
    desired = Desired(p.desired.q, np.zeros(model.na), np.zeros(model.na))
    for name in ("lcp-noslip", "qp-noslip", "qp-coulomb"):
        rigid = controllers.make(name, model, feedback=False, impact=False).compute(state, desired, p.contacts)
        out = controllers.make(name, model, feedback=False).compute(state, desired, p.contacts)
        assert "impact_forces" in out.info and "impact_forces" not in rigid.info
        assert np.abs(out.tau).max() < 0.2 * np.abs(rigid.tau).max(), name
        assert out.info["impact_forces"][0, 0] > 0.0                 # the landing foot is stopped
        assert np.all(np.isfinite(out.contact_forces))
