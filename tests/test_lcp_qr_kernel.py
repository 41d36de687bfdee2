"""idyn.lcp.qr's compiled LAPACK calls give scipy.linalg.lapack's wrappers' numbers bit for bit
(the rank decisions and projections of Algorithms 1-2 must not change), and the one-call
projection of Algorithm 2's constrained inverse inertia equals its two-call composition."""
import numpy as np
import pytest
from scipy.linalg import lapack

from idyn.lcp.qr import apply_qt, column_pivots, complement_coordinates, householder_qr


def _problem(shape, columns, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal(shape)
    if shape[1] > 3:
        A[:, 3] = A[:, 0] - 2.0 * A[:, 1]            # a dependent column: pivoting and rank matter
    return A, rng.standard_normal((shape[0], columns))


@pytest.mark.parametrize("shape", [(6, 4), (6, 8), (12, 3), (6, 6), (1, 5), (5, 1)])
def test_qr_equals_scipy_lapack_wrappers_bit_for_bit(shape):
    A, C = _problem(shape, 4, sum(shape))
    qr_ref, jpvt, tau_ref, _, _ = lapack.dgeqp3(A, lwork=(3 * shape[1] + 1) * 64)
    qr_, tau, diag = householder_qr(A)
    np.testing.assert_array_equal(qr_, qr_ref)
    np.testing.assert_array_equal(tau, tau_ref)
    np.testing.assert_array_equal(column_pivots(A), jpvt - 1)
    out_ref = lapack.dormqr("L", "T", qr_ref[:, :tau_ref.size], tau_ref, C, lwork=C.shape[1] * 64)[0]
    np.testing.assert_array_equal(apply_qt(qr_, tau, C), out_ref)
    np.testing.assert_array_equal(apply_qt(np.ascontiguousarray(qr_), tau, C), out_ref)


@pytest.mark.parametrize("shape", [(6, 4), (6, 8), (12, 3), (6, 6), (0, 3), (6, 0)])
@pytest.mark.parametrize("columns", [4, 0])
def test_complement_coordinates_equals_householder_then_apply_qt(shape, columns):
    A, C = _problem(shape, columns, 7 * sum(shape) + columns)
    tol = 1e-9
    qr_, tau, diag = householder_qr(A)
    expected = apply_qt(qr_, tau, C)[int(np.count_nonzero(diag > tol * diag.max(initial=0.0))):]
    got = complement_coordinates(C, A, tol)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    if shape == (6, 8) and columns:                  # a C-ordered slice, as Algorithm 2 passes
        wide = np.ascontiguousarray(np.concatenate((C, A), axis=1))
        np.testing.assert_array_equal(complement_coordinates(wide[:, :columns], wide.take(range(columns, columns + 8), axis=1), tol),
                                      expected)
