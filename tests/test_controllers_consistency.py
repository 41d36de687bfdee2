"""Sec. 4.5's consistency check (eqs. 46-51, :mod:`idyn.controllers.consistency`) on the grasp:
fingers commanded to close into a rigid box from opposite sides, a desired motion no contact
impulse can realise.  The checks are the paper's constraints (non-penetration, the friction
pyramid, the dynamics of eq. 37) and the minimal deviation against an independent QP solved in
the full coordinates ``(v+, tau, z)`` by cvxopt."""
from __future__ import annotations

import numpy as np
import pytest

from idyn import Contact, Status, contact_jacobians, controllers, robots
from idyn.controllers import Desired, RobotState
from idyn.controllers import consistency
from idyn.errors import InvalidInputError
from test_controllers import grasp_contacts, step_residual

DT = 1e-3


def _closing_grasp(mu, closing=50.0):
    """The reference grasp (fingertips touching the box) with every finger joint commanded to
    close at ``closing`` rad/s^2: no impulse lets both sides of the box close."""
    man = robots.manipulator()
    mb = man.model_with_box
    q = man.combined_q(man.q0)
    contacts = [Contact(c.body_a, c.body_b, c.point, c.normal, c.mu, phi=0.0) for c in grasp_contacts(man, q, mu)]
    vdot = np.zeros(mb.na)
    vdot[7:] = closing * man.finger_close_sign
    return man, mb, RobotState(q, np.zeros(mb.nv)), Desired(man.q0, np.zeros(mb.na), vdot), contacts


def _independent(model, state, contacts, qd, mu):
    """Eqs. 46-51 for Coulomb contacts in the full coordinates ``x = [v+; tau; z]`` with
    ``z = [f_N; f_S; f_T]`` impulses, by cvxopt: the objective of
    :func:`idyn.controllers.consistency.solve_consistency` built from ``M`` and the Jacobians,
    with the dynamics ``M (v+ - v) = R^T z + dt P^T tau - dt h`` as equality rows.  Returns
    ``(v+, tau, z, objective)``."""
    from cvxopt import matrix, solvers
    jac = contact_jacobians(model, state.q, contacts)
    M, h = model.mass_matrix(state.q), model.bias_forces(state.q, state.v)
    nv, na, m = model.nv, model.na, len(contacts)
    a = model.actuated_v
    R = np.vstack((jac.N, jac.S, jac.T))
    E = R @ np.linalg.solve(M, R.T)
    E *= consistency.IMPULSE_ENERGY_WEIGHT / np.mean(np.diag(M)[a])
    E[np.diag_indices(3 * m)] += consistency.CONSISTENCY_RIDGE * np.diag(E).max()
    n = nv + na + 3 * m
    H = np.zeros((n, n))
    H[np.ix_(a, a)] = np.eye(na)                       # |P v+ - qd|^2
    H[nv + na:, nv + na:] = E
    c = np.zeros(n)
    c[a] = -qd
    P = np.zeros((na, nv))
    P[np.arange(na), a] = 1.0
    Aeq = np.hstack((M, -DT * P.T, -R.T))
    beq = M @ state.v - DT * h
    G = [np.hstack((-jac.N, np.zeros((m, na + 3 * m))))]           # N v+ >= -phi/dt
    hin = [jac.phi / DT]
    for i in range(m):
        row = np.zeros(n)
        row[nv + na + i] = -1.0
        G.append(row[None])
        hin.append([0.0])
        for ss in (1.0, -1.0):
            for st in (1.0, -1.0):                   # +-f_S +-f_T <= mu f_N (eq. 101)
                row = np.zeros(n)
                row[nv + na + i], row[nv + na + m + i], row[nv + na + 2 * m + i] = -mu, ss, st
                G.append(row[None])
                hin.append([0.0])
    G, hin = np.vstack(G), np.concatenate([np.atleast_1d(x) for x in hin])
    solvers.options.update(show_progress=False, abstol=1e-12, reltol=1e-12, feastol=1e-12)
    sol = solvers.qp(matrix(H), matrix(c), matrix(G), matrix(hin), matrix(Aeq), matrix(beq))
    assert sol["status"] == "optimal"
    x = np.array(sol["x"]).ravel()
    return x[:nv], x[nv:nv + na], x[nv + na:], 0.5 * x @ H @ x + c @ x + 0.5 * qd @ qd


@pytest.mark.parametrize("mu", [1.0, 100.0])
def test_the_minimal_deviation_equals_an_independent_solve_in_full_coordinates(mu):
    """The reduced QP (``delta`` and impulses, ``v+`` and ``tau`` eliminated by eqs. 88-94) and
    cvxopt on ``(v+, tau, z)`` with the dynamics as equality rows find the same optimum: the
    same objective and the same deviation, whose size is the closing the box forbids."""
    _, mb, state, desired, contacts = _closing_grasp(mu)
    ctrl = controllers.make("qp-coulomb", mb, feedback=False)
    step = ctrl._step(state.q, state.v, desired.vdot, contacts)
    qp, delta, z, _ = consistency.solve_consistency(step, coulomb=np.ones(len(contacts), bool))
    assert qp.solved
    v_ref, tau_ref, z_ref, obj_ref = _independent(mb, state, contacts, step.qd, mu)
    scale = consistency.IMPULSE_ENERGY_WEIGHT / np.mean(np.diag(step.M)[step.a])
    R = step.rows
    E = R @ np.linalg.solve(step.M, R.T) * scale
    ours = 0.5 * delta @ delta + 0.5 * z @ E @ z
    assert ours == pytest.approx(obj_ref, rel=1e-5, abs=1e-12)
    np.testing.assert_allclose(step.qd + delta, v_ref[step.a], atol=1e-6 * (1 + np.abs(step.qd).max()))
    assert np.linalg.norm(delta) > 1e-3 * np.linalg.norm(step.qd)     # the closing had to go


