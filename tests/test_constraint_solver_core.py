"""The constraint solver's core: every constraint class, residuals, convexity, stability."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings, strategies as st

from idyn.errors import InvalidInputError, NonFiniteError, ShapeError
from idyn.constraint_solver import (BACKENDS, ConstraintProblem, ConstraintRows,
                                    ConstraintSolver, ContactRows, MassMatrix, appendix_a)
from idyn.constraint_solver.conic import ConicProgram, solve_conic
from idyn.constraint_solver.models import coulomb_tangents, hertz, hertz_force, winkler


def _particle_contact(mu, v0=(1.0, 0.0, 0.0), m=2.0, h=0.01, three_d=True):
    M = np.eye(3) * m
    f = np.array([0.0, 0.0, -9.81 * m])
    tan = coulomb_tangents(1, h)
    n = ConstraintRows(np.array([[0.0, 0.0, 1.0]]), [0.0], [1e8], [1.0])
    r = ConstraintRows(np.array([[1.0, 0.0, 0.0]]), tan.phi, tan.K, tan.B)
    s = ConstraintRows(np.array([[0.0, 1.0, 0.0]]), tan.phi, tan.K, tan.B) if three_d else None
    return ConstraintProblem(M, f, np.array(v0), h, contacts=ContactRows(n, r, [mu], s))


# ------------------------------------------------------------------ stability (Sec. 3, 4.3)
@pytest.mark.parametrize("h", np.logspace(-6, 0, 7))
def test_stiff_spring_mass_damper_is_bounded_for_any_step(h):
    """k = 1e12, b = 1, m = 1: explicit and semi-implicit Euler blow up, the scheme must not."""
    solver, mass = ConstraintSolver(), MassMatrix(np.eye(1))
    x, v = np.array([0.01]), np.array([0.0])
    for _ in range(200):
        rows = ConstraintRows(np.eye(1), x, [1e12], [1.0])
        sol = solver.solve(ConstraintProblem(mass, np.zeros(1), v, h, bilateral=rows))
        v = sol.v1
        x = x + h * v
        assert abs(x[0]) <= 0.01 + 1e-12
        assert np.isfinite(v).all()


@pytest.mark.parametrize("h", np.logspace(-6, 0, 7))
def test_stiff_unilateral_spring_never_gains_energy_for_any_step(h):
    """The same spring as a unilateral row (eq. 68, the QP path), 1 cm compressed under gravity:
    it pushes the mass off, lets it fly and catches it; spring + kinetic + potential energy
    never increases, whatever h."""
    solver, mass, k, g = ConstraintSolver(), MassMatrix(np.eye(1)), 1e12, 9.81
    x, v = np.array([-0.01]), np.array([0.0])

    def energy():
        return 0.5 * v[0] ** 2 + g * x[0] + 0.5 * k * min(x[0], 0.0) ** 2
    e0 = energy()
    for _ in range(200):
        rows = ConstraintRows(np.eye(1), x, [k], [1.0]) if x[0] <= 0 else None
        sol = solver.solve(ConstraintProblem(mass, [-g], v, h, unilateral=rows))
        assert sol.info.residuals.get("nonnegativity", 0.0) == 0.0
        v = sol.v1
        x = x + h * v
        assert np.isfinite(v).all() and energy() <= e0 * (1 + 1e-12)


# ------------------------------------------------------------------ bilateral (Sec. 4.2)
def _random_spd(rng, n):
    A = rng.normal(size=(n, n))
    return A @ A.T + n * np.eye(n)


def test_bilateral_linear_solve_matches_implicit_equations():
    """eqs. 59-62 vs the implicit law solved directly: (M + G^T X G) a = f + G^T rho."""
    rng = np.random.default_rng(0)
    M, G = _random_spd(rng, 5), rng.normal(size=(3, 5))
    f, v0, phi = rng.normal(size=5), rng.normal(size=5), rng.normal(size=3) * 1e-3
    K, B, h = np.array([1e6, 1e9, 1e3]), np.array([1.0, 10.0, 0.0]), 0.01
    sol = ConstraintSolver().solve(ConstraintProblem(
        M, f, v0, h, bilateral=ConstraintRows(G, phi, K, B)))
    chi, rho = h * (h * K + B), -K * phi - (h * K + B) * (G @ v0)
    a = np.linalg.solve(M + G.T @ (chi[:, None] * G), f + G.T @ rho)
    np.testing.assert_allclose(sol.vdot, a, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(sol.lambda_b, rho - chi * (G @ a), rtol=1e-7, atol=1e-8)


def test_redundant_bilateral_rows_share_the_force_without_regularization():
    G = np.array([[0.0, 1.0], [0.0, 1.0]])           # the same row twice
    prob = ConstraintProblem(np.eye(2), [0.0, -9.81], np.zeros(2), 0.01,
                             bilateral=ConstraintRows(G, [0.0, 0.0], [1e10, 1e10], [1.0, 1.0]))
    sol = ConstraintSolver().solve(prob)
    assert np.isfinite(sol.lambda_b).all()
    np.testing.assert_allclose(sol.lambda_b[0], sol.lambda_b[1], rtol=1e-9)
    assert sol.lambda_b.sum() == pytest.approx(9.81, rel=1e-4)


# ------------------------------------------------------------------ unilateral (Sec. 5.3)
def _random_unilateral_problem(seed, m, nv, max_log_stiffness):
    """m unilateral rows on an nv-DOF system, stiffness 1e3 .. 10**max_log_stiffness, slightly
    penetrating."""
    rng = np.random.default_rng(seed)
    M, G = _random_spd(rng, nv), rng.normal(size=(m, nv))
    rows = ConstraintRows(G, -np.abs(rng.normal(size=m)) * 1e-3,
                          10.0 ** rng.uniform(3, max_log_stiffness, m), rng.uniform(0, 10, m))
    return ConstraintProblem(M, rng.normal(size=nv) * 10, rng.normal(size=nv), 0.01, unilateral=rows)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(2, 7), st.integers(0, 10_000))
@example(6, 2, 3606)    # six rows on two DOF, stiffness to 4e8: cvxopt fails, clarabel runs out of iterations
def test_unilateral_qp_reduced_and_lifted_agree_across_backends(m, nv, seed):
    """The reduced program by clarabel and the lifted one by cvxopt agree where both report a
    solution. Interior points may fail on the stiffest rows (lambda ~ 3e5 against P = zeta I,
    found by hypothesis): a backend that does must say so (status, spring residual), never
    return a wrong answer as solved, and the default solver (KKT Newton) still solves it."""
    prob = _random_unilateral_problem(seed, m, nv, max_log_stiffness=9)
    a = ConstraintSolver(formulation="reduced", backend="clarabel", kkt_newton=False).solve(prob)
    b = ConstraintSolver(formulation="lifted", backend="cvxopt", kkt_newton=False).solve(prob)
    ok = [sol.info.status in ("solved", "almost_solved") for sol in (a, b)]
    solved = [sol for sol, good in zip((a, b), ok) if good]
    if len(solved) < 2:
        solved.append(ConstraintSolver().solve(prob))
        assert solved[-1].info.method in ("kkt-newton", "closed_form"), solved[-1].info
    scale = 1.0 + np.max(np.abs(solved[-1].lambda_u))
    # interior point on the normalized objective: near-zero forces to ~1e-5 (conic._equilibrate)
    for sol in solved[:-1]:
        np.testing.assert_allclose(sol.lambda_u, solved[-1].lambda_u, atol=5e-5 * scale)
    for sol in solved:
        assert sol.info.residuals["spring"] <= 1e-6 * scale
        assert sol.info.residuals["nonnegativity"] <= 1e-6 * scale
    for sol, good in zip((a, b), ok):
        if not good:                # a failure is reported, whatever the iterate: the spring rows say so
            assert sol.info.residuals["spring"] > 1e-6 * scale or \
                np.allclose(sol.lambda_u, solved[-1].lambda_u, atol=5e-5 * scale), sol.info


def _objective_and_violation(prob, lam, zeta):
    """The QP of eqs. 83-85 at lam: objective and worst constraint violation."""
    rows = prob.unilateral
    a = prob.M.solve(prob.f + rows.G.T @ lam)
    chi = prob.h * (prob.h * rows.K + rows.B)
    rho = -rows.K * rows.phi - (prob.h * rows.K + rows.B) * rows.phi_dot
    viol = max(0.0, -np.min(lam), -np.min(lam + chi * (rows.G @ a) - rho))
    return 0.5 * zeta * lam @ lam, viol


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 40), st.integers(1, 8), st.integers(0, 10_000))
def test_kkt_newton_solves_the_same_qp_as_the_conic_backends(m, nv, seed):
    """Coupled unilateral rows (m may exceed nv, as under a Winkler foundation): Newton's
    lambda is feasible and its objective is no worse than clarabel's and cvxopt's."""
    prob = _random_unilateral_problem(seed, m, nv, max_log_stiffness=11)
    newton = ConstraintSolver().solve(prob)
    if newton.info.method != "kkt-newton":          # non-convergence is allowed, if reported
        assert newton.info.method.startswith("conic") or newton.info.method == "closed_form"
        return
    obj, viol = _objective_and_violation(prob, newton.lambda_u, 100.0)
    scale = 1.0 + np.abs(newton.lambda_u).max()
    # the spring row lambda + chi G a >= rho cancels terms of size |rho| (2.8e6 against
    # lambda = 4.3e4 at K = 6e9, seed 37): its round-off is relative to |rho|
    rows = prob.unilateral
    rho = rows.K * np.abs(rows.phi) + (prob.h * rows.K + rows.B) * np.abs(rows.phi_dot)
    assert viol <= 1e-7 * (scale + rho.max())
    assert newton.info.residuals["kkt"] <= 1e-9
    for backend in ("clarabel", "cvxopt"):
        ref = ConstraintSolver(backend=backend, kkt_newton=False, formulation="lifted").solve(prob)
        ref_obj, ref_viol = _objective_and_violation(prob, ref.lambda_u, 100.0)
        if ref.info.status != "solved" or ref_viol > 1e-6 * scale:
            continue                   # a failed reference (cvxopt, reported) proves nothing
        assert obj <= ref_obj * (1 + 1e-6) + 1e-6
        np.testing.assert_allclose(newton.lambda_u, ref.lambda_u, atol=5e-5 * scale,
                                   rtol=1e-4)


def test_one_contact_program_is_not_reported_infeasible():
    """Clarabel called 'primal infeasible' this program (lambda_t = 0 is feasible) before the
    objective and rows were scaled (conic._equilibrate); objective weights 1e2 vs 1e10."""
    prog = ConicProgram(sp.diags([100.0, 1.147566e10, 1.147566e10]), np.zeros(3),
                        sp.csr_matrix([[6400.476788, 0.0, 0.0]]), np.array([8861817.125162]),
                        sp.csr_matrix([[1.0, 0.0, 0.0]]), np.zeros(1),
                        np.array([0]), np.array([1]), np.array([2]), np.array([0.5]))
    for backend in BACKENDS:
        res = solve_conic(prog, backend)
        assert res.status.ok
        np.testing.assert_allclose(res.x, [8861817.125162 / 6400.476788, 0.0, 0.0],
                                   rtol=1e-7, atol=1e-6)


def _random_contact_problem(rng, nv: int, m: int, stiffness: float, damping: float, mu: float):
    """``m`` random compliant contacts (normal gap -1e-4, Coulomb tangents) on an SPD ``nv``-body
    problem at h = 0.01."""
    tan = coulomb_tangents(m, 0.01)
    Gn, Gr, Gs = (rng.normal(size=(m, nv)) for _ in range(3))
    contacts = ContactRows(ConstraintRows(Gn, -np.full(m, 1e-4), np.full(m, stiffness), np.full(m, damping)),
                           ConstraintRows(Gr, tan.phi, tan.K, tan.B), np.full(m, mu),
                           ConstraintRows(Gs, tan.phi, tan.K, tan.B))
    return ConstraintProblem(_random_spd(rng, nv), rng.normal(size=nv), rng.normal(size=nv),
                             0.01, contacts=contacts)


def test_reduced_program_is_strictly_convex_and_trivially_feasible():
    """Appendix A: H = diag(zeta, 1, 1, zeta) + PSD; lambda_n large, tangents 0 is feasible."""
    prob = _random_contact_problem(np.random.default_rng(3), 6, 3, 1e8, 1.0, 0.5)
    rows = appendix_a.layout(prob, 100.0)
    red = appendix_a.reduced_program(prob, rows, prob.M)
    assert red.program.dense                 # dense T: the program is built without scipy.sparse
    eig = np.linalg.eigvalsh(red.program.P)
    assert eig.min() >= 1.0 - 1e-9
    x = appendix_a.trivial_feasible_point(rows, red)
    if x is not None:                     # T_nu,nu 1 > 0 for this instance
        slack = red.program.A_in @ x - red.program.b_in
        assert slack.min() >= -1e-9 * (1 + np.abs(red.program.b_in).max())


@pytest.mark.parametrize("seed", range(4))
def test_dense_program_reaches_the_backends_as_its_sparse_form_does(seed):
    """A few contacts give dense programs, which go to CSC once (conic._backend_matrices)
    instead of through scipy.sparse stacking: the backends get the same matrices, so an
    exact-normals round has the same optimum as its sparse copy, with both.  Measured: equal
    (8 seeds); asserted to 1e-7 of ``max|x|``, below the 1.3e-5 by which the two backends' optima
    of one program differ and far below a wrong entry's effect."""
    prob = _random_contact_problem(np.random.default_rng(seed), 8, 3, 1e5, 1e3, 0.3)
    rows = appendix_a.layout(prob, 100.0)
    red = appendix_a.reduced_program(prob, rows, prob.M)
    active, _ = appendix_a.frictionless_active_set(rows, red)
    dense = appendix_a.with_exact_normals(red.program, rows, active)
    p = red.program
    sparse = appendix_a.with_exact_normals(
        ConicProgram(sp.csc_matrix(p.P), p.c, sp.csc_matrix(p.A_eq), p.b_eq, sp.csc_matrix(p.A_in),
                     p.b_in, p.cone_t, p.cone_r, p.cone_s, p.cone_mu), rows, active)
    assert dense.dense and not sparse.dense
    for backend in BACKENDS:
        a, b = solve_conic(dense, backend), solve_conic(sparse, backend)
        assert a.status is b.status
        np.testing.assert_allclose(a.x, b.x, rtol=0, atol=1e-7 * np.abs(b.x).max())


