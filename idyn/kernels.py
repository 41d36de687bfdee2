"""idyn's compiled layer: the numba kernels of the core that other modules and packages call.

One module, in five sections; every kernel takes arrays its caller allocates and validated (the
public functions of :mod:`idyn.contact`, :mod:`idyn.qp`, :mod:`idyn.friction_pyramid` and
:mod:`idyn.lcp` check their inputs first), and is cached on disk (:mod:`idyn.jit`):

* **Contact rows**: ``[N; S; T]`` of a list of contacts (paper App. B), their tangent frames.
* **Solves with a Cholesky factor**: ``(R^T R) x = b`` by two substitutions (Algorithm 2's
  updated factor, the no-slip LCP's ``G A^-1 G^T``, the reduced dynamics' ``A = M_uu``).
* **LAPACK from compiled loops**: ``dgesv``, ``dgeqp3``, ``dormqr`` through scipy's
  public ``scipy.linalg.cython_lapack`` (:func:`idyn.jit.external`).
* **Around quadprog's call** (:func:`idyn.qp.solve_built`): the equality rows' rank, the Hessian's
  preparation (symmetrised, ridge scale, definiteness test), accepting an answer.
* **The friction-pyramid LCP** (paper eqs. 52-56, :mod:`idyn.friction_pyramid`): the LCP from the
  Delassus matrix with no-slip rows eliminated by a Schur complement (Sec. 4.4), its
  equilibration, the impulses of its solution.

Compiled because the same arithmetic as numpy calls on the small arrays of a control step costs
more in per-call overhead than in arithmetic.
"""
from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from .jit import cached_jit, external


# ---------------------------------------------------------------------- Contact rows


@cached_jit
def contact_rows(J, support, ja, jb, two_bodies, frames, points, rows):
    """``rows = [N; S; T]`` (3m x nv, output) from the world joint Jacobian ``J`` (6 x nv, [linear
    at the origin; angular]), the support masks of the joints ``ja`` (and ``jb`` when
    ``two_bodies``), the contact frames (m, 3, 3: rows n, s, t) and points (m, 3).  Into an
    array the caller allocates: numba boxes a returned array through a Python-level lookup that
    costs more than the allocation."""
    m, nv = ja.shape[0], J.shape[1]
    for i in range(m):
        px, py, pz = points[i, 0], points[i, 1], points[i, 2]
        for d in range(3):
            n0, n1, n2 = frames[i, d, 0], frames[i, d, 1], frames[i, d, 2]
            x0, x1, x2 = py * n2 - pz * n1, pz * n0 - px * n2, px * n1 - py * n0     # p x d
            r = d * m + i
            for j in range(nv):
                mask = support[ja[i], j] - support[jb[i], j] if two_bodies else support[ja[i], j]
                rows[r, j] = ((n0 * J[0, j] + n1 * J[1, j] + n2 * J[2, j])
                              + (x0 * J[3, j] + x1 * J[4, j] + x2 * J[5, j])) * mask


@cached_jit
def tangent_rows(normals, s, t):
    """The tangents of :func:`idyn.contact.tangent_frames` (the shortest-arc rotation taking z to
    each unit normal applied to x and y) into ``s`` and ``t`` (m, 3), which the caller
    allocates."""
    for i in range(normals.shape[0]):
        nx, ny, c = normals[i, 0], normals[i, 1], normals[i, 2]
        if c < -1.0 + 1e-12:           # n = -z: the shortest arc is not unique; rotate about x
            s[i, 0], s[i, 1], s[i, 2] = 1.0, 0.0, 0.0
            t[i, 0], t[i, 1], t[i, 2] = 0.0, -1.0, 0.0
            continue
        k = 1.0 / (1.0 + c)
        kx = k * nx
        s[i, 0] = 1.0 - kx * nx
        s[i, 1] = t[i, 0] = -kx * ny
        s[i, 2] = -nx
        t[i, 1] = 1.0 - k * ny * ny
        t[i, 2] = -ny


