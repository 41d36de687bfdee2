"""idyn.qp: the QP adapter against an independent solver, and its failure reporting."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from idyn.errors import InvalidInputError, NonFiniteError, ShapeError
from idyn.qp import REGULARIZATION_SCHEDULE, QPStatus, independent_equalities, solve_qp


def random_qp(seed: int, n: int, meq: int, mineq: int, psd: bool):
    """A feasible convex QP: constraints built around a known feasible point."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n - 2 if psd else n, n))
    H = F.T @ F + (0.0 if psd else 1e-3) * np.eye(n)
    c = rng.standard_normal(n)
    x0 = rng.standard_normal(n)
    Ae = rng.standard_normal((meq, n))
    Ai = rng.standard_normal((mineq, n))
    bi = Ai @ x0 - rng.uniform(0, 1, mineq)
    # bound the PSD directions so the minimum exists
    Ai = np.vstack((Ai, np.eye(n), -np.eye(n)))
    bi = np.concatenate((bi, x0 - 10, -x0 - 10))
    return H, c, Ae, Ae @ x0, Ai, bi


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(3, 12), meq=st.integers(0, 2), mineq=st.integers(0, 10),
       psd=st.booleans())
@example(seed=6384, n=3, meq=2, mineq=1, psd=True)   # cvxopt stalls ("unknown") without a ridge
@pytest.mark.parametrize("backend", ["daqp", "quadprog"])
def test_active_set_backends_match_cvxopt(backend, seed, n, meq, mineq, psd):
    H, c, Ae, be, Ai, bi = random_qp(seed, n, meq, mineq, psd)
    a = solve_qp(H, c, Ae, be, Ai, bi, backend=backend)
    b = solve_qp(H, c, Ae, be, Ai, bi, backend="cvxopt")
    assert a.solved and b.solved
    assert a.objective == pytest.approx(b.objective, rel=1e-5, abs=1e-6)
    assert np.all(Ai @ a.x - bi >= -1e-6 * (1 + np.abs(bi)))
    assert np.allclose(Ae @ a.x, be, atol=1e-8)


def test_cvxopt_stalling_on_a_singular_hessian_gets_the_ridge_schedule():
    """A rank-1 H on a line of two equalities: cvxopt's interior point method stops with status
    "unknown" (a singular KKT system); the adapter retries it with the ridge schedule as it does
    quadprog, reports the ridge used, and the answer is the minimiser of the original problem
    (checked independently below, whatever the ridge)."""
    H, c, Ae, be, Ai, bi = random_qp(6384, 3, 2, 1, True)
    assert np.linalg.matrix_rank(H) == 1
    res = solve_qp(H, c, Ae, be, Ai, bi, backend="cvxopt")
    assert res.solved and res.backend == "cvxopt"
    # which rung of the schedule cvxopt first accepts depends on its build's round-off (1e-9 on
    # one machine, 1e-5 on another): a rung, not the first one
    rungs = np.array(REGULARIZATION_SCHEDULE) * max(np.diag(H).max(), 1.0)
    assert res.regularization > 0 and np.isclose(rungs, res.regularization, rtol=1e-12).any()
    assert np.allclose(Ae @ res.x, be, atol=1e-8) and np.all(Ai @ res.x - bi >= -1e-7)
    # independently: the feasible set is the segment x = x_p + t d (Ae d = 0) cut by A_in, and
    # the convex quadratic in t is minimised by clamping its stationary point to the segment
    d = np.linalg.svd(Ae)[2][-1]
    x_p = np.linalg.lstsq(Ae, be, rcond=None)[0]
    rate, slack = Ai @ d, bi - Ai @ x_p                 # rate t >= slack on every row
    lo, hi = np.max(slack[rate > 0] / rate[rate > 0]), np.min(slack[rate < 0] / rate[rate < 0])
    t = np.clip(-(d @ (H @ x_p + c)) / (d @ H @ d), lo, hi)
    assert res.x == pytest.approx(x_p + t * d, abs=1e-6)
    assert not solve_qp(H, c, Ae, be, Ai, bi, backend="cvxopt", regularize=False).solved


