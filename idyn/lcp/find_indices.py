"""Algorithm 1 (FIND-INDICES): tangent rows that keep the no-slip MLCP solvable (Sec. 4.4).

The no-slip MLCP (eq. 42) can be reduced to an LCP only if the matrix ``A`` of eq. 116 (built
from ``M``, ``P``, ``S``, ``T``) is non-singular, which holds when
``X^T M^-1 X`` is non-singular for ``X = [P^T  S_S^T  T_T^T]``.  Algorithm 1 walks over the
contacts and keeps the ``i``-th row of ``S`` (then of ``T``) only if it leaves that matrix
non-singular; Appendix E proves that dropping the others does not change the MLCP solution.

With ``M = L L^T`` and ``H = L^-1 X`` we have ``X^T M^-1 X = H^T H``; the singularity test of
lines 6 and 10 is the pivot of the Cholesky update that appends a column, i.e. the distance of
the new whitened column from the span of the kept ones (Sec. 4.4 prescribes "O(m^2) updates to
an initial O(m^3) Cholesky factorization").  We keep an orthonormal basis of that span (two
classical Gram-Schmidt passes per candidate, ``O(n m^2)`` flops for ``n`` candidates) and visit
the candidates in Algorithm 1's order.  The scan is compiled (numba, cached on disk).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .. import validation
from ..kernels import pivoted_qr
from ..errors import InvalidInputError
from ..jit import cached_jit as _jit
from .gram import DEFAULT_DEPENDENCE_TOL, cholesky_factor


def find_indices(M, P, S, T, *, dependence_tol: float = DEFAULT_DEPENDENCE_TOL, cholesky=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Return the row indices ``(s_idx, t_idx)`` of ``S`` and ``T`` kept by Algorithm 1.

    Args:
        M: (m, m) symmetric positive definite generalized inertia.
        P: (p, m) actuation (selection) matrix, or None / zero rows for none; its rows are
            always kept and must be linearly independent.
        S, T: (n, m) first and second tangent-direction wrenches, one row per contact.
        dependence_tol: sine of the angle below which a row counts as dependent.
        cholesky: the lower Cholesky factor of ``M``, if already computed (not recomputed).

    Raises:
        InvalidInputError: ``M`` not positive definite or ``P`` rank deficient.
    """
    M = validation.square(M, "M")
    m = M.shape[0]
    P = np.zeros((0, m)) if P is None else validation.matrix(P, (None, m), "P")
    S = validation.matrix(S, (None, m), "S")
    T = validation.matrix(T, (S.shape[0], m), "T")
    L = cholesky_factor(M, cholesky)
    p, n = P.shape[0], S.shape[0]
    # whitened candidate columns in Algorithm 1's order: S_1, T_1, S_2, T_2, ...
    rows = np.empty((2 * n, m))
    rows[0::2], rows[1::2] = S, T
    H, _ = lapack.dtrtrs(L, np.asfortranarray(np.vstack([P, rows]).T), lower=1)
    kept = independent_columns(H, dependence_tol, required=p)
    return kept[kept % 2 == 0] // 2, kept[kept % 2 == 1] // 2


def independent_columns(H: np.ndarray, dependence_tol: float = DEFAULT_DEPENDENCE_TOL,
                        required: int = 0, order=None) -> np.ndarray:
    """Algorithm 1's scan on whitened columns: indices (among ``H[:, required:]``, visited in
    order, or in the order ``order`` of those indices) of the columns it keeps, in visiting
    order, a column being kept when its distance from the span of the kept ones exceeds
    ``dependence_tol`` times its norm.

    ``H = L^-1 X`` for ``M = L L^T``, so ``X^T M^-1 X = H^T H``; a caller that has already
    whitened its rows (a controller step) calls this instead of :func:`find_indices`.  The first
    ``required`` columns (``P``'s) must all be kept (InvalidInputError otherwise).
    """
    basis = _Span(H.shape[0], dependence_tol)
    for j in range(required):
        if not basis.try_add(H[:, j]):
            raise InvalidInputError("the rows of P must be linearly independent")
    return basis.scan(H[:, required:], order)