@cached_jit
def framed_batch(points, normals, gaps, mu, frames):
    """Validate and frame m contacts, points (m, 3), normals (m, 3) of any non-zero length, gaps
    (m,) and friction ``mu`` (m,), in one call: ``frames`` (m, 3, 3) gets the rows n, s, t (n
    the unit normal, s and t from :func:`tangent_rows`). Returns 0, or ``4 i + code`` for the
    first bad row i with code 1 for a non-finite point, normal or gap, 2 for a zero normal, 3
    for a friction coefficient that is NaN or negative (the checks of :class:`idyn.ContactSet`)."""
    m = points.shape[0]
    for i in range(m):
        n0, n1, n2 = normals[i, 0], normals[i, 1], normals[i, 2]
        if not (np.isfinite(points[i, 0]) and np.isfinite(points[i, 1]) and np.isfinite(points[i, 2])
                and np.isfinite(n0) and np.isfinite(n1) and np.isfinite(n2) and np.isfinite(gaps[i])):
            return 4 * i + 1
        if np.isnan(mu[i]) or mu[i] < 0.0:
            return 4 * i + 3
        norm = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        if norm < 1e-12:
            return 4 * i + 2
        frames[i, 0, 0], frames[i, 0, 1], frames[i, 0, 2] = n0 / norm, n1 / norm, n2 / norm
    tangent_rows(frames[:, 0], frames[:, 1], frames[:, 2])
    return 0


# ---------------------------------------------------------------------- Solves with a Cholesky factor


@cached_jit
def gram_solve(R, n, b, x):
    """``x = (R^T R)^-1 b`` for the leading ``n x n`` block of the upper triangular ``R``
    (``R^T y = b``, then ``R x = y``); ``x`` may be ``b``."""
    for p in range(n):
        c = b[p]
        for q in range(p):
            c -= R[q, p] * x[q]
        x[p] = c / R[p, p]
    for p in range(n - 1, -1, -1):
        c = x[p]
        for q in range(p + 1, n):
            c -= R[p, q] * x[q]
        x[p] = c / R[p, p]


# ---------------------------------------------------------------------- LAPACK from compiled loops


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


_dgeqp3 = external("idyn_scipy_dgeqp3", get_cython_function_address("scipy.linalg.cython_lapack", "dgeqp3"),
                   types.void(*(_P,) * 9))
_dormqr = external("idyn_scipy_dormqr", get_cython_function_address("scipy.linalg.cython_lapack", "dormqr"),
                   types.void(*(_P,) * 13))


@cached_jit
def fortran_copy(A):
    """A Fortran-ordered float copy of the 2-d ``A`` (LAPACK's layout)."""
    F = np.empty((A.shape[1], A.shape[0])).T
    for j in range(A.shape[1]):     # element loops: a slice assignment compiles numba's formatted
        for i in range(A.shape[0]):  # shape-mismatch error, seconds of a cold start
            F[i, j] = A[i, j]
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
def qr_rank(qr, tol):
    """The numerical rank of a pivoted QR (:func:`pivoted_qr`): how many ``|R_jj|`` exceed
    ``tol`` times the largest (0 when all are zero or one is NaN).  The one rank rule of the
    contact problems (Algorithm 1's independent rows, Algorithm 2's complement, the QP's
    dependent equalities)."""
    d = min(qr.shape[0], qr.shape[1])
    top = 0.0
    for j in range(d):
        r = abs(qr[j, j])
        if np.isnan(r):
            return 0
        top = max(top, r)
    rank = 0
    for j in range(d):
        rank += abs(qr[j, j]) > tol * top
    return rank


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


# ---------------------------------------------------------------------- Around quadprog's call


@cached_jit
def prepare(H, pd_tol, Hs):
    """``Hs = (H + H^T) / 2`` (output); returns ``(scale, definite)``: ``max(max_i |Hs_ii|, 1)``
    (the scale of the ridge schedule) and whether quadprog would be accurate on ``Hs``: its
    Cholesky factorisation exists and every squared pivot exceeds ``pd_tol`` times the largest
    (a semi-definite ``H`` often passes a plain Cholesky by rounding, and quadprog then returns a
    feasible but visibly suboptimal point).  NaN anywhere: not definite."""
    n = H.shape[0]
    scale = 1.0
    for i in range(n):
        for j in range(n):
            Hs[i, j] = 0.5 * (H[i, j] + H[j, i])
        scale = max(scale, abs(Hs[i, i]))
    try:
        L = np.linalg.cholesky(Hs)
    except Exception:       # numpy's LinAlgError: not positive definite, or not finite
        return scale, False
    pivots = np.diag(L) ** 2
    return scale, n == 0 or pivots.min() > pd_tol * max(pivots.max(), 1e-300)


