"""The reduced step of :mod:`idyn.controllers.dynamics` (paper eqs. 37-39, 83-94), compiled.

Flat loops over arrays the caller allocates (numba boxes every returned array through a
Python-level lookup, which costs more than the allocation): the step's arrays
(:func:`step_arrays`, with :func:`reduced_step` after a touchdown impact), the recovery of
torques and end velocity from a generalized impulse (:func:`resolve`, eqs. 88-90) and, for the
friction pyramid, with the contact forces (:func:`pyramid_outputs`).  Cached on disk
(:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from idyn.kernels import contact_rows
from idyn.kernels import gram_solve
from idyn.jit import cached_jit

#: [f_N, f_S+, f_S-, f_T+, f_T-] -> [normal, s, t]
PYRAMID_TO_FRAME = np.array([[1.0, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])
PYRAMID_TO_FRAME.setflags(write=False)


@cached_jit
def reduced_step(M, h, v, vdot_a, dt, u, a, L, free):
    """``L`` (output, lower triangle; upper zeroed) the Cholesky factor of ``A = M_uu`` and
    ``free = [qd_des, dt h_u, B (qd_des - v_a), p]`` (eqs. 38-39, 93:
    ``p = v_u - A^-1 (dt h_u + B (qd_des - v_a))``).  Returns 0, or ``j + 1`` when the ``j``-th
    pivot of ``A`` is not positive (``A`` not positive definite; ``free`` not written)."""
    nu, na = u.shape[0], a.shape[0]
    for j in range(nu):
        s = M[u[j], u[j]]
        for t in range(j):
            s -= L[j, t] * L[j, t]
        if not s > 0.0:
            return j + 1
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, nu):
            s = M[u[i], u[j]]
            for t in range(j):
                s -= L[i, t] * L[j, t]
            L[i, j] = s / d
        for i in range(j):
            L[i, j] = 0.0
    qd, dt_h_u, B_dva, p = free[:na], free[na:na + nu], free[na + nu:na + 2 * nu], free[na + 2 * nu:]
    dva = np.empty(na)
    for i in range(na):
        qd[i] = v[a[i]] + dt * vdot_a[i]
        dva[i] = qd[i] - v[a[i]]
    for i in range(nu):
        dt_h_u[i] = dt * h[u[i]]
        s = 0.0
        for j in range(na):
            s += M[u[i], a[j]] * dva[j]
        B_dva[i] = s
        p[i] = -dt_h_u[i] - s
    gram_solve(L.T, nu, p, p)
    for i in range(nu):
        p[i] += v[u[i]]
    return 0


@cached_jit
def step_arrays(J, support, ja, jb, two_bodies, frames, points, phi, v, dt, recovery, impact_speed, M, h, vdot_a,
                u, a, rows, gaps, L, free):
    """A control step's arrays (outputs ``rows``, ``gaps``, ``L``, ``free``): the contact rows
    ``[N; S; T]`` (:func:`idyn.kernels.contact_rows` of the inputs of
    :func:`idyn.contact.contact_inputs`), the gaps with overlaps scaled by ``recovery`` (eq. 35,
    "Gap stabilization" in :mod:`idyn.controllers.dynamics`) and :func:`reduced_step`.  Returns
    :func:`reduced_step`'s code, or -1 without running it when a contact closes faster than
    ``impact_speed`` (``min(N v + max(phi, 0)/dt) < -impact_speed``: the caller applies the
    touchdown impact first, then runs :func:`reduced_step`)."""
    contact_rows(J, support, ja, jb, two_bodies, frames, points, rows)
    m, nv = phi.shape[0], v.shape[0]
    margin = np.inf
    for i in range(m):
        gap = phi[i] if phi[i] >= 0.0 else recovery * phi[i]
        gaps[i] = gap
        s = 0.0
        for j in range(nv):
            s += rows[i, j] * v[j]
        margin = min(margin, s + max(gap, 0.0) / dt)
    if margin < -impact_speed:
        return -1
    return reduced_step(M, h, v, vdot_a, dt, u, a, L, free)


@cached_jit
def resolve(g, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, tau, v_next):
    """``tau`` and ``v_next`` (outputs) for the generalized contact impulse ``g = R^T z``
    (eqs. 88-90): ``v+_u = v_u + A^-1 (g_u - dt h_u - B (qd - v_a))`` by the Cholesky factor
    ``L`` of ``A``, ``v+_a = qd``, ``dt tau = M_a. (v+ - v) + dt h_a - g_a``."""
    nu, na, nv = u.shape[0], a.shape[0], v.shape[0]
    x = np.empty(nu)
    for i in range(nu):
        x[i] = g[u[i]] - dt_h_u[i] - B_dva[i]
    gram_solve(L.T, nu, x, x)
    for i in range(na):
        v_next[a[i]] = qd[i]
    for i in range(nu):
        v_next[u[i]] = v[u[i]] + x[i]
    for i in range(na):
        s = 0.0
        for j in range(nv):
            s += Ma[i, j] * (v_next[j] - v[j])
        tau[i] = (s + dt * h[a[i]] - g[a[i]]) / dt


@cached_jit
def pyramid_outputs(R, z, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, impact, tau, v_next, forces):
    """``tau``, ``v_next`` (:func:`resolve` of ``R^T z``) and the (m, 3) ``forces`` [normal, s, t]
    of the pyramid impulses ``z = [f_N; f_S+; f_S-; f_T+; f_T-]`` over ``dt``, plus ``impact``
    ((m, 3), or (0, 3) without a touchdown impact)."""
    k, nv = R.shape
    g = np.zeros(nv)
    for t in range(k):
        if z[t] != 0.0:
            for j in range(nv):
                g[j] += R[t, j] * z[t]
    resolve(g, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, tau, v_next)
    m = forces.shape[0]
    for i in range(m):
        forces[i, 0] = z[i] / dt
        forces[i, 1] = (z[m + i] - z[2 * m + i]) / dt
        forces[i, 2] = (z[3 * m + i] - z[4 * m + i]) / dt
        if impact.shape[0]:
            for j in range(3):
                forces[i, j] += impact[i, j]


@cached_jit
def free_velocity(rows, p, qd, u, a, free):
    """``free = [N; S; T] v+(0)`` (output): the contact rows times the velocity the step ends
    with without contact impulses, ``v+_u = p``, ``v+_a = qd_des``."""
    for i in range(rows.shape[0]):
        s = 0.0
        for t in range(u.shape[0]):
            s += rows[i, u[t]] * p[t]
        for t in range(a.shape[0]):
            s += rows[i, a[t]] * qd[t]
        free[i] = s


@cached_jit
def normal_speeds(N, v, phi, dt, out):
    """``out = N v + phi / dt`` (eqs. 36, 54)."""
    for i in range(out.shape[0]):
        s = 0.0
        for j in range(v.shape[0]):
            s += N[i, j] * v[j]
        out[i] = s + phi[i] / dt


@cached_jit
def complementarity_violation(fN, wN, free, phi, dt):
    """``max(-min(w_N, 0), max_i f_N,i |w_N,i| / (1 + f_N,i)) / (1 + max_i |free_i + phi_i / dt|)``
    (:meth:`idyn.controllers.dynamics.Step.complementarity_violation`, eqs. 36, 54); NaN when an
    input is NaN or the force term is undefined (an infinite force), so no check passes."""
    s = 0.0
    for i in range(phi.shape[0]):
        x = abs(free[i] + phi[i] / dt)
        if np.isnan(x):
            return np.nan
        s = max(s, x)
    low, high = 0.0, 0.0
    for i in range(wN.shape[0]):
        w = wN[i]
        x = fN[i] * abs(w) / (1.0 + fN[i])
        if np.isnan(w) or np.isnan(x):
            return np.nan
        low = min(low, w)
        high = max(high, x)
    return max(-low, high) / (1.0 + s)


@cached_jit
def coulomb_mlcp(rows, M, p, v, qd, h, phi, mu, mu_inf, dt, u, a, A, B, C, D, g, w):
    """The blocks of ``lcp-coulomb``'s MLCP (outputs ``A``, ``B``, ``C``, ``D``, ``g`` and ``w``,
    its ``h``; :mod:`idyn.controllers.lcp_coulomb`, paper eqs. 57-59 in the reduced form) from the
    contact rows ``[N; S; T]``, with the pyramid rows ``R = [N; S; -S; T; -T]`` (Sec. 5.1) and
    ``F = R[m:]``: ``A = [[M_uu, 0], [M_au, -I]]``, ``C = -[[R_u^T, 0], [R_a^T, 0]]``,
    ``D = [[R_u, 0]; [0, 0]]``, ``g = -[M_uu p; M_au v_u - M_aa (qd - v_a) - dt h_a]``,
    ``w = [N_a qd + phi/dt; F_a qd; 0]`` and ``B = [[0, 0, 0], [0, 0, E], [diag mu, -E^T, 0]]``
    (``E`` the 4m x m stack of identities; an infinite ``mu`` counts as ``mu_inf``)."""
    m, nu, na = rows.shape[0] // 3, u.shape[0], a.shape[0]
    n, t = nu + na, 6 * m
    for i in range(n):
        for j in range(n):
            A[i, j] = 0.0
        for j in range(t):
            C[i, j] = 0.0
    for i in range(t):
        for j in range(n):
            D[i, j] = 0.0
        for j in range(t):
            B[i, j] = 0.0
        w[i] = 0.0
    for i in range(nu):
        s = 0.0
        for j in range(nu):
            A[i, j] = M[u[i], u[j]]
            s += M[u[i], u[j]] * p[j]
        g[i] = -s
    for i in range(na):
        s = 0.0
        for j in range(nu):
            A[nu + i, j] = M[u[j], a[i]]
            s += M[u[j], a[i]] * v[u[j]]
        A[nu + i, nu + i] = -1.0
        for j in range(na):
            s -= M[a[i], a[j]] * (qd[j] - v[a[j]])
        g[nu + i] = -(s - dt * h[a[i]])
    for r in range(5 * m):          # pyramid row r: sign times row src of [N; S; T]
        if r < 2 * m:
            src, sign = r, 1.0
        elif r < 3 * m:
            src, sign = r - m, -1.0
        elif r < 4 * m:
            src, sign = r - m, 1.0
        else:
            src, sign = r - 2 * m, -1.0
        for i in range(nu):
            C[i, r] = -sign * rows[src, u[i]]
            D[r, i] = sign * rows[src, u[i]]
        s = 0.0
        for i in range(na):
            C[nu + i, r] = -sign * rows[src, a[i]]
            s += sign * rows[src, a[i]] * qd[i]
        w[r] = s + phi[r] / dt if r < m else s
    for i in range(m):
        B[5 * m + i, i] = mu[i] if np.isfinite(mu[i]) else mu_inf
        for e in range(4):
            B[m + e * m + i, 5 * m + i] = 1.0
            B[5 * m + i, m + e * m + i] = -1.0
