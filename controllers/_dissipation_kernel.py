"""The assembly of Stage I and Stage II (:mod:`controllers.dissipation`), compiled.

Both stages are assembled from a handful of small matrix products, norms and stackings (about a
dozen numpy calls each, 1-3 us apiece in a control loop, for a few microseconds of arithmetic:
measured, ``idyn bench controllers``).  These loops compute the same quantities, into arrays the
caller allocates (a returned array costs more to box than to allocate: :mod:`controllers._reduced_kernel`).
Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from idyn._lapack_kernel import full_svd
from idyn._qp_kernel import SOLVED, quadprog_attempts
from idyn.jit import cached_jit
from idyn.lcp._lemke_kernel import first_max
from idyn.lcp.lemke import cold_checked
from idyn.separation import separating_into

from ._dynamics_kernel import pyramid_inputs, pyramid_outputs, step_arrays
from ._reduced_kernel import resolve

#: relative tolerance of the rank decisions (rows that impulses cannot move, nullspace of Y)
RANK_TOL = 1e-10


@cached_jit
def stage_one_rows(Y, lwork, c0, pyramid, project, free, phi, dt, cone, sv, Vt, c, G, g, H):
    """Stage I's data from ``Y`` (outputs ``sv``, ``Vt``, ``c``, ``G``, ``g``, ``H``): the SVD
    ``(sv, Vt)`` of ``Y`` (:func:`idyn._lapack_kernel.full_svd` with the workspace ``lwork``, the
    LAPACK call of ``np.linalg.svd(Y, full_matrices=True)`` bit for bit: ``sv`` descending, ``Vt``
    (k x k); without rows, no values and ``Vt = I``), its rank
    ``sum(sv > RANK_TOL max(sv_0, 1e-300))`` (returned; -1 when the SVD did not converge), the
    linear term ``c`` (``c0``, or with ``pyramid`` the pyramid layout ``[x_N, x_S, -x_S, x_T, -x_T]`` of
    ``free = [N; S; T] v+(0)``, projected onto the row space ``Vt[:rank]`` of ``Y`` when
    ``project``), the non-penetration rows ``G[:m] = Y_N^T Y`` (``Y``'s first ``m`` columns are
    the normals) with ``g[:m] = free_N + phi/dt``, then the ``cone`` rows with ``g = 0``, and the
    Hessian ``H = Y^T Y`` (``np.dot``: the BLAS product numpy's ``Y.T @ Y`` makes, bit for bit).
    Returns ``(rank, smallest, largest)``, the last two the range of the non-penetration rows' norms."""
    nu, k = Y.shape
    m = phi.shape[0]
    if nu:
        A, VtF = np.empty((k, nu)).T, np.empty((k, k)).T        # Fortran-ordered, as LAPACK takes them
        A[:, :] = Y
        if full_svd(A, sv, np.empty((nu, nu)), VtF, lwork) != 0:
            return -1, 0.0, 0.0
        Vt[:, :] = VtF
    else:
        Vt[:, :] = np.eye(k)
    rank = 0
    if sv.shape[0]:
        threshold = RANK_TOL * first_max(sv[0], 1e-300)
        for r in range(sv.shape[0]):
            if sv[r] > threshold:
                rank += 1
    x = np.empty(k)
    if pyramid:
        for i in range(m):
            x[i], x[m + i], x[3 * m + i] = free[i], free[m + i], free[2 * m + i]
            x[2 * m + i], x[4 * m + i] = -free[m + i], -free[2 * m + i]
    else:
        x[:] = c0
    for j in range(k):
        c[j] = x[j]
    if project:
        t = np.zeros(rank)
        for r in range(rank):
            s = 0.0
            for j in range(k):
                s += Vt[r, j] * x[j]
            t[r] = s
        for j in range(k):
            s = 0.0
            for r in range(rank):
                s += Vt[r, j] * t[r]
            c[j] = s
    nmin, nmax = np.inf, 0.0
    for i in range(m):
        norm2 = 0.0
        for j in range(k):
            s = 0.0
            for t in range(nu):
                s += Y[t, i] * Y[t, j]
            G[i, j] = s
            norm2 += s * s
        g[i] = free[i] + phi[i] / dt
        norm = np.sqrt(norm2)
        nmin, nmax = min(nmin, norm), max(nmax, norm)
    for r in range(cone.shape[0]):
        for j in range(k):
            G[m + r, j] = cone[r, j]
        g[m + r] = 0.0
    if nu:
        H[:, :] = np.dot(Y.T, Y)
    else:
        H[:, :] = 0.0
    return rank, nmin, nmax


@cached_jit
def stage_two_terms(R, a, W, z0, tau0, dt, ridge, cone, H2, c2, A_in, b_in):
    """``H2, c2, A_in, b_in`` (outputs) of Stage II (eq. 112 in torque units, plus the ridge ``rho``
    relative to the mean eigenvalue of the torque term): with ``RW = R_a^T W / dt`` (the torque
    change per unit of ``w``, eq. 90: ``tau = tau0 - RW w``), ``H2 = RW^T RW + rho I``,
    ``c2 = -RW^T tau0 + rho W^T z0``; the rows ``z0 + W w >= 0`` and, for the cone rows ``C``,
    ``C (z0 + W w) >= 0`` written ``C W w >= -max(C z0, 0)``."""
    k, nul = W.shape
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
def no_slip_rows(Y, free, s_idx, t_idx, E, e):
    """``E, e`` (outputs): the no-slip equalities ``E z + e = 0`` (eqs. 40-41) for the kept tangent rows
    ``S_s``, ``T_t``: ``E = X_u A^-1 R_u^T = Y_X^T Y`` (``Y``'s columns m..2m are ``S``, 3m..4m
    ``T``) and ``e = X v+(0)`` from ``free = [N; S; T] v+(0)``."""
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
def with_bounds(G, g, A, b):
    """``A, b`` (outputs, zero-filled) with ``A z >= b`` the rows ``G z + g >= 0`` and ``z >= 0``."""
    mg, k = G.shape
    for i in range(mg):
        for j in range(k):
            A[i, j] = G[i, j]
        b[i] = -g[i]
    for j in range(k):
        A[mg + j, j] = 1.0


@cached_jit
def clip_to_cone(z, mu):
    """Stage II's impulses made exact, in place: ``z`` clipped at zero (as ``np.maximum(z, 0.0)``:
    NaN kept, ``-0.0`` made ``+0.0``) and each finite-friction contact's pyramid components
    ``[f_S+; f_S-; f_T+; f_T-]`` scaled by ``mu f_N / sum`` where their sum exceeds ``mu f_N``
    (eq. 101; an empty ``mu``: no cone rows, clipping only).  The QP solver meets its
    constraints only to about 1e-9 of the problem's scale (measured: 9.4e-10 N s of friction on
    a mu = 0 contact, 1e-6 N, after Stage II), and a model's cone is a hard constraint;
    corrections are of that round-off size, and the torques are computed from these impulses."""
    m = mu.shape[0]
    for i in range(z.shape[0]):
        if not (z[i] > 0.0 or np.isnan(z[i])):
            z[i] = 0.0
    for i in range(m):
        if not np.isfinite(mu[i]):
            continue
        total = ((z[m + i] + z[2 * m + i]) + z[3 * m + i]) + z[4 * m + i]
        limit = mu[i] * z[i]
        if total > limit:
            ratio = limit / total
            for e in range(1, 5):
                z[e * m + i] *= ratio


@cached_jit
def stage_one_lemke(H, G, c, g, tol, Mlcp, qlcp, z):
    """Stage I's KKT LCP ``([c; g], [[H, -G^T], [G, 0]])`` (footnote 1) written into ``Mlcp``,
    ``qlcp`` (outputs) and solved by Lemke's method in the same call
    (:func:`idyn.lcp.lemke.cold_checked`: ``z`` and its verdict); returns ``(passed, pivots)``."""
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
    return cold_checked(Mlcp, qlcp, 1e-12, tol, z)


@cached_jit
def stage_two(R, W, z0, ridge, cone, mu, level, try_quadprog, schedule, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u,
              a, H2, c2, A_in, b_in, z, out):
    """Stage II (eqs. 102-112) in one call: ``tau0`` of ``z0`` (eqs. 88-90,
    :func:`controllers._reduced_kernel.resolve` with the step's arrays), the terms of
    :func:`stage_two_terms` (outputs ``H2, c2, A_in, b_in``), the QP with the ``level``
    equality (0 or 1 row of unit scale, independent) by quadprog with the ridge ``schedule``
    (:func:`idyn._qp_kernel.quadprog_attempts`) when ``try_quadprog``, and on success
    ``z = z0 + W w`` clipped into the cones
    (:func:`clip_to_cone`, ``mu`` empty: no cone).  The products ``R^T z0`` and ``W w`` are
    ``np.dot``, the BLAS routine numpy's ``@`` calls (bit for bit; ``tests/test_lcp_residual_kernel.py``).
    Returns their code (:data:`idyn._qp_kernel.SOLVED` ...): on any other the
    caller runs :func:`idyn.qp.solve_built` on ``H2, c2, A_in, b_in``.  ``out`` as there."""
    k = W.shape[0]
    tau0, v_next = np.empty(a.shape[0]), np.empty(v.shape[0])
    resolve(np.dot(R.T, z0), L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, tau0, v_next)
    stage_two_terms(R, a, W, z0, tau0, dt, ridge, cone, H2, c2, A_in, b_in)
    be = np.zeros(level.shape[0])
    Hs, x = np.empty(H2.shape), np.empty(H2.shape[0])
    code = quadprog_attempts(H2, c2, level, be, A_in, b_in, level, be, 1e-7, try_quadprog, schedule, Hs, x, out)
    if code == SOLVED:
        w = np.dot(W, x)
        for i in range(k):
            z[i] = z0[i] + w[i]
        clip_to_cone(z, mu)
    return code


@cached_jit
def new_separations(Y, z, free, phi, dt, priced, new):
    """The contacts :func:`idyn.separation.separating_loads` flags in Stage I's answer ``z`` that
    are not ``priced`` yet, as indices ``new[:count]`` (output; ``count`` returned), with
    ``N v+ = Y_N^T (Y z) + N v+(0)`` (``free[:m]``) by the BLAS calls numpy's ``@`` makes: ``dgemv``
    with at least two rows, ``ddot`` for the one row of a single contact."""
    m = phi.shape[0]
    speed = np.zeros(m)
    if Y.shape[0]:
        Yz = np.dot(Y, z)
        if m == 1:
            speed[0] = np.dot(Y[:, 0], Yz)
        else:
            speed[:] = np.dot(np.ascontiguousarray(Y[:, :m].T), Yz)
    for i in range(m):
        speed[i] += free[i]
    mask = np.empty(m, np.bool_)
    separating_into(phi, dt, z[:m], speed, mask)
    count = 0
    for i in range(m):
        if mask[i] and not priced[i]:
            new[count] = i
            count += 1
    return count


@cached_jit
def price_contacts(H, c, Y, free, contacts, weight):
    """:func:`idyn.separation.price_separation` in place for the separation speeds of ``contacts``:
    ``H += weight P^T P``, ``c += weight P^T free[contacts]`` with ``P = Y_c^T Y``
    (:func:`controllers.dissipation.price_separation`; ``np.dot``, the BLAS calls of numpy's ``@``)."""
    nc, (nu, k) = contacts.shape[0], Y.shape
    Yc, speed = np.empty((nc, nu)), np.empty(nc)
    for r in range(nc):
        speed[r] = free[contacts[r]]
        for t in range(nu):
            Yc[r, t] = Y[t, contacts[r]]
    P = np.dot(Yc, Y)
    PtP, Pts = np.dot(P.T, P), np.dot(P.T, speed)
    for i in range(k):
        for j in range(k):
            H[i, j] = H[i, j] + weight * PtP[i, j]
        c[i] = c[i] + weight * Pts[i]


@cached_jit
def stage_one_priced(H, G, c, g, tol, Y, free, phi, dt, weight, priced, new, Mlcp, qlcp, z, out):
    """Stage I's separation loop (:func:`controllers.dissipation.solve_priced`) by Lemke's method
    in one call: :func:`stage_one_lemke`, then while ``weight > 0`` and :func:`new_separations`
    flags contacts not yet ``priced``: mark them (``priced``, ``new`` as there), price them
    (:func:`price_contacts`, ``H`` and ``c`` in place) and solve again.  Returns whether the last
    solve passed (if not, ``Mlcp``, ``qlcp`` hold its LCP for the caller's fallbacks); ``out``:
    ``[pivots of the last solve, contacts priced]``."""
    k = H.shape[0]
    out[1] = 0
    while True:
        passed, pivots = stage_one_lemke(H, G, c, g, tol, Mlcp, qlcp, z)
        out[0] = pivots
        if not passed or not weight > 0.0:
            return passed
        added = new_separations(Y, z[:k], free, phi, dt, priced, new)
        if added == 0:
            return True
        for i in range(added):
            priced[new[i]] = True
        out[1] += added
        price_contacts(H, c, Y, free, new[:added], weight)


#: :func:`two_stages` left the common path: the caller solves the step the general way
LEFT = 1


@cached_jit
def two_stages(rows, L, p, qd, u, a, phi, dt, cone, mu, tol, weight, ridge, try_quadprog, schedule, v, dt_h_u,
               B_dva, Ma, h, impact, lwork, tau, v_next, forces, out):
    """A ``qp-coulomb`` step in its common case, in one call: Stage I's inputs
    (:func:`controllers._dynamics_kernel.pyramid_inputs` of the contact ``rows``), its data with
    the contact-work objective (:func:`stage_one_rows`, SVD workspace ``lwork``), Stage I with its separation loop
    (:func:`stage_one_priced`), Stage II without a level row (:func:`stage_two`, ``mu`` as it
    takes it) and the outputs ``tau``, ``v_next``, ``forces``
    (:func:`controllers._dynamics_kernel.pyramid_outputs`) -- the kernels, arrays and order of
    the general path (:mod:`controllers.dissipation`), so the same numbers.  ``out``:
    ``[Stage I pivots, contacts priced, nullity, Stage II iterations]``.  Returns 0, or
    :data:`LEFT` as soon as a step needs more (a non-penetration row no impulse can change, an
    SVD that did not converge, a Stage I or Stage II answer that needs the fallbacks): the
    outputs are then not written and the caller solves the step the general way."""
    k3, nv = rows.shape
    m, nu = k3 // 3, u.shape[0]
    k = 5 * m
    R, Y, free = np.empty((k, nv)), np.empty((k, nu)).T, np.empty(k3)
    pyramid_inputs(rows, L, p, qd, u, a, R, Y, free)
    nc = m + cone.shape[0]
    c, G, g, H = np.empty(k), np.empty((nc, k)), np.empty(nc), np.empty((k, k))
    sv, Vt = np.empty(min(nu, k)), np.empty((k, k))
    rank, smallest, largest = stage_one_rows(Y, lwork, free, True, True, free, phi, dt, cone, sv, Vt, c, G, g, H)
    if rank < 0 or not smallest > RANK_TOL * max(largest, 1.0):
        return LEFT
    priced, new = np.zeros(m, np.bool_), np.empty(m, np.intp)
    Mlcp, qlcp, z1, stage1 = np.empty((k + nc, k + nc)), np.empty(k + nc), np.empty(k + nc), np.empty(2, np.intp)
    if not stage_one_priced(H, G, c, g, tol, Y, free, phi, dt, weight, priced, new, Mlcp, qlcp, z1, stage1):
        return LEFT
    out[0], out[1], out[2], out[3] = stage1[0], stage1[1], k - rank, 0
    z = z1[:k]
    if rank < k:
        W = Vt[rank:].T
        nul, kc = k - rank, k + cone.shape[0]
        H2, c2, A_in, b_in = np.empty((nul, nul)), np.empty(nul), np.empty((kc, nul)), np.empty(kc)
        z, result = np.empty(k), np.empty(5)
        if stage_two(R, W, z1[:k], ridge, cone, mu, np.zeros((0, nul)), try_quadprog, schedule, L, v, qd, dt_h_u,
                     B_dva, Ma, h, dt, u, a, H2, c2, A_in, b_in, z, result) != SOLVED:
            return LEFT
        out[3] = result[1]
    pyramid_outputs(R, z, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, impact, tau, v_next, forces)
    return 0


@cached_jit
def step_two_stages(J, support, ja, jb, two_bodies, frames, points, phi, v, dt, recovery, impact_speed, M, h, vdot_a,
                    u, a, rows, gaps, L, free, cone, mu, tol, weight, ridge, try_quadprog, schedule, lwork, tau, v_next,
                    forces, out):
    """A ``qp-coulomb`` step from its inputs in one call: the step's arrays
    (:func:`controllers._dynamics_kernel.step_arrays`, outputs ``rows``, ``gaps``, ``L``, ``free``
    with ``free = [qd_des, dt h_u, B dva, p]``), then, if it returned 0, :func:`two_stages` on them
    (``phi`` the gaps, ``Ma = M[a]``, no touchdown impact), as
    :meth:`controllers.dynamics.StepDynamics.update` and :func:`controllers.dissipation.solve_common`
    call them.  Returns ``(info, code)``: ``step_arrays``'s ``info`` and, when that is 0,
    ``two_stages``'s code, else :data:`LEFT` (the caller then finishes the step in Python from the
    arrays written so far: the touchdown impact, or the error of an ``A`` not positive definite)."""
    info = step_arrays(J, support, ja, jb, two_bodies, frames, points, phi, v, dt, recovery, impact_speed, M, h,
                       vdot_a, u, a, rows, gaps, L, free)
    if info != 0:
        return info, LEFT
    na, nu = a.shape[0], u.shape[0]
    qd, dt_h_u, B_dva, p = free[:na], free[na:na + nu], free[na + nu:na + 2 * nu], free[na + 2 * nu:]
    return 0, two_stages(rows, L, p, qd, u, a, gaps, dt, cone, mu, tol, weight, ridge, try_quadprog, schedule, v,
                         dt_h_u, B_dva, M[a], h, np.zeros((0, 3)), lwork, tau, v_next, forces, out)