def test_mass_matrix_reuses_a_given_cholesky_factor():
    """MassMatrix(M, cholesky=U) solves with U (a simulator's factor) as with its own."""
    rng = np.random.default_rng(0)
    M = _random_spd(rng, 5)
    X = rng.normal(size=(5, 3))
    U = np.linalg.cholesky(M).T
    np.testing.assert_allclose(MassMatrix(M, cholesky=U).solve(X), np.linalg.solve(M, X), rtol=1e-10)
    np.testing.assert_allclose(MassMatrix(M, cholesky=U).solve(X), MassMatrix(M).solve(X), rtol=1e-12)
    with pytest.raises(ShapeError):
        MassMatrix(M, cholesky=U[:4])
    with pytest.raises(NonFiniteError):
        MassMatrix(M).solve(np.full(5, np.nan))


def test_closed_form_equals_qp_for_uncoupled_rows():
    prob = ConstraintProblem(np.eye(2), [0.0, -9.81], [0.0, -1.0], 0.01,
                             unilateral=ConstraintRows(np.array([[0.0, 1.0]]), [-1e-3], [1e6],
                                                       [1.0]))
    closed = ConstraintSolver(formulation="reduced").solve(prob)
    qp = ConstraintSolver(formulation="lifted").solve(prob)
    assert closed.info.method == "closed_form"
    np.testing.assert_allclose(closed.lambda_u, qp.lambda_u, rtol=1e-7)


