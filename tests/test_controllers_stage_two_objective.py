"""Stage II's published objective, eqs. 105-107 (``stage2_objective="correction"``).

The paper minimises ``1/2 |y|^2`` with ``y = tau - f_ID`` (eq. 105, ``f_ID = C qdd_des - f_ext``,
eq. 87) over Stage I's optimal set ``z0 + W w``; idyn's default minimises ``1/2 |tau|^2``.
Checked on standing LINKS states (four feet, indeterminate): ``f_ID`` against pinocchio's
``M`` and ``h`` formed here, the answer against cvxopt solving eqs. 105-111 built in numpy, and
each objective's answer no worse than the other's on its own objective, strictly better on
some state (the option changes the answer).
"""
from __future__ import annotations

import dataclasses

import cvxopt
import numpy as np
import pytest
from cvxopt import solvers

from idyn import controllers
from idyn.controllers.dissipation import build_stage_one, contact_free_torque, solve_stage_two
from idyn.errors import InvalidInputError
from idyn.experiments.benchmarks.controllers import standing_problem

DT = 1e-3
RIDGE = 1e-6


def stance(seed: int, accel: float):
    rng = np.random.default_rng(seed)
    problem = standing_problem("links", 4, 1.0, rng=rng, noise=0.05)
    desired = dataclasses.replace(problem.desired, vdot=accel * rng.standard_normal(problem.model.na))
    return problem.model, problem.state, desired, problem.contacts


def stage_two(model, state, desired, contacts, offset_kind: str | None):
    ctrl = controllers.make("qp-coulomb", model, dt=DT, feedback=False, impact=False, ridge=RIDGE)
    q, v, contacts = ctrl._check(state, desired, contacts)
    step = ctrl.dynamics.update(q, v, desired.vdot, contacts)
    prob = build_stage_one(step, True)
    z0, _ = ctrl._stage_one(step, prob)
    offset = contact_free_torque(step) if offset_kind == "correction" else None
    z, info = solve_stage_two(step, prob, z0, RIDGE, "daqp", offset=offset)
    return step, prob, z0, z, info


def cvxopt_answer(step, prob, z0, f_id):
    """eqs. 105-111 from their definition: ``y(w) = tau0 - f_ID - R_a^T W w / dt``; minimise
    ``1/2 |y|^2 + rho/2 |z0 + W w|^2`` s.t. ``z0 + W w >= 0`` and the cones."""
    W = prob.W
    tau0 = step.pyramid_outputs(prob.R, z0)[0]
    RW = prob.R[:, step.a_index].T @ W / step.dt
    rho = RIDGE * np.sum(RW * RW) / W.shape[1]
    H = RW.T @ RW + rho * np.eye(W.shape[1])
    c = -RW.T @ (tau0 - f_id) + rho * W.T @ z0
    A = np.vstack((W, prob.cone @ W))
    b = -np.concatenate((z0, prob.cone @ z0))
    M = lambda a: cvxopt.matrix(np.ascontiguousarray(a, dtype=float))  # noqa: E731
    sol = solvers.qp(M(H), M(c), M(-A), M(-b), options={"show_progress": False})
    assert sol["status"] == "optimal"
    return z0 + W @ np.array(sol["x"]).ravel(), rho


def objective(step, prob, z, rho, offset):
    y = step.pyramid_outputs(prob.R, z)[0] - offset
    return 0.5 * float(y @ y) + 0.5 * rho * float(z @ z)


@pytest.mark.parametrize("seed", range(4))
def test_correction_objective_is_eqs_105_to_107(seed):
    model, state, desired, contacts = stance(seed, accel=10.0)
    step, prob, z0, z, info = stage_two(model, state, desired, contacts, "correction")
    assert prob.W.shape[1] > 0 and info["stage2_status"] == "solved"
    a = model.actuated_v
    f_id = (model.mass_matrix(state.q)[np.ix_(a, a)] @ desired.vdot
            + model.bias_forces(state.q, state.v)[a])              # eq. 87 from pinocchio
    np.testing.assert_allclose(contact_free_torque(step), f_id, rtol=1e-9, atol=1e-9)
    z_ref, rho = cvxopt_answer(step, prob, z0, f_id)
    ours, ref = objective(step, prob, z, rho, f_id), objective(step, prob, z_ref, rho, f_id)
    assert ours <= ref * (1 + 1e-5) + 1e-12, (ours, ref)
    assert ours <= objective(step, prob, z0, rho, f_id) * (1 + 1e-8)      # w = 0 is feasible


def test_each_objective_wins_on_its_own_measure():
    strict = 0
    for seed in range(4):
        model, state, desired, contacts = stance(seed, accel=10.0)
        step, prob, z0, z_tau, _ = stage_two(model, state, desired, contacts, None)
        *_, z_y, _ = stage_two(model, state, desired, contacts, "correction")
        f_id = contact_free_torque(step)
        tau_of = lambda z: step.pyramid_outputs(prob.R, z)[0]   # noqa: E731
        y_tau, y_y = np.linalg.norm(tau_of(z_tau) - f_id), np.linalg.norm(tau_of(z_y) - f_id)
        t_tau, t_y = np.linalg.norm(tau_of(z_tau)), np.linalg.norm(tau_of(z_y))
        assert y_y <= y_tau * (1 + 1e-4) + 1e-9 and t_tau <= t_y * (1 + 1e-4) + 1e-9
        strict += y_y < (1 - 1e-3) * y_tau   # measured: up to 0.4 % lower
    assert strict >= 1                         # the objectives differ: the option changes the answer


def test_controller_option_is_validated_and_used():
    model, state, desired, contacts = stance(0, accel=10.0)
    with pytest.raises(InvalidInputError):
        controllers.make("qp-coulomb", model, stage2_objective="y")
    outs = {}
    for kind in ("torque", "correction"):
        ctrl = controllers.make("qp-coulomb", model, dt=DT, feedback=False, impact=False, ridge=RIDGE,
                                stage2_objective=kind)
        assert ctrl.stage2_objective == kind
        outs[kind] = ctrl.compute(state, desired, contacts).tau
    step, prob, z0, z, _ = stage_two(model, state, desired, contacts, "correction")
    np.testing.assert_allclose(outs["correction"], step.pyramid_outputs(prob.R, z)[0], rtol=1e-6, atol=1e-6)
