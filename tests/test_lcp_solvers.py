"""Unit tests of idyn.lcp on synthetic problems: classics, degeneracy, QP cross-checks, errors."""
import sys

import numpy as np
import pytest
import quadprog
from cvxopt import matrix as cvx_matrix, solvers as cvx_solvers
from hypothesis import assume, example, given, settings, strategies as st

from idyn.errors import InvalidInputError, NonFiniteError, ShapeError
from idyn.lcp import (LCPStatus, find_indices, is_lcp_solution, lcp_residuals, lemke,
                      lemke_regularized, mindiff, mlcp_to_lcp, ppm, ppm_contact)
from idyn.lcp.principal_pivoting import principal_pivoting
from lcp_problems import degenerate_psd, enumerated_lcp, greedy_cycling_example, lcp_worst, murty_matrix

ppm_module = sys.modules["idyn.lcp.ppm"]
DENSE = [lemke, lemke_regularized, ppm]


def random_pd(rng, n):
    A = rng.standard_normal((n, n))
    return A @ A.T + 0.1 * np.eye(n)


@pytest.mark.parametrize("solver", DENSE)
def test_trivial_q_nonnegative(solver):
    M = random_pd(np.random.default_rng(0), 5)
    q = np.abs(np.random.default_rng(1).standard_normal(5))
    res = solver(M, q)
    assert res.solved and res.pivots == 0 and np.all(res.z == 0) and np.allclose(res.w, q)


@pytest.mark.parametrize("solver", DENSE)
def test_all_zero_q(solver):
    res = solver(random_pd(np.random.default_rng(2), 6), np.zeros(6))
    assert res.solved and np.all(res.z == 0)


@pytest.mark.parametrize("solver", DENSE)
def test_empty_problem(solver):
    res = solver(np.zeros((0, 0)), np.zeros(0))
    assert res.solved and res.z.shape == (0,)


@pytest.mark.parametrize("n", [3, 6, 8])
def test_murty_exponential_example(n):
    """Murty's P-matrix: the unique solution is z = (0, ..., 0, 1); every solver finds it."""
    M, q = murty_matrix(n)
    expected = np.zeros(n)
    expected[-1] = 1.0
    for solver in DENSE:
        res = solver(M, q)
        assert res.solved and np.allclose(res.z, expected), solver.__name__


def test_greedy_rule_cycles_and_guard_recovers():
    M, q = greedy_cycling_example()
    unguarded = principal_pivoting(ppm_module._DenseSystem(M, q), q, np.empty(0, np.intp), 500,
                                   cycle_guard=False)
    assert unguarded.status is LCPStatus.MAX_PIVOTS  # Algorithm 2's greedy rule cycles here
    res = ppm(M, q)
    assert res.solved and np.allclose(res.z, 1.0 / 3.0) and res.pivots < 30


@pytest.mark.parametrize("seed", range(6))
def test_degenerate_rank_deficient_psd(seed):
    M, q = degenerate_psd(24, 3, seed)
    for solver in DENSE:
        res = solver(M, q)
        assert res.solved, (solver.__name__, res.status)
        assert lcp_residuals(M, q, res.z, res.w).ok()


def test_lexicographic_rule_terminates_on_highly_degenerate_problem():
    """Every pair of rows is identical and q has exact ties: without anti-cycling Lemke's
    method may cycle here; ours must terminate with a solution."""
    n = 12
    v = np.ones(n)
    M = np.outer(v, v) + np.kron(np.eye(n // 2), np.ones((2, 2)))
    q = -np.ones(n)
    res = lemke(M, q)
    assert res.solved and res.pivots < 50 * n


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 25), st.integers(0, 10 ** 6))
def test_pd_matches_quadprog(n, seed):
    rng = np.random.default_rng(seed)
    M = random_pd(rng, n)
    q = rng.standard_normal(n)
    # LCP(q, M), M SPD <=> min 1/2 z'Mz + q'z s.t. z >= 0 (quadprog: min 1/2 x'Gx - a'x, C'x >= b)
    z_qp = quadprog.solve_qp(M, -q, np.eye(n), np.zeros(n))[0]
    for solver in DENSE:
        res = solver(M, q)
        assert res.solved
        assert np.allclose(res.z, z_qp, atol=1e-7 * max(1.0, np.abs(z_qp).max()))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 20), st.integers(1, 5), st.integers(0, 10 ** 6))
