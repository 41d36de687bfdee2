"""The compiled arithmetic of the QP controllers (controllers._dynamics_kernel,
controllers._dissipation_kernel) checked against the equations, on real LINKS problems: the
reduced step (Cholesky factor, eq. 93's p, eqs. 88-90 residuals), Stage I's data and KKT LCP
(its optimum against cvxopt's), the separation flags and price, Stage II's optimum against
cvxopt's, and the clip into the cones."""
from __future__ import annotations

import numpy as np
from cvxopt import matrix, solvers
from hypothesis import given, settings, strategies as st

from idyn import controllers
from idyn.controllers import _dissipation_kernel as kernel
from idyn.controllers import dissipation
from idyn.controllers.dissipation import build_stage_one
from idyn.contact import CONTACT_GAP
from idyn.lcp.residuals import lcp_residuals
from idyn.separation import LOADED_FRACTION, separating_loads
from test_controllers_gap_rate import at_gaps
from test_controllers_separation import sliding_stance


def _cvxopt_qp(H, c, A_in, b_in, A_eq=None, b_eq=None) -> np.ndarray:
    """An independent solver: ``min 1/2 x^T H x + c^T x  s.t.  A_in x >= b_in (, A_eq x = b_eq)``."""
    M = lambda a: matrix(np.ascontiguousarray(a, dtype=float))  # noqa: E731
    kw = {} if A_eq is None or not A_eq.shape[0] else {"A": M(A_eq), "b": M(b_eq)}
    sol = solvers.qp(M(H), M(c), M(-A_in), M(-b_in), options={"show_progress": False, "abstol": 1e-12,
                                                               "reltol": 1e-12, "feastol": 1e-12}, **kw)
    return np.array(sol["x"]).ravel()


def _step(speed, heading, mu, feet=4, **options):
    model, state, desired, contacts, _ = sliding_stance(speed, heading, mu)
    ctrl = controllers.make("qp-coulomb", model, feedback=False, **options)
    q, v, contacts = ctrl._check(state, desired, contacts[:feet])
    return ctrl, ctrl.dynamics.update(q, v, desired.vdot, contacts)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_clip_to_cone_puts_impulses_in_the_cones(m, seed):
    """z >= 0 and sum f_F <= mu f_N (eq. 101) after the clip; feasible components unchanged,
    a contact's friction scaled as a whole (direction kept)."""
    rng = np.random.default_rng(seed)
    mu = rng.choice([0.0, 0.1, 0.5, 1.0, np.inf], m)
    z0 = rng.standard_normal(5 * m) * rng.choice([1e-12, 1.0, 1e3], 5 * m)
    z = z0.copy()
    kernel.clip_to_cone(z, mu)
    assert (z >= 0).all() and not np.signbit(z).any()
    pos = np.maximum(z0, 0.0)
    total = pos[m:].reshape(4, m).sum(axis=0)
    finite = np.isfinite(mu)
    assert (z[m:].reshape(4, m).sum(axis=0)[finite] <= mu[finite] * z[:m][finite] * (1 + 1e-12) + 1e-300).all()
    np.testing.assert_array_equal(z[:m], pos[:m])
    held = ~finite | (total <= np.where(finite, mu, 0.0) * pos[:m])
    np.testing.assert_array_equal(z[m:].reshape(4, m)[:, held], pos[m:].reshape(4, m)[:, held])
    for i in np.flatnonzero(~held):       # scaled as a whole
        f, f0 = z[m:].reshape(4, m)[:, i], pos[m:].reshape(4, m)[:, i]
        np.testing.assert_allclose(f * total[i], f0 * f.sum(), rtol=1e-12, atol=1e-300)