def test_dependent_equalities_are_dropped_not_fatal():
    H = np.eye(3)
    Ae = np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    res = solve_qp(H, np.zeros(3), Ae, [1.0, 2.0, 0.5])
    assert res.solved and res.dropped_equalities == 1
    assert np.allclose(res.x, [0.5, 0.5, 0.5])
    A, b = independent_equalities(Ae, np.array([1.0, 2.0, 0.5]))
    assert A.shape == (2, 3) and np.linalg.matrix_rank(A) == 2


@pytest.mark.parametrize("backend", ["daqp", "quadprog", "cvxopt"])
def test_infeasible_is_reported_not_raised(backend):
    res = solve_qp(np.eye(2), np.zeros(2), A_in=[[1.0, 0.0], [-1.0, 0.0]], b_in=[1.0, 0.0], backend=backend)
    assert not res.solved and np.all(np.isnan(res.x))
    if backend != "cvxopt":
        assert res.status is QPStatus.INFEASIBLE
    res = solve_qp(np.eye(2), np.zeros(2), A_eq=[[1.0, 1.0], [2.0, 2.0]], b_eq=[1.0, 3.0], backend=backend)
    assert not res.solved


def test_semidefinite_hessian_is_regularised_and_reported():
    H = np.diag([1.0, 0.0])
    for backend in ("daqp", "quadprog"):
        res = solve_qp(H, [-1.0, 0.0], A_in=np.eye(2), b_in=[0.0, 0.0], backend=backend)
        assert res.solved and res.backend == backend and 0 < res.regularization <= 1e-8
        assert np.allclose(res.x, [1.0, 0.0], atol=1e-6)
        assert not solve_qp(H, [-1.0, 0.0], A_in=np.eye(2), b_in=[0.0, 0.0], backend=backend,
                            regularize=False).solved


def test_bad_input_raises_typed_errors():
    with pytest.raises(ShapeError):
        solve_qp(np.eye(2), np.zeros(3))
    with pytest.raises(NonFiniteError):
        solve_qp(np.eye(2), [np.nan, 0.0])
    with pytest.raises(ShapeError):
        solve_qp(np.eye(2), np.zeros(2), A_in=np.ones((2, 3)), b_in=np.zeros(2))
    with pytest.raises(InvalidInputError):
        solve_qp(np.eye(2), np.zeros(2), backend="gurobi")


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 8), meq=st.integers(0, 3), mineq=st.integers(0, 8))
def test_feasibility_check_is_the_row_bound(seed, n, meq, mineq):
    """idyn.qp.feasible: every row within tol of its constraint relative to
    (1 + max|x|)(1 + max_j |a_ij|) + |b_i| (written here row by row), NaN never feasible."""
    from idyn.qp import feasible

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
    Ae, Ai = rng.standard_normal((meq, n)), rng.standard_normal((mineq, n))
    tol = 1e-7
    scale = 1.0 + max(abs(t) for t in x)
    # constraints near the boundary: residuals of about tol times the row bound, either sign
    be = Ae @ x + rng.uniform(-2, 2, meq) * tol * (scale * (1 + np.abs(Ae).max(axis=1, initial=0)))
    bi = Ai @ x + rng.uniform(-2, 2, mineq) * tol * (scale * (1 + np.abs(Ai).max(axis=1, initial=0)))
    ok = [abs(sum(a * t for a, t in zip(row, x)) - b) <= tol * (scale * (1 + max(abs(row))) + abs(b))
          for row, b in zip(Ae, be)]
    ok += [sum(a * t for a, t in zip(row, x)) - b >= -tol * (scale * (1 + max(abs(row))) + abs(b))
           for row, b in zip(Ai, bi)]
    near = [abs(abs(sum(a * t for a, t in zip(row, x)) - b) - tol * (scale * (1 + max(abs(row))) + abs(b)))
            < 1e-12 * scale for row, b in zip(np.concatenate((Ae, Ai)), np.concatenate((be, bi)))]
    if not any(near):                       # not decided by round-off
        assert feasible(x, Ae, be, Ai, bi, tol) == all(ok)
    x[0] = np.nan
    assert not feasible(x, Ae, be, Ai, bi, tol)