def test_psd_objective_matches_cvxopt(n, rank, seed):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, rank))
    M = B @ B.T
    q = B @ rng.standard_normal(rank) + 0.05 * rng.random(n)
    cvx_solvers.options.update(show_progress=False, abstol=1e-12, reltol=1e-12, feastol=1e-12)
    sol = cvx_solvers.qp(cvx_matrix(M), cvx_matrix(q), cvx_matrix(-np.eye(n)), cvx_matrix(np.zeros(n)))
    z_ref = np.array(sol["x"]).ravel()
    f = lambda z: 0.5 * z @ M @ z + q @ z
    for solver in DENSE:
        res = solver(M, q)
        assert res.solved
        assert f(res.z) <= f(z_ref) + 1e-7 * (1 + abs(f(z_ref)))


def test_infeasible_psd_reports_ray_termination():
    M = np.array([[1.0, -1.0], [-1.0, 1.0]])
    q = np.array([-1.0, -1.0])  # w1 + w2 = -2 < 0 for every z: no solution
    assert lemke(M, q).status is LCPStatus.RAY_TERMINATION
    assert ppm(M, q).status in (LCPStatus.RAY_TERMINATION, LCPStatus.MAX_PIVOTS)


def test_max_pivots_is_a_status():
    rng = np.random.default_rng(9)
    M, q = random_pd(rng, 30), -np.abs(rng.standard_normal(30))
    res = lemke(M, q, max_pivots=2)
    assert res.status is LCPStatus.MAX_PIVOTS and res.pivots == 2


def test_warm_start_from_solution_needs_no_pivot():
    rng = np.random.default_rng(5)
    M, q = random_pd(rng, 15), rng.standard_normal(15)
    cold = lemke(M, q)
    warm = lemke(M, q, warm_start=cold.basis)
    assert warm.solved and warm.pivots == 0 and np.allclose(warm.z, cold.z)
    assert ppm(M, q, warm_start=cold.basis).pivots == 0


def test_warm_start_with_wrong_basis_still_solves():
    rng = np.random.default_rng(6)
    M, q = random_pd(rng, 15), rng.standard_normal(15)
    res = lemke(M, q, warm_start=np.arange(0, 15, 2))
    assert res.solved and is_lcp_solution(M, q, res.z)


def test_regularization_is_reported():
    # a singular copositive problem whose unregularised path fails numerically is rare; force
    # failure with a one-pivot budget so the fallback runs, and check the bookkeeping
    rng = np.random.default_rng(3)
    M, q = random_pd(rng, 8), rng.standard_normal(8) - 1.0
    res = lemke_regularized(M, q, max_pivots=1, schedule=(1e-8,))
    assert res.status is LCPStatus.MAX_PIVOTS and res.regularization == 0.0
    ok = lemke_regularized(M, q)
    assert ok.solved and ok.regularization == 0.0


def test_regularized_solves_perturbed_problem_when_needed():
    M = np.zeros((3, 3))
    q = np.array([-1.0, 0.5, -2.0])  # M = 0, q has negatives: no solution unless regularised
    res = lemke_regularized(M, q)
    assert res.solved and res.regularization > 0
    assert lcp_residuals(M + res.regularization * np.eye(3), q, res.z, res.w).ok()


@pytest.mark.parametrize("solver", DENSE)
def test_malformed_input_raises_typed_errors(solver):
    with pytest.raises(ShapeError):
        solver(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ShapeError):
        solver(np.eye(3), np.ones(2))
    with pytest.raises(NonFiniteError):
        solver(np.eye(2), np.array([np.nan, 1.0]))
    with pytest.raises(NonFiniteError):
        solver(np.array([[np.inf, 0], [0, 1.0]]), np.ones(2))


