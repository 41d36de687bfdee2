"""Small contact problems in one compiled call: the dense path beside the general solver.

A simulator step with a few contacts (the quadruped: 4 contacts, 12 rows, 18 velocities) is a
12 x 12 problem, yet the general path (:class:`~idyn.constraint_solver.scheme.ConstraintSolver`)
spends most of its time on it in Python and numpy overhead (validation, row layout, index
arrays, tens of small array operations). :func:`solve_contacts` runs the same algorithm on dense
contact-space data in one compiled call:

1. per row chi = h (h K + B), rho = -K phi0 - (h K + B) phi_dot0 (eqs. 187-188, 191; no
   Gdot v term: point contacts on a static ground);
2. the reduced program (eqs. 176-186) with Lambda = M^-1: T = I + diag(chi) L with the
   Delassus matrix L = G M^-1 G^T, t = chi G a0 - rho, P = diag(zeta 1, 1) + T_rs^T T_rs
   (eq. 180), c = T_rs^T t_rs (eq. 184);
3. the exact-normals active set (see ``ConstraintSolver``): the frictionless law's active set by
   principal pivoting (:func:`~idyn.constraint_solver.appendix_a.spring_active_set`), then
   rounds of the equality-constrained optimum (one KKT solve,
   :func:`~idyn.constraint_solver.appendix_a.equality_optimum`) while it lies in every
   friction cone (eq. 142), updating the active set until the spring law (eq. 68) holds.

Only what that loop settles is answered here: a round whose optimum leaves a cone (a sliding
contact, which needs the conic backend), a singular KKT matrix, a pivoting or an active set that
does not settle return None, and the caller solves the step with the general solver, which
repeats these steps and goes on. Given the general path's L, G a0 and phi_dot (see
:meth:`idyn.sim.compliant.Compliant._solve_dense`) both paths solve the same problem; the
tangential split of a resting body is ill-conditioned (B_t = 1e6 / h), so their impulses may
differ by round-off amplified up to ~1e-3 relative. Dense work is cubic in the rows:
:data:`DENSE_MAX_ROWS` bounds the problems sent here.
"""
from __future__ import annotations

import numpy as np

from ..kernels import general_solve
from ..jit import cached_jit

#: the largest row count (3 per contact) sent here: a step the dense call hands on pays both
#: paths, and the bound keeps that extra small and the dense matrices small (docs/design.md).
DENSE_MAX_ROWS = 192


def solve_contacts(L: np.ndarray, Ga0: np.ndarray, phi: np.ndarray, phi_dot: np.ndarray, K: np.ndarray,
                   B: np.ndarray, h: float, zeta: float, mu: np.ndarray, max_rounds: int):
    """(lambda, rounds) of 3D point contacts [n; r; s] (3m rows, every contact with mu > 0, mu = inf
    for no slip) given the Delassus matrix L (3m x 3m), G a0 = G M^-1 f and each row's phi, phi_dot,
    K, B; None when the general solver must decide (module docstring)."""
    lam = np.empty(L.shape[0])
    rounds = _contact_rounds(L, Ga0, phi, phi_dot, K, B, h, zeta, mu, max_rounds, lam)
    return (lam, rounds) if rounds > 0 else None


@cached_jit
def _solve(A, b):
    """x = A^-1 b by LAPACK dgesv (A square, left intact); empty if A is exactly singular."""
    n = b.shape[0]
    F = np.asfortranarray(A)
    x = np.empty((n, 1))
    x[:, 0] = b
    if general_solve(F, x, np.empty(n, np.int32)) != 0:
        return np.empty(0)
    return x[:, 0]


@cached_jit
def _frictionless_active(T, t, m, max_rounds=50):
    """Normal rows of the frictionless law by principal pivoting from the rows with t < 0
    (appendix_a.frictionless_active_set); (settled, on)."""
    on = t[:m] < 0.0
    for _ in range(max_rounds):
        idx = np.flatnonzero(on)
        lam = np.zeros(m)
        if idx.size:
            sol = _solve(T[idx][:, idx], -t[idx])
            if sol.size == 0:
                return False, on
            lam[idx] = sol
        w = _rows_times(T, m, lam) + t[:m]
        tol = 1e-10 * (1.0 + np.abs(t[:m]))
        bad_in = on & (lam < -tol)
        bad_out = ~on & (w < -tol)
        if not (bad_in.any() or bad_out.any()):
            return True, on
        on = (on & ~bad_in) | bad_out
    return False, on


@cached_jit
def _rows_times(A, rows, x):
    """A[:rows, :x.size] @ x."""
    out = np.zeros(rows)
    for i in range(rows):
        for j in range(x.size):
            out[i] += A[i, j] * x[j]
    return out


@cached_jit
def _equality_optimum(T, t, P, c, on, m):
    """The round's optimum without cones: min 1/2 x^T P x + c^T x s.t. T_A x = -t_A, and normal
    rows off the set with their tangents held at zero (appendix_a.equality_optimum); empty if
    the KKT matrix is singular."""
    free = np.ones(3 * m, np.bool_)
    for i in range(m):
        if not on[i]:
            free[i] = free[m + i] = free[2 * m + i] = False
    fi = np.flatnonzero(free)
    eq = np.flatnonzero(on)
    k, e = fi.size, eq.size
    kkt = np.zeros((k + e, k + e))
    kkt[:k, :k] = P[fi][:, fi]
    A = T[eq][:, fi]
    kkt[k:, :k] = A
    kkt[:k, k:] = A.T
    rhs = np.concatenate((-c[fi], -t[eq]))
    sol = _solve(kkt, rhs)
    x = np.zeros(3 * m)
    if sol.size == 0 or not np.isfinite(sol).all():
        return np.empty(0)
    x[fi] = sol[:k]
    return x


@cached_jit
def _cone_violation(x, mu, m):
    """max(|(lambda_r, lambda_s)| - mu lambda_n) over contacts with finite mu (eq. 142), >= 0."""
    worst = 0.0
    for i in range(m):
        if np.isfinite(mu[i]):
            worst = max(worst, np.hypot(x[m + i], x[2 * m + i]) - mu[i] * x[i])
    return worst


@cached_jit
def _contact_rounds(L, Ga0, phi, phi_dot, K, B, h, zeta, mu, max_rounds, lam):
    """Steps 1-3 of the module docstring; lambda into ``lam``; the number of rounds, 0 if the
    general solver must decide."""
    n = L.shape[0]
    m = n // 3
    hk_b = h * K + B
    chi = h * hk_b
    rho = -K * phi - hk_b * phi_dot
    T = chi.reshape(n, 1) * L
    for i in range(n):
        T[i, i] += 1.0
    t = chi * Ga0 - rho
    T_rs = np.ascontiguousarray(T[m:])
    P = T_rs.T @ T_rs
    for i in range(n):
        P[i, i] += zeta if i < m else 1.0
    c = T_rs.T @ t[m:]
    settled, on = _frictionless_active(T, t, m)
    if not settled:
        return 0
    tol = 1e-9 * (1.0 + np.abs(rho[:m]))
    for rounds in range(1, max_rounds + 1):
        x = _equality_optimum(T, t, P, c, on, m)
        if x.size == 0 or _cone_violation(x, mu, m) > 1e-12 * (1.0 + np.max(np.abs(x))):
            return 0                                         # the conic backend decides
        bound = rho[:m] - chi[:m] * (Ga0[:m] + _rows_times(L, m, x))    # spring lower bound, G a = G a0 + L lambda
        keep = on & (x[:m] > -tol) | ~on & (bound > tol)
        if (keep == on).all():
            lam[:] = x
            return rounds
        on = keep
    return 0
