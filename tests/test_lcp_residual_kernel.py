"""The compiled acceptance check of an LCP answer (idyn.lcp.residuals.residuals_pass and
exact_pass) against the residuals written here from their definition (idyn.lcp.residuals'
module docstring), and Lemke's compiled path against the LCP it solves."""
import numpy as np
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from idyn.lcp import lemke
from idyn.lcp.residuals import DEFAULT_TOL, exact_pass, residuals_pass
from lcp_problems import lcp_worst

#: entries from exact zeros and round-off sizes to overflow, with the non-finite ones
ENTRY = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, -0.0, 1e-300, -1e-12, 1e-12, 1e300, -1e300,
                                                         np.inf, -np.inf, np.nan]))
#: norms as callers compute them from finite data (max|q|, ||M||_inf): zero, subnormal, huge
NORM = st.one_of(st.floats(0.0, 1e6), st.sampled_from([0.0, 1e-320, 1e300]))
TOL = st.sampled_from([DEFAULT_TOL, 0.0, 1e-6, -1.0, np.inf])
#: the oracle below may round differently from the check (summation order of at most 8
#: products: below 8 eps relative): decisions within this relative distance of the tolerance
#: are not compared
MARGIN = 1e-12


def worst_residual(z, w, q_norm, m_norm):
    """The largest of the five residuals of the module docstring of idyn.lcp.residuals, with
    ``w`` taken as exact: ``max(0, -min z) / scale_z``, ``max(0, -min w) / scale_q``,
    ``sum |z_i w_i| / (scale_z scale_q)``, and the round-off ``eps ||M|| max|z| / scale_q``
    (``scale_z = max|z|``, ``scale_q = max|q|``, floored at the smallest normal number; no
    impulse, no round-off: ``||M|| max|z| = 0`` when ``z = 0``).
    NaN when an entry is not finite (the answer then fails every tolerance)."""
    if z.size == 0:
        return 0.0
    if not (np.isfinite(z).all() and np.isfinite(w).all()):
        return np.nan
    tiny = np.finfo(float).tiny
    zmax = np.abs(z).max()
    scale_z, scale_q = max(zmax, tiny), max(q_norm, tiny)
    with np.errstate(all="ignore"):
        parts = [max(0.0, -z.min()) / scale_z, max(0.0, -w.min()) / scale_q,
                 np.abs(z * w).sum() / scale_z / scale_q, np.finfo(float).eps * (m_norm * zmax if zmax else 0.0) / scale_q]
    return np.nan if np.isnan(parts).any() else max(parts)


def decided(worst, tol):
    """The oracle's verdict, or None when ``worst`` is within ``MARGIN`` of ``tol``."""
    if np.isnan(worst):
        return False
    if np.isfinite(tol) and tol > 0 and abs(worst - tol) <= MARGIN * tol:
        return None
    return bool(worst <= tol)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 8).flatmap(lambda n: st.tuples(arrays(float, n, elements=ENTRY),
                                                     arrays(float, n, elements=ENTRY))),
       NORM, NORM, TOL)