def test_ppm_contact_rejects_bad_input():
    M = np.eye(3)
    with pytest.raises(ShapeError):
        ppm_contact(np.ones((2, 4)), M, np.ones(3))
    with pytest.raises(InvalidInputError):
        ppm_contact(np.ones((2, 3)), -M, np.ones(3))
    with pytest.raises(ShapeError):
        ppm_contact(np.ones((2, 3)), M, np.ones(3), warm_start=[5])


def test_mlcp_to_lcp_matches_eqs_121_122():
    rng = np.random.default_rng(0)
    A = random_pd(rng, 4)
    B, C, D = random_pd(rng, 3), rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    g, h = rng.standard_normal(4), rng.standard_normal(3)
    Q, r = mlcp_to_lcp(A, B, C, D, g, h)
    Ai = np.linalg.inv(A)
    assert np.allclose(Q, B - D @ Ai @ C) and np.allclose(r, h - D @ Ai @ g)
    red = mlcp_to_lcp(A, B, C, D, g, h)
    z = np.abs(rng.standard_normal(3))
    x = red.unconstrained(z)
    assert np.allclose(A @ x + C @ z + g, 0)
    with pytest.raises(InvalidInputError):
        mlcp_to_lcp(np.zeros((4, 4)), B, C, D, g, h)


def test_mindiff_enumerates_and_picks_closest():
    # Q = [[1,1],[1,1]] (two identical contacts): every split of the impulse is a solution;
    # with A = I, C = -I (x = z), the closest solution to x0 is chosen.
    A, C = np.eye(2), -np.eye(2)
    D, B = np.zeros((2, 2)), np.ones((2, 2))
    g, h = np.zeros(2), -np.ones(2)
    for x0, expected in [((1.0, 0.0), (1.0, 0.0)), ((0.0, 1.0), (0.0, 1.0))]:
        out = mindiff(A, B, C, D, g, h, np.array(x0))
        assert out.lcp.solved and np.allclose(out.x, expected) and out.solutions == 2
    with pytest.raises(InvalidInputError):
        mindiff(np.eye(13), np.eye(13), np.eye(13), np.eye(13), np.zeros(13), np.zeros(13),
                np.zeros(13))


def test_mindiff_infeasible():
    out = mindiff(np.eye(1), np.array([[-1.0]]), np.zeros((1, 1)), np.zeros((1, 1)),
                  np.zeros(1), np.array([-1.0]), np.zeros(1))
    assert out.lcp.status is LCPStatus.INFEASIBLE and out.epsilon == np.inf


def test_find_indices_drops_dependent_rows():
    rng = np.random.default_rng(0)
    m = 8
    M = random_pd(rng, m)
    P = np.eye(m)[2:]               # 6 actuated of 8
    S = rng.standard_normal((3, m))
    S[2] = S[0]                     # duplicated contact
    T = rng.standard_normal((3, m))
    s, t = find_indices(M, P, S, T)
    X = np.vstack([P, S[s], T[t]])
    assert len(s) + len(t) == 2      # only m - 6 rows fit
    assert np.linalg.matrix_rank(X @ np.linalg.solve(M, X.T)) == X.shape[0]
    with pytest.raises(InvalidInputError):
        find_indices(M, np.vstack([P, P[:1]]), S, T)


def test_residuals_detect_violations():
    M, q = np.eye(2), np.array([-1.0, 1.0])
    assert is_lcp_solution(M, q, [1.0, 0.0])
    assert not is_lcp_solution(M, q, [0.5, 0.0])          # w < 0
    assert not is_lcp_solution(M, q, [1.0, 1.0])          # z.w > 0
    assert not is_lcp_solution(M, q, [1.0, 0.0], w=[0.1, 1.0])  # w != Mz + q


