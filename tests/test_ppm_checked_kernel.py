"""Algorithm 2 as a control step calls it (idyn.lcp.ppm_contact.solve_factored and
solve_projected) against the LCP's definition, with ``Q`` formed here in numpy: a SOLVED answer
satisfies ``z >= 0``, ``w = Q z + r >= 0``, ``z . w = 0`` (1e-9 of the data, the acceptance
tolerance), an answer that cannot be verified to the tolerance asked is not SOLVED, and the
projected factor gives ``Q = N W N^T`` with the constrained inverse inertia ``W``."""
import numpy as np
import pytest

from idyn.lcp import LCPStatus
from idyn.lcp.ppm_contact import solve_factored, solve_projected


def _check(Q, r, z, w, tol=1e-9):
    """Assert the LCP ``(r, Q)`` holds at ``(z, w)`` (numpy, scaled by the data)."""
    scale = np.abs(r).max() + np.abs(Q).sum(axis=1).max() * np.abs(z).max()
    np.testing.assert_allclose(w, Q @ z + r, atol=1e-12 * scale)
    assert z.min() >= 0.0
    assert w.min() >= -tol * np.abs(r).max()
    assert np.abs(z * w).sum() <= tol * np.abs(r).max() * max(np.abs(z).max(), 1e-300)


def _problem(seed):
    rng = np.random.default_rng(seed)
    n, d = 4 + seed % 5, 6
    G = rng.standard_normal((d, n))
    if seed % 3 == 0:
        G[:, 1] = G[:, 0]                               # duplicated contact (Appendix F)
    r = rng.standard_normal(n)
    warm = np.flatnonzero(rng.random(n) < 0.3).astype(np.intp)
    return G, r, warm


@pytest.mark.parametrize("seed", range(12))
def test_solved_answers_satisfy_the_lcp_and_unverifiable_ones_are_not_solved(seed):
    G, r, warm = _problem(seed)
    Q = G.T @ G
    res = solve_factored(G, r, warm)
    if res.solved:
        _check(Q, r, res.z, res.w)
        assert np.array_equal(res.basis, np.sort(res.basis)) and np.all(res.z[np.setdiff1d(range(r.size), res.basis)] == 0)
    tight = solve_factored(G, r, warm, tol=1e-17)       # below round-off: nothing nontrivial passes
    if res.z.any():
        assert tight.status is LCPStatus.NUMERICAL_FAILURE
    limited = solve_factored(G, r, np.empty(0, np.intp), max_pivots=1)
    assert limited.status in (LCPStatus.SOLVED, LCPStatus.MAX_PIVOTS)
    if limited.solved:
        _check(Q, r, limited.z, limited.w)


def test_most_random_problems_are_solved():
    """The contact problems above (independent or duplicated contacts) are solved, not refused."""
    assert sum(solve_factored(*_problem(seed)).solved for seed in range(60)) >= 58


@pytest.mark.parametrize("seed", range(10))
def test_projected_factor_is_the_constrained_inverse_inertia(seed):
    """``G^T G = N_w^T (I - P) N_w`` with ``P`` the orthogonal projector onto the span of the
    kept rows' whitened columns (the upper-left block of ``A^-1`` in eq. 44 for ``M = L L^T``):
    computed here by numpy's SVD; the LCP on it is then solved."""
    rng = np.random.default_rng(seed)
    m, nu = 2 + seed % 4, 6
    white = np.asfortranarray(rng.standard_normal((nu, 3 * m)))
    if seed % 2:
        white[:, 1] = white[:, 0]                       # duplicated normal
    kept = np.sort(rng.choice(np.arange(m, 3 * m), size=min(2 * m, 1 + seed % 5), replace=False)).astype(np.intp)
    r = rng.standard_normal(m)
    H = white[:, kept]
    U = np.linalg.svd(H)[0][:, :np.linalg.matrix_rank(H)]
    Nw = white[:, :m]
    Q = Nw.T @ Nw - (U.T @ Nw).T @ (U.T @ Nw)
    for warm in (np.zeros(0, dtype=np.intp), np.flatnonzero(rng.random(m) < 0.5).astype(np.intp)):
        res, G = solve_projected(white, m, kept, r, warm)
        np.testing.assert_allclose(G.T @ G, Q, atol=1e-12 * np.abs(Nw).max() ** 2)
        assert G.shape == (nu - U.shape[1], m)
        if res.solved:
            _check(Q, r, res.z, res.w)
    res, G = solve_projected(white, m, np.zeros(0, np.intp), r, np.zeros(0, np.intp))   # nothing kept
    np.testing.assert_allclose(G.T @ G, Nw.T @ Nw, atol=1e-13 * np.abs(Nw).max() ** 2)
    if res.solved:
        _check(Nw.T @ Nw, r, res.z, res.w)


def test_non_finite_constants_never_reach_the_compiled_loop():
    white = np.random.default_rng(0).standard_normal((6, 9))
    for bad in (np.nan, np.inf, 1e200):                    # 1e200: |r|^2 overflows, as unusable
        with np.errstate(over="ignore"):
            res, _ = solve_projected(white, 3, np.array([3, 6], np.intp), np.array([-1.0, bad, 0.5]), np.zeros(0, np.intp))
        assert res.status is LCPStatus.NUMERICAL_FAILURE and not res.z.any()
