"""Algorithm 2 (idyn.lcp.ppm_contact: the compiled pivoting loop with its acceptance check)
against the LCP it solves, ``w = G^T G z + r, 0 <= z _|_ w >= 0``, and an independent
enumeration oracle (tests/lcp_problems.py): solvable, tight-tolerance and pivot-limited
problems, with and without equality constraints projected out of the whitened rows.

Tolerances (measured on these seeds, OPENBLAS_NUM_THREADS=1): the answers' worst residual
``lcp_worst`` is at most 1.3e-16 and ``w`` differs from the oracle's by at most 2.4e-16 of the
problem's scale; ``G'^T G'`` of the projection differs from ``A^T (I - P_H) A`` (``P_H`` by SVD)
by at most 1.1e-15 of ``max|A|^2``.  The asserted bounds are 1e-12 and 1e-10: round-off of a few
hundred flops with room for other builds, far below any wrong answer (a wrong active set moves
``w`` by O(1) of the scale)."""
import numpy as np
import pytest

from idyn.lcp import LCPStatus
from idyn.lcp.ppm_contact import solve_factored, solve_projected
from lcp_problems import enumerated_lcp, lcp_worst

RESIDUAL = 1e-12
AGREE = 1e-10


def _problem(seed):
    rng = np.random.default_rng(seed)
    n, d = 4 + seed % 5, 6
    G = rng.standard_normal((d, n))
    if seed % 3 == 0:
        G[:, 1] = G[:, 0]                               # duplicated contact (Appendix F)
    r = rng.standard_normal(n)
    warm = np.flatnonzero(rng.random(n) < 0.3).astype(np.intp)
    return G, r, warm


def check_answer(G, r, res, oracle=None):
    """``res`` solves the LCP ``(r, G^T G)`` with an active set Appendix F allows: independent
    columns of ``G`` (at most ``rank G``), no impulse outside it; ``w`` is the oracle's."""
    Q = G.T @ G
    scale = np.abs(r).max() + np.abs(Q).sum(axis=1).max() * np.abs(res.z).max()
    assert lcp_worst(Q, r, res.z, res.w) <= RESIDUAL
    outside = np.ones(r.size, dtype=bool)
    outside[res.basis] = False
    assert not res.z[outside].any()
    if res.basis.size:
        assert np.linalg.matrix_rank(G[:, res.basis]) == res.basis.size
    if oracle is not None:
        np.testing.assert_allclose(res.w, oracle[1], rtol=0, atol=AGREE * scale)


@pytest.mark.parametrize("seed", range(12))
def test_algorithm_2_solves_the_contact_lcp(seed):
    """Solvable problems are solved (cold and warm), and an infeasible one is never called solved."""
    G, r, warm = _problem(seed)
    oracle = enumerated_lcp(G.T @ G, r)
    for start in (np.zeros(0, dtype=np.intp), warm):
        res = solve_factored(G, r, start)
        if oracle is None:
            assert res.status is not LCPStatus.SOLVED
        else:
            assert res.status is LCPStatus.SOLVED, res.status
            check_answer(G, r, res, oracle)


def test_an_infeasible_lcp_is_not_solved():
    """Two opposite contacts both asked to separate (``w_1 + w_2 = -2`` for every ``z``): no
    solution exists, and the answer says so."""
    G = np.array([[1.0, -1.0]])
    r = np.array([-1.0, -1.0])
    assert enumerated_lcp(G.T @ G, r) is None
    for warm in (np.zeros(0, dtype=np.intp), np.array([0], dtype=np.intp)):
        assert solve_factored(G, r, warm).status is not LCPStatus.SOLVED