def test_ppm_contact_survives_an_empty_active_set():
    """The warm-started contact leaves the active set and nothing enters in the same iteration:
    the Gram factor is then empty, and BLAS rejected its 0 x 0 triangular solve (_fblas.error
    on a random penetrating state in the controller tests)."""
    N, f_star = np.array([[-2.0, -2.0], [2.0, 1.0]]), np.array([2.0, 0.0])
    res = ppm_contact(N, np.eye(2), f_star, warm_start=[1])
    Q, r = N @ N.T, N @ f_star
    assert res.solved and lcp_residuals(Q, r, res.z).ok()
    assert np.array_equal(res.basis, [0])


def test_residuals_reject_huge_answers_that_violate_w_in_the_problems_units():
    """An infeasible LCP (no solution exists) and a 'solution' of 1e13 whose w_1 = -1001 is
    negative by 1000 times the data: relative to ||M|| max|z| that is 5e-11, which the first
    residual check accepted (Lemke and Algorithm 2 reported such answers as SOLVED)."""
    M, q = np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([-1.0, -1.0])
    z = np.array([1e13, 1e13 - 1e3])
    res = lcp_residuals(M, q, z)
    assert res.negative_w > 1e2 and not res.ok()
    assert res.roundoff > 1e-9          # terms 1e13 times the data: w = M z + q is noise


def test_lemke_reports_a_singular_refactorisation_instead_of_raising():
    """Stage I KKT LCP of a standing LINKS (seed 36 of 1e-5 rad jitter): the updated basis
    drifted and was singular when rebuilt; numba's inverse raised LinAlgError out of lemke
    (seen once in the 2000-step chatter test).  A solver reports, the fallback solves."""
    from idyn import controllers
    from idyn.controllers.dissipation import build_stage_one
    from idyn.experiments.benchmarks.controllers import standing_problem

    p = standing_problem("links", 4, 1.0)
    ctrl = controllers.make("qp-coulomb", p.model, feedback=False)
    rng = np.random.default_rng(36)
    q = p.state.q.copy()
    q[p.model.actuated_q] += rng.normal(0, 1e-5, p.model.na)
    step = ctrl.dynamics.update(q, rng.normal(0, 1e-6, p.model.nv), p.desired.vdot, p.contacts)
    prob = build_stage_one(step, True)
    nc = prob.G.shape[0]
    M = np.block([[prob.H, -prob.G.T], [prob.G, np.zeros((nc, nc))]])
    r = np.concatenate((prob.c, prob.g))
    res = lemke(M, r)                       # must not raise
    assert res.solved or res.status is LCPStatus.NUMERICAL_FAILURE
    reg = lemke_regularized(M, r)
    assert reg.solved and lcp_residuals(M + reg.regularization * np.eye(r.size), r, reg.z).ok()


def test_independent_columns_is_algorithm_1_greedy_scan():
    """The compiled scan keeps a column iff its distance from the span of the columns kept before
    it exceeds tol times its norm (checked by least squares), in visiting order."""
    from idyn.lcp.find_indices import independent_columns

    rng = np.random.default_rng(7)
    for trial in range(200):
        m, n = int(rng.integers(1, 8)), int(rng.integers(0, 20))
        C = rng.standard_normal((m, m)) @ rng.standard_normal((m, n)) * (rng.random(n) < 0.9)
        if n > 3:
            C[:, 3] = C[:, 0] - C[:, 1]                 # exactly dependent
        tol = (1e-6, 1e-3, 0.5)[trial % 3]
        kept, expect = independent_columns(C, tol), []
        for j in range(n):
            if len(expect) == m:
                break
            B = C[:, expect]
            res = C[:, j] - B @ np.linalg.lstsq(B, C[:, j], rcond=None)[0] if expect else C[:, j]
            norm = np.linalg.norm(C[:, j])
            if norm > 0 and np.linalg.norm(res) > tol * norm * (1 + 1e-9):
                expect.append(j)
        assert list(kept) == expect


