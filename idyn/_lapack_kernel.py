"""LAPACK routines called from compiled loops (``dgesv``, ``dgesdd``, ``dgeqp3``, ``dormqr``),
through scipy's ``cython_lapack``, for the loops of :mod:`idyn.lcp.qr`,
:mod:`idyn.lcp.find_indices`, Stage I of the dissipation controllers, the constraint solver
and the planners.  Registered by :func:`idyn.jit.external`, so the on-disk
cache keeps working."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.extending import get_cython_function_address

from .jit import cached_jit, external

_P = types.voidptr
_dgesv = external("idyn_scipy_dgesv", get_cython_function_address("scipy.linalg.cython_lapack", "dgesv"),
                  types.void(_P, _P, _P, _P, _P, _P, _P, _P))


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
                   types.void(*(_P,) * 14))


@cached_jit
def full_svd(A, s, U, Vt, lwork):
    """LAPACK ``dgesdd('A')``, the routine ``np.linalg.svd(A, full_matrices=True)`` calls: ``A``
    (m x n, m, n >= 1, Fortran-ordered, destroyed), outputs ``s`` (min(m, n), descending), ``U``
    (m x m) and ``Vt`` (n x n), both Fortran-ordered, with the workspace size ``lwork`` LAPACK asks
    for (``scipy.linalg.lapack.dgesdd_lwork``, the query ``np.linalg.svd`` makes before every
    call: it depends on the sizes only, so a caller looping over one size keeps it).  Returns
    LAPACK's ``info`` (0: converged)."""
    m, n = A.shape
    jobz = np.full(1, 65, np.uint8)                           # 'A'
    sizes = np.array([m, n, m, n, lwork], np.int32)
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
