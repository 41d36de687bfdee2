"""Column-pivoted QR (LAPACK ``geqp3``/``orgqr``) without ``scipy.linalg.qr``'s per-call overhead.

The contact problems factor matrices of a few rows and tens of columns every control step
(Algorithm 1's row ordering, Algorithm 2's constrained inverse inertia, the QP adapter's
dependent equalities).  ``scipy.linalg.qr`` spends about 100 us per call in workspace queries
and wrappers around LAPACK work of a few microseconds; this calls the same LAPACK routines with
a sufficient workspace, so the factors are those of ``scipy.linalg.qr`` (tested bit for bit).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack


def pivoted_qr(A: np.ndarray, mode: str = "full"):
    """``scipy.linalg.qr(A, mode=mode, pivoting=True)`` for a finite real (m, n) ``A``.

    ``mode``: ``"full"`` (``Q`` m x m), ``"economic"`` (``Q`` m x min(m, n), ``R`` min(m, n) x n)
    or ``"r"``; returns ``(Q, R, piv)`` or, for ``"r"``, ``(R, piv)``; ``piv`` is 0-based.
    """
    A = np.asarray(A, dtype=float)
    m, n = A.shape
    k = min(m, n)
    if A.size == 0:
        R = np.empty((k, n) if mode == "economic" else (m, n))
        piv = np.arange(n, dtype=np.int32)
        if mode == "r":
            return R, piv
        return np.eye(m, k if mode == "economic" else m), R, piv
    qr, jpvt, tau, _, info = lapack.dgeqp3(A, lwork=max(3 * n + 1, 1) * 64)
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of geqp3")
    jpvt -= 1
    R = _upper(qr if mode != "economic" or m < n else qr[:n, :])
    if mode == "r":
        return R, jpvt
    if m < n:
        Q = _orgqr(qr[:, :m], tau)
    elif mode == "economic":
        Q = _orgqr(qr, tau)
    else:
        qqr = np.empty((m, m))
        qqr[:, :n] = qr
        Q = _orgqr(qqr, tau)
    return Q, R, jpvt


def column_pivots(A: np.ndarray) -> np.ndarray:
    """The 0-based column order of ``pivoted_qr(A)`` (``geqp3``: largest remaining distance from
    the span of the columns before it first), without forming ``R`` or ``Q``."""
    A = np.asarray(A, dtype=float)
    if A.size == 0:
        return np.arange(A.shape[1], dtype=np.int32)
    _, jpvt, _, _, info = lapack.dgeqp3(A, lwork=max(3 * A.shape[1] + 1, 1) * 64)
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of geqp3")
    jpvt -= 1
    return jpvt


def pivoted_qr_diagonal(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|diag R|, piv)`` of ``pivoted_qr(A)``: what a rank decision needs, without forming the
    rest of ``R`` or ``Q``."""
    A = np.asarray(A, dtype=float)
    if A.size == 0:
        return np.zeros(0), np.arange(A.shape[1], dtype=np.int32)
    qr, jpvt, _, _, info = lapack.dgeqp3(A, lwork=max(3 * A.shape[1] + 1, 1) * 64)
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of geqp3")
    jpvt -= 1
    return np.abs(np.diagonal(qr)), jpvt


def _orgqr(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    q, _, info = lapack.dorgqr(a, tau, lwork=max(a.shape[1], 1) * 64, overwrite_a=1)
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of orgqr")
    return q


def _upper(a: np.ndarray) -> np.ndarray:
    """``np.triu(a)`` (which costs 10 us on a 6 x 3 matrix)."""
    R = a.copy()
    for j in range(min(a.shape[0] - 1, a.shape[1])):
        R[j + 1:, j] = 0.0
    return R