# ------------------------------------------------------------------ contact with friction
def test_sliding_particle_gets_coulomb_friction_and_weight_as_normal_force():
    sol = ConstraintSolver().solve(_particle_contact(0.2))
    assert sol.lambda_n[0] == pytest.approx(2 * 9.81, rel=1e-3)
    assert np.hypot(sol.lambda_r, sol.lambda_s)[0] == pytest.approx(0.2 * sol.lambda_n[0],
                                                                   rel=1e-5)
    assert sol.lambda_r[0] < 0                              # opposes the +x sliding
    assert abs(sol.v1[2]) < 1e-3                            # stays on the plane
    assert sol.info.residuals["cone"] <= 1e-6


def test_paper_literal_program_inflates_normal_force_while_sliding():
    """The measured reason for exact_normals (see ConstraintSolver's docstring)."""
    sol = ConstraintSolver(exact_normals=False).solve(_particle_contact(0.2))
    assert sol.lambda_n[0] > 10 * 2 * 9.81
    assert sol.v1[2] > 1.0


@pytest.mark.parametrize("mu,stick", [(0.0, False), (np.inf, True), (5.0, True)])
def test_frictionless_and_sticking_limits(mu, stick):
    sol = ConstraintSolver().solve(_particle_contact(mu, v0=(0.01, 0.0, 0.0)))
    if stick:
        assert abs(sol.v1[0]) < 1e-5
    else:
        assert sol.lambda_r[0] == 0.0 and sol.v1[0] == pytest.approx(0.01)


