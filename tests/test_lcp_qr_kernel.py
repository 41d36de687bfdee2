"""idyn.lcp.qr against the definitions: the pivoted QR picks, at each step, the column farthest
from the span of the columns before it, ``|diag R|`` are those distances, and the complement
coordinates are an isometric image of ``C``'s component outside ``span(A)`` (checked with
numpy's SVD and least squares; tolerances: round-off of these well-conditioned problems is
below 1e-13 relative, the checks allow 1e-10)."""
import numpy as np
import pytest

from idyn.lcp.qr import column_pivots, complement_coordinates, pivoted_qr_diagonal

TOL = 1e-10


def _problem(shape, columns, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape)
    if shape[1] > 3:
        A[:, 3] = A[:, 0] - 2.0 * A[:, 1]            # a dependent column: pivoting and rank matter
    return A, rng.standard_normal((shape[0], columns))


def _distance(A, cols, j):
    """Distance of column ``j`` of ``A`` from the span of the columns ``cols`` (least squares)."""
    if not cols:
        return float(np.linalg.norm(A[:, j]))
    B = A[:, cols]
    return float(np.linalg.norm(A[:, j] - B @ np.linalg.lstsq(B, A[:, j], rcond=None)[0]))


@pytest.mark.parametrize("shape", [(6, 4), (6, 8), (12, 3), (6, 6), (1, 5), (5, 1), (40, 40), (3, 200)])
def test_pivots_are_the_greedy_farthest_column_and_diag_r_its_distance(shape):
    A, _ = _problem(shape, 0, sum(shape))
    diag, piv = pivoted_qr_diagonal(A)
    assert sorted(piv.tolist()) == list(range(shape[1]))
    np.testing.assert_array_equal(column_pivots(A), piv)
    scale = np.linalg.norm(A, axis=0).max()
    k = min(shape)
    for i in range(k):
        chosen, rest = piv[:i].tolist(), piv[i:].tolist()
        dists = [_distance(A, chosen, j) for j in rest]
        if max(dists) <= 1e-8 * scale:                 # the span is complete: the order is round-off
            assert diag[i:].max() <= 1e-8 * scale
            break
        assert dists[0] >= max(dists) - TOL * scale      # the farthest remaining column is next
        assert abs(diag[i] - dists[0]) <= TOL * scale    # |R_ii| is its distance
    assert np.all(np.diff(diag) <= TOL * scale)          # non-increasing


@pytest.mark.parametrize("shape", [(6, 4), (6, 8), (12, 3), (6, 6), (0, 3), (6, 0)])
@pytest.mark.parametrize("columns", [4, 0])
def test_complement_coordinates_are_an_isometry_of_the_orthogonal_component(shape, columns):
    A, C = _problem(shape, columns, 7 * sum(shape) + columns)
    tol = 1e-9
    got = complement_coordinates(C, A, tol)
    rank = np.linalg.matrix_rank(A) if A.size else 0
    assert got.shape == (shape[0] - rank, columns)
    if shape[0] and shape[1]:
        U = np.linalg.svd(A)[0][:, :rank]
        perp = C - U @ (U.T @ C)                         # C's component outside span(A)
    else:
        perp = C
    # inner products (and so distances and the LCP matrix G^T G) are those of the component
    np.testing.assert_allclose(got.T @ got, perp.T @ perp, atol=TOL * max(1.0, np.abs(C).max(initial=0.0) ** 2))
    if shape[0] and shape[1] and columns:               # a column inside span(A) has none
        inside = A @ np.arange(1.0, shape[1] + 1.0)
        np.testing.assert_allclose(complement_coordinates(inside[:, None], A, tol), 0.0,
                                   atol=TOL * np.linalg.norm(inside))


def test_complement_of_a_c_ordered_slice_equals_that_of_a_copy():
    """Algorithm 2 passes slices of one whitened array: layout does not change the answer."""
    A, C = _problem((6, 8), 4, 3)
    wide = np.ascontiguousarray(np.concatenate((C, A), axis=1))
    np.testing.assert_allclose(complement_coordinates(wide[:, :4], wide.take(range(4, 12), axis=1), 1e-9),
                               complement_coordinates(C.copy(), A.copy(), 1e-9), atol=1e-13)


@pytest.mark.parametrize("tol, rank", [(1e-9, 4), (1e-3, 3)])
def test_the_rank_decision_is_relative_to_the_largest_diag_r(tol, rank):
    """A column 1e-6 (relative) off the span of the others counts as independent at tol 1e-9 and
    as dependent at 1e-3: the complement then has ``rows - rank`` coordinates."""
    rng = np.random.default_rng(11)
    A = rng.standard_normal((6, 4))
    A[:, 3] = A[:, 0] - 2.0 * A[:, 1] + 1e-6 * np.linalg.norm(A[:, 0]) * rng.standard_normal(6)
    assert complement_coordinates(rng.standard_normal((6, 2)), A, tol).shape == (6 - rank, 2)
