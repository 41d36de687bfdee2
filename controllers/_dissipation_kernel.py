"""The arithmetic of Stage I and Stage II (:mod:`idyn.controllers.dissipation`), compiled.

Flat loops into arrays the caller allocates: Stage I's data (:func:`stage_one`, eqs. 94-101),
its KKT LCP (:func:`kkt`, footnote 1), the contacts that separate under load
(:func:`new_separations`), the no-slip rows (:func:`no_slip_rows`, eqs. 40-41) and Stage II's
QP terms (:func:`stage_two_terms`, eqs. 102-112).  The solvers are called by the Python shell:
Lemke's method (:func:`idyn.lcp.lemke.cold_checked`) and :func:`idyn.qp.solve_built`.  Cached
on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from idyn.kernels import pivoted_qr, qt_product
from idyn.jit import cached_jit
from idyn.separation import separating_into

from ._dynamics_kernel import pyramid_outputs, resolve

#: relative tolerance of the rank decisions (rows that impulses cannot move, nullspace of Y)
RANK_TOL = 1e-10


@cached_jit
def kkt(H, G, c, g, Mlcp, qlcp):
    """Stage I's KKT LCP ``q = [c; g]``, ``M = [[H, -G^T], [G, 0]]`` (outputs ``Mlcp``, ``qlcp``)
    of ``min 1/2 z^T H z + c^T z  s.t.  G z + g >= 0, z >= 0`` (footnote 1)."""
    k, nc = H.shape[0], G.shape[0]
    for i in range(k):
        for j in range(k):
            Mlcp[i, j] = H[i, j]
        for r in range(nc):
            Mlcp[i, k + r] = -G[r, i]
        qlcp[i] = c[i]
    for r in range(nc):
        for j in range(k):
            Mlcp[k + r, j] = G[r, j]
        for j in range(nc):
            Mlcp[k + r, k + j] = 0.0
        qlcp[k + r] = g[r]


@cached_jit
def stage_one(rows, L, p, qd, u, a, phi, dt, cone, x3, R, Y, free, Vt, c, G, g, H, Mlcp, qlcp):
    """Stage I's data from the contact rows ``[N; S; T]`` (outputs ``R`` ... ``H``): the pyramid
    rows ``R = [N; S; -S; T; -T]`` (Sec. 5.1), ``Y = L^-1 R_u^T`` (``L`` the Cholesky factor of
    ``A = M_uu``), ``free = [N; S; T] v+(0)`` (``v+_u = p``, ``v+_a = qd``), an orthonormal
    basis ``Vt`` (k x k, by rows) whose first ``rank`` rows span ``range(Y^T)`` and the others
    ``ker(Y)``: ``Q^T`` of the column-pivoted QR ``Y^T P = Q R`` (LAPACK ``dgeqp3``, ``dormqr``;
    :func:`idyn.kernels.pivoted_qr`), the rank counting the diagonal entries of ``R`` above
    :data:`RANK_TOL` of the largest, the linear term ``c`` in pyramid layout ``[x_N; x_S; -x_S; x_T; -x_T]`` of
    ``x = free`` (contact work, projected onto ``range(Y^T) = range(R_u)``) or of ``x3`` when it
    is given (3m entries, not projected), the non-penetration rows ``G[:m] = Y_N^T Y``,
    ``g[:m] = free_N + phi/dt`` (eq. 99), then the ``cone`` rows with ``g = 0`` (eq. 101), and
    ``H = Y^T Y = Z^T A Z``, and with a non-empty ``Mlcp`` the KKT LCP (:func:`kkt`).  Returns
    ``(rank, least, largest)``, the last two the range of the non-penetration rows' norms."""
    k3, nv = rows.shape
    m, nu = k3 // 3, u.shape[0]
    for i in range(k3):
        s = 0.0
        for t in range(nu):
            s += rows[i, u[t]] * p[t]
        for t in range(a.shape[0]):
            s += rows[i, a[t]] * qd[t]
        free[i] = s
        for j in range(nv):
            R[i if i < 2 * m else i + m, j] = rows[i, j]
            if i >= m:
                R[i + m if i < 2 * m else i + 2 * m, j] = -rows[i, j]
    for j in range(5 * m):                       # forward substitution, column by column
        for t in range(nu):
            s = R[j, u[t]]
            for r in range(t):
                s -= L[t, r] * Y[r, j]
            Y[t, j] = s / L[t, t]
    k = 5 * m
    rank = 0
    if nu:                                       # (element loops: a slice assignment compiles numba's
        Yt = np.empty((nu, k)).T                 # shape-mismatch error formatting, seconds;
        for t in range(nu):                      # Fortran order, as idyn.kernels.independent_rows
            for j in range(k):                   # gives pivoted_qr: one specialisation for both)
                if not np.isfinite(Y[t, j]):
                    raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
                Yt[j, t] = Y[t, j]
        qr, _, tau, info = pivoted_qr(Yt)        # Y^T P = Q R, |R_00| >= |R_11| >= ...
        for r in range(tau.shape[0]):
            if abs(qr[r, r]) > RANK_TOL * max(abs(qr[0, 0]), 1e-300):
                rank += 1
        eye = np.empty((k, k)).T
        for i in range(k):
            for j in range(k):
                eye[i, j] = 1.0 if i == j else 0.0
        qt, info2 = qt_product(qr, tau, eye)     # Q^T, by rows
        if info != 0 or info2 != 0:
            raise np.linalg.LinAlgError("QR failed")
        for i in range(k):
            for j in range(k):
                Vt[i, j] = qt[i, j]
    else:
        for i in range(k):
            for j in range(k):
                Vt[i, j] = 1.0 if i == j else 0.0
    x = x3 if x3.shape[0] else free
    for i in range(m):
        c[i], c[m + i], c[3 * m + i] = x[i], x[m + i], x[2 * m + i]
        c[2 * m + i], c[4 * m + i] = -x[m + i], -x[2 * m + i]
    if not x3.shape[0]:                          # projected onto the row space Vt[:rank]
        coords = np.zeros(rank)
        for r in range(rank):
            for j in range(k):
                coords[r] += Vt[r, j] * c[j]
        for j in range(k):
            s = 0.0
            for r in range(rank):
                s += Vt[r, j] * coords[r]
            c[j] = s
    for i in range(k):
        for j in range(i, k):
            s = 0.0
            for t in range(nu):
                s += Y[t, i] * Y[t, j]
            H[i, j] = s
            H[j, i] = s
    nmin, nmax = np.inf, 0.0
    for i in range(m):
        norm2 = 0.0
        for j in range(k):
            G[i, j] = H[i, j]
            norm2 += H[i, j] * H[i, j]
        g[i] = free[i] + phi[i] / dt
        nmin, nmax = min(nmin, np.sqrt(norm2)), max(nmax, np.sqrt(norm2))
    for r in range(cone.shape[0]):
        for j in range(k):
            G[m + r, j] = cone[r, j]
        g[m + r] = 0.0
    if Mlcp.shape[0]:
        kkt(H, G, c, g, Mlcp, qlcp)
    return rank, nmin, nmax


