"""LAPACK routines called from compiled loops: the very routines of scipy's ``cython_lapack`` that
``scipy.linalg.lapack``'s wrappers call, so a compiled loop gets the wrappers' numbers bit for
bit without their Python-level argument handling (2-3 us per call in a control loop).
Registered by :func:`idyn.jit.external`, so the on-disk cache keeps working."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.extending import get_cython_function_address

from .jit import cached_jit, external

_P = types.voidptr
_dpotrf = external("idyn_scipy_dpotrf", get_cython_function_address("scipy.linalg.cython_lapack", "dpotrf"),
                   types.void(_P, _P, _P, _P, _P))
_dtrtrs = external("idyn_scipy_dtrtrs", get_cython_function_address("scipy.linalg.cython_lapack", "dtrtrs"),
                   types.void(_P, _P, _P, _P, _P, _P, _P, _P, _P, _P))
_dgesv = external("idyn_scipy_dgesv", get_cython_function_address("scipy.linalg.cython_lapack", "dgesv"),
                  types.void(_P, _P, _P, _P, _P, _P, _P, _P))


@cached_jit
def cholesky_lower(F):
    """LAPACK ``dpotrf('L')`` on the Fortran-ordered square ``F`` in place (its lower triangle
    becomes the Cholesky factor, the strict upper one is left as it was), as
    ``scipy.linalg.lapack.dpotrf(A, lower=1)`` does on its Fortran copy of ``A``; returns
    LAPACK's ``info`` (0: factorised; > 0: not positive definite)."""
    n = F.shape[0]
    if n == 0:
        return 0
    uplo = np.full(1, 76, np.uint8)         # 'L'
    size, info = np.full(1, n, np.int32), np.zeros(1, np.int32)
    _dpotrf(uplo.ctypes, size.ctypes, F.ctypes, size.ctypes, info.ctypes)
    return info[0]


