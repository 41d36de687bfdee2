"""The compiled SVD binding (``idyn.kernels.full_svd``, LAPACK dgesdd) that Stage I of the
dissipation controllers uses: a factorisation, checked by its residual and orthogonality and
against numpy's singular values."""
import numpy as np
import pytest
from scipy.linalg import lapack

from idyn.kernels import full_svd


@pytest.mark.parametrize("m, n, rank", [(6, 20, 6), (6, 20, 4), (6, 40, 6), (3, 5, 3), (7, 4, 4), (1, 5, 1)])
def test_full_svd_factors_the_matrix(m, n, rank):
    rng = np.random.default_rng(m * 100 + n + rank)
    A = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
    lwork = int(lapack.dgesdd_lwork(m, n, compute_uv=1, full_matrices=1)[0])
    work = np.array(A, order="F", copy=True)              # destroyed by LAPACK
    s, U, Vt = np.empty(min(m, n)), np.empty((m, m), order="F"), np.empty((n, n), order="F")
    assert full_svd(work, s, U, Vt, lwork) == 0
    S = np.zeros((m, n))
    S[np.arange(s.size), np.arange(s.size)] = s
    scale = np.abs(A).max()
    assert np.abs(U @ S @ Vt - A).max() < 1e-13 * scale * n          # A = U S V^T
    assert np.abs(U.T @ U - np.eye(m)).max() < 1e-13 * m
    assert np.abs(Vt @ Vt.T - np.eye(n)).max() < 1e-13 * n         # full V: its null space rows too
    assert np.all(np.diff(s) <= 0)
    assert np.abs(s - np.linalg.svd(A, compute_uv=False)).max() < 1e-13 * scale * n
    assert np.abs(A @ Vt[rank:].T).max(initial=0.0) < 1e-12 * scale * n   # rows past the rank: ker(A)
