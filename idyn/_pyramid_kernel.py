"""The friction-pyramid LCP of :mod:`idyn.friction_pyramid` (paper eqs. 52-56), compiled.

Its three steps on the small contact-space arrays of a step, each one call instead of a dozen
numpy gathers, masks and products:

* :func:`pyramid_lcp`: the LCP's matrix and constant from the Delassus matrix, with no-slip
  equality rows eliminated by a Schur complement (paper Sec. 4.4),
* :func:`equilibrate`: its equilibration (scales and the scaled LCP),
* :func:`pyramid_impulses`: per-contact impulses from a solution of the scaled LCP.

Into arrays the caller allocates (:mod:`idyn._contact_kernel` says why); cached on disk
(:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np

from ._triangular import gram_solve
from .jit import cached_jit

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