@cached_jit
def lower_solve(L, B):
    """LAPACK ``dtrtrs('L', 'N', 'N')``: ``B <- L^-1 B`` in place for the Fortran-ordered lower
    triangular ``L`` (n x n) and Fortran-ordered ``B`` (n x k), as
    ``scipy.linalg.lapack.dtrtrs(L, B, lower=1)`` computes it; returns LAPACK's ``info``."""
    n, k = B.shape
    if n == 0 or k == 0:
        return 0
    flags = np.array([76, 78, 78], np.uint8)    # 'L', 'N', 'N'
    sizes, info = np.array([n, k], np.int32), np.zeros(1, np.int32)
    _dtrtrs(flags[0:].ctypes, flags[1:].ctypes, flags[2:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes, L.ctypes,
            sizes[0:].ctypes, B.ctypes, sizes[0:].ctypes, info.ctypes)
    return info[0]


@cached_jit
def general_solve(A, B, pivots):
    """LAPACK ``dgesv``: ``B <- A^-1 B`` in place for the Fortran-ordered square ``A`` (n x n,
    overwritten by its LU factors) and Fortran-ordered ``B`` (n x k), with ``pivots`` (n int32)
    for the row interchanges; the routine ``np.linalg.inv`` runs against the identity. Returns
    LAPACK's ``info`` (0: solved; > 0: exactly singular)."""
    n, k = B.shape
    if n == 0 or k == 0:
        return 0
    sizes, info = np.array([n, k], np.int32), np.zeros(1, np.int32)
    _dgesv(sizes[0:].ctypes, sizes[1:].ctypes, A.ctypes, sizes[0:].ctypes, pivots.ctypes, B.ctypes,
           sizes[0:].ctypes, info.ctypes)
    return info[0]


_dgesdd = external("idyn_scipy_dgesdd", get_cython_function_address("scipy.linalg.cython_lapack", "dgesdd"),
                   types.void(_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P))


@cached_jit
def full_svd_work(m, n):
    """The workspace size LAPACK's ``dgesdd('A')`` asks for an m x n matrix (its ``lwork = -1``
    query, as numpy's gufunc makes it before every SVD: it depends on the sizes only); at least 1."""
    jobz = np.full(1, 65, np.uint8)                           # 'A'
    sizes = np.array([m, n, max(m, 1), max(n, 1), -1], np.int32)   # m, n, lda = ldu, ldvt, lwork
    iwork, info, query = np.empty(8 * min(m, n), np.int32), np.zeros(1, np.int32), np.empty(1)
    A, s, U, Vt = np.empty((max(m, 1), max(n, 1))), np.empty(max(min(m, n), 1)), np.empty((max(m, 1), max(m, 1))), \
        np.empty((max(n, 1), max(n, 1)))
    _dgesdd(jobz.ctypes, sizes[0:].ctypes, sizes[1:].ctypes, A.ctypes, sizes[2:].ctypes, s.ctypes, U.ctypes,
            sizes[2:].ctypes, Vt.ctypes, sizes[3:].ctypes, query.ctypes, sizes[4:].ctypes, iwork.ctypes, info.ctypes)
    return max(np.int32(query[0]), 1)


@cached_jit
def full_svd(A, s, U, Vt, lwork):
    """LAPACK ``dgesdd('A')``, the routine and workspace of ``np.linalg.svd(A, full_matrices=True)``:
    ``A`` (m x n, Fortran-ordered, destroyed), outputs ``s`` (min(m, n), descending), ``U``
    (m x m) and ``Vt`` (n x n), both Fortran-ordered; ``lwork`` the workspace numpy's gufunc
    queries (:func:`full_svd_work` of the sizes, which a caller looping over one size keeps).
    Returns LAPACK's ``info`` (0: converged)."""
    m, n = A.shape
    jobz = np.full(1, 65, np.uint8)                           # 'A'
    sizes = np.array([m, n, max(m, 1), max(n, 1), lwork], np.int32)   # m, n, lda = ldu, ldvt, lwork
    iwork, info, work = np.empty(8 * min(m, n), np.int32), np.zeros(1, np.int32), np.empty(lwork)
    _dgesdd(jobz.ctypes, sizes[0:].ctypes, sizes[1:].ctypes, A.ctypes, sizes[2:].ctypes, s.ctypes, U.ctypes,
            sizes[2:].ctypes, Vt.ctypes, sizes[3:].ctypes, work.ctypes, sizes[4:].ctypes, iwork.ctypes, info.ctypes)
    return info[0]


_dgeqp3 = external("idyn_scipy_dgeqp3", get_cython_function_address("scipy.linalg.cython_lapack", "dgeqp3"),
                   types.void(*(_P,) * 9))
_dormqr = external("idyn_scipy_dormqr", get_cython_function_address("scipy.linalg.cython_lapack", "dormqr"),
                   types.void(*(_P,) * 13))


@cached_jit
def fortran_copy(A):
    """A Fortran-ordered float copy of the 2-d ``A`` (LAPACK's layout)."""
    F = np.empty((A.shape[1], A.shape[0])).T
    F[:, :] = A
    return F


@cached_jit
def pivoted_qr(A):
    """``(qr, piv, tau, info)``: LAPACK ``dgeqp3`` on a Fortran copy of the nonempty ``A`` with
    every column free (``jpvt = 0``) and ``lwork = (3 n + 1) 64``, as the calls of
    ``scipy.linalg.lapack.dgeqp3(A, lwork=...)`` :mod:`idyn.lcp.qr` made; ``piv`` 0-based (int32)."""
    m, n = A.shape
    qr = fortran_copy(A)
    jpvt, tau = np.zeros(n, np.int32), np.empty(min(m, n))
    lwork = (3 * n + 1) * 64
    work = np.empty(lwork)
    sizes, info = np.array([m, n, m, lwork], np.int32), np.zeros(1, np.int32)
    _dgeqp3(sizes[0:].ctypes, sizes[1:].ctypes, qr.ctypes, sizes[2:].ctypes, jpvt.ctypes, tau.ctypes,
            work.ctypes, sizes[3:].ctypes, info.ctypes)
    jpvt -= 1
    return qr, jpvt, tau, info[0]


@cached_jit
def qt_product(qr, tau, C):
    """``(Q^T C, info)``: LAPACK ``dormqr('L', 'T')`` with the reflectors of :func:`pivoted_qr`
    (``k = tau.size >= 1``) on a Fortran copy of ``C`` (``C.shape[1] >= 1``), ``lwork = 64
    C.shape[1]``, as the calls of ``scipy.linalg.lapack.dormqr`` :mod:`idyn.lcp.qr` made."""
    m, n = C.shape
    out = fortran_copy(C)
    lwork = n * 64
    work = np.empty(lwork)
    flags = np.array([76, 84], np.uint8)                    # 'L', 'T'
    sizes, info = np.array([m, n, tau.shape[0], qr.shape[0], lwork], np.int32), np.zeros(1, np.int32)
    _dormqr(flags[0:].ctypes, flags[1:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes, sizes[2:].ctypes, qr.ctypes,
            sizes[3:].ctypes, tau.ctypes, out.ctypes, sizes[0:].ctypes, work.ctypes, sizes[4:].ctypes, info.ctypes)
    return out, info[0]
