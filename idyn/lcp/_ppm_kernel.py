"""The pivoting loop of :func:`idyn.lcp.ppm_contact` (Algorithm 2), compiled with numba.

The same loop as :func:`idyn.lcp.principal_pivoting.principal_pivoting` (see there for the
rules: Alg. 2 lines 3-37, the least-index switch on a repeated active set, dependent indices
skipped by Appendix F) with the system of Algorithm 2 inlined: the active set ``a`` and the
upper triangular ``R`` with ``R^T R = G_a^T G_a`` (the paper's "O(m^2) updates to an initial
O(m^3) Cholesky factorization", Sec. 4.4):

* append ``g``: ``R^T l = G_a^T g`` (one triangular solve), new diagonal
  ``sqrt(|g|^2 - |l|^2)``, the distance of ``g`` from ``span(G_a)``: ``g`` is dependent (not
  appended) when it is below ``dependence_tol * |g|``;
* delete the ``p``-th column: the columns after it shift left and Givens rotations return the
  upper Hessenberg part to triangular form;
* solve ``Q_aa z_a = -r_a``: two triangular solves (:func:`idyn.kernels.gram_solve`).

Storage: ``GT`` is ``G^T`` (row ``i`` is contact ``i``'s whitened column), ``cols[p]`` the
column of the ``p``-th active contact, ``R`` upper triangular with ``R^T R = G_a^T G_a``.
Compilation is cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from ..kernels import gram_solve
from ..kernels import fortran_copy
from ..jit import cached_jit as _jit
from .qr import complement_kernel
from .residuals import residuals_pass

SOLVED, MAX_PIVOTS, NUMERICAL_FAILURE = 0, 1, 2
_TINY = np.finfo(np.float64).tiny


@_jit
def _append(GT, i, cols, R, size, tol2):
    """Append contact ``i`` unless its column is (numerically) in the span of the active ones;
    return the new size (``size`` unchanged when refused)."""
    d = GT.shape[1]
    g = GT[i]
    gg = 0.0
    for t in range(d):
        gg += g[t] * g[t]
    if size >= d or gg == 0.0:
        return size
    ll = 0.0
    for p in range(size):          # R^T l = G_a^T g (forward substitution), l -> R[:size, size]
        c = 0.0
        for t in range(d):
            c += cols[p, t] * g[t]
        for q in range(p):
            c -= R[q, p] * R[q, size]
        R[p, size] = c / R[p, p]
        ll += R[p, size] * R[p, size]
    s = gg - ll                    # squared distance of g from span(G_a)
    if s <= tol2 * gg:
        for p in range(size):
            R[p, size] = 0.0
        return size
    R[size, size] = np.sqrt(s)
    for t in range(d):
        cols[size, t] = g[t]
    return size + 1


@_jit
def _delete(active, cols, R, size, position):
    """Remove the ``position``-th active contact: the columns of ``R`` after it shift left and
    Givens rotations return the upper Hessenberg part to triangular form."""
    d = cols.shape[1]
    for j in range(position, size - 1):
        for i in range(size):
            R[i, j] = R[i, j + 1]
        for t in range(d):
            cols[j, t] = cols[j + 1, t]
        active[j] = active[j + 1]
    for j in range(position, size - 1):
        a, b = R[j, j], R[j + 1, j]
        if b != 0.0:
            h = np.hypot(a, b)
            c, s = a / h, b / h
            for k in range(j, size - 1):
                x, y = R[j, k], R[j + 1, k]
                R[j, k] = c * x + s * y
                R[j + 1, k] = c * y - s * x
            R[j + 1, j] = 0.0
    for i in range(R.shape[0]):
        R[i, size - 1] = 0.0
        R[size - 1, i] = 0.0
    return size - 1


@_jit
def _residual(GT, r, cols, size, z_a, w):
    """``w = G^T (G_a z_a) + r``."""
    n, d = GT.shape
    v = np.zeros(d)
    for p in range(size):
        for t in range(d):
            v[t] += z_a[p] * cols[p, t]
    for i in range(n):
        s = 0.0
        for t in range(d):
            s += GT[i, t] * v[t]
        w[i] = s + r[i]


@_jit
def _seen(visited, count, mask):
    for k in range(count):
        same = True
        for i in range(mask.shape[0]):
            if visited[k, i] != mask[i]:
                same = False
                break
        if same:
            return True
    return False


@_jit
def scales(GT, r):
    """``(max|r|, max_i |g_i| sum_j |g_j|)``: the data scale and a bound of ``||G^T G||_inf``
    (the scales of the residual check, :func:`idyn.lcp.residuals.residuals_from_parts`)."""
    n, d = GT.shape
    rmax, gmax, gsum = 0.0, 0.0, 0.0
    for i in range(n):
        rmax = max(rmax, abs(r[i]))
        s = 0.0
        for t in range(d):
            s += GT[i, t] * GT[i, t]
        s = np.sqrt(s)
        gmax = max(gmax, s)
        gsum += s
    return rmax, gmax * gsum


@_jit
def contact_ppm(GT, r, warm, max_pivots, dependence_tol, rel_tol, z, w, active):
    """Algorithm 2 on the LCP ``(r, G^T G)`` into ``z`` (zero-filled), ``w`` and ``active`` (room
    for ``d`` indices); returns ``(size, status, pivots)``: ``w`` evaluated at the returned
    (clipped) ``z``, ``active[:size]`` in insertion order."""
    n, d = GT.shape
    tol2 = dependence_tol * dependence_tol
    cols = np.zeros((d, d))
    R = np.zeros((d, d))
    size = 0
    for i in range(n):
        w[i] = r[i]
    rmax = 0.0
    i0 = 0
    for i in range(n):
        rmax = max(rmax, abs(r[i]))
        if r[i] < r[i0]:
            i0 = i
    w_tol = rel_tol * max(rmax, _TINY)
    if n == 0 or r[i0] >= -w_tol:             # Alg. 2 lines 3-5: the trivial solution
        return 0, SOLVED, 0
    for i in warm:                            # line 6 (dependent warm indices are dropped)
        grown = _append(GT, i, cols, R, size, tol2)
        if grown > size:
            active[size] = i
            size = grown
    pivots = 0
    if size == 0:                             # lines 7-8
        grown = _append(GT, i0, cols, R, size, tol2)
        if grown > size:
            active[size] = i0
            size = grown
        pivots = 1
    least_index = False
    visited = np.zeros((max_pivots + 2, n), np.bool_)
    count = 1
    for p in range(size):
        visited[0, active[p]] = True
    blocked = np.zeros(n, np.bool_)
    mask = np.zeros(n, np.bool_)
    z_a = np.zeros(d)
    status = SOLVED
    while True:
        b = np.empty(size)
        for p in range(size):
            b[p] = r[active[p]]
        gram_solve(R, size, b, z_a)               # z_a = -(R^T R)^-1 r_a (Alg. 2 line 11)
        for p in range(size):
            z_a[p] = -z_a[p]
        _residual(GT, r, cols, size, z_a, w)
        zmax = 0.0
        for p in range(size):
            w[active[p]] = 0.0
            zmax = max(zmax, abs(z_a[p]))
        z_tol = rel_tol * max(zmax, _TINY)
        mask[:] = False
        for p in range(size):
            mask[active[p]] = True
        to_add, first_add = -1, n                 # the most negative candidate w (first on ties)
        for i in range(n):
            if w[i] < -w_tol and not blocked[i] and not mask[i]:
                if first_add == n:
                    first_add = i
                if to_add < 0 or w[i] < w[to_add]:
                    to_add = i
        j, first_remove = -1, n                   # the most negative z (first on ties)
        jz = 0.0
        for p in range(size):
            if z_a[p] < -z_tol:
                first_remove = min(first_remove, active[p])
                if j < 0 or z_a[p] < jz:
                    j, jz = active[p], z_a[p]
        if to_add < 0 and j < 0:
            status = SOLVED
            break
        if pivots >= max_pivots:
            status = MAX_PIVOTS
            break
        if least_index:                           # Murty's rule: the smallest infeasible index
            if first_add < first_remove:
                to_add, to_remove = first_add, -1
            else:
                to_add, to_remove = -1, first_remove
        else:                                     # Alg. 2 lines 16-37
            to_remove = j
        if to_add >= 0:
            grown = _append(GT, to_add, cols, R, size, tol2)
            if grown == size:
                blocked[to_add] = True            # Appendix F: a dependent index has w_i = 0
                continue
            active[size] = to_add
            size = grown
            pivots += 1
        if to_remove >= 0:
            for p in range(size):
                if active[p] == to_remove:
                    size = _delete(active, cols, R, size, p)
                    blocked[:] = False
                    pivots += 1
                    break
        mask[:] = False
        for p in range(size):
            mask[active[p]] = True
        if _seen(visited, count, mask):
            least_index = True
        elif count < visited.shape[0]:
            for i in range(n):
                visited[count, i] = mask[i]
            count += 1
    for p in range(size):
        z[active[p]] = max(z_a[p], 0.0)
        z_a[p] = z[active[p]]
    if size:
        _residual(GT, r, cols, size, z_a, w)
    else:
        for i in range(n):
            w[i] = r[i]
    return size, status, pivots


@_jit
def checked_contact_ppm(GT, r, warm, max_pivots, dependence_tol, rel_tol, tol, z, w, active):
    """:func:`contact_ppm`, then the acceptance check of a solved answer (the residuals of
    :func:`idyn.lcp.residuals.residuals_from_parts` at the :func:`scales` of ``(G, r)`` within
    ``tol``, else status ``NUMERICAL_FAILURE``) and ``active[:size]`` sorted: the pivoting and
    the check of :func:`idyn.lcp.ppm_contact.solve_factored` in one call."""
    size, status, pivots = contact_ppm(GT, r, warm, max_pivots, dependence_tol, rel_tol, z, w, active)
    if status == SOLVED:
        q_norm, m_norm = scales(GT, r)
        if not residuals_pass(z, w, q_norm, m_norm, tol):
            status = NUMERICAL_FAILURE
    active[:size].sort()
    return size, status, pivots


@_jit
def projected_contact_ppm(white, m, kept, rank_tol, r, warm, max_pivots, dependence_tol, rel_tol, tol, z, w, active):
    """Algorithm 2 with the constrained inverse inertia as one call for a control step: ``G``
    the first ``m`` columns of ``white`` projected off the span of its columns ``kept``
    (:func:`idyn.lcp.qr.complement_kernel`; ``white[:, :m]`` itself when none is kept), then
    :func:`checked_contact_ppm` on ``(G, r)`` into ``z``, ``w``, ``active``.  Returns
    ``(G, size, status, pivots, info_geqp3, info_ormqr)`` (LAPACK's ``info`` < 0: nothing
    solved)."""
    if kept.shape[0] == 0 or white.shape[0] == 0:
        G, info_geqp3, info_ormqr = fortran_copy(white[:, :m])[:, :], 0, 0
    else:
        G, info_geqp3, info_ormqr = complement_kernel(white[:, :m], white[:, kept], rank_tol)
    if info_geqp3 < 0 or info_ormqr < 0:
        return G, 0, NUMERICAL_FAILURE, 0, info_geqp3, info_ormqr
    size, status, pivots = checked_contact_ppm(np.ascontiguousarray(G.T), r, warm, max_pivots, dependence_tol,
                                               rel_tol, tol, z, w, active)
    return G, size, status, pivots, info_geqp3, info_ormqr
