"""Stage II by its dual (controllers.dissipation ``stage_two_by_dual``) reaches the QP's optimum.

On foot patches (a1, 8 and 16 distinct points per foot on a 4 mm patch: nullity 154 and 314),
the dual Newton method's answer must be the least-torque point of Stage I's optimal set: its
objective ``1/2 |tau|^2 + rho/2 |z|^2`` within a tight relative tolerance of cvxopt's on the QP
built in numpy from eqs. 90 and 110-111 (test_controllers_stage_two_scaling.cvxopt_stage_two),
its impulses within the cones (eqs. 110-111) and equal to DAQP's answer on the nullspace QP (the
fallback path, run here on the same Stage I answer).  A wrong projection, Jacobian or multiplier
sign makes the Newton loop stop elsewhere or fall back, both of which fail here.
"""
from __future__ import annotations

import numpy as np
import pytest

import idyn.controllers.dissipation as dissipation
from idyn import controllers
from idyn.controllers.dissipation import build_stage_one, solve_stage_two
from idyn.experiments.benchmarks.contacts import PATCH
from idyn.experiments.benchmarks.controllers import standing_problem

from test_controllers_stage_two_scaling import RIDGE, cvxopt_stage_two, torque_objective

#: relative excess over cvxopt's objective allowed (measured: the dual and DAQP were below
#: cvxopt's by up to 4e-7 relative at 4-48 patch contacts, cvxopt stopping earlier)
REL_TOL = 1e-7


@pytest.mark.parametrize("contacts, seed", [(16, 0), (32, 1), (32, 2), (64, 3)])
def test_stage_two_dual_equals_the_qp_on_foot_patches(contacts, seed, monkeypatch):
    problem = standing_problem("a1", contacts, 0.8, rng=np.random.default_rng(seed), noise=1e-2, patch=PATCH)
    ctrl = controllers.make("qp-coulomb", problem.model, feedback=False, impact=False, ridge=RIDGE)
    q, v, cs = ctrl._check(problem.state, problem.desired, problem.contacts)
    step = ctrl.dynamics.update(q, v, problem.desired.vdot, cs)
    prob = build_stage_one(step, True, lcp=True)
    z0, _ = ctrl._stage_one(step, prob)
    z, info = solve_stage_two(step, prob, z0, RIDGE, "daqp")
    assert info["stage2_solver"] == "dual" and info["stage2_status"] == "solved"
    m = step.m
    assert np.all(z >= 0.0)
    assert np.all(step.jac.mu * z[:m] - z[m:].reshape(4, m).sum(axis=0) >= -1e-12 * z[:m].max())
    z_ref, rho = cvxopt_stage_two(step, prob, z0)
    assert z_ref is not None
    value, reference = torque_objective(step, prob, z, rho), torque_objective(step, prob, z0, rho)
    assert value <= reference * (1 + 1e-12)                     # no worse than Stage I's answer
    assert value <= torque_objective(step, prob, z_ref, rho) * (1 + REL_TOL)
    # the same optimum as the QP path (DAQP on the nullspace QP)
    monkeypatch.setattr(dissipation, "stage_two_by_dual", lambda *a, **k: (None, {}))
    z_qp, info_qp = solve_stage_two(step, prob, z0, RIDGE, "daqp")
    assert info_qp["stage2_solver"] == "qp" and info_qp["stage2_status"] == "solved"
    assert np.abs(z - z_qp).max() <= 1e-7 * np.abs(z_qp).max()


@pytest.mark.parametrize("name, options, seed, noise, mu", [
    ("qp-coulomb", {"stage2_objective": "correction"}, 5, 1e-2, 0.8),
    ("qp-noslip", {}, 0, 1e-3, 1.0)])
def test_stage_two_dual_equals_the_qp_with_an_offset_and_held_cones(name, options, seed, noise, mu, monkeypatch):
    """The dual with the objective measured from an offset torque (eqs. 105-107's f_ID), and on
    qp-noslip's Stage I (no-slip equality rows; held contacts' cones at no_slip_mu = 100,
    released ones at 0: ``StageOne.mu``, not the contacts' mu = inf), gives the nullspace QP's
    answer on the same Stage I answer.  (On other qp-noslip states the dual does not converge
    and the QP answers: a1, 32 contacts, mu 0.8, noise 1e-2, seed 5.)"""
    problem = standing_problem("a1", 32, mu, rng=np.random.default_rng(seed), noise=noise, patch=PATCH)
    ctrl = controllers.make(name, problem.model, feedback=False, impact=False, ridge=RIDGE, **options)
    q, v, cs = ctrl._check(problem.state, problem.desired, problem.contacts)
    step = ctrl.dynamics.update(q, v, problem.desired.vdot, cs)
    prob, z0, _, _ = ctrl._contact_model(step, cs)
    if name == "qp-noslip":
        assert prob.E.shape[0] and np.isfinite(prob.mu).all() and not np.all(step.jac.mu == prob.mu)
    offset = dissipation.contact_free_torque(step) if options else None
    z, info = solve_stage_two(step, prob, z0, RIDGE, "daqp", offset=offset)
    assert info["stage2_solver"] == "dual" and info["stage2_status"] == "solved"
    monkeypatch.setattr(dissipation, "stage_two_by_dual", lambda *a, **k: (None, {}))
    z_qp, info_qp = solve_stage_two(step, prob, z0, RIDGE, "daqp", offset=offset)
    assert info_qp["stage2_solver"] == "qp" and info_qp["stage2_status"] == "solved"
    assert np.abs(z - z_qp).max() <= 1e-7 * np.abs(z_qp).max()
