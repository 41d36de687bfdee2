"""Algorithm 2's compiled acceptance check (idyn.lcp._ppm_kernel.checked_contact_ppm) decides as
the pivoting loop followed by idyn.lcp.residuals.residuals_from_parts at the kernel's scales
did, on solvable, tight-tolerance and pivot-limited problems."""
import numpy as np
import pytest

from idyn.lcp._ppm_kernel import MAX_PIVOTS, NUMERICAL_FAILURE, SOLVED, checked_contact_ppm, contact_ppm, scales
from idyn.lcp.principal_pivoting import REL_TOL
from idyn.lcp.residuals import residuals_from_parts


def _reference(GT, r, warm, limit, tol):
    n, d = GT.shape
    z, w, active = np.zeros(n), np.empty(n), np.empty(d, dtype=np.intp)
    size, status, pivots = contact_ppm(GT, r, warm, limit, 1e-9, REL_TOL, z, w, active)
    if status == SOLVED and not residuals_from_parts(z, w, *scales(GT, r)).ok(tol):
        status = NUMERICAL_FAILURE
    return z, w, np.sort(active[:size]), status, pivots


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("tol, limit", [(1e-8, 100), (1e-17, 100), (1e-8, 1)])
def test_checked_contact_ppm_equals_loop_then_residual_check(seed, tol, limit):
    rng = np.random.default_rng(seed)
    n, d = 4 + seed % 5, 6
    GT = rng.standard_normal((n, d))
    if seed % 3 == 0:
        GT[1] = GT[0]                                   # duplicated contact (Appendix F)
    r = rng.standard_normal(n)
    warm = np.flatnonzero(rng.random(n) < 0.3).astype(np.intp)
    z_ref, w_ref, basis_ref, status_ref, pivots_ref = _reference(GT, r, warm, limit, tol)
    z, w, active = np.zeros(n), np.empty(n), np.empty(d, dtype=np.intp)
    size, status, pivots = checked_contact_ppm(GT, r, warm, limit, 1e-9, REL_TOL, tol, z, w, active)
    assert (status, pivots) == (status_ref, pivots_ref)
    assert status in (SOLVED, MAX_PIVOTS, NUMERICAL_FAILURE)
    np.testing.assert_array_equal(z, z_ref)
    np.testing.assert_array_equal(w, w_ref)
    np.testing.assert_array_equal(active[:size], basis_ref)


@pytest.mark.parametrize("seed", range(10))
def test_solve_projected_equals_projection_then_solve_factored(seed):
    """One compiled call gives what project_constraints then solve_factored give (and the same
    G), bit for bit, with and without a warm start, on whitened rows with dependent columns."""
    from idyn.lcp.ppm_contact import project_constraints, solve_factored, solve_projected

    rng = np.random.default_rng(seed)
    m, nu = 2 + seed % 4, 6
    white = np.asfortranarray(rng.standard_normal((nu, 3 * m)))
    if seed % 2:
        white[:, 1] = white[:, 0]                       # duplicated normal
    kept = np.sort(rng.choice(np.arange(m, 3 * m), size=min(2 * m, 1 + seed % 5), replace=False)).astype(np.intp)
    r = rng.standard_normal(m)
    for warm in (np.zeros(0, dtype=np.intp), np.flatnonzero(rng.random(m) < 0.5).astype(np.intp)):
        G_ref = project_constraints(white[:, :m], white.take(kept, axis=1))
        ref = solve_factored(G_ref, r, warm)
        res, G = solve_projected(white, m, kept, r, warm)
        np.testing.assert_array_equal(G, G_ref)
        np.testing.assert_array_equal(G.T @ G, G_ref.T @ G_ref)
        np.testing.assert_array_equal(res.z, ref.z)
        np.testing.assert_array_equal(res.w, ref.w)
        np.testing.assert_array_equal(res.basis, ref.basis)
        assert (res.status, res.pivots) == (ref.status, ref.pivots)
    empty = np.zeros(0, dtype=np.intp)                    # nothing to project: the two-call path
    res, G = solve_projected(white, m, empty, r, empty)
    np.testing.assert_array_equal(res.z, solve_factored(white[:, :m], r, empty).z)