# each residual a few times the tolerance (and one below it), where random draws rarely land
@example((np.array([1.0, 0.0]), np.array([5e-9, 0.0])), 1.0, 0.0, 1e-9)      # complementarity
@example((np.array([1.0, 0.0]), np.array([5e-10, 0.0])), 1.0, 0.0, 1e-9)     # ... below tol
@example((np.array([0.0, 1.0]), np.array([-5e-9, 0.0])), 1.0, 0.0, 1e-9)     # negative w
@example((np.array([1.0, -5e-9]), np.array([0.0, 0.0])), 1.0, 0.0, 1e-9)     # negative z
@example((np.array([1.0]), np.array([0.0])), 1.0, 1e7, 1e-9)                 # round-off, 2.2e-9
@example((np.array([1.0]), np.array([0.0])), 1.0, 1e6, 1e-9)                 # ... 2.2e-10
def test_pass_is_the_residual_definition(zw, q_norm, m_norm, tol):
    z, w = zw
    expected = decided(worst_residual(z, w, q_norm, m_norm), tol)
    if expected is not None:
        assert residuals_pass(z, w, q_norm, m_norm, tol) == expected


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_pass_on_solver_answers_and_their_perturbations(n, seed):
    """On LCPs Lemke solves (accepted) and on the same answers pushed off the solution set
    (rejected: 1e-3 negative impulses, or impulses on contacts that separate)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M, q = A @ A.T + 1e-3 * np.eye(n), rng.standard_normal(n)
    res = lemke(M, q)
    q_norm, m_norm = np.abs(q).max(), np.abs(M).sum(axis=1).max()
    for z in (res.z, res.z - 1e-3 * rng.random(n), res.z + rng.random(n)):
        w = M @ z + q
        expected = decided(worst_residual(z, w, q_norm, m_norm), DEFAULT_TOL)
        if expected is not None:
            assert residuals_pass(z, w, q_norm, m_norm, DEFAULT_TOL) == expected
            assert exact_pass(M, q, z, w, DEFAULT_TOL) == expected
    assert res.solved and residuals_pass(res.z, res.w, q_norm, m_norm, DEFAULT_TOL)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1), st.sampled_from(["psd", "general", "nsd"]))
def test_lemke_answer_is_consistent(n, seed, kind):
    """Whatever the outcome (solution, secondary ray, pivot limit): ``z >= 0``, ``w = M z + q``
    (to round-off: equal on 3000 draws of these problems, asserted to 1e-12 of
    ``max|q| + ||M|| max|z|``), ``q``
    itself with ``z = 0`` when ``q >= 0`` (no pivot), the basis is the support of ``z``, and an
    answer called solved solves the LCP."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M = {"psd": A @ A.T, "general": A, "nsd": -A @ A.T}[kind]
    q = rng.standard_normal(n)
    q[rng.random(n) < 0.2] = -0.0
    for res in (lemke(M, q), lemke(M, q, max_pivots=1)):
        assert (res.z >= 0.0).all()
        scale = np.abs(q).max() + np.abs(M).sum(axis=1).max() * np.abs(res.z).max()
        np.testing.assert_allclose(res.w, M @ res.z + q, rtol=0, atol=1e-12 * scale)
        if q.min() >= 0.0:
            assert res.solved and not res.z.any() and np.array_equal(res.w, q)
        assert res.basis.dtype == np.intp and np.array_equal(res.basis, np.flatnonzero(res.z > 0.0))
        if res.solved:
            assert lcp_worst(M, q, res.z, res.w) <= DEFAULT_TOL


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from(["psd", "friction", "degenerate"]))
def test_cold_checked_solves_what_checked_lemke_solves(n, seed, kind):
    """The compiled cold solve with its verdict (Stage I's common path): a passed answer solves
    the LCP (and checked_lemke, which may polish or re-follow the path, solves it too, with the
    same ``w`` where the LCP fixes it: for a positive semidefinite ``M``)."""
    from idyn.lcp.lemke import checked_lemke, cold_checked
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, max(1, n // 3) if kind == "degenerate" else n))
    M = A @ A.T
    if kind == "friction":                   # a KKT-like skew block, as Stage I's LCP
        M[: n // 2, n // 2:] -= M[n // 2:, : n // 2].T.copy()
    q = rng.standard_normal(n)
    z = np.empty(n)
    passed, pivots = cold_checked(M, q, 1e-12, DEFAULT_TOL, z)
    res = checked_lemke(M, q)
    if passed:
        assert (z >= 0).all() and lcp_worst(M, q, z) <= DEFAULT_TOL
        assert res.solved and res.pivots >= pivots
        if kind != "friction":
            scale = np.abs(q).max() + np.abs(M).sum(axis=1).max() * np.abs(z).max()
            np.testing.assert_allclose(M @ z + q, res.w, rtol=0, atol=1e-8 * scale)
