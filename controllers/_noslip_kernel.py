"""The linear algebra of the no-slip LCP of :mod:`idyn.controllers.lcp_noslip` (eqs. 42-45, Sec. 4.5),
compiled.

With the tangent rows ``G`` (unactuated columns) that Algorithm 1 keeps and their whitened
columns ``Gw = L^-1 G^T``: the Cholesky factor of ``G A^-1 G^T = Gw^T Gw``, the contact-free
velocity ``f* = p + A^-1 G^T (G A^-1 G^T)^-1 (b - G p)`` and the LCP vector
``r = N_u f* + N_a qd_des + phi/dt`` before Algorithm 2; the equality multipliers (the
tangential impulses) after it; the least change of the desired motion that makes the dropped
rows implied ("Consistent desired motion").  Outputs go to arrays the caller allocates.
"""
from __future__ import annotations

import numpy as np

from idyn.kernels import cholesky_upper, gram_solve
from idyn.jit import cached_jit


@cached_jit
def contact_free_motion(white, rows, kept, L, p, qd, phi, dt, u, a, U, residual, r):
    """Outputs ``U`` (zero-filled) the upper Cholesky factor of ``Gw^T Gw`` for the rows ``kept``
    of ``[N; S; T]`` (``white`` = ``L^-1 [N; S; T]_u^T``), ``residual = b - G p`` with
    ``b = -[S; T]_a qd_des``, and ``r = N_u f* + N_a qd_des + phi/dt`` (eq. 45); returns False
    when ``Gw^T Gw`` is not positive definite."""
    nu = white.shape[0]
    m = phi.shape[0]
    k = kept.shape[0]
    X = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            s = 0.0
            for t in range(nu):
                s += white[t, kept[i]] * white[t, kept[j]]
            X[i, j] = s
    ok = cholesky_upper(X, U)
    for i in range(k):
        sa, su = 0.0, 0.0
        for j in range(a.shape[0]):
            sa += rows[kept[i], a[j]] * qd[j]
        for j in range(nu):
            su += rows[kept[i], u[j]] * p[j]
        residual[i] = -sa - su
    f = p.copy()
    if ok and k:
        y = np.empty(k)
        gram_solve(U, k, residual, y)         # (G A^-1 G^T)^-1 (b - G p)
        x = np.empty(nu)                      # G^T y, then A^-1 (G^T y) by L L^T
        for j in range(nu):
            s = 0.0
            for i in range(k):
                s += rows[kept[i], u[j]] * y[i]
            x[j] = s
        gram_solve(L.T, nu, x, x)
        for j in range(nu):
            f[j] = p[j] + x[j]
    for i in range(m):
        su, sa = 0.0, 0.0
        for j in range(nu):
            su += rows[i, u[j]] * f[j]
        for j in range(a.shape[0]):
            sa += rows[i, a[j]] * qd[j]
        r[i] = su + (sa + phi[i] / dt)
    return ok


@cached_jit
def impulses(U, residual, white, kept, fN, out):
    """``out = [f_N; f_S; f_T]`` (zero-filled): the normal impulses ``fN`` and, for the kept
    tangent rows, the equality multipliers ``(G A^-1 G^T)^-1 (b - G p - G A^-1 N_u^T f_N)``
    (Sec. 4.5)."""
    nu = white.shape[0]
    m = fN.shape[0]
    k = kept.shape[0]
    for i in range(m):
        out[i] = fN[i]
    if k:
        v = np.zeros(nu)                      # Nw fN
        for i in range(m):
            for t in range(nu):
                v[t] += white[t, i] * fN[i]
        b = np.empty(k)
        for i in range(k):
            s = 0.0
            for t in range(nu):
                s += white[t, kept[i]] * v[t]
            b[i] = residual[i] - s
        mu = np.empty(k)
        gram_solve(U, k, b, mu)
        for i in range(k):
            out[kept[i]] = mu[i]


@cached_jit
def tangent_consistency(U, white, rows, kept, dropped, a, qd, B, delta):
    """``B = [S; T]_D,a - C^T [S; T]_K,a`` (output, ``(d, na)``): the actuated columns of the
    dropped rows ``dropped`` of ``rows`` less their combination ``C = (Gw^T Gw)^-1 Gw^T Hw`` of
    the kept ones (``Gw``, ``Hw`` the whitened kept and dropped columns of ``white``, ``U`` the
    upper Cholesky factor of ``Gw^T Gw`` from :func:`contact_free_motion`), and ``delta =
    -B^T (B B^T)^-1 B qd`` (output), the least change of ``qd`` with ``B (qd + delta) = 0``.
    Returns False, ``delta`` unset, when the rows of ``B`` are dependent to 1e-10 (the caller
    then takes the pseudo-inverse of ``B``)."""
    nu, k, d, na = white.shape[0], kept.shape[0], dropped.shape[0], a.shape[0]
    g = np.empty(k)
    for j in range(d):
        for i in range(k):
            s = 0.0
            for t in range(nu):
                s += white[t, kept[i]] * white[t, dropped[j]]
            g[i] = s
        if k:
            gram_solve(U, k, g, g)                # column j of C
        for c in range(na):
            s = rows[dropped[j], a[c]]
            for i in range(k):
                s -= g[i] * rows[kept[i], a[c]]
            B[j, c] = s
    X = B @ B.T
    V = np.zeros((d, d))
    if not cholesky_upper(X, V):
        return False
    top = 0.0
    for j in range(d):
        top = max(top, X[j, j])
    for j in range(d):
        if V[j, j] * V[j, j] <= 1e-20 * top:
            return False
    y = B @ qd
    gram_solve(V, d, y, y)
    for c in range(na):
        s = 0.0
        for j in range(d):
            s += B[j, c] * y[j]
        delta[c] = -s
    return True


@cached_jit
def release_update(fN, w, gap_speed, opening, tol, sliding, released, update, unloaded_open):
    """One pass of the release rule of :meth:`idyn.controllers.lcp_noslip.LCPNoSlip._lcp` ("Separating
    contacts" in its module docstring) over the first ``m = w.size`` impulses ``fN`` (outputs):
    ``unloaded_open`` the contacts with ``f_N <= 0`` whose end-of-step gap is wider than
    ``opening`` (``w > opening``, as a speed) or opening (``w - phi/dt > tol``, ``gap_speed =
    phi/dt``), and ``update = sliding | (released & unloaded) | unloaded_open`` (a loaded contact
    sticks again); returns whether ``update`` differs from ``released``."""
    changed = False
    for i in range(w.shape[0]):
        unloaded = fN[i] <= 0.0
        unloaded_open[i] = unloaded and (w[i] > opening or w[i] - gap_speed[i] > tol)
        update[i] = sliding[i] or (released[i] and unloaded) or unloaded_open[i]
        changed = changed or update[i] != released[i]
    return changed