def kept_mask(H: np.ndarray, order: np.ndarray, dependence_tol: float) -> np.ndarray:
    """:func:`independent_columns` of ``H`` visited in ``order`` as a boolean mask over the
    columns (what a controller step needs: one compiled call)."""
    mask = np.zeros(H.shape[1], dtype=bool)
    _kept_mask(H, np.asarray(order, dtype=np.intp), dependence_tol * dependence_tol, mask)
    return mask


@_jit
def pivoted_kept_mask(H, tol2, mask):
    """``mask`` (output, zero-filled) of :func:`kept_mask` with ``order`` the column pivots of
    ``H``'s pivoted QR (:func:`idyn.lcp.qr.column_pivots`) and ``tol2`` the squared
    ``dependence_tol``, as one compiled call for a nonempty ``H``; returns LAPACK's ``info``
    (the mask is left unset when it is negative)."""
    _, piv, _, info = pivoted_qr(H)
    if info >= 0:
        _kept_mask(H, piv.astype(np.intp), tol2, mask)
    return info


@_jit
def kept_tangent_rows(white, candidates, tol2):
    """``(rows, s_count, info)``: Algorithm 1 on the tangent rows of the nonempty, sorted contact
    indices ``candidates`` of a control step, ``white`` the whitened rows ``[N; S; T]`` (columns,
    ``m`` of each): their ``S`` then ``T`` columns visited in the order of their pivoted QR
    (:func:`pivoted_kept_mask`, ``tol2`` the squared dependence tolerance).  ``rows`` are the kept
    rows of ``[N; S; T]``, ``S`` rows first (``s_count`` of them); ``info`` is LAPACK's of the QR."""
    m, k = white.shape[1] // 3, candidates.shape[0]
    offered = np.empty(2 * k, np.intp)
    for i in range(k):
        offered[i] = candidates[i] + m
        offered[k + i] = candidates[i] + 2 * m
    mask = np.zeros(2 * k, np.bool_)
    info = pivoted_kept_mask(white[:, offered], tol2, mask)
    s_count = 0
    for i in range(k):
        s_count += mask[i]
    return offered[mask], s_count, info


class _Span:
    """Orthonormal basis of the accepted whitened columns (``X^T M^-1 X = H^T H``).

    A column is independent when its distance from the span exceeds ``tol`` times its norm:
    the same number as the pivot of the updated Cholesky factor of ``H^T H`` (the squared
    distance is that pivot squared).
    """

    def __init__(self, m: int, tol: float):
        self.Q = np.zeros((m, m))     # columns [:size] are the basis
        self.size = 0
        self.tol2 = tol * tol

    def try_add(self, c: np.ndarray) -> bool:
        return self.scan(c[:, None]).size == 1

    def scan(self, C: np.ndarray, order=None) -> np.ndarray:
        """Indices of the columns of ``C`` that Algorithm 1, visiting them in order (or in
        ``order``), keeps (each kept column joins the basis before the next is tested)."""
        C = np.asarray(C, dtype=float)
        order = np.arange(C.shape[1]) if order is None else np.asarray(order, dtype=np.intp)
        kept, self.size = _scan(self.Q, self.size, C, order, self.tol2)
        return kept


@_jit
def _scan(Q, size, C, order, tol2):
    m = C.shape[0]
    n = order.shape[0]
    kept = np.empty(n, np.intp)
    count = 0
    r = np.empty(m)
    coef = np.empty(m)
    for t in range(n):
        if size >= m:
            break
        j = order[t]
        norm2 = 0.0
        for i in range(m):
            r[i] = C[i, j]
            norm2 += r[i] * r[i]
        if norm2 <= 0.0:
            continue
        for _ in range(2):            # classical Gram-Schmidt, twice (round-off)
            for q in range(size):
                d = 0.0
                for i in range(m):
                    d += Q[i, q] * r[i]
                coef[q] = d
            for q in range(size):
                for i in range(m):
                    r[i] -= Q[i, q] * coef[q]
        res2 = 0.0
        for i in range(m):
            res2 += r[i] * r[i]
        if res2 > tol2 * norm2:
            scale = 1.0 / np.sqrt(res2)
            for i in range(m):
                Q[i, size] = r[i] * scale
            size += 1
            kept[count] = j
            count += 1
    return kept[:count], size


@_jit
def _kept_mask(H, order, tol2, mask):
    m = H.shape[0]
    kept, _ = _scan(np.zeros((m, m)), 0, H, order, tol2)
    for j in kept:
        mask[j] = True