def _cvxopt_optimum(H, c, Ae, be, Ai, bi):
    """An independent interior-point solution of the same QP (None unless optimal)."""
    from cvxopt import matrix, solvers
    M = lambda a: matrix(np.ascontiguousarray(a, dtype=float))  # noqa: E731
    kw = {}
    if Ai.shape[0]:
        kw.update(G=M(-Ai), h=M(-bi))
    if Ae.shape[0]:
        kw.update(A=M(Ae), b=M(be))
    try:
        sol = solvers.qp(M(H), M(c), options={"show_progress": False, "abstol": 1e-10, "reltol": 1e-10,
                                              "feastol": 1e-10}, **kw)
    except (ValueError, ArithmeticError):
        return None
    if sol["status"] != "optimal":
        return None
    x = np.array(sol["x"]).ravel()
    # cvxopt can call a QP optimal at an infeasible x (n = 2 with two equality rows: a rank-1 H
    # missed a row by 0.55; a ridge H with cond(A_eq) 38 by 1.8e-6, with a lower objective than
    # the one feasible point); asked for feastol 1e-10, an answer off by more is no reference
    scale = 1 + np.abs(x).max()
    if np.abs(Ae @ x - be).max(initial=0) > 1e-8 * scale or (Ai @ x - bi).min(initial=0) < -1e-8 * scale:
        return None
    return x


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10), st.integers(0, 2), st.integers(0, 14), st.integers(0, 2**32 - 1),
       st.sampled_from(["pd", "semidefinite", "ridge"]))
@example(n=2, p=2, r=0, seed=6661, kind="semidefinite")   # cvxopt's "optimal" x is infeasible here
@example(n=2, p=2, r=0, seed=2482, kind="ridge")          # and here, by 1.8e-6
@pytest.mark.parametrize("backend", ["daqp", "quadprog"])
def test_solve_built_reaches_cvxopts_optimum(backend, n, p, r, seed, kind):
    """On feasible random QPs (positive definite, semi-definite, nearly singular Hessians)
    solve_built's answer is feasible and its objective is no worse than the known feasible point's
    and than cvxopt's optimum (an independent solver, when its answer is feasible) within the
    ridge's bias; semi-definite Hessians carry a ridge."""
    from idyn.qp import solve_built
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n if kind == "pd" else max(1, n - 2)))
    H = A @ A.T + (1e-9 * np.eye(n) if kind == "ridge" else 0.0)
    c = rng.standard_normal(n)
    x0 = rng.standard_normal(n)                 # a feasible point
    Ae, Ai = rng.standard_normal((p, n)), rng.standard_normal((r, n))
    be, bi = Ae @ x0, Ai @ x0 - rng.exponential(1.0, r)
    if kind != "pd":                            # bounded below: c in range(H)
        c = H @ rng.standard_normal(n)
    res = solve_built(H, c, Ae, be, Ai, bi, backend=backend)
    assert res.solved
    x = res.x
    scale = 1 + np.abs(x).max()
    assert np.abs(Ae @ x - be).max(initial=0) < 1e-6 * scale and (Ai @ x - bi).min(initial=0) > -1e-6 * scale
    f = lambda y: 0.5 * y @ H @ y + c @ y  # noqa: E731
    for ref in (x0, _cvxopt_optimum(H, c, Ae, be, Ai, bi)):   # the known feasible point, the optimum
        if ref is None:
            continue
        bias = res.regularization * (1 + np.abs(x).max() + np.abs(ref).max()) ** 2
        assert f(x) <= f(ref) + 1e-6 * (1 + abs(f(ref))) + bias
    if res.regularization == 0.0:
        assert np.linalg.eigvalsh(0.5 * (H + H.T)).min() > 0     # no ridge only on a definite H