@cached_jit
def new_separations(Y, z, free, phi, dt, priced, new):
    """The contacts :func:`idyn.separation.separating_into` flags in Stage I's answer ``z`` that
    are not ``priced`` yet, as indices ``new[:count]`` (output; ``count`` returned), with
    ``N v+ = Y_N^T (Y z) + N v+(0)`` (``free[:m]``)."""
    m, (nu, k) = phi.shape[0], Y.shape
    Yz = np.zeros(nu)
    for t in range(nu):
        for j in range(k):
            Yz[t] += Y[t, j] * z[j]
    speed = np.empty(m)
    for i in range(m):
        s = free[i]
        for t in range(nu):
            s += Y[t, i] * Yz[t]
        speed[i] = s
    mask = np.empty(m, np.bool_)
    separating_into(phi, dt, z[:m], speed, mask)
    count = 0
    for i in range(m):
        if mask[i] and not priced[i]:
            new[count] = i
            count += 1
    return count


@cached_jit
def no_slip_rows(Y, free, s_idx, t_idx, E, e):
    """``E, e`` (outputs): the no-slip equalities ``E z + e = 0`` (eqs. 40-41) for the kept tangent
    rows ``S_s``, ``T_t``: ``E = X_u A^-1 R_u^T = Y_X^T Y`` (``Y``'s columns m..2m are ``S``,
    3m..4m ``T``) and ``e = X v+(0)`` from ``free = [N; S; T] v+(0)``."""
    nu, k = Y.shape
    m = k // 5
    ns = s_idx.shape[0]
    for r in range(ns + t_idx.shape[0]):
        col = s_idx[r] + m if r < ns else t_idx[r - ns] + 3 * m
        for j in range(k):
            s = 0.0
            for t in range(nu):
                s += Y[t, col] * Y[t, j]
            E[r, j] = s
        e[r] = free[col if col < 3 * m else col - m]      # S: m + s in both; T: 3m + t in Y, 2m + t in free


