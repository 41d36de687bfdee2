"""Column-pivoted QR (LAPACK ``geqp3``) without ``scipy.linalg.qr``'s per-call overhead.

The contact problems factor matrices of a few rows and tens of columns every control step
(Algorithm 1's row ordering, Algorithm 2's constrained inverse inertia, the QP adapter's
dependent equalities).  ``scipy.linalg.qr`` spends far more per call in workspace queries and
wrappers than in LAPACK's work on such matrices; these call the LAPACK routines
(scipy's ``cython_lapack``) from compiled code (:func:`idyn._lapack_kernel.pivoted_qr`
and :func:`idyn._lapack_kernel.qt_product`, beside the project's other LAPACK bindings), and return only what their callers
use: the pivot order, ``|diag R|`` for a rank decision, and ``Q^T C`` applied reflector by
reflector (LAPACK ``ormqr``) instead of forming ``Q``.
"""
from __future__ import annotations

import numpy as np

from .._lapack_kernel import fortran_copy, pivoted_qr, qt_product
from ..jit import cached_jit

def check_info(info: int, routine: str) -> None:
    """ValueError for LAPACK's ``info < 0`` (an illegal argument) of ``routine``."""
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of {routine}")


def _geqp3(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qr, piv, tau)`` of ``A P = Q R`` in LAPACK's compact form, ``piv`` 0-based."""
    A = np.asarray(A, dtype=float)
    if A.size == 0:
        return np.zeros(A.shape), np.arange(A.shape[1], dtype=np.int32), np.zeros(0)
    qr, jpvt, tau, info = pivoted_qr(A)
    check_info(info, "geqp3")
    return qr, jpvt, tau


def column_pivots(A: np.ndarray) -> np.ndarray:
    """The 0-based column order of the pivoted QR (largest remaining distance from the span of
    the columns before it first)."""
    return _geqp3(A)[1]


def pivoted_qr_diagonal(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|diag R|, piv)``: what a rank decision needs."""
    qr, piv, _ = _geqp3(A)
    return np.abs(np.diagonal(qr)), piv


def householder_qr(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qr, tau, |diag R|)``: the pivoted QR with ``Q``'s Householder reflectors below the
    diagonal of ``qr`` (for :func:`apply_qt`)."""
    qr, _, tau = _geqp3(A)
    return qr, tau, np.abs(np.diagonal(qr))


def apply_qt(qr: np.ndarray, tau: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``Q^T C`` for the full (square) ``Q`` of :func:`householder_qr`."""
    if C.shape[1] == 0 or tau.size == 0:
        return np.array(C, dtype=float)
    out, info = qt_product(np.asfortranarray(qr), tau, np.asarray(C, dtype=float))
    check_info(info, "ormqr")
    return out


@cached_jit
def _rank(diag, tol):
    """How many of ``diag`` (``|diag R|``) exceed ``tol`` times their largest, ``diag.max(initial=0)``
    (NaN if one is NaN, as numpy's reduction)."""
    top = 0.0
    for d in diag:
        if np.isnan(d):
            return 0
        top = max(top, d)
    count = 0
    for d in diag:
        count += d > tol * top
    return count


@cached_jit
def complement_kernel(C, A, tol):
    """:func:`complement_coordinates` for nonempty ``A`` and ``C`` with columns, and LAPACK's
    ``info`` of each routine (first failing one)."""
    qr, _, tau, info = pivoted_qr(A)
    if info < 0:
        return fortran_copy(C)[:0], info, 0
    k = tau.shape[0]
    diag = np.empty(k)
    for i in range(k):
        diag[i] = abs(qr[i, i])
    out, info = qt_product(qr, tau, C)
    return out[_rank(diag, tol):], 0, info


def complement_coordinates(C: np.ndarray, A: np.ndarray, tol: float) -> np.ndarray:
    """``(Q^T C)[rank:]``: the coordinates of ``C``'s columns in an orthonormal basis of the
    complement of ``span(A)``, with ``Q`` of ``A``'s pivoted QR and ``rank`` the number of
    ``|diag R|`` above ``tol`` times the largest.  :func:`householder_qr` and :func:`apply_qt`
    in one compiled call, which they remain for an empty
    ``A`` or ``C``."""
    if A.size == 0 or C.shape[1] == 0:
        qr, tau, diag = householder_qr(A)
        return apply_qt(qr, tau, C)[int(np.count_nonzero(diag > tol * diag.max(initial=0.0))):]
    out, info_geqp3, info_ormqr = complement_kernel(np.asarray(C, dtype=float), np.asarray(A, dtype=float), tol)
    check_info(info_geqp3, "geqp3")
    check_info(info_ormqr, "ormqr")
    return out
