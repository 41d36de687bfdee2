"""Column-pivoted QR (LAPACK ``geqp3``) for the contact problems' rank decisions and projections.

Algorithm 1's row order, Algorithm 2's constrained inverse inertia (the part of the whitened
normals outside the span of the whitened equality rows) and the QP adapter's dependent
equalities factor matrices of a few rows and tens of columns every control step.  The LAPACK
calls are made from compiled code (:mod:`idyn.kernels`) and return only what the callers
use: the pivot order, ``|diag R|`` for a rank decision, and ``Q^T C`` applied reflector by
reflector (``ormqr``) instead of forming ``Q``.
"""
from __future__ import annotations

import numpy as np

from ..kernels import fortran_copy, pivoted_qr, qr_rank, qt_product
from ..jit import cached_jit


def check_info(info: int, routine: str) -> None:
    """ValueError for LAPACK's ``info < 0`` (an illegal argument) of ``routine``."""
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of {routine}")


def pivoted_qr_diagonal(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|diag R|, piv)`` of ``A P = Q R``, ``piv`` the 0-based column order (largest remaining
    distance from the span of the columns before it first): what a rank decision needs."""
    A = np.asarray(A, dtype=float)
    if A.size == 0:
        return np.zeros(0), np.arange(A.shape[1], dtype=np.int32)
    qr, piv, _, info = pivoted_qr(A)
    check_info(info, "geqp3")
    return np.abs(np.diagonal(qr)), piv


def column_pivots(A: np.ndarray) -> np.ndarray:
    """The 0-based column order of the pivoted QR of ``A``."""
    return pivoted_qr_diagonal(A)[1]


@cached_jit
def complement_kernel(C, A, tol):
    """``((Q^T C)[rank:], info_geqp3, info_ormqr)`` for nonempty ``A`` and ``C`` with columns
    (:func:`complement_coordinates`)."""
    qr, _, tau, info = pivoted_qr(A)
    if info < 0:
        return fortran_copy(C)[:0], info, 0
    count = qr_rank(qr, tol)
    out, info = qt_product(qr, tau, C)
    return out[count:], 0, info


def complement_coordinates(C: np.ndarray, A: np.ndarray, tol: float) -> np.ndarray:
    """``(Q^T C)[rank:]``: the coordinates of ``C``'s columns in an orthonormal basis of the
    complement of ``span(A)``, with ``Q`` of ``A``'s pivoted QR and ``rank`` the number of
    ``|diag R|`` above ``tol`` times the largest; ``C`` unchanged when ``A`` has no columns."""
    C, A = np.asarray(C, dtype=float), np.asarray(A, dtype=float)
    if A.shape[1] == 0:
        return C.copy()
    if A.shape[0] == 0:
        return np.zeros((0, C.shape[1]))
    if C.shape[1] == 0:
        qr, _, _, info = pivoted_qr(A)
        check_info(info, "geqp3")
        return np.zeros((A.shape[0] - qr_rank(qr, tol), 0))
    out, info_geqp3, info_ormqr = complement_kernel(C, A, tol)
    check_info(info_geqp3, "geqp3")
    check_info(info_ormqr, "ormqr")
    return out
