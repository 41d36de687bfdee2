"""idyn.lcp.qr's pivoted QR against its definition, ``A P = Q R`` with ``Q`` orthogonal, ``R``
upper trapezoidal and ``|r_11| >= |r_22| >= ...`` (column pivoting: the largest remaining
distance from the span of the columns before it first), and the complement coordinates of
Algorithms 1-2 against the orthogonal projector computed by SVD.

Tolerances, measured on these shapes (OPENBLAS_NUM_THREADS=1): ``Q Q^T - I`` at most 7.8e-16,
``Q^T A P - R`` at most 6e-16 of ``max|A|``, a dependent column's ``|r_kk|`` at most 1.9e-16 of
``|r_11|``, ``Y^T Y - C^T (I - P_A) C`` at most 1e-15 of ``max|C|^2``; asserted: 1e-12
(round-off of O(n^3) flops with room for other LAPACK builds; a wrong reflector, pivot or rank
changes these by O(1))."""
import numpy as np
import pytest

from idyn.lcp.qr import apply_qt, column_pivots, complement_coordinates, householder_qr, pivoted_qr_diagonal

TOL = 1e-12
SHAPES = [(6, 4), (6, 8), (12, 3), (6, 6), (1, 5), (5, 1), (1, 1), (6, 3), (6, 24), (18, 6), (40, 40), (3, 200)]


def _problem(shape, columns, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape)
    if shape[1] > 3:
        A[:, 3] = A[:, 0] - 2.0 * A[:, 1]            # a dependent column: pivoting and rank matter
    return A, rng.standard_normal((shape[0], columns))


def projector_complement(A, tol):
    """An orthonormal basis (columns) of the complement of ``span(A)`` and ``rank A``, by SVD."""
    U, s, _ = np.linalg.svd(A, full_matrices=True)
    rank = int(np.count_nonzero(s > tol * s.max(initial=0.0)))
    return U[:, rank:], rank


@pytest.mark.parametrize("shape", SHAPES)
def test_pivoted_qr_is_a_rank_revealing_factorisation(shape):
    A, C = _problem(shape, 4, sum(shape))
    d, n = shape
    qr_, tau, diag = householder_qr(A)
    piv = column_pivots(A)
    k = min(d, n)
    assert sorted(piv) == list(range(n))                                    # a permutation
    Qt = apply_qt(qr_, tau, np.eye(d))
    np.testing.assert_allclose(Qt @ Qt.T, np.eye(d), rtol=0, atol=TOL)      # Q orthogonal
    R = np.triu(qr_[:k])
    np.testing.assert_allclose(Qt @ A[:, piv], np.vstack((R, np.zeros((d - R.shape[0], n)))),
                               rtol=0, atol=TOL * np.abs(A).max())          # Q^T A P = R
    np.testing.assert_allclose(diag, np.abs(np.diagonal(R)), rtol=0, atol=0)
    assert np.all(diag[1:] <= diag[:-1] * (1 + TOL))                         # pivoting order
    rank = np.linalg.matrix_rank(A)
    assert np.count_nonzero(diag > 1e-9 * diag.max()) == rank               # the rank decision
    diag2, piv2 = pivoted_qr_diagonal(A)
    np.testing.assert_array_equal(piv2, piv)
    np.testing.assert_allclose(diag2, diag, rtol=TOL)
    # Q^T C by reflectors is the orthogonal map above, for C- and F-ordered factors
    for factor in (qr_, np.ascontiguousarray(qr_)):
        np.testing.assert_allclose(apply_qt(factor, tau, C), Qt @ C, rtol=0, atol=TOL * np.abs(C).max())


def test_pivoting_takes_the_farthest_column_first():
    """Column 1 is the longest, column 0 then the farthest from its span (column 2 is almost
    parallel to column 1): the order is 1, 0, 2."""
    A = np.column_stack(([0.5, 0.0, 0.5], [0.0, 3.0, 4.05], [0.0, 3.0, 4.0]))
    assert list(column_pivots(A)) == [1, 0, 2]


@pytest.mark.parametrize("shape", [(6, 4), (6, 8), (12, 3), (6, 6), (0, 3), (6, 0)])
@pytest.mark.parametrize("columns", [4, 0])
def test_complement_coordinates_are_an_orthonormal_basis_of_the_complement(shape, columns):
    """``Y = complement_coordinates(C, A)`` has ``rank(A)`` fewer rows than ``A`` and
    ``Y^T Y = C^T (I - P_A) C``: ``C``'s coordinates in an orthonormal basis of the complement of
    ``span(A)`` (unique up to a rotation, which ``Y^T Y`` does not see)."""
    A, C = _problem(shape, columns, 7 * sum(shape) + columns)
    tol = 1e-9
    basis, rank = projector_complement(A, tol)
    got = complement_coordinates(C, A, tol)
    assert got.shape == (shape[0] - rank, columns)
    scale = max(np.abs(C).max(initial=0.0), 1.0) ** 2
    np.testing.assert_allclose(got.T @ got, (basis.T @ C).T @ (basis.T @ C), rtol=0, atol=TOL * scale)
    if A.size:                                        # the columns of A have no coordinates
        np.testing.assert_allclose(complement_coordinates(A, A, tol), 0.0, atol=TOL * np.abs(A).max())
        full = complement_coordinates(np.eye(shape[0]), A, tol)
        np.testing.assert_allclose(full @ full.T, np.eye(shape[0] - rank), rtol=0, atol=TOL)
    if shape == (6, 8) and columns:                   # a C-ordered slice, as Algorithm 2 passes
        wide = np.ascontiguousarray(np.concatenate((C, A), axis=1))
        sliced = complement_coordinates(wide[:, :columns], wide.take(range(columns, columns + 8), axis=1), tol)
        np.testing.assert_allclose(sliced.T @ sliced, got.T @ got, rtol=0, atol=TOL * scale)