@pytest.mark.parametrize("mu", [1.0, 100.0])
def test_after_the_check_qp_coulomb_penetrates_nothing_and_keeps_the_dynamics(mu):
    """Stage I is infeasible for the closing fingers; without the check its regularised answer
    closes contacts (``N v+ < -phi/dt``).  With it (the default) the answer of the moved step
    meets eq. 47, the pyramid of eq. 101 and the dynamics of eq. 37 at the predicted velocity,
    whose actuated part differs from the command by the reported deviation."""
    _, mb, state, desired, contacts = _closing_grasp(mu)
    jac = contact_jacobians(mb, state.q, contacts)
    off = controllers.make("qp-coulomb", mb, feedback=False, consistency_check=False).compute(state, desired, contacts)
    assert (jac.N @ off.info.v_next + jac.phi / DT).min() < -1e-5
    out = controllers.make("qp-coulomb", mb, feedback=False).compute(state, desired, contacts)
    d = out.info.details
    assert out.info.status is Status.SOLVED and d["consistency_qp"] == "solved"
    assert d["consistency_violation"] > 1e-5 and d["inconsistent_stage1_status"] == "regularized"
    vn, f = out.info.v_next, out.contact_forces
    assert (jac.N @ vn + jac.phi / DT).min() >= -1e-7
    assert f[:, 0].min() >= -1e-9
    assert np.all(np.abs(f[:, 1]) + np.abs(f[:, 2]) <= mu * f[:, 0] * (1 + 1e-6) + 1e-9)
    M = mb.mass_matrix(state.q)
    residual = step_residual(mb, state, contacts, out, DT)      # eq. 37 (eqs. 50-51)
    assert np.abs(residual).max() < 1e-9 * (1.0 + np.abs(M @ vn).max())
    qd_des = desired.v + DT * desired.vdot
    assert np.linalg.norm(vn[mb.actuated_v] - qd_des) == pytest.approx(d["desired_deviation"], rel=1e-6)


def test_the_command_effort_becomes_grip_force():
    """Stage II measures torque from the effort of the removed closing (``command_effort``):
    among the impulses Stage I leaves free (the internal squeeze) it takes more normal force
    than least torque does, and both answers meet eq. 47 and the pyramid."""
    _, mb, state, desired, contacts = _closing_grasp(100.0)
    jac = contact_jacobians(mb, state.q, contacts)
    grip = {}
    for effort in (False, True):
        out = controllers.make("qp-coulomb", mb, feedback=False, command_effort=effort).compute(state, desired, contacts)
        assert (jac.N @ out.info.v_next + jac.phi / DT).min() >= -1e-7
        f = out.contact_forces
        assert np.all(np.abs(f[:, 1]) + np.abs(f[:, 2]) <= 100.0 * f[:, 0] * (1 + 1e-6) + 1e-9)
        grip[effort] = f[:, 0].sum()
    assert grip[True] > 2.0 * grip[False]


def test_a_consistent_command_is_left_alone():
    """Fingers holding still: Stage I is feasible, the check does not move the command and the
    answer is the one without the check."""
    man, mb, state, desired, contacts = _closing_grasp(100.0, closing=0.0)
    on = controllers.make("qp-coulomb", mb, feedback=False).compute(state, desired, contacts)
    off = controllers.make("qp-coulomb", mb, feedback=False, consistency_check=False).compute(state, desired, contacts)
    assert "consistency_violation" not in on.info.details
    np.testing.assert_array_equal(on.tau, off.tau)


def test_the_option_is_validated():
    """``consistency_check`` is a bool; the controllers without a contact model have none."""
    mb = robots.manipulator().model_with_box
    with pytest.raises(InvalidInputError):
        controllers.make("pid", mb, consistency_check=True, warm_up=False)
    with pytest.raises(InvalidInputError):
        controllers.make("qp-coulomb", mb, consistency_check="yes", warm_up=False)
    assert controllers.make("pid", mb, consistency_check=False, warm_up=False).consistency_check is False
    assert controllers.make("lcp-coulomb", mb, warm_up=False).consistency_check is False
    assert controllers.make("qp-noslip", mb, warm_up=False).consistency_check is True


def test_command_effort_adds_to_the_correction_objective_and_never_leaks():
    """Under ``stage2_objective="correction"`` Stage II measures from f_ID plus the removed
    command's effort (f_ID is linear in the command), so the effort still buys grip there (it
    was once dropped); with Stage II off the effort array does not leak into ``info.details``."""
    _, mb, state, desired, contacts = _closing_grasp(100.0)
    grip = {}
    for effort in (False, True):
        out = controllers.make("qp-coulomb", mb, feedback=False, command_effort=effort,
                               stage2_objective="correction").compute(state, desired, contacts)
        grip[effort] = out.contact_forces[:, 0].sum()
        assert "effort" not in out.info.details
    assert grip[True] > 2.0 * grip[False]
    out = controllers.make("qp-coulomb", mb, feedback=False, stage2=False).compute(state, desired, contacts)
    assert "effort" not in out.info.details and "consistency_violation" in out.info.details
