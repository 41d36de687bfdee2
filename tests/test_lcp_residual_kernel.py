"""The compiled residual check equals the Python one it stands for, decision for decision, and
the end of Lemke's compiled path reads its answer as the numpy definitions do."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from idyn.lcp import lemke
from idyn.lcp._lemke_kernel import lcp_scales
from idyn.lcp.residuals import DEFAULT_TOL, exact_pass, residuals_from_parts, residuals_pass

#: entries from exact zeros and round-off sizes to overflow, with the non-finite ones
ENTRY = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, -0.0, 1e-300, -1e-12, 1e-12, 1e300, -1e300,
                                                         np.inf, -np.inf, np.nan]))
NORM = st.one_of(st.floats(0.0, 1e6), st.sampled_from([0.0, 1e-320, 1e300, np.inf, np.nan]))
TOL = st.sampled_from([DEFAULT_TOL, 0.0, 1e-6, -1.0, np.inf])


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 8).flatmap(lambda n: st.tuples(arrays(float, n, elements=ENTRY),
                                                     arrays(float, n, elements=ENTRY))),
       NORM, NORM, TOL)
def test_pass_equals_the_python_check(zw, q_norm, m_norm, tol):
    z, w = zw
    with np.errstate(all="ignore"):         # the Python form's overflows in the extreme cases
        expected = residuals_from_parts(z, w, q_norm, m_norm).ok(tol)
    assert residuals_pass(z, w, q_norm, m_norm, tol) == expected


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_pass_on_solver_answers_and_their_perturbations(n, seed):
    """On LCPs Lemke solves (accepted) and on the same answers pushed off the solution set."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M, q = A @ A.T + 1e-3 * np.eye(n), rng.standard_normal(n)
    res = lemke(M, q)
    q_norm, m_norm = lcp_scales(M, q)
    for z in (res.z, res.z - 1e-3 * rng.random(n), res.z + rng.random(n)):
        w = M @ z + q
        expected = residuals_from_parts(z, w, q_norm, m_norm).ok()
        assert residuals_pass(z, w, q_norm, m_norm, DEFAULT_TOL) == expected
        assert exact_pass(M, q, z, w, DEFAULT_TOL) == expected
    assert residuals_pass(res.z, res.w, q_norm, m_norm, DEFAULT_TOL) == res.solved


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1), st.sampled_from(["psd", "general", "nsd"]))
def test_lemke_answer_read_as_numpy_would(n, seed, kind):
    """z clipped as np.maximum(z, 0.0) (no -0.0), w = M @ z + q (q itself when q >= 0 needs no
    pivot), basis = np.flatnonzero(z > 0), also on secondary rays and pivot limits."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M = {"psd": A @ A.T, "general": A, "nsd": -A @ A.T}[kind]
    q = rng.standard_normal(n)
    q[rng.random(n) < 0.2] = -0.0
    for res in (lemke(M, q), lemke(M, q, max_pivots=1)):
        assert np.array_equal(res.z, np.maximum(res.z, 0.0)) and not np.signbit(res.z).any()
        assert res.w.tobytes() == (q if q.min() >= 0.0 else M @ res.z + q).tobytes()
        assert res.basis.dtype == np.intp and np.array_equal(res.basis, np.flatnonzero(res.z > 0.0))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from(["psd", "friction", "degenerate"]))
def test_cold_checked_equals_checked_lemke(n, seed, kind):
    """The compiled cold solve with its verdict (Stage I's common path) answers as
    checked_lemke does: the same z bit for bit when it passes, and a pass exactly when
    checked_lemke returns SOLVED without polishing or re-following the path with the textbook
    exit rule (whose pivots it adds); its BLAS product equals numpy's."""
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
        assert res.solved and pivots == res.pivots and np.array_equal(z, res.z)
        assert np.array_equal(z, np.maximum(z, 0.0))
    else:
        assert not res.solved or res.pivots >= pivots   # failed, polished, or re-followed


def test_compiled_gemv_equals_numpy():
    """numba's np.dot (scipy's BLAS) and numpy's @ give the same bits on the products the
    compiled paths take (Stage I's LCP, Stage II's ``R^T z`` and ``W w`` with ``W`` a transposed
    slice of ``V^T``): matrices of at least two rows, C- or F-ordered.  (With one row numpy
    takes its dot-product path, and the bits can differ: the kernels never form such products.)"""
    from numba import njit

    @njit
    def product(A, x):
        return np.dot(A, x)

    rng = np.random.default_rng(7)
    for _ in range(3000):
        n, k = rng.integers(2, 48, size=2)
        M, z = rng.standard_normal((n, k)), np.maximum(rng.standard_normal(k), 0.0)
        Vt = rng.standard_normal((n, n))
        W = Vt[rng.integers(0, n - 1):].T
        for A, x in ((M, z), (M.T, rng.standard_normal(n)), (W, rng.standard_normal(W.shape[1]))):
            assert np.array_equal(product(A, x), A @ x)
