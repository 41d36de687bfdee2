"""The LCP solvers' defaults and honest statuses (issue: never call a wrong answer solved).

* Lemke's default pivot limit solves Murty's problem at n = 12 (``2^n`` pivots);
* ppm's default limit scales with n: a 60 x 60 P-matrix that needs 1,258 principal pivots;
* an answer of the regularised LCP ``M + eps I`` is REGULARIZED, not SOLVED, with ``eps`` and
  its residual on the original problem;
* bad options (``tol < 0``, ``tol = nan``, ``max_pivots < 0``) raise typed errors.
"""
from __future__ import annotations

import numpy as np
import pytest

from idyn import Status
from idyn.errors import InvalidInputError
from idyn.lcp import lcp_residuals, lemke, lemke_regularized, ppm, ppm_contact
from idyn.lcp.inputs import default_max_pivots


def murty(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Murty's (1978) LCP: ``M`` unit lower triangular with 2 below the diagonal, ``q = -1``;
    Lemke's method from the covering vector of ones makes ``2^n`` pivots."""
    return np.tril(np.full((n, n), 2.0), -1) + np.eye(n), -np.ones(n)


def test_lemke_solves_murtys_n12_problem_by_default():
    M, q = murty(12)
    res = lemke(M, q)
    assert res.status is Status.SOLVED and res.pivots == 2 ** 12
    assert lcp_residuals(M, q, res.z).ok()
    assert default_max_pivots(12) >= 2 ** 12 and default_max_pivots(14) >= 2 ** 14
    # the limit grows linearly for large problems (a pivot costs n^2): about constant work
    assert default_max_pivots(300) == 50 * 300
    # and a limit that is reached says so
    capped = lemke(M, q, max_pivots=100)
    assert capped.status is Status.MAX_PIVOTS and capped.pivots == 100 and not capped.solved


def test_ppm_limit_scales_with_n():
    """A unit lower-triangular (hence P-) matrix of size 60 on which principal pivoting needs
    1,258 pivots, twice the old fixed ``max(100, 10 n)`` = 600."""
    rng = np.random.default_rng(1)
    n = 60
    M = np.tril(rng.standard_normal((n, n)), -1) * 1.5 + np.eye(n)
    q = rng.standard_normal(n)
    res = ppm(M, q)
    assert res.status is Status.SOLVED and res.pivots > 10 * n
    assert lcp_residuals(M, q, res.z).ok()


@pytest.mark.parametrize("M, q", [
    (np.zeros((1, 1)), -np.ones(1)),                          # w = -1 whatever z: no solution
    (np.array([[1.0, -1.0], [-1.0, 1.0]]), -np.ones(2)),      # PSD, w1 + w2 = -2: no solution
])
def test_regularized_answer_is_not_called_solved(M, q):
    res = lemke_regularized(M, q)
    assert res.status is Status.REGULARIZED and res.status is not Status.SOLVED
    assert res.regularization > 0
    # it solves the problem it names: (q, M + eps I)
    Me = M + res.regularization * np.eye(q.size)
    assert lcp_residuals(Me, q, res.z).ok()
    # and says how far that is from the original (which has no solution)
    assert res.original_residual == pytest.approx(lcp_residuals(M, q, res.z).worst)
    assert res.original_residual > 1e-3


def test_regularized_keeps_solved_for_the_original():
    res = lemke_regularized(np.eye(2), np.array([-1.0, 1.0]))
    assert res.status is Status.SOLVED and res.regularization == 0.0 and np.isnan(res.original_residual)


@pytest.mark.parametrize("solver", ["lemke", "lemke_regularized", "ppm", "ppm_contact"])
@pytest.mark.parametrize("option", [{"tol": -1e-9}, {"tol": float("nan")}, {"tol": float("inf")}, {"tol": "1e-9"},
                                    {"max_pivots": -1}, {"max_pivots": 2.5}])
def test_bad_solver_options_raise_typed_errors(solver, option):
    M, q = np.eye(2), np.array([-1.0, 1.0])
    call = {"lemke": lambda: lemke(M, q, **option),
            "lemke_regularized": lambda: lemke_regularized(M, q, **option),
            "ppm": lambda: ppm(M, q, **option),
            "ppm_contact": lambda: ppm_contact(np.eye(2), np.eye(2), np.zeros(2), offset=q, **option)}[solver]
    with pytest.raises(InvalidInputError):
        call()


@pytest.mark.parametrize("n", [16, 24])
def test_regularized_pivots_are_bounded_by_one_limit_for_the_whole_call(n):
    """Murty's problem beyond the default limit: each of lemke_regularized's attempts used to
    get a full limit (7 x 2^22 / n^2 pivots); the whole call now stops within one limit, and
    says MAX_PIVOTS unless an attempt passed."""

    M, q = murty(n)
    res = lemke_regularized(M, q)
    assert res.pivots <= default_max_pivots(n)
    assert res.status in (Status.MAX_PIVOTS, Status.REGULARIZED, Status.SOLVED)
    if res.status is Status.MAX_PIVOTS:
        assert not res.solved
    limited = lemke_regularized(M, q, max_pivots=50)
    assert limited.pivots <= 50 and limited.status is Status.MAX_PIVOTS