def _brute_force_lcp(Q, r):
    """Every solution of the LCP ``(r, Q)`` (n <= 8) by enumerating the complementary bases:
    ``z_a = -Q_aa^-1 r_a`` on each index set ``a`` with ``Q_aa`` non-singular, kept when
    ``z >= 0`` and ``w = Q z + r >= 0`` (to 1e-9 of the data)."""
    from itertools import combinations
    n, out = r.size, []
    scale = 1e-9 * max(np.abs(r).max(), 1e-300)
    for k in range(n + 1):
        for a in map(list, combinations(range(n), k)):
            z = np.zeros(n)
            if a:
                if np.linalg.cond(Q[np.ix_(a, a)]) > 1e12:
                    continue
                z[a] = np.linalg.solve(Q[np.ix_(a, a)], -r[a])
            w = Q @ z + r
            if z.min() >= -scale and w.min() >= -scale:
                out.append(z)
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 7), st.integers(0, 10_000), st.booleans())
@example(4, 3817, False)           # unverifiable to tol in double precision (docstring)
def test_algorithm_2_solves_the_lcp_and_finds_its_unique_solution(n, seed, warm):
    """ppm_contact on LCPs (r, G^T G) with independent contacts (Q positive definite: exactly one
    solution): its answer passes the LCP residuals computed here in numpy and is the solution
    found by enumerating every complementary basis, to round-off amplified by cond(Q).

    The one honest exception: a solution whose terms exceed the data by more than tol / eps
    (``roundoff`` of idyn.lcp.residuals above 1e-9, e.g. n = 4, seed = 3817: cond(Q) 3.5e7, r of
    2e-3, z of 7e3) cannot be verified to the default tol in double precision and is reported
    NUMERICAL_FAILURE, never SOLVED; its z is still the enumerated solution."""
    rng = np.random.default_rng(seed)
    d = n + int(rng.integers(0, 3))
    G = rng.standard_normal((d, n))
    r = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
    start = np.flatnonzero(rng.random(n) < 0.5) if warm else None
    ours = ppm_contact(G.T, np.eye(d), np.zeros(d), start, offset=r)
    Q = G.T @ G
    if not ours.solved:
        assert ours.status is LCPStatus.NUMERICAL_FAILURE
        assert lcp_residuals(Q, r, ours.z).roundoff > 1e-9, "a verifiable answer was refused"
        solutions = _brute_force_lcp(Q, r)
        rtol = 1e-14 * np.linalg.cond(Q)
        np.testing.assert_allclose(ours.z, solutions[0], rtol=rtol, atol=rtol * (1 + np.abs(solutions[0]).max()))
        return
    z, w = ours.z, Q @ ours.z + r
    scale = np.abs(r).max() + np.abs(Q).sum(axis=1).max() * np.abs(z).max()
    assert z.min() >= 0.0 and w.min() >= -1e-9 * scale and abs(z @ w) <= 1e-9 * scale * max(np.abs(z).max(), 1e-300)
    np.testing.assert_allclose(ours.w, w, atol=1e-12 * scale)
    np.testing.assert_array_equal(ours.basis, np.sort(ours.basis))
    solutions = _brute_force_lcp(Q, r)
    assert len(solutions) == 1
    rtol = max(1e-9, 1e-14 * np.linalg.cond(Q))
    np.testing.assert_allclose(z, solutions[0], rtol=rtol, atol=rtol * (1 + np.abs(solutions[0]).max()))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 10_000))
