"""Eqs. 88-90 of the reduced step (:meth:`controllers.dynamics.Step.resolve`), compiled.

Recovering ``(tau, v+)`` from a generalized contact impulse is a dozen small numpy operations
(two triangular solves with the Cholesky factor of ``A = M_uu``, slices, a matrix-vector
product), about 10 us per call for a quadruped, and a control step makes one to three such
calls; compiled, 2 us (measured; ``idyn bench controllers``).  Cached on disk (:mod:`idyn.jit`).

The loops write into arrays the caller allocates (``np.empty``) and return scalars only: numba
boxes every array a compiled function returns through a Python-level lookup (its dtype), about
1.5 us per array in a control loop, more than the allocation.
"""
from __future__ import annotations

import numpy as np

from idyn._triangular import gram_solve
from idyn.jit import cached_jit
from idyn.validation import finite


@cached_jit
def resolve(g, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, tau, v_next):
    """``tau`` and ``v_next`` (outputs) for the generalized impulse ``g`` (see ``Step.resolve``);
    ``u``, ``a`` the unactuated and actuated velocity indices, ``L`` the lower Cholesky factor
    of ``M_uu``."""
    nu, na, nv = u.shape[0], a.shape[0], v.shape[0]
    x = np.empty(nu)
    for i in range(nu):
        x[i] = g[u[i]] - dt_h_u[i] - B_dva[i]
    gram_solve(L.T, nu, x, x)                 # v+_u - v_u = A^-1 (g_u - dt h_u - B (qd - v_a))
    for i in range(na):
        v_next[a[i]] = qd[i]
    for i in range(nu):
        v_next[u[i]] = v[u[i]] + x[i]
    dv = v_next - v
    for i in range(na):                       # dt tau = M_a. (v+ - v) + dt h_a - g_a
        s = 0.0
        for j in range(nv):
            s += Ma[i, j] * dv[j]
        tau[i] = (s + dt * h[a[i]] - g[a[i]]) / dt


@cached_jit
def step_gaps(N, v, phi, dt, recovery, out):
    """The gaps with overlaps scaled by ``recovery`` (``phi < 0`` -> ``recovery phi``, module
    :mod:`controllers.dynamics`, "Gap stabilization") into ``out``; returns the least approach
    margin ``min_i (N v + max(phi', 0) / dt)_i`` (``inf`` without contacts)."""
    m, nv = N.shape
    w = np.inf
    for i in range(m):
        p = phi[i]
        if p < 0.0:
            p = recovery * p
        out[i] = p
        s = 0.0
        for j in range(nv):
            s += N[i, j] * v[j]
        w = min(w, s + max(p, 0.0) / dt)
    return w


@cached_jit
def free_motion(M, h, v, vdot_a, L, dt, u, a, out):
    """``out = [qd_des, dt h_u, B (qd_des - v_a), p]`` of eqs. 38-39 and 93 with ``L`` the lower
    Cholesky factor of ``A = M_uu``, ``B = M_ua``: ``p = v_u - A^-1 (dt h_u + B (qd_des - v_a))``."""
    nu, na = u.shape[0], a.shape[0]
    qd, dt_h_u, B_dva, p = out[:na], out[na:na + nu], out[na + nu:na + 2 * nu], out[na + 2 * nu:]
    dva = np.empty(na)
    for i in range(na):
        qd[i] = v[a[i]] + dt * vdot_a[i]
        dva[i] = qd[i] - v[a[i]]
    x = np.empty(nu)
    for i in range(nu):
        dt_h_u[i] = dt * h[u[i]]
        s = 0.0
        for j in range(na):
            s += M[u[i], a[j]] * dva[j]
        B_dva[i] = s
    for i in range(nu):
        x[i] = -dt_h_u[i] - B_dva[i]
    gram_solve(L.T, nu, x, x)                 # p - v_u = -A^-1 (dt h_u + B dva)
    for i in range(nu):
        p[i] = v[u[i]] + x[i]


@cached_jit
def all_finite(a, b, c, d, e):
    """Whether every entry of the vectors ``a`` ... ``e`` is finite (:func:`idyn.validation.finite`).
    Five float vectors always (pad with empty ones): no defaults, because numba cannot cache a
    variant with omitted array arguments and compiled it anew in every process (~0.1-0.3 s in
    the first control step)."""
    return finite(a) and finite(b) and finite(c) and finite(d) and finite(e)