@settings(max_examples=20, deadline=None)
@given(speed=st.floats(0.0, 0.6), heading=st.floats(-np.pi, np.pi), drop=st.sampled_from([0.0, 0.3]))
def test_reduced_step_satisfies_eqs_83_to_94(speed, heading, drop):
    """StepDynamics.update: L L^T = A = M_uu (L lower), A (p - v_u) = -dt h_u - B (qd - v_a)
    (eq. 93), the free velocity is [N; S; T] v+(0); resolve and pyramid_outputs satisfy the
    discrete dynamics M (v+ - v) = R^T z + dt P^T tau - dt h (eq. 37) with v+_a = qd, and the
    forces are the pyramid sums over dt plus the touchdown impact."""
    model, state, desired, contacts, _ = sliding_stance(speed, heading, 0.5)
    ctrl = controllers.make("qp-coulomb", model, feedback=False)
    q, v, contacts = ctrl._check(state, desired, contacts)
    v = v.copy()
    v[2] -= drop                          # the base drops onto its feet: a touchdown impact
    step = ctrl.dynamics.update(q, v, desired.vdot, contacts)
    assert (step.impact is not None) == (drop > 0)
    u, a = step.u, step.a
    scale = np.abs(step.A).max()
    np.testing.assert_allclose(step.L @ step.L.T, step.A, atol=1e-13 * scale)
    assert not np.triu(step.L, 1).any()
    np.testing.assert_allclose(step.A @ (step.p - step.v[u]), -step.dt * step.h[u] - step.B @ (step.qd - step.v[a]),
                               atol=1e-12 * max(1.0, np.abs(step.A).max() * np.abs(step.p).max()))
    np.testing.assert_allclose(step.free_velocity, step.rows[:, u] @ step.p + step.rows[:, a] @ step.qd,
                               atol=1e-13 * (1 + np.abs(step.free_velocity).max()))
    R = step.pyramid_rows
    z = np.maximum(np.random.default_rng(0).standard_normal(R.shape[0]), 0.0) * 0.01
    tau, v_next, forces = step.pyramid_outputs(R, z)
    tau2, v2 = step.resolve(R.T @ z)
    np.testing.assert_allclose(tau, tau2, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(v_next, v2, rtol=1e-12, atol=1e-12)
    gen = np.zeros(step.v.size)
    gen[a] = tau
    residual = step.M @ (v_next - step.v) - R.T @ z - step.dt * gen + step.dt * step.h
    assert np.abs(residual).max() < 1e-10 * (1 + np.abs(step.M).max() + np.abs(R.T @ z).max())
    np.testing.assert_array_equal(v_next[a], step.qd)
    fz = z.reshape(5, -1)
    expected = np.stack((fz[0], fz[1] - fz[2], fz[3] - fz[4]), axis=1) / step.dt
    if step.impact is not None:
        expected = expected + step.impact
    np.testing.assert_allclose(forces, expected, rtol=1e-14, atol=0)


@settings(max_examples=25, deadline=None)
@given(speed=st.floats(0.0, 0.6), heading=st.floats(-np.pi, np.pi), mu=st.sampled_from([0.0, 0.1, 0.5, 2.0]),
       feet=st.integers(1, 4))
def test_stage_one_data_and_its_lcp_match_the_qp(speed, heading, mu, feet):
    """Stage I's data are eqs. 94-101 (H = Y^T Y with Y^T Y = R_u A^-1 R_u^T, G's normal rows,
    W an orthonormal basis of ker(Y), c in range(R_u)), and Lemke's answer on its KKT LCP
    solves that LCP and reaches the QP's optimum (cvxopt's, an independent solver)."""
    ctrl, step = _step(speed, heading, mu, feet)
    prob = build_stage_one(step, True)
    Ru = prob.R[:, step.u]
    k, m = prob.k, step.m
    scale = np.abs(prob.H).max()
    np.testing.assert_allclose(prob.H, Ru @ step.solve_A(Ru.T), atol=1e-10 * scale)
    np.testing.assert_allclose(prob.G[:m], prob.H[:m], atol=1e-12 * scale)
    np.testing.assert_allclose(prob.g[:m], step.free_velocity[:m] + step.jac.phi / step.dt, atol=1e-12)
    W = prob.W
    np.testing.assert_allclose(W.T @ W, np.eye(W.shape[1]), atol=1e-12)
    assert np.abs(prob.Y @ W).max() < 1e-10 * np.sqrt(scale)
    assert W.shape[1] == k - np.linalg.matrix_rank(prob.Y)
    assert np.abs(W.T @ prob.c).max() < 1e-10 * (1 + np.abs(prob.c).max())     # projected onto range(R_u)
    z, _ = dissipation.solve_stage_one(prob, "lemke", "quadprog")
    A = np.concatenate((prob.G, np.eye(k)))
    b = np.concatenate((-prob.g, np.zeros(k)))
    ref = _cvxopt_qp(prob.H, prob.c, A, b)
    f = lambda x: 0.5 * x @ prob.H @ x + prob.c @ x  # noqa: E731
    tol = 1e-6 * (1 + abs(f(ref)) + np.abs(prob.c).max() * np.abs(ref).max())
    assert f(z) <= f(ref) + tol
    assert (A @ z - b).min() >= -1e-8 * (1 + np.abs(z).max())


@settings(max_examples=25, deadline=None)
@given(speed=st.floats(0.0, 0.6), heading=st.floats(-np.pi, np.pi), mu=st.sampled_from([0.0, 0.1, 0.5, 2.0]))
def test_stage_one_lemke_answer_solves_the_kkt_lcp(speed, heading, mu):
    """Where Lemke's method answers without regularisation, its z solves the KKT LCP
    ``([c; g], [[H, -G^T], [G, 0]])`` (residuals of idyn.lcp), and that LCP is the data's."""
    ctrl, step = _step(speed, heading, mu)
    prob = build_stage_one(step, True)
    M, qv = prob.lcp()
    k = prob.k
    np.testing.assert_array_equal(M[:k, :k], prob.H)
    np.testing.assert_array_equal(M[:k, k:], -prob.G.T)
    np.testing.assert_array_equal(M[k:, :k], prob.G)
    assert not M[k:, k:].any() and np.array_equal(qv, np.concatenate((prob.c, prob.g)))
    from idyn.lcp.lemke import cold_checked
    from idyn.lcp.residuals import DEFAULT_TOL
    z = np.empty(qv.size)
    passed, _ = cold_checked(M, qv, 1e-12, DEFAULT_TOL, z)
    if passed:
        assert lcp_residuals(M, qv, z).ok()


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_separating_loads_follows_its_definition(m, seed):
    """idyn.separation's mask: touching (gap <= CONTACT_GAP), loaded (above LOADED_FRACTION of
    the largest impulse; NaN loads none) and ending beyond the gap; unloaded and NaN impulses."""
    rng = np.random.default_rng(seed)
    phi = rng.choice([-1e-5, 0.0, CONTACT_GAP, 2 * CONTACT_GAP, 1e-3], m)
    impulse = rng.choice([0.0, 1e-12, 1e-3, 1.0, np.nan], m, p=[0.3, 0.1, 0.2, 0.35, 0.05])
    speed = rng.standard_normal(m) * rng.choice([1e-4, 1e-2, 1.0], m)
    loaded = impulse > LOADED_FRACTION * max(float(impulse.max()), 1e-300)
    expected = (phi <= CONTACT_GAP) & loaded & (phi + 1e-3 * speed > CONTACT_GAP)
    assert np.array_equal(separating_loads(phi, 1e-3, impulse, speed), expected)


@settings(max_examples=30, deadline=None)
@given(speed=st.floats(0.0, 0.6), feet=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_flagged_separations_read_the_end_of_step_velocity(speed, feet, seed):
    """Stage I's separation check flags the contacts whose end-of-step normal speed, from the
    dynamics (resolve of R^T z, not Stage I's own data), separates them under load."""
    ctrl, step = _step(speed, 0.3, 0.5, feet)
    prob = build_stage_one(step, True)
    rng = np.random.default_rng(seed)
    for z in (np.maximum(rng.standard_normal(prob.k), 0.0) * 1e-3, np.zeros(prob.k)):
        m = step.m
        v_next = step.resolve(prob.R.T @ z)[1]
        normal = step.jac.N @ v_next
        expected = separating_loads(step.jac.phi, step.dt, z[:m], normal)
        mask = dissipation.separating_loads(step, prob, z)
        near = np.abs(step.jac.phi + step.dt * normal - CONTACT_GAP) < 1e-12   # round-off ties
        assert np.array_equal(mask[~near], expected[~near])


@settings(max_examples=20, deadline=None)
@given(speed=st.floats(0.0, 0.6), feet=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_separation_price_is_the_kinetic_energy_of_the_separation_speed(speed, feet, seed):
    """After pricing contacts C at weight w, the objective 1/2 z^T H z + c^T z grows by
    w/2 |N_C v+(z)|^2 up to a constant, with v+ from the dynamics; the KKT LCP follows."""
    ctrl, step = _step(speed, 0.3, 0.5, feet)
    prob = build_stage_one(step, True)
    prob.lcp()
    rng = np.random.default_rng(seed)
    priced = np.flatnonzero(rng.random(step.m) < 0.6) if step.m > 1 else np.arange(1)
    H0, c0 = prob.H.copy(), prob.c.copy()
    dissipation.price_separation(step, prob, priced, 3.7)

    def gain(z):
        speed_c = step.jac.N[priced] @ step.resolve(prob.R.T @ z)[1]
        return (0.5 * z @ (prob.H - H0) @ z + (prob.c - c0) @ z) - 3.7 / 2 * speed_c @ speed_c

    const = gain(np.zeros(prob.k))
    for _ in range(3):
        z = np.maximum(rng.standard_normal(prob.k), 0.0) * 1e-2
        assert abs(gain(z) - const) < 1e-9 * (1 + abs(const) + np.abs(prob.H - H0).max())
    M, qv = prob.Mlcp, prob.qlcp
    np.testing.assert_array_equal(M[:prob.k, :prob.k], prob.H)
    np.testing.assert_array_equal(qv[:prob.k], prob.c)


@settings(max_examples=15, deadline=None)
@given(phi=st.lists(st.floats(0.0, 2e-4), min_size=4, max_size=4), mu=st.sampled_from([0.1, 0.5, np.inf]),
       gap_rate=st.booleans())
def test_stage_two_reaches_cvxopts_least_torque(phi, mu, gap_rate):
    """Stage II's answer (quadprog through idyn.qp) is in Stage I's optimal set (same Stage I
    objective, eq. 108), feasible (eqs. 110-111) and its objective, |tau|^2/2 + rho/2 |z|^2,
    is cvxopt's optimum on the same terms, within the solvers' tolerance."""
    model, state, desired, contacts = at_gaps(phi, mu)[:4]
    ctrl = controllers.make("qp-coulomb", model, feedback=False, gap_rate=gap_rate)
    q, v, contacts = ctrl._check(state, desired, contacts)
    step = ctrl.dynamics.update(q, v, desired.vdot, contacts)
    prob = build_stage_one(step, True, gap_rate=gap_rate)
    z0, _ = ctrl._stage_one(step, prob)
    z, info = dissipation.solve_stage_two(step, prob, z0, 1e-6, "quadprog")
    W = prob.W
    if not W.shape[1] or info["stage2_status"] != "solved":
        return
    f1 = lambda x: 0.5 * x @ prob.H @ x + prob.c @ x  # noqa: E731
    assert abs(f1(z) - f1(z0)) < 1e-6 * (1 + abs(f1(z0)))
    assert (z >= 0).all() and (prob.cone @ z >= -1e-12 * (1 + np.abs(z).max())).all()
    tau0 = step.pyramid_outputs(prob.R, z0)[0]
    nul, rows = W.shape[1], prob.k + prob.cone.shape[0]
    H2, c2, A_in, b_in = np.empty((nul, nul)), np.empty(nul), np.empty((rows, nul)), np.empty(rows)
    kernel.stage_two_terms(prob.R, W, z0, 1e-6, prob.cone, step.L, step.v, step.qd, step.dt_h_u, step.B_dva, step.Ma,
                           step.h, step.dt, step.u_index, step.a_index, H2, c2, A_in, b_in)
    RW = prob.R[:, step.a].T @ W / step.dt                  # eq. 90: tau = tau0 - RW w
    rho = H2[0, 0] - RW[:, 0] @ RW[:, 0]
    np.testing.assert_allclose(H2, RW.T @ RW + rho * np.eye(nul), atol=1e-9 * np.abs(H2).max())
    np.testing.assert_allclose(c2, -RW.T @ tau0 + rho * W.T @ z0, atol=1e-9 * (1 + np.abs(c2).max()))
    level = dissipation._level_row(prob, W)
    w_ref = _cvxopt_qp(H2, c2, A_in, b_in, level, np.zeros(level.shape[0]))
    w = np.linalg.lstsq(W, z - z0, rcond=None)[0]
    f2 = lambda x: 0.5 * x @ H2 @ x + c2 @ x  # noqa: E731
    assert f2(w) <= f2(w_ref) + 1e-6 * (1 + abs(f2(w_ref)))
    tau = step.pyramid_outputs(prob.R, z)[0]
    np.testing.assert_allclose(tau, tau0 - RW @ w, atol=1e-6 * (1 + np.abs(tau0).max()))
