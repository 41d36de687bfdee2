"""The residual check every solver uses (idyn.lcp.residuals) against its definition written
here in numpy, and the answers of Lemke's compiled path (idyn.lcp.lemke) against the LCP."""
import numpy as np
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from idyn.lcp import lemke, lcp_residuals
from idyn.lcp.residuals import DEFAULT_TOL, residuals_from_parts, residuals_pass

#: entries from exact zeros and round-off sizes to overflow, with the non-finite ones
ENTRY = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, -0.0, 1e-300, -1e-12, 1e-12, 1e300, -1e300,
                                                         np.inf, -np.inf, np.nan]))
#: norms as callers compute them from finite data (max|q|, ||M||_inf): zero, subnormal, huge
NORM = st.one_of(st.floats(0.0, 1e6), st.sampled_from([0.0, 1e-320, 1e300]))
TOL = st.sampled_from([DEFAULT_TOL, 0.0, 1e-6, -1.0, np.inf])
TINY, EPS = np.finfo(float).tiny, np.finfo(float).eps


def definition(z, w, q_norm, m_norm, equation_error=0.0):
    """The five residuals of idyn.lcp.residuals' module docstring; None when something is not
    finite (no answer can then be verified)."""
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(w)) and np.isfinite(q_norm) and np.isfinite(m_norm)):
        return None
    zmax = np.abs(z).max(initial=0.0)
    scale_z, scale_q = max(zmax, TINY), max(q_norm, TINY)
    scale_w = max(q_norm + m_norm * zmax, TINY)
    if z.size == 0:
        return np.array([0.0, 0.0, 0.0, equation_error / scale_q, 0.0])
    return np.array([max(0.0, -z.min()) / scale_z, max(0.0, -w.min()) / scale_q,
                     np.abs(z * w).sum() / scale_z / scale_q, equation_error / scale_w,
                     EPS * (m_norm * zmax) / scale_q])


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 8).flatmap(lambda n: st.tuples(arrays(float, n, elements=ENTRY),
                                                     arrays(float, n, elements=ENTRY))),
       NORM, NORM, TOL, st.sampled_from([0.0, 1e-3]))
def test_residuals_follow_their_definition(zw, q_norm, m_norm, tol, error):
    z, w = zw
    with np.errstate(all="ignore"):
        expected = definition(z, w, q_norm, m_norm, error)
    got = residuals_from_parts(z, w, q_norm, m_norm, error)
    values = np.array([got.negative_z, got.negative_w, got.complementarity, got.equation, got.roundoff])
    if expected is None:
        assert not got.ok(tol) and not residuals_pass(z, w, q_norm, m_norm, tol)
        return
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(values, expected, rtol=1e-12, atol=0.0)
    assert got.ok(tol) == bool(np.all(values <= tol))
    if error == 0.0:
        assert residuals_pass(z, w, q_norm, m_norm, tol) == got.ok(tol)


def test_each_violation_is_caught():
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-1.0, 1.0])
    z = np.array([0.5, 0.0])                              # w = [0, 1.5]: the solution
    assert lcp_residuals(M, q, z).ok()
    assert lcp_residuals(M, q, [0.4, 0.0]).negative_w > 1e-2          # w_0 < 0
    assert lcp_residuals(M, q, [0.5, 0.1]).complementarity > 1e-2     # z_1 w_1 > 0
    assert lcp_residuals(M, q, [0.5, -1e-3]).negative_z > 1e-4        # z < 0
    assert lcp_residuals(M, q, z, [0.0, 1.6]).equation > 1e-2         # w != M z + q
    assert not lcp_residuals(M, q, [np.nan, 0.0]).ok()


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1), st.sampled_from(["psd", "general", "nsd"]))
def test_lemke_answers_satisfy_the_lcp_they_claim(n, seed, kind):
    """Whatever the matrix (PSD: always solvable; general, NSD: maybe not), a SOLVED answer
    satisfies the LCP by numpy's arithmetic, ``w`` is ``M z + q``, ``z >= 0`` and ``basis`` is
    its support; also after a pivot limit."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M = {"psd": A @ A.T, "general": A, "nsd": -A @ A.T}[kind]
    q = rng.standard_normal(n)
    for res in (lemke(M, q), lemke(M, q, max_pivots=1)):
        scale = np.abs(q).max() + np.abs(M).sum(axis=1).max() * np.abs(res.z).max()
        assert res.z.min() >= 0.0
        np.testing.assert_allclose(res.w, M @ res.z + q, rtol=0, atol=1e-13 * scale)
        np.testing.assert_array_equal(res.basis, np.flatnonzero(res.z > 0.0))
        if res.solved:
            assert res.w.min() >= -1e-9 * np.abs(q).max()
            assert np.abs(res.z * res.w).sum() <= 1e-9 * np.abs(q).max() * max(np.abs(res.z).max(), 1e-300)
    if kind == "psd":
        assert lemke(M + 1e-3 * np.eye(n), q).solved


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from(["psd", "friction", "degenerate"]))
def test_cold_checked_passes_only_solutions(n, seed, kind):
    """The compiled cold solve with its verdict (what compiled callers use): a pass means ``z``
    solves the LCP, checked in numpy; on positive definite problems it passes."""
    from idyn.lcp.lemke import cold_checked
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, max(1, n // 3) if kind == "degenerate" else n))
    M = A @ A.T
    if kind == "friction":                   # a KKT-like skew block, as Stage I's LCP
        M[: n // 2, n // 2:] -= M[n // 2:, : n // 2].T.copy()
    q = rng.standard_normal(n)
    z = np.empty(n)
    passed, pivots = cold_checked(M, q, 1e-12, DEFAULT_TOL, z)
    if passed:
        w = M @ z + q
        assert z.min() >= 0.0 and w.min() >= -1e-9 * np.abs(q).max()
        assert np.abs(z * w).sum() <= 1e-9 * np.abs(q).max() * max(np.abs(z).max(), 1e-300) * (1 + 1e-12)
    if kind == "psd" and np.linalg.cond(M) < 1e8:
        assert passed
