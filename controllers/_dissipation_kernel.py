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


@cached_jit
def project_pyramid(p, mu, b, x, free, bp):
    """``x`` (output): the Euclidean projection of ``p = [n, f1..f4]`` onto the pyramid
    ``{x >= 0, mu x_n - sum(x_f) >= b}`` (``b <= 0``; ``mu`` infinite: ``x >= 0`` only) and
    ``free`` (output) its positive components.  Returns the multiplier ``gamma >= 0`` of the cone
    row: ``x_n = max(p_n + mu gamma, 0)``, ``x_f = max(p_f - gamma, 0)``, ``gamma`` the root of
    the nondecreasing piecewise-linear ``mu x_n(gamma) - sum x_f(gamma) = b`` (0 when ``p``
    already meets the row).  ``bp``: 5 entries of scratch."""
    gamma = 0.0
    if np.isfinite(mu):
        phi = mu * max(p[0], 0.0)
        for e in range(1, 5):
            phi -= max(p[e], 0.0)
        if phi < b:
            # breakpoints of phi(gamma): p_f (x_f reaches 0) and -p_n/mu (x_n leaves 0)
            nb = 0
            for e in range(1, 5):
                if p[e] > 0.0:
                    bp[nb] = p[e]
                    nb += 1
            if p[0] < 0.0 and mu > 0.0:
                bp[nb] = -p[0] / mu
                nb += 1
            for i in range(1, nb):              # insertion sort of <= 5 entries
                key = bp[i]
                j = i - 1
                while j >= 0 and bp[j] > key:
                    bp[j + 1] = bp[j]
                    j -= 1
                bp[j + 1] = key
            lo = 0.0
            for s in range(nb + 1):
                hi = bp[s] if s < nb else np.inf
                mid = lo + 1.0 if hi == np.inf else 0.5 * (lo + hi)
                slope = mu * mu if p[0] + mu * mid > 0.0 else 0.0
                for e in range(1, 5):
                    if p[e] - mid > 0.0:
                        slope += 1.0
                val = mu * max(p[0] + mu * lo, 0.0)
                for e in range(1, 5):
                    val -= max(p[e] - lo, 0.0)
                if slope > 0.0:
                    g = lo + (b - val) / slope
                    if g <= hi:
                        gamma = max(g, lo)
                        break
                lo = hi
    x[0] = max(p[0] + mu * gamma, 0.0) if gamma > 0.0 else max(p[0], 0.0)
    for e in range(1, 5):
        x[e] = max(p[e] - gamma, 0.0)
    for e in range(5):
        free[e] = x[e] > 0.0
    return gamma


#: :func:`stage_two_dual`'s largest Newton step, relative to the multipliers (scaled by the
#: columns of ``B``): fewest iterations and line-search evaluations on 26 captured Stage II
#: problems at 16-48 patch contacts, cold and warm, among 1, 4, 10, 100 and no cap
DUAL_STEP_CAP = 100.0