def test_2d_contact_uses_linear_coulomb_rows():
    sol = ConstraintSolver().solve(_particle_contact(0.3, three_d=False))
    assert sol.lambda_s.shape == (0,)
    assert abs(sol.lambda_r[0]) == pytest.approx(0.3 * sol.lambda_n[0], rel=1e-5)


def _mixed_problem():
    rng = np.random.default_rng(7)
    nv = 6
    tan = coulomb_tangents(2, 0.01)
    return ConstraintProblem(
        _random_spd(rng, nv), rng.normal(size=nv) * 5, rng.normal(size=nv) * 0.1, 0.01,
        bilateral=ConstraintRows(rng.normal(size=(1, nv)), [1e-4], [1e9], [1.0]),
        unilateral=ConstraintRows(rng.normal(size=(1, nv)), [-1e-4], [1e7], [1.0]),
        contacts=ContactRows(ConstraintRows(rng.normal(size=(2, nv)), [-1e-4, 0.0], [1e8, 1e8],
                                            [1.0, 1.0]),
                             ConstraintRows(rng.normal(size=(2, nv)), tan.phi, tan.K, tan.B),
                             [np.inf, 0.0]))


def _assert_same(a, b):
    for x, y in ((a.lambda_b, b.lambda_b), (a.lambda_u, b.lambda_u), (a.lambda_n, b.lambda_n),
                 (a.lambda_r, b.lambda_r)):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-4 * (1 + np.abs(x).max()))


