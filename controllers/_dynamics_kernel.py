"""The per-step arithmetic of :mod:`controllers.dynamics` around its LAPACK and BLAS calls, compiled.

A control step assembles its reduced dynamics and recovers torques and forces with a dozen small
numpy and scipy calls (a Cholesky factorisation through scipy's wrapper, slices, products,
reshapes), 1-3 us each in a control loop for a few microseconds of arithmetic.  These loops do
the same arithmetic; LAPACK's ``dpotrf`` is the routine scipy's wrapper calls
(:mod:`idyn._lapack_kernel`) and ``np.dot`` the BLAS ``dgemv`` numpy's ``@`` calls, so the numbers
are the same bit for bit.  Into arrays the caller allocates (:mod:`controllers._reduced_kernel`
says why); cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from idyn._contact_kernel import contact_rows
from idyn._lapack_kernel import cholesky_lower, lower_solve
from idyn.jit import cached_jit
from idyn.lcp._lemke_kernel import first_max

from ._reduced_kernel import free_motion, resolve, step_gaps

#: [f_N, f_S+, f_S-, f_T+, f_T-] -> [normal, s, t]: sums with coefficients 1, -1, 0 are exact
PYRAMID_TO_FRAME = np.array([[1.0, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])
PYRAMID_TO_FRAME.setflags(write=False)


@cached_jit
def reduced_step(M, h, v, vdot_a, dt, u, a, L, free):
    """``L`` (output, Fortran-ordered) the lower Cholesky factor of ``A = M_uu`` with its upper
    triangle zeroed (``scipy.linalg.lapack.dpotrf(A, lower=1, clean=1)``), then
    :func:`controllers._reduced_kernel.free_motion` into ``free``; returns LAPACK's ``info``
    (non-zero: ``A`` is not positive definite and ``free`` is not written)."""
    nu = u.shape[0]
    for j in range(nu):
        for i in range(nu):
            L[i, j] = M[u[i], u[j]]
    info = cholesky_lower(L)
    if info != 0:
        return info
    for j in range(nu):
        for i in range(j):
            L[i, j] = 0.0
    free_motion(M, h, v, vdot_a, L, dt, u, a, free)
    return 0


@cached_jit
def step_arrays(J, support, ja, jb, two_bodies, frames, points, phi, v, dt, recovery, impact_speed, M, h, vdot_a,
                u, a, rows, gaps, L, free):
    """A control step's arrays in one call (outputs ``rows``, ``gaps``, ``L``, ``free``): the
    contact rows ``[N; S; T]`` (:func:`idyn._contact_kernel.contact_rows` of the inputs of
    :func:`idyn.contact.contact_inputs`), the gaps (:func:`controllers._reduced_kernel.step_gaps`)
    and, unless a contact closes faster than ``impact_speed`` (the caller then applies the
    touchdown impact first and runs :func:`reduced_step` itself), :func:`reduced_step`.  Returns
    :func:`reduced_step`'s ``info``, or -1 when it was not run for the impact."""
    contact_rows(J, support, ja, jb, two_bodies, frames, points, rows)
    if step_gaps(rows[:phi.shape[0]], v, phi, dt, recovery, gaps) < -impact_speed:
        return -1
    return reduced_step(M, h, v, vdot_a, dt, u, a, L, free)


@cached_jit
def pyramid_outputs(R, z, L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, impact, tau, v_next, forces):
    """``tau``, ``v_next`` (eqs. 88-90 for the generalized impulse ``R^T z``,
    :func:`controllers._reduced_kernel.resolve`) and the (m, 3) ``forces`` [normal, s, t] of the
    pyramid impulses ``z = [f_N; f_S+; f_S-; f_T+; f_T-]`` over ``dt`` plus ``impact`` ((m, 3) or
    (0, 3)): the sums of :func:`controllers.dynamics.pyramid_forces` with :data:`PYRAMID_TO_FRAME`,
    whose products are exact, so any order of the sum gives its bits (NaN and inf spread as there)."""
    resolve(np.dot(R.T, z), L, v, qd, dt_h_u, B_dva, Ma, h, dt, u, a, tau, v_next)
    m = forces.shape[0]
    for i in range(m):
        for j in range(3):
            s = 0.0
            for e in range(5):
                s += z[e * m + i] * PYRAMID_TO_FRAME[e, j]
            forces[i, j] = s / dt
            if impact.shape[0]:
                forces[i, j] += impact[i, j]


