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
def test_quadprog_matches_cvxopt(seed, n, meq, mineq, psd):
    H, c, Ae, be, Ai, bi = random_qp(seed, n, meq, mineq, psd)
    a = solve_qp(H, c, Ae, be, Ai, bi, backend="quadprog")
    b = solve_qp(H, c, Ae, be, Ai, bi, backend="cvxopt")
    assert a.solved and b.solved
    assert a.objective == pytest.approx(b.objective, rel=1e-5, abs=1e-6)
    assert np.all(Ai @ a.x - bi >= -1e-6 * (1 + np.abs(bi)))
    assert np.allclose(Ae @ a.x, be, atol=1e-8)


def test_cvxopt_stalling_on_a_singular_hessian_gets_the_ridge_schedule():
    """A rank-1 H on a line of two equalities: cvxopt's interior point method stops with status
    "unknown" (a singular KKT system); the adapter retries it with the ridge schedule as it does
    quadprog, reports the ridge used, and the answer is the minimiser of the original problem."""
    H, c, Ae, be, Ai, bi = random_qp(6384, 3, 2, 1, True)
    assert np.linalg.matrix_rank(H) == 1
    res = solve_qp(H, c, Ae, be, Ai, bi, backend="cvxopt")
    assert res.solved and res.backend == "cvxopt"
    assert res.regularization == pytest.approx(REGULARIZATION_SCHEDULE[0] * max(np.diag(H).max(), 1.0))
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


@pytest.mark.parametrize("backend", ["quadprog", "cvxopt"])
def test_infeasible_is_reported_not_raised(backend):
    res = solve_qp(np.eye(2), np.zeros(2), A_in=[[1.0, 0.0], [-1.0, 0.0]], b_in=[1.0, 0.0], backend=backend)
    assert not res.solved and np.all(np.isnan(res.x))
    if backend == "quadprog":
        assert res.status is QPStatus.INFEASIBLE
    res = solve_qp(np.eye(2), np.zeros(2), A_eq=[[1.0, 1.0], [2.0, 2.0]], b_eq=[1.0, 3.0], backend=backend)
    assert not res.solved


def test_semidefinite_hessian_is_regularised_and_reported():
    H = np.diag([1.0, 0.0])
    res = solve_qp(H, [-1.0, 0.0], A_in=np.eye(2), b_in=[0.0, 0.0])
    assert res.solved and 0 < res.regularization <= 1e-8
    assert np.allclose(res.x, [1.0, 0.0], atol=1e-6)
    assert not solve_qp(H, [-1.0, 0.0], A_in=np.eye(2), b_in=[0.0, 0.0], regularize=False).solved


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
def test_compiled_feasibility_check_is_the_row_bound(seed, n, meq, mineq):
    """idyn._qp_kernel.feasible: every row within tol of its constraint relative to
    (1 + max|x|)(1 + max_j |a_ij|) + |b_i| (written here in numpy), NaN never feasible."""
    from idyn import _qp_kernel

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
    Ae, Ai = rng.standard_normal((meq, n)), rng.standard_normal((mineq, n))
    tol = 1e-7
    scale = 1.0 + np.abs(x).max()
    # constraints near the boundary: residuals of about tol times the row bound, either sign
    be = Ae @ x + rng.uniform(-2, 2, meq) * tol * (scale * (1 + np.abs(Ae).max(axis=1, initial=0)))
    bi = Ai @ x + rng.uniform(-2, 2, mineq) * tol * (scale * (1 + np.abs(Ai).max(axis=1, initial=0)))
    ok_eq = np.abs(Ae @ x - be) <= tol * (scale * (1 + np.abs(Ae).max(axis=1, initial=0)) + np.abs(be))
    ok_in = Ai @ x - bi >= -tol * (scale * (1 + np.abs(Ai).max(axis=1, initial=0)) + np.abs(bi))
    assert _qp_kernel.feasible(x, Ae, be, Ai, bi, tol) == bool(ok_eq.all() and ok_in.all())
    x[0] = np.nan
    assert not _qp_kernel.feasible(x, Ae, be, Ai, bi, tol)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12), st.integers(0, 3), st.integers(0, 16), st.integers(0, 2**32 - 1),
       st.sampled_from(["pd", "semidefinite", "ridge"]))