@pytest.mark.parametrize("seed", range(12))
def test_acceptance_below_round_off_rejects_every_loaded_answer(seed):
    """A tolerance of 1e-17, below the rounding error ``eps ||Q|| max|z| / max|r|`` that the
    check charges every answer with impulses, rejects every answer that loads a contact
    (NUMERICAL_FAILURE) and accepts only ``z = 0`` (``r >= 0``): the pivoting result is left in
    place either way."""
    G, r, warm = _problem(seed)
    res = solve_factored(G, r, warm, tol=1e-17)
    loose = solve_factored(G, r, warm)
    if loose.status is LCPStatus.SOLVED and loose.z.any():
        assert res.status is LCPStatus.NUMERICAL_FAILURE
        np.testing.assert_allclose(res.z, loose.z, rtol=0, atol=AGREE * np.abs(loose.z).max())
    if (r >= 0).all():
        assert res.status is LCPStatus.SOLVED and not res.z.any()
    r_pos = np.abs(r)
    assert solve_factored(G, r_pos, warm, tol=1e-17).status is LCPStatus.SOLVED


@pytest.mark.parametrize("seed", range(12))
def test_pivot_limit(seed):
    """With one pivot allowed the solver has solved the LCP or says it stopped at the limit (a
    problem the unlimited loop needs three pivots or more for cannot be solved in one)."""
    G, r, warm = _problem(seed)
    res = solve_factored(G, r, warm, max_pivots=1)
    assert res.status in (LCPStatus.SOLVED, LCPStatus.MAX_PIVOTS, LCPStatus.NUMERICAL_FAILURE)
    if res.status is LCPStatus.SOLVED:
        check_answer(G, r, res, enumerated_lcp(G.T @ G, r))
    if solve_factored(G, r, warm).pivots > 2:
        assert res.status is LCPStatus.MAX_PIVOTS


def projected_gram(A, H, tol=1e-9):
    """``A^T (I - P_H) A``, ``P_H`` the orthogonal projector on ``span(H)`` (by SVD), and the
    dimension of the complement."""
    U, s, _ = np.linalg.svd(H, full_matrices=True)
    rank = int(np.count_nonzero(s > tol * s.max(initial=0.0)))
    B = U[:, rank:].T @ A
    return B.T @ B, H.shape[0] - rank


@pytest.mark.parametrize("seed", range(10))
def test_constrained_inverse_inertia_projection_then_algorithm_2(seed):
    """``solve_projected`` projects the whitened normals off the span of the ``kept`` constraint
    rows (``G'^T G' = N W N^T`` with the constrained inverse inertia, ppm_contact's docstring) and
    solves that LCP, with and without a warm start, on rows with dependent columns."""
    rng = np.random.default_rng(seed)
    m, nu = 2 + seed % 4, 6
    white = np.asfortranarray(rng.standard_normal((nu, 3 * m)))
    if seed % 2:
        white[:, 1] = white[:, 0]                       # duplicated normal
    kept = np.sort(rng.choice(np.arange(m, 3 * m), size=min(2 * m, 1 + seed % 5), replace=False)).astype(np.intp)
    r = rng.standard_normal(m)
    A, H = white[:, :m], white[:, kept]
    gram, rows = projected_gram(A, H)
    oracle = enumerated_lcp(gram, r)
    for warm in (np.zeros(0, dtype=np.intp), np.flatnonzero(rng.random(m) < 0.5).astype(np.intp)):
        res, G = solve_projected(white, m, kept, r, warm)
        assert G.shape == (rows, m)
        np.testing.assert_allclose(G.T @ G, gram, rtol=0, atol=AGREE * np.abs(A).max() ** 2)
        if oracle is None:
            assert res.status is not LCPStatus.SOLVED
        else:
            assert res.status is LCPStatus.SOLVED
            check_answer(G, r, res, oracle)
    empty = np.zeros(0, dtype=np.intp)                    # nothing to project: G is the normals
    res, G = solve_projected(white, m, empty, r, empty)
    np.testing.assert_array_equal(G, A)
    oracle = enumerated_lcp(A.T @ A, r)
    assert (res.status is LCPStatus.SOLVED) == (oracle is not None)
    if oracle is not None:
        check_answer(A, r, res, oracle)