@cached_jit
def stage_two_dual(R, W, z0, ridge, mu, Y, level, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, offset,
                   lam, tol, max_iter, w, active):
    """Stage II (eqs. 102-112, the problem of :func:`stage_two_terms`) by its dual in the
    ``na + p`` multipliers of the torque and Stage I's optimal set, not its ``nullity`` primal
    variables.  In impulse coordinates ``z = z0 + W w`` it reads

        minimize 1/2 |a - U^T z|^2 + rho/2 |z|^2   s.t.  E z = E z0,  z in P

    with ``U = R_a / dt`` (``tau = a - U^T z``, ``a = tau0 + U^T z0``), ``E``: ``Y`` with its
    ``W``-components removed (its rows span ``W``'s complement, so ``E z = E z0`` iff
    ``z - z0 in range(W)``) and the ``level`` row (eq. 108, ``(0, k)`` if none; the controllers
    pass none, :data:`idyn.controllers.dissipation.DUAL_MIN_NULLITY`), and ``P`` the
    product of the contacts' pyramids ``z >= 0``, ``mu f_N - 1^T f_F >= min(C z0, 0)`` (eqs.
    110-111 as :func:`stage_two_terms` writes them).  Its dual in ``lam = (m_tau, nu)`` is
    concave, piecewise quadratic and smooth: ``z(lam) = Pi_P(-(U m_tau + E^T nu) / rho)``
    (:func:`project_pyramid`, contact by contact), maximised by Newton's method on the
    generalized Hessian ``-diag(I, 0) - B J B^T / rho`` with a backtracking line search.
    ``lam`` (in/out): the start (NaN first entry: a least-squares fit of ``z(lam)`` to ``z0``)
    and the last iterate.  ``w`` (output) ``W^T (z - z0)``; ``active[:count]`` (output) the rows of
    :func:`stage_two_terms` active at ``z`` (zero impulses, cone rows with a multiplier).  Returns
    ``(iterations, gap, infeasibility, count)``: the duality gap ``f(z) - g(lam) = 1/2 |grad_m|^2
    - nu^T grad_nu`` relative to ``1 + |f|`` and ``max |E z - E z0|`` relative to ``1 + max |E z0|``; ``iterations = -1``
    when the loop did not reach ``tol`` on both in ``max_iter`` steps."""
    k, nul = W.shape
    m = k // 5
    nv = v.shape[0]
    na = a.shape[0]
    nu = Y.shape[0]
    nlev = level.shape[0]
    p = nu + nlev
    nl = na + p
    # tau0 of z0 (eqs. 88-90), as stage_two_terms
    g0 = np.zeros(nv)
    for t in range(k):
        if z0[t] != 0.0:
            for j in range(nv):
                g0[j] += R[t, j] * z0[t]
    tau0, v_next = np.empty(na), np.empty(nv)
    resolve(g0, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, tau0, v_next)
    # BT = [U | E^T] (k x nl); rho as stage_two_terms (mean eigenvalue of RW^T RW, RW = U^T W)
    BT = np.zeros((k, nl))
    for t in range(k):
        for i in range(na):
            BT[t, i] = R[t, a[i]] / dt
    # E: Y's rows minus their W-components (none, up to round-off, when Y has full row rank:
    # then W is exactly the complement of its rows) and the level row, made orthonormal
    # (modified Gram-Schmidt; a row within RANK_TOL of the span of the earlier ones is dropped,
    # its multiplier kept at 0), so frob = |U^T W|^2 = |U|^2 - |E U|^2
    for r in range(nu):
        for t in range(k):
            BT[t, na + r] = Y[r, t]
    if k - nul != nu:
        YW = np.zeros((nu, nul))
        for t in range(k):
            for r in range(nu):
                y = Y[r, t]
                for j in range(nul):
                    YW[r, j] += y * W[t, j]
        for t in range(k):
            for r in range(nu):
                s = 0.0
                for j in range(nul):
                    s += YW[r, j] * W[t, j]
                BT[t, na + r] -= s
    for r in range(nlev):
        for t in range(k):
            BT[t, na + nu + r] = level[r, t]
    largest = 0.0
    for r in range(p):
        s = 0.0
        for t in range(k):
            s += BT[t, na + r] * BT[t, na + r]
        largest = max(largest, np.sqrt(s))
    kept = 0
    for r in range(p):
        col = na + r
        for c in range(na, na + kept):
            s = 0.0
            for t in range(k):
                s += BT[t, c] * BT[t, col]
            for t in range(k):
                BT[t, col] -= s * BT[t, c]
        s = 0.0
        for t in range(k):
            s += BT[t, col] * BT[t, col]
        s = np.sqrt(s)
        if s > RANK_TOL * largest and s > 0.0:
            for t in range(k):
                BT[t, na + kept] = BT[t, col] / s
            kept += 1
    for i in range(na + kept, nl):
        lam[i] = 0.0
    nl = na + kept
    frob = 0.0
    for t in range(k):
        for i in range(na):
            frob += BT[t, i] * BT[t, i]
    for r in range(na, nl):
        for i in range(na):
            s = 0.0
            for t in range(k):
                s += BT[t, r] * BT[t, i]
            frob -= s * s
    rho = ridge * max(frob / nul, 1e-12)
    for r in range(nlev):
        for t in range(k):
            BT[t, na + nu + r] = level[r, t]
    av = np.empty(nl)          # [a; E z0]
    for i in range(nl):
        s = 0.0
        for t in range(k):
            s += BT[t, i] * z0[t]
        av[i] = s
    for i in range(na):
        av[i] += tau0[i] - (offset[i] if offset.shape[0] else 0.0)
    escale = 0.0
    for i in range(na, nl):
        escale = max(escale, abs(av[i]))
    bcone = np.zeros(m)
    for i in range(m):
        if mu.shape[0] and np.isfinite(mu[i]):
            bcone[i] = min(mu[i] * z0[i] - z0[m + i] - z0[2 * m + i] - z0[3 * m + i] - z0[4 * m + i], 0.0)
    mus = np.full(m, np.inf)
    if mu.shape[0]:
        for i in range(m):
            mus[i] = mu[i]
    if not np.isfinite(lam[0]):           # least squares: B^T lam ~ -rho z0
        G = np.zeros((nl, nl))
        rhs = np.zeros(nl)
        for i in range(nl):
            for j in range(i, nl):
                s = 0.0
                for t in range(k):
                    s += BT[t, i] * BT[t, j]
                G[i, j] = s
                G[j, i] = s
            s = 0.0
            for t in range(k):
                s -= BT[t, i] * z0[t]
            rhs[i] = rho * s
        tr = 0.0
        for i in range(nl):
            tr += G[i, i]
        for i in range(nl):
            G[i, i] += 1e-12 * tr + 1e-300
        lam[:nl] = np.linalg.solve(G, rhs)
    z = np.empty(k)
    zc = np.empty(k)
    free = np.zeros(k, np.bool_)
    gam = np.zeros(m)
    pb = np.empty(5)
    xb = np.empty(5)
    fb = np.zeros(5, np.bool_)
    grad = np.empty(nl)
    trial = np.empty(nl)

    q0 = np.empty(k)
    qd = np.empty(k)
    qt = np.empty(k)
    scratch = np.empty(5)

    def dual(q, lm, zz, ff, gg):
        # z(lam) from q = -B lam / rho, the dual value; ff/gg: free components, cone multipliers
        val = 0.0
        for i in range(m):
            for e in range(5):
                pb[e] = q[e * m + i]
            gg[i] = project_pyramid(pb, mus[i], bcone[i], xb, fb, scratch)
            for e in range(5):
                zz[e * m + i] = xb[e]
                ff[e * m + i] = fb[e]
        for t in range(k):       # rho/2 |z|^2 + (B lam)'z with B lam = -rho q
            val += 0.5 * rho * zz[t] * zz[t] - rho * q[t] * zz[t]
        for i in range(na):
            val -= 0.5 * lm[i] * lm[i]
        for i in range(nl):
            val -= lm[i] * av[i]
        return val

    def ray(lm, out):
        # out = -B lm / rho
        for t in range(k):
            s = 0.0
            for i in range(nl):
                s += BT[t, i] * lm[i]
            out[t] = -s / rho

    ray(lam, q0)
    g = dual(q0, lam, z, free, gam)
    iters = -1
    gap, infeas = np.inf, np.inf
    scale_col = np.empty(nl)
    for i in range(nl):
        s = rho if i < na else 0.0
        for t in range(k):
            s += BT[t, i] * BT[t, i]
        scale_col[i] = np.sqrt(max(s, 1e-300))
    for it in range(max_iter):
        # gradient: [U^T z - m - a; E z - E z0]
        for i in range(nl):
            s = 0.0
            for t in range(k):
                s += BT[t, i] * z[t]
            grad[i] = s - av[i] - (lam[i] if i < na else 0.0)
        f = 0.0
        for i in range(na):
            tq = av[i] - (grad[i] + av[i] + lam[i])       # a - U^T z
            f += 0.5 * tq * tq
        for t in range(k):
            f += 0.5 * rho * z[t] * z[t]
        # f - g without cancellation: 1/2 |grad_m|^2 - nu' grad_nu (the rho terms and B lam' z cancel)
        gap = 0.0
        for i in range(nl):
            gap += 0.5 * grad[i] * grad[i] if i < na else -lam[i] * grad[i]
        gap /= 1.0 + abs(f)
        infeas = 0.0
        for i in range(na, nl):
            infeas = max(infeas, abs(grad[i]))
        infeas /= 1.0 + escale
        if gap <= tol and infeas <= tol:
            iters = it
            break
        # Newton matrix rho diag(I, 0) + B J B^T (+ a small ridge), J per contact block
        Mn = np.zeros((nl, nl))
        for i in range(m):
            gm = gam[i]
            if gm > 0.0:
                an = 0.0
                av2 = 0.0
                for e in range(5):
                    if free[e * m + i]:
                        ae = mus[i] if e == 0 else -1.0
                        av2 += ae * ae
                ba = np.zeros(nl)
                for e in range(5):
                    t = e * m + i
                    if free[t]:
                        ae = mus[i] if e == 0 else -1.0
                        for r in range(nl):
                            ba[r] += BT[t, r] * ae
                        an += 1.0
            for e in range(5):
                t = e * m + i
                if free[t]:
                    for r in range(nl):
                        btr = BT[t, r]
                        if btr != 0.0:
                            for c in range(r, nl):
                                Mn[r, c] += btr * BT[t, c]
            if gm > 0.0 and av2 > 0.0:
                for r in range(nl):
                    for c in range(r, nl):
                        Mn[r, c] -= ba[r] * ba[c] / av2
        for i in range(na):
            Mn[i, i] += rho
        # scaled by the columns of B (the torque and the set rows differ by 1/dt and more) and
        # a relative ridge for the directions no free impulse reaches (then g is locally linear)
        for i in range(nl):
            for c in range(i, nl):
                Mn[i, c] /= scale_col[i] * scale_col[c]
            Mn[i, i] += 1e-13
            for c in range(i):
                Mn[i, c] = Mn[c, i]
        for i in range(nl):
            trial[i] = rho * grad[i] / scale_col[i]
        d = np.linalg.solve(Mn, trial)
        for i in range(nl):
            d[i] /= scale_col[i]
        # at most DUAL_STEP_CAP times the multipliers (scaled) in one step: in directions no free
        # impulse reaches the dual is locally linear and the ridged step would be huge
        dn, ln = 0.0, 0.0
        for i in range(nl):
            dn = max(dn, abs(d[i]) * scale_col[i])
            ln = max(ln, abs(lam[i]) * scale_col[i])
        if dn > DUAL_STEP_CAP * ln and ln > 0.0:
            for i in range(nl):
                d[i] *= DUAL_STEP_CAP * ln / dn
        slope = 0.0
        for i in range(nl):
            slope += d[i] * grad[i]
        ray(d, qd)
        step = 1.0
        accepted = False
        for ls in range(30):     # a step below 1e-9 counts as a stall (the QP then runs)
            for i in range(nl):
                trial[i] = lam[i] + step * d[i]
            for t in range(k):
                qt[t] = q0[t] + step * qd[t]
            gt = dual(qt, trial, zc, free, gam)
            # Armijo; at round-off level (the predicted rise below 1e-12 |g|, where g's
            # differences are noise) the full Newton step is taken
            if gt >= g + 1e-4 * step * slope or slope <= 1e-12 * (1.0 + abs(g)):
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        g = gt
        for i in range(nl):
            lam[i] = trial[i]
        for t in range(k):
            z[t] = zc[t]
            q0[t] = qt[t]
    for t in range(k):
        zc[t] = z[t] - z0[t]
    for j in range(nul):
        w[j] = 0.0
    for t in range(k):
        for j in range(nul):
            w[j] += W[t, j] * zc[t]
    nact = 0
    for t in range(k):
        if not z[t] > 0.0:
            active[nact] = t
            nact += 1
    r = 0
    for i in range(m):
        if mu.shape[0] and np.isfinite(mu[i]):
            if gam[i] > 0.0:
                active[nact] = k + r
                nact += 1
            r += 1
    return iters, gap, infeas, nact