def test_compiled_first_attempt_equals_the_wrappers(n, p, r, seed, kind):
    """idyn._qp_kernel.quadprog_attempts (without ridge schedule: the first attempt) calls
    quadprog's own routine and LAPACK's Cholesky as their Python wrappers do: the same x bit for
    bit, the same verdicts (positive definiteness with tiny pivots singular, quadprog's error
    codes, the feasibility check)."""
    from scipy.linalg import lapack
    import quadprog
    from idyn import _qp_kernel as kernel
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, max(1, n - 2) if kind != "pd" else n))
    H = A @ A.T + (1e-9 * np.eye(n) if kind == "ridge" else 0.0)
    c = rng.standard_normal(n)
    Ae, be = rng.standard_normal((p, n)), rng.standard_normal(p)
    Ai, bi = rng.standard_normal((r, n)), rng.standard_normal(r) - 1.0
    Hs, x, out = np.empty((n, n)), np.empty(n), np.empty(5)
    code = kernel.quadprog_attempts(H, c, Ae, be, Ai, bi, Ae, be, 1e-7, True, np.zeros(0), Hs, x, out)
    assert np.array_equal(Hs, 0.5 * (H + H.T))
    L, info = lapack.dpotrf(Hs, lower=1)
    d = (L.diagonal() ** 2).tolist()
    pd = info == 0 and min(d) > 1e-12 * max(max(d), 1e-300)
    assert (code != kernel.NOT_TRIED) == pd
    if not pd:
        return
    try:
        C = np.concatenate((Ae, Ai)).T
        ref = quadprog.solve_qp(Hs, -c, C, np.concatenate((be, bi)), p) if C.shape[1] else quadprog.solve_qp(Hs, -c)
    except ValueError:
        assert code in (kernel.INFEASIBLE, kernel.FAILED)
        return
    assert np.array_equal(x, ref[0]) and out[1] == ref[3][0]
    assert (code == kernel.SOLVED) == kernel.feasible(ref[0], Ae, be, Ai, bi, 1e-7)


def _python_schedule(H, c, Ae, be, Ai, bi, tol=1e-7):
    """The former Python form of idyn.qp.solve_built's quadprog attempts (positive definite H
    first, then the ridge schedule; cvxopt not included): (status, x, eps, iterations)."""
    from scipy.linalg import lapack
    import quadprog
    from idyn import _qp_kernel as kernel
    from idyn.qp import REGULARIZATION_SCHEDULE
    n = H.shape[0]
    Hs = 0.5 * (H + H.T)
    scale = max(1.0, float(np.abs(np.diag(Hs)).max()))
    L, info = lapack.dpotrf(Hs, lower=1)
    d = (L.diagonal() ** 2).tolist()
    pd = info == 0 and min(d) > 1e-12 * max(max(d), 1e-300)
    last = ("failed", None, 0.0, 0)
    for eps in ([0.0] if pd else []) + [s * scale for s in REGULARIZATION_SCHEDULE]:
        Hr = Hs + eps * np.eye(n) if eps else Hs
        C = np.concatenate((Ae, Ai)).T
        try:
            out = quadprog.solve_qp(Hr, -c, C, np.concatenate((be, bi)), Ae.shape[0]) if C.shape[1] \
                else quadprog.solve_qp(Hr, -c)
        except ValueError as exc:
            last = ("infeasible" if "inconsistent" in str(exc) else "failed", None, eps, 0)
            continue
        ok = kernel.feasible(out[0], Ae, be, Ai, bi, tol)
        last = ("solved" if ok else "infeasible", out[0], eps, int(out[3][0]))
        if ok:
            break
    return last


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10), st.integers(0, 2), st.integers(0, 14), st.integers(0, 2**32 - 1),
       st.sampled_from(["pd", "semidefinite", "tight"]))
def test_solve_built_schedule_equals_the_python_form(n, p, r, seed, kind):
    """solve_built's compiled quadprog attempts take the decisions, and give the x bit for bit,
    of the former Python loop: semi-definite Hessians go straight to the ridge schedule, nearly
    conflicting rows make attempts infeasible."""
    from idyn.qp import solve_built
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n if kind == "pd" else max(1, n - 2)))
    H = A @ A.T
    c = rng.standard_normal(n)
    Ae, be = rng.standard_normal((p, n)), rng.standard_normal(p)
    Ai, bi = rng.standard_normal((r, n)), rng.standard_normal(r)
    if kind == "tight" and r >= 2:          # two nearly opposite rows: a sliver of feasible set
        Ai[1], bi[1] = -Ai[0] * (1 + 1e-9), -bi[0] - 1e-9
    status, x, eps, iters = _python_schedule(H, c, Ae, be, Ai, bi)
    res = solve_built(H, c, Ae, be, Ai, bi, backend="quadprog")
    if status == "solved":
        assert res.solved and res.backend == "quadprog" and np.array_equal(res.x, x)
        assert res.regularization == eps and res.iterations == iters
    else:
        assert res.backend == "cvxopt"       # quadprog exhausted: the last fallback ran