@cached_jit
def pyramid_inputs(rows, L, p, qd, u, a, R, Y, free):
    """Stage I's inputs from ``rows = [N; S; T]`` (outputs): the pyramid rows
    ``R = [N; S; -S; T; -T]`` (Sec. 5.1), ``Y = L^-1 R_u^T`` (Fortran-ordered, LAPACK's
    ``dtrtrs`` as ``scipy.linalg.lapack.dtrtrs`` calls it) and ``free = [N; S; T] v+(0)``
    (:func:`free_velocity`)."""
    k3, nv = rows.shape
    m = k3 // 3
    for i in range(k3):
        for j in range(nv):
            x = rows[i, j]
            R[i if i < 2 * m else i + m, j] = x
            if i >= m:
                R[i + m if i < 2 * m else i + 2 * m, j] = -x
    for t in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[t, j] = R[j, u[t]]
    lower_solve(L, Y)
    free_velocity(rows, p, qd, u, a, free)


@cached_jit
def free_velocity(rows, p, qd, u, a, free):
    """``free = [N; S; T] v+(0)`` (output; :attr:`controllers.dynamics.Step.free_velocity`): the
    rows' unactuated and actuated columns times ``p`` and ``qd``, each by the BLAS ``dgemv``
    numpy's ``@`` calls on them, then summed."""
    k3 = rows.shape[0]
    Ru, Ra = np.empty((k3, u.shape[0])), np.empty((k3, a.shape[0]))
    for i in range(k3):
        for t in range(u.shape[0]):
            Ru[i, t] = rows[i, u[t]]
        for t in range(a.shape[0]):
            Ra[i, t] = rows[i, a[t]]
    fu = np.dot(Ru, p) if u.shape[0] else np.zeros(k3)
    fa = np.dot(Ra, qd)
    for i in range(k3):
        free[i] = fu[i] + fa[i]


@cached_jit
def normal_speeds(N, v, phi, dt, out):
    """``out = N v + phi / dt`` (:meth:`controllers.dynamics.Step.normal_speeds`), ``N v`` by the
    BLAS routine numpy's ``@`` calls on the C-ordered ``N``: ``ddot`` for one row, else ``dgemv``."""
    m = out.shape[0]
    if m == 1:
        out[0] = np.dot(N[0], v) + phi[0] / dt
        return
    Nv = np.dot(N, v)
    for i in range(m):
        out[i] = Nv[i] + phi[i] / dt


@cached_jit
def complementarity_violation(fN, wN, free, phi, dt):
    """``max(-min(w_N, 0), max_i f_N,i |w_N,i| / (1 + f_N,i)) / (1 + max_i |free_i + phi_i / dt|)``
    (:meth:`controllers.dynamics.Step.complementarity_violation`, eqs. 36, 54): the numpy
    statement's arithmetic element by element in its order, its maxima and minima starting from 0
    and taken by NaN-propagating scans as ``np.max``/``np.min`` take them, its outer ``max`` of two
    floats Python's (:func:`idyn.lcp._lemke_kernel.first_max`)."""
    s = 0.0
    for i in range(phi.shape[0]):
        s = _nan_max(s, abs(free[i] + phi[i] / dt))
    low, high = 0.0, 0.0
    for i in range(wN.shape[0]):
        w = wN[i]
        if w < low or w != w:
            low = w
        high = _nan_max(high, fN[i] * abs(w) / (1.0 + fN[i]))
    return first_max(-low, high) / (1.0 + s)


@cached_jit
def _nan_max(a, b):
    """``b`` if it is larger than ``a`` or NaN while ``a`` is not: a step of ``np.max``'s scan."""
    return b if b > a or (b != b and a == a) else a
