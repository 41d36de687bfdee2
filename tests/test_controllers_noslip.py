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