def test_appendix_a_program_lifted_form_agrees_across_backends():
    """Bilateral + unilateral + contact (Appendix A), the paper's single program."""
    prob = _mixed_problem()
    a = ConstraintSolver(formulation="lifted", exact_normals=False).solve(prob)
    b = ConstraintSolver(formulation="lifted", exact_normals=False, backend="cvxopt").solve(prob)
    _assert_same(a, b)
    assert a.lambda_r[1] == 0.0                          # mu = 0: no tangential variable


def test_exact_normals_reduced_form_agrees_across_backends():
    prob = _mixed_problem()
    a = ConstraintSolver(formulation="reduced").solve(prob)
    b = ConstraintSolver(formulation="reduced", backend="cvxopt").solve(prob)
    _assert_same(a, b)
    assert a.info.residuals["spring"] <= 1e-5 and b.info.residuals["nonnegativity"] <= 1e-8


# ------------------------------------------------------------------ models
def test_hertz_law_reproduces_eq_121_and_winkler_stiffness():
    d = np.array([1e-8, 1e-6, 1e-4])
    law = hertz(d, 1e11, 0.01, 1.0)
    np.testing.assert_allclose(-law.K * law.phi, hertz_force(d, 1e11, 0.01), rtol=1e-12)
    np.testing.assert_allclose(winkler([1e-3], 1e7, 0.01, 1.0, 1.0).K, [1e5])


# ------------------------------------------------------------------ input validation
def test_bad_input_raises_typed_errors():
    rows = ConstraintRows(np.eye(2), [0.0, 0.0], [1.0, -1.0], [0.0, 0.0])
    with pytest.raises(InvalidInputError):
        ConstraintProblem(np.eye(2), np.zeros(2), np.zeros(2), 0.01, bilateral=rows)
    with pytest.raises(ShapeError):
        ConstraintProblem(np.eye(2), np.zeros(3), np.zeros(2), 0.01)
    with pytest.raises(NonFiniteError):
        ConstraintProblem(np.eye(2), [np.nan, 0.0], np.zeros(2), 0.01)
    with pytest.raises(InvalidInputError):
        ConstraintProblem(np.eye(2), np.zeros(2), np.zeros(2), -1.0)
    with pytest.raises(InvalidInputError):
        ConstraintSolver(backend="nope")
    with pytest.raises(ShapeError):
        ConstraintProblem(sp.identity(2), np.zeros(2), np.zeros(2), 0.01,
                          unilateral=ConstraintRows(sp.csr_matrix(np.ones((1, 3))), [0.0],
                                                    [1.0], [1.0]))