def test_algorithm_2_on_duplicated_contacts_solves_the_lcp(k, copies, seed):
    """Exactly duplicated contacts (Q = G^T G singular, Appendix F: a duplicate's w equals its
    original's): Algorithm 2's answer satisfies the LCP as checked in numpy, as the enumeration
    of complementary bases confirms one exists, with an independent active set."""
    rng = np.random.default_rng(seed)
    d = k + int(rng.integers(0, 2))
    base = rng.standard_normal((d, k))
    # the distinct contacts well conditioned: with cond(base) 3.6e5 (seed 2267) the LCP's
    # answer is 1e10 and no double-precision solve passes the residual check; the solver then
    # says NUMERICAL_FAILURE, which is honest but not what this test is about
    assume(np.linalg.cond(base) < 1e4)
    pick = np.concatenate((np.arange(k), rng.integers(0, k, size=copies)))
    G = base[:, pick]
    r = (rng.standard_normal(k) * 10.0 ** rng.uniform(-2, 2))[pick]
    res = ppm_contact(G.T, np.eye(d), np.zeros(d), offset=r)
    Q = G.T @ G
    w = Q @ res.z + r
    assert res.solved and res.z.min() >= 0 and w.min() >= -1e-9 * np.abs(r).max()
    assert abs(res.z @ w) <= 1e-9 * np.abs(r).max() * max(np.abs(res.z).max(), 1e-300)
    assert res.basis.size == np.linalg.matrix_rank(G[:, res.basis]) if res.basis.size else True
    assert _brute_force_lcp(Q, r)


def test_algorithm_2_reports_what_it_cannot_solve_and_never_a_wrong_answer():
    """Two contacts on one direction whose constants need an exchange Algorithm 2 does not make
    (the offset outside the range of N): Algorithm 2 alone (solve_factored, lcp-noslip's path)
    reports not SOLVED, and the public ppm_contact hands the LCP to Lemke and solves it; every
    SOLVED answer passes the residuals.  A non-finite factor never reaches the compiled loop."""
    from idyn.lcp.ppm_contact import solve_factored

    unsolved = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        G, r = rng.standard_normal((1, 2)), rng.standard_normal(2)
        alone = solve_factored(G, r, np.empty(0, np.intp))
        res = ppm_contact(G.T, np.eye(1), np.zeros(1), offset=r)
        Q = G.T @ G
        for answer in (alone, res):
            if answer.solved:
                assert answer.status is LCPStatus.SOLVED and lcp_residuals(Q, r, answer.z).ok()
        if _brute_force_lcp(Q, r):
            assert res.solved
            unsolved += not alone.solved
        else:
            assert not res.solved
    assert unsolved > 0
    for bad in (np.nan, np.inf):
        res = solve_factored(np.array([[1.0, bad]]), np.array([-1.0, -1.0]), np.empty(0, np.intp))
        assert res.status is LCPStatus.NUMERICAL_FAILURE and not res.z.any()
    with pytest.raises(NonFiniteError):
        ppm_contact(np.array([[1.0]]), np.eye(1), np.zeros(1), offset=np.array([np.nan]))


