"""Column-pivoted QR (LAPACK ``geqp3``) without ``scipy.linalg.qr``'s per-call overhead.

The contact problems factor matrices of a few rows and tens of columns every control step
(Algorithm 1's row ordering, Algorithm 2's constrained inverse inertia, the QP adapter's
dependent equalities).  ``scipy.linalg.qr`` spends about 100 us per call in workspace queries
and wrappers around LAPACK work of a few microseconds; these call the same LAPACK routine, so
pivots and ``R`` are those of ``scipy.linalg.qr(A, pivoting=True)`` (tested bit for bit), and
return only what their callers use: the pivot order, ``|diag R|`` for a rank decision, and
``Q^T C`` applied reflector by reflector (LAPACK ``ormqr``) instead of forming ``Q``.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack


def _geqp3(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qr, piv, tau)`` of ``A P = Q R`` in LAPACK's compact form, ``piv`` 0-based."""
    A = np.asarray(A, dtype=float)
    if A.size == 0:
        return np.zeros(A.shape), np.arange(A.shape[1], dtype=np.int32), np.zeros(0)
    qr, jpvt, tau, _, info = lapack.dgeqp3(A, lwork=max(3 * A.shape[1] + 1, 1) * 64)
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of geqp3")
    jpvt -= 1
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
    out, _, info = lapack.dormqr("L", "T", qr[:, :tau.size], tau, C, lwork=max(C.shape[1], 1) * 64)
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of ormqr")
    return out