@cached_jit
def stage_two_terms(R, W, z0, ridge, cone, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, H2, c2, A_in, b_in):
    """``H2, c2, A_in, b_in`` (outputs) of Stage II (eq. 112 in torque units, plus the ridge ``rho``
    relative to the mean eigenvalue of the torque term): with ``tau0`` the torque of Stage I's
    ``z0`` (eqs. 88-90, :func:`idyn.controllers._dynamics_kernel.resolve` with the step's arrays) and
    ``RW = R_a^T W / dt`` (the torque change per unit of ``w``, eq. 90: ``tau = tau0 - RW w``),
    ``H2 = RW^T RW + rho I``, ``c2 = -RW^T tau0 + rho W^T z0``; the rows ``z0 + W w >= 0``
    (eq. 111) and, for the cone rows ``C`` (eq. 110), ``C (z0 + W w) >= 0`` written
    ``C W w >= -max(C z0, 0)``."""
    k, nul = W.shape
    nv = v.shape[0]
    g0 = np.zeros(nv)
    for t in range(k):
        if z0[t] != 0.0:
            for j in range(nv):
                g0[j] += R[t, j] * z0[t]
    tau0, v_next = np.empty(a.shape[0]), np.empty(nv)
    resolve(g0, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, tau0, v_next)
    na = a.shape[0]
    mf = cone.shape[0]
    RW = np.empty((na, nul))
    frob = 0.0
    for i in range(na):
        for j in range(nul):
            s = 0.0
            for t in range(k):
                s += R[t, a[i]] * W[t, j]
            s /= dt
            RW[i, j] = s
            frob += s * s
    rho = ridge * max(frob / nul, 1e-12)
    for i in range(nul):
        for j in range(nul):
            s = 0.0
            for t in range(na):
                s += RW[t, i] * RW[t, j]
            H2[i, j] = s
        H2[i, i] += rho
        s, sz = 0.0, 0.0
        for t in range(na):
            s += RW[t, i] * tau0[t]
        for t in range(k):
            sz += W[t, i] * z0[t]
        c2[i] = -s + rho * sz
    for t in range(k):
        for j in range(nul):
            A_in[t, j] = W[t, j]
        b_in[t] = -z0[t]
    for r in range(mf):
        s = 0.0
        for t in range(k):
            s += cone[r, t] * z0[t]
        b_in[k + r] = -max(s, 0.0)
        for j in range(nul):
            s = 0.0
            for t in range(k):
                s += cone[r, t] * W[t, j]
            A_in[k + r, j] = s


@cached_jit
def clip_to_cone(z, mu):
    """Stage II's impulses made exact, in place: ``z`` clipped at zero (NaN kept) and each
    finite-friction contact's pyramid components ``[f_S+; f_S-; f_T+; f_T-]`` scaled by
    ``mu f_N / sum`` where their sum exceeds ``mu f_N`` (eq. 101; an empty ``mu``: clipping
    only).  The QP solver meets its constraints only to about 1e-9 of the problem's scale, and
    a model's cone is a hard constraint; the torques are computed from these impulses."""
    m = mu.shape[0]
    for i in range(z.shape[0]):
        if not (z[i] > 0.0 or np.isnan(z[i])):
            z[i] = 0.0
    for i in range(m):
        if not np.isfinite(mu[i]):
            continue
        total = z[m + i] + z[2 * m + i] + z[3 * m + i] + z[4 * m + i]
        limit = mu[i] * z[i]
        if total > limit:
            ratio = limit / total
            for e in range(1, 5):
                z[e * m + i] *= ratio


@cached_jit
def stage_two_outputs(R, z0, W, w, mu, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, impact, z, tau, v_next, forces):
    """Stage II's impulses ``z = z0 + W w`` (output) clipped into the cones (:func:`clip_to_cone`,
    ``mu`` empty: no cone), then ``tau``, ``v_next`` and ``forces`` (outputs) of
    :func:`idyn.controllers._dynamics_kernel.pyramid_outputs`."""
    k, nul = W.shape
    for t in range(k):
        s = z0[t]
        for j in range(nul):
            s += W[t, j] * w[j]
        z[t] = s
    clip_to_cone(z, mu)
    pyramid_outputs(R, z, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, impact, tau, v_next, forces)