# The friction-pyramid LCP (paper eqs. 52-56, 64) of a box resting flat on a plane on four
# coplanar contacts, equilibrated as idyn.sim's ap-lcp builds it (idyn.friction_pyramid): step 145
# of test_sim's energy example.  Rows: f_N (4), the pyramid edges +S, -S, +T, -T (4 each), the
# slip speeds (4).  Data: the Delassus block of [N; S; T] (upper triangle, row by row), the
# scaled friction coefficient, the scaled edge sums and the normal constants, which differ by
# 2e-11 (5e-9 relative: the box is flat but for round-off).
RESTING_BOX_W = [
    0.9999999999999998, 0.22361504245855235, 0.13627173473513965, -0.640113222806308, -0.5287342391966171,
    -0.34985071097457243, -0.3498507109745726, -0.5287342391966171, -0.13535872884615366,
    -0.19045201694777075, -0.19045201694777075, -0.1353587288461537,
    1.0000000000000002, -0.6401132228063081, 0.1362717347351395, -0.15522877633658172,
    -0.10271114245898351, -0.10271114245898352, -0.15522877633658172, 0.34172520189151956,
    0.48081312891239847, 0.48081312891239836, 0.3417252018915196,
    1.0000000000000002, 0.22361504245855246, 0.15522877633658164, 0.10271114245898347, 0.1027111424589835,
    0.15522877633658164, -0.34172520189151956, -0.48081312891239836, -0.48081312891239836,
    -0.3417252018915196,
    1.0000000000000002, 0.5287342391966172, 0.34985071097457254, 0.3498507109745726, 0.5287342391966172,
    0.13535872884615363, 0.1904520169477707, 0.19045201694777075, 0.1353587288461537,
    1.0000000000000002, 0.3872334932445887, 0.8284066244564068, 0.8372137960761146, -0.19045232284984687,
    -0.09188893722977504, 0.18489396600116637, 0.25655318474960764,
    1.0, -0.1956402140456896, 0.8284066244564066, 0.627592054537196, 0.40582957158427024,
    -0.34429038416693675, -0.5838547063246025,
    1.0000000000000002, 0.3872334932445889, -0.5838547063246022, -0.3442903841669368, 0.40582957158427024,
    0.6275920545371962,
    1.0000000000000002, 0.25655318474960753, 0.18489396600116637, -0.09188893722977501,
    -0.1904523228498469,
    1.0, 0.9235051413859656, 0.16346848489235152, -0.2274622726485686,
    1.0000000000000002, 0.52939024515389, 0.1634684848923515,
    1.0, 0.9235051413859658,
    1.0000000000000002,
]
RESTING_BOX_MU = np.float64(1.1822749016585006)
RESTING_BOX_E = ([1.4345898688350278, 0.9492335626522902, 0.9492335626522904, 1.4345898688350278], [0.8905943518702772, 1.2530812903005977, 1.2530812903005977, 0.8905943518702775])
RESTING_BOX_QN = [-0.004161375977491367, -0.004161375963604125, -0.0041613759693321, -0.004161375955444856]


def resting_box_lcp():
    """``(M, q)`` of the resting box: ``M = [[P W P^T, [0; E]], [mu I, -E^T, 0]]`` with
    ``P = [I; S; -S; T; -T]`` picking the rows of ``W``."""
    W = np.zeros((12, 12))
    W[np.triu_indices(12)] = RESTING_BOX_W
    W += np.triu(W, 1).T
    eye, zero = np.eye(4), np.zeros((4, 4))
    P = np.block([[eye, zero, zero], [zero, eye, zero], [zero, -eye, zero], [zero, zero, eye], [zero, zero, -eye]])
    E = np.vstack([np.diag(RESTING_BOX_E[0])] * 2 + [np.diag(RESTING_BOX_E[1])] * 2)
    M = np.zeros((24, 24))
    M[:20, :20] = P @ W @ P.T
    M[4:20, 20:] = E
    M[20:, 4:20] = -E.T
    M[20:, :4] = RESTING_BOX_MU * eye
    return M, np.concatenate((RESTING_BOX_QN, np.zeros(20)))


def test_lemke_solves_the_resting_box_that_needed_regularisation():
    """The early z0 exit (Z0_EXIT tie widths) ended this path 80 tie widths above the minimum
    ratio, leaving w = -8e-12 (2e-9 of max|q|): rejected, and only eps = 1e-4 regularisation got
    an answer.  The LCP is solvable (either diagonal pair of contacts carries the box); the path
    re-followed with the textbook exit rule (z0 leaves on a tie only) ends at a solution."""
    from idyn.lcp.lemke import cold_checked
    from idyn.lcp.residuals import DEFAULT_TOL

    M, q = resting_box_lcp()
    passed, _ = cold_checked(M, q, 1e-12, DEFAULT_TOL, np.empty(24))
    assert not passed                       # the early-exit path's answer is rejected
    res = lemke_regularized(M, q)
    assert res.solved and res.regularization == 0.0 and lcp_residuals(M, q, res.z).worst < 1e-13
    np.testing.assert_allclose(res.z[:4], [0.0, 0.0115630, 0.0115630, 0.0], atol=1e-7)