@cached_jit
def cholesky_upper(X, U):
    """Upper ``U`` (output, ``X.shape``) with ``U^T U = X`` by LAPACK (``np.linalg.cholesky``);
    False, ``U`` unset, when ``X`` is not positive definite or not finite."""
    try:
        L = np.linalg.cholesky(X)
    except Exception:       # numpy's LinAlgError
        return False
    k = X.shape[0]
    for i in range(k):
        for j in range(k):
            U[i, j] = L[j, i]
    return True


@cached_jit
def max_abs(x):
    """``max |x_i|`` (0 for no entries)."""
    largest = 0.0
    for i in range(x.shape[0]):
        largest = max(largest, abs(x[i]))
    return largest


@cached_jit
def row_slack(A, b, x, row, x_max):
    """``A_row x - b_row`` and the row's scale ``(1 + max|x|)(1 + max_j |A_row,j|) + |b_row|``,
    ``x_max = max|x|``: a row holds to ``tol`` if its slack is above ``-tol`` times its scale."""
    slack = -b[row]
    a_max = 0.0
    for j in range(x.shape[0]):
        slack += A[row, j] * x[j]
        a_max = max(a_max, abs(A[row, j]))
    return slack, (1.0 + x_max) * (1.0 + a_max) + abs(b[row])


@cached_jit
def accepted(H, c, x, Ae, be, Ai, bi, tol):
    """``1/2 x^T H x + c^T x`` if ``x`` is finite and every equality row ``|a x - b|`` and
    inequality row ``b - a x`` holds to ``tol`` (:func:`row_slack`); NaN otherwise."""
    n = x.shape[0]
    for j in range(n):
        if not np.isfinite(x[j]):
            return np.nan
    x_max = max_abs(x)
    for i in range(Ae.shape[0]):
        slack, scale = row_slack(Ae, be, x, i, x_max)
        if not -abs(slack) >= -tol * scale:
            return np.nan
    for i in range(Ai.shape[0]):
        slack, scale = row_slack(Ai, bi, x, i, x_max)
        if not slack >= -tol * scale:
            return np.nan
    total = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += H[i, j] * x[j]
        total += x[i] * (0.5 * s + c[i])
    return total


@cached_jit
def independent_rows(A, tol, keep):
    """The rank ``r`` of the rows of ``A`` (p x n, p >= 1) by a column-pivoted QR of ``A^T``
    (LAPACK ``dgeqp3``, :func:`idyn.kernels.pivoted_qr`; rank by :func:`qr_rank`);
    ``keep[:r]`` (output) the pivot order's first ``r`` rows, ascending.  -1 when LAPACK
    reports an illegal argument."""
    qr, piv, _, info = pivoted_qr(A.T)
    if info < 0:
        return -1
    rank = qr_rank(qr, tol)
    chosen = np.zeros(A.shape[0], np.bool_)    # ascending without a sort (numba's sort
    for j in range(rank):                       # compiles for seconds)
        chosen[piv[j]] = True
    count = 0
    for i in range(A.shape[0]):
        if chosen[i]:
            keep[count] = i
            count += 1
    return rank


# ---------------------------------------------------------------------- The friction-pyramid LCP


@cached_jit
def gather(A, rows, cols):
    """``A[np.ix_(rows, cols)]`` as a new array."""
    out = np.empty((rows.shape[0], cols.shape[0]))
    for i in range(rows.shape[0]):
        for j in range(cols.shape[0]):
            out[i, j] = A[rows[i], cols[j]]
    return out


@cached_jit
def pyramid_lcp(W, u, R, G, sel, sign, b, C, mu, edged, Q, r):
    """Fill the friction-pyramid LCP of :class:`idyn.friction_pyramid.PyramidLCP` into ``Q``,
    ``r`` (``Q`` holding the constant E / -E^T entries): the rows ``R`` of the contact space
    with the no-slip equality rows ``G`` eliminated by a Schur complement (paper Sec. 4.4),

        Wr = W_RR - W_RG W_GG^-1 W_GR,   ur = u_R - W_RG W_GG^-1 u_G,

    gathered by ``sel`` with signs ``sign`` into the [N, D] block (no friction matrices
    multiplied); ``b`` added to the m normal rows of r and the compliance ``C`` (empty: none) to
    their diagonal; ``mu`` of the ``edged`` contacts in their lambda rows. Returns the upper
    Cholesky factor of W_GG (LAPACK potrf; numpy's LinAlgError if it is not positive definite)."""
    nr, ng, top = R.shape[0], G.shape[0], sel.shape[0]
    Wr = gather(W, R, R)
    ur = np.empty(nr)
    for i in range(nr):
        ur[i] = u[R[i]]
    U = np.zeros((ng, ng))
    if ng:
        U = np.ascontiguousarray(np.linalg.cholesky(gather(W, G, G)).T)
        X = gather(W, G, R)               # becomes W_GG^-1 W_GR, column by column
        col = np.empty(ng)
        for c in range(nr):
            for g in range(ng):
                col[g] = X[g, c]
            gram_solve(U, ng, col, col)
            for g in range(ng):
                X[g, c] = col[g]
        for g in range(ng):
            col[g] = u[G[g]]
        gram_solve(U, ng, col, col)
        for i in range(nr):
            s = 0.0
            for g in range(ng):
                s += W[R[i], G[g]] * col[g]
            ur[i] -= s
            for j in range(nr):
                s = 0.0
                for g in range(ng):
                    s += W[R[i], G[g]] * X[g, j]
                Wr[i, j] -= s
    for i in range(top):
        r[i] = sign[i] * ur[sel[i]]
        for j in range(top):
            Q[i, j] = sign[i] * sign[j] * Wr[sel[i], sel[j]]
    for i in range(b.shape[0]):
        r[i] += b[i]
    for i in range(C.shape[0]):
        Q[i, i] += C[i]
    for k in range(edged.shape[0]):
        Q[top + k, edged[k]] = mu[edged[k]]
    return U


@cached_jit
def equilibrate(Q, r, s, Qs, rs):
    """The LCP (Q, r) equilibrated: ``Qs = s Q s``, ``rs = s r`` with ``s`` (output) 1 / sqrt of
    the positive diagonal entries (impulse rows) and sqrt of their mean elsewhere (the lambda
    rows, zero diagonal; 1 if no entry is positive)."""
    n = r.shape[0]
    total, count = 0.0, 0
    for i in range(n):
        if Q[i, i] > 0.0:
            total += Q[i, i]
            count += 1
    other = math.sqrt(total / count) if count else 1.0
    for i in range(n):
        s[i] = 1.0 / math.sqrt(Q[i, i]) if Q[i, i] > 0.0 else other
    for i in range(n):
        rs[i] = s[i] * r[i]
        for j in range(n):
            Qs[i, j] = s[i] * Q[i, j] * s[j]


@cached_jit
def pyramid_impulses(zs, s, m, edged, W, u, R, G, U, out):
    """Per-contact impulses ``out`` (m, 3) [normal, s, t] of the solution z = s zs of the LCP of
    :func:`pyramid_lcp` (zs: of the scaled LCP): the R rows from the pyramid variables
    (f_S = f_S+ - f_S-, likewise T), the eliminated rows G from the equalities,
    f_G = -W_GG^-1 (u_G + W_GR f_R)."""
    me, ng = edged.shape[0], G.shape[0]
    flat = np.zeros(3 * m)
    f_R = np.empty(R.shape[0])
    z = np.empty(m + 4 * me)
    for i in range(z.shape[0]):
        z[i] = s[i] * zs[i]
    for i in range(m):
        f_R[i] = z[i]
    for k in range(me):
        f_R[m + k] = z[m + k] - z[m + me + k]
        f_R[m + me + k] = z[m + 2 * me + k] - z[m + 3 * me + k]
    for j in range(R.shape[0]):
        flat[R[j]] = f_R[j]
    if ng:
        x = np.empty(ng)
        for g in range(ng):
            acc = u[G[g]]
            for j in range(R.shape[0]):
                acc += W[G[g], R[j]] * f_R[j]
            x[g] = acc
        gram_solve(U, ng, x, x)
        for g in range(ng):
            flat[G[g]] = -x[g]
    for i in range(m):
        for d in range(3):
            out[i, d] = flat[d * m + i]
