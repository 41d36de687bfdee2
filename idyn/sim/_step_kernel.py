"""The arithmetic of one idyn.sim step on its small arrays, compiled.

A quadruped's step works on a dozen probe points, 18 velocities and 3m <= 12 contact
rows: as numpy calls (gathers, masks, stacking, small matrix products, LAPACK solves through
scipy's wrappers) each piece costs more in call overhead than in arithmetic (timings:
docs/performance.md, ``idyn bench sim``). These loops do that arithmetic in one call each:

* :func:`speculative_keep`: which candidate pairs are contacts (detection, paper Sec. 3.3),
* :func:`step_problem`: a step's data, f = P^T tau - h (tau checked finite), the contact rows,
  and :func:`contact_space`: the contact-space data of eq. 37, v* = v + dt M^-1 f, M^-1 J^T,
  W = J M^-1 J^T and u* = J v*, from the Cholesky factor of M,
* :func:`basis_guess`, :func:`update_sticky`, :func:`pyramid_lcp_try`: the warm start and the
  no-slip active set of ``ap-lcp`` around the friction-pyramid LCP of the shared builder
  (:mod:`idyn.kernels`: the LCP with its no-slip rows eliminated, equilibrated, and its
  impulses); :func:`pyramid_lcp_try` is the common case (the last basis solves it) in one call,
* :func:`advance`: v+ = v* + M^-1 J^T f and its finiteness.

The solves use the shared :func:`idyn.kernels.gram_solve`. Into arrays the caller allocates
(:mod:`idyn.kernels` says why); cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import contact_rows
from ..kernels import equilibrate, gather, pyramid_impulses, pyramid_lcp
from ..kernels import gram_solve, max_abs, row_slack
from ..jit import cached_jit
from ..lcp.residuals import residuals_pass
from ..separation import separating_into


@cached_jit
def _twist_point_velocity(J, support, v, joint, p, out):
    """``out`` += the world velocity of the material point ``p`` of the body on ``joint``:
    V_lin + omega x p with (V_lin, omega) = J_j v over the joint's support (paper App. B)."""
    tw = np.zeros(6)
    for k in range(v.shape[0]):
        s = support[joint, k] * v[k]
        for r in range(6):
            tw[r] += J[r, k] * s
    out[0] += tw[0] + tw[4] * p[2] - tw[5] * p[1]
    out[1] += tw[1] + tw[5] * p[0] - tw[3] * p[2]
    out[2] += tw[2] + tw[3] * p[1] - tw[4] * p[0]


@cached_jit
def speculative_keep(phi, a, b, joints, points, normals, mu, J, support, v, margin, reach, dt):
    """Keep the candidate pairs that are contacts: gap ``phi <= margin``, or apart by at most
    ``reach`` and closing within the step at their normal speed
    (``phi + dt min(0, n . (v_A(p) - v_B(p))) <= margin``). Shapes ``a``, ``b`` (-1: the static
    world) ride on the joints ``joints[a]``, ``joints[b]``. The kept pairs are moved, in order,
    to the front of ``phi``, ``a``, ``b``, ``points``, ``normals`` and ``mu``; returns their count."""
    count = 0
    rel = np.zeros(3)
    for i in range(phi.shape[0]):
        gap = phi[i]
        if margin < gap <= reach:
            rel[:] = 0.0
            _twist_point_velocity(J, support, v, joints[a[i]], points[i], rel)
            if b[i] >= 0:
                rel[:] = -rel
                _twist_point_velocity(J, support, v, joints[b[i]], points[i], rel)
                rel[:] = -rel
            speed = normals[i, 0] * rel[0] + normals[i, 1] * rel[1] + normals[i, 2] * rel[2]
            gap += dt * min(0.0, speed)
        if gap <= margin:
            phi[count], a[count], b[count], mu[count] = phi[i], a[i], b[i], mu[i]
            for r in range(3):
                points[count, r] = points[i, r]
                normals[count, r] = normals[i, r]
            count += 1
    return count


@cached_jit
def contact_space(U, J, v, f, dt, v_free, Minv_JT, W, u_free):
    """The contact-space data of a step (paper eq. 37) into the output arrays, with M = U^T U:
    ``v_free = v + dt M^-1 f``, ``Minv_JT = M^-1 J^T``, ``W = J M^-1 J^T`` (its lower triangle
    mirrored: exactly symmetric) and ``u_free = J v_free``. Returns whether v_free and u_free
    are finite."""
    nv, k = v.shape[0], J.shape[0]
    x = np.empty(nv)
    gram_solve(U, nv, f, x)
    finite = True
    for i in range(nv):
        v_free[i] = v[i] + dt * x[i]
        finite &= math.isfinite(v_free[i])
    for i in range(k):
        gram_solve(U, nv, J[i], x)
        Minv_JT[:, i] = x
    for i in range(k):
        s = 0.0
        for p in range(nv):
            s += J[i, p] * v_free[p]
        u_free[i] = s
        finite &= math.isfinite(s)
        for j in range(i + 1):
            s = 0.0
            for p in range(nv):
                s += J[i, p] * Minv_JT[p, j]
            W[i, j] = W[j, i] = s
    return finite


@cached_jit
def factor_contact_space(M, J, v, f, dt, v_free, Minv_JT, W, u_free):
    """:func:`contact_space` with the Cholesky factorisation of M: returns ``U`` (upper,
    M = U^T U) and a code: -1 M is not positive definite, 0 v_free or u_free is not finite,
    1 they are."""
    try:
        L = np.linalg.cholesky(M)
    except Exception:       # numpy's LinAlgError: not positive definite
        return np.zeros((0, 0)).T, -1
    U = L.T
    return U, 1 if contact_space(U, J, v, f, dt, v_free, Minv_JT, W, u_free) else 0


@cached_jit
def step_problem(M, h, tau, actuated, J6, support, ja, jb, two_bodies, frames, points, v, dt, f, J, v_free, Minv_JT,
                 W, u_free):
    """The data of one simulator step in one call: the generalized force ``f = P^T tau - h``
    (``tau`` on the velocities ``actuated``), the contact rows ``J`` (3m x nv,
    :func:`idyn.kernels.contact_rows`) and :func:`factor_contact_space`. Returns the
    factor and a code: -2 ``tau`` is not finite (nothing else is computed), else that of
    :func:`factor_contact_space`."""
    for k in range(tau.shape[0]):
        if not math.isfinite(tau[k]):
            return np.zeros((0, 0)).T, -2
    for i in range(h.shape[0]):
        f[i] = -h[i]
    for k in range(tau.shape[0]):
        f[actuated[k]] += tau[k]
    contact_rows(J6, support, ja, jb, two_bodies, frames, points, J)
    return factor_contact_space(M, J, v, f, dt, v_free, Minv_JT, W, u_free)


@cached_jit
def advance(v_free, Minv_JT, impulses, v_next):
    """``v_next = v_free + M^-1 J^T f`` for impulses (m, 3) [normal, s, t] (J^T f by BLAS gemv as
    numpy's product); returns whether ``v_next`` is finite."""
    m = impulses.shape[0]
    flat = np.empty(3 * m)
    for i in range(m):
        for d in range(3):
            flat[d * m + i] = impulses[i, d]
    dv = np.dot(Minv_JT, flat) if m else np.zeros(v_free.shape[0])
    finite = True
    for i in range(v_free.shape[0]):
        v_next[i] = v_free[i] + dv[i]
        finite &= math.isfinite(v_next[i])
    return finite


@cached_jit
def rows_independent(W, rows):
    """Whether the Delassus block ``A = W[rows, rows]`` is nonsingular: its smallest eigenvalue
    (LAPACK syevd) above 1e-9 times its largest (else Algorithm 1 picks the rows).

    Settled first without the eigenvalues when a bound proves it (the common, well-conditioned
    case, sparing the eigensolver): lambda_min >= 1 / trace(A^-1) and lambda_max <= ||A||_inf,
    so a bound ratio above 2e-9 makes the eigenvalue test true (the factor 2 covers the rounding of both computations, relative
    1e-11 at most at the conditioning where the bound can pass). Otherwise the eigenvalues decide."""
    A = gather(W, rows, rows)
    n = A.shape[0]
    try:
        L = np.linalg.cholesky(A)
    except Exception:       # numpy's LinAlgError: not positive definite
        L = np.zeros((0, 0))
    if L.shape[0] == n:
        norm_inf = 0.0
        for i in range(n):
            row = 0.0
            for j in range(n):
                row += abs(A[i, j])
            norm_inf = max(norm_inf, row)
        inv_trace, e, x = 0.0, np.zeros(n), np.empty(n)
        for c in range(n):          # trace(A^-1) = sum_c (A^-1 e_c)_c
            e[:] = 0.0
            e[c] = 1.0
            gram_solve(L.T, n, e, x)
            inv_trace += x[c]
        if inv_trace * 2e-9 * norm_inf < 1.0:
            return True
    d = np.linalg.eigvalsh(A)
    return d[0] > 1e-9 * d[-1]


@cached_jit
def basis_guess(Q, r, basis, z, w):
    """The LCP (Q, r) solution with basic set ``basis`` into ``z``, ``w = Q z + r``: solves
    ``Q_aa z_a = -r_a`` (LAPACK gesv; numpy's LinAlgError if singular). Returns whether z_a >= 0,
    and ``max|r|`` and ``||Q||_inf`` for the residual check."""
    n = r.shape[0]
    za = np.linalg.solve(gather(Q, basis, basis), -r[basis])
    if za.min() < 0.0:
        return False, 0.0, 0.0
    z[:] = 0.0
    for k in range(basis.shape[0]):
        z[basis[k]] = za[k]
    q_norm = 0.0
    m_norm = 0.0
    for i in range(n):
        s = r[i]
        row = 0.0
        for j in range(n):
            s += Q[i, j] * z[j]
            row += abs(Q[i, j])
        w[i] = s
        q_norm = max(q_norm, abs(r[i]))
        m_norm = max(m_norm, row)
    return True, q_norm, m_norm


@cached_jit
def update_sticky(fn, w_n, u_free, no_slip, sticky):
    """One pass of the no-slip active set (see :class:`AnitescuPotra`): release the sticky
    contacts that separate unloaded (f_N <= f_tol, w_N > w_tol), restore the released no-slip
    contacts that carry load; ``sticky`` updated in place, returns whether it changed."""
    f_tol = 1e-12 + 1e-9 * np.max(fn)
    w_tol = 1e-12 + 1e-9 * np.max(np.abs(u_free))
    changed = False
    for i in range(fn.shape[0]):
        if sticky[i] and fn[i] <= f_tol and w_n[i] > w_tol:
            sticky[i] = False
            changed = True
        elif no_slip[i] and not sticky[i] and fn[i] > f_tol:
            sticky[i] = True
            changed = True
    return changed


@cached_jit
def place_points(poses, owner, local, out):
    """World positions ``out`` (k, 3) of points given in the frames ``poses[owner]`` (4 x 4
    homogeneous placements) at ``local`` (k, 3)."""
    for i in range(owner.shape[0]):
        T = poses[owner[i]]
        for r in range(3):
            out[i, r] = T[r, 0] * local[i, 0] + T[r, 1] * local[i, 1] + T[r, 2] * local[i, 2] + T[r, 3]


@cached_jit
def plane_features(centres, radii, normal, offset, points, normals, phi):
    """Spheres against the plane ``normal . x = offset`` (:func:`idyn.sim.geometry.spheres_plane`)
    into ``points``, ``normals``, ``phi``: gap phi = n . c - offset - r, the contact point midway
    between the plane point under the centre and the sphere's surface."""
    for i in range(radii.shape[0]):
        d = centres[i, 0] * normal[0] + centres[i, 1] * normal[1] + centres[i, 2] * normal[2] - offset
        phi[i] = d - radii[i]
        for r in range(3):
            points[i, r] = (centres[i, r] - (phi[i] + radii[i]) * normal[r]) + (0.5 * phi[i]) * normal[r]
            normals[i, r] = normal[r]


@cached_jit
def pyramid_lcp_guess(W, u, R, G, sel, sign, b, C, mu, edged, basis, Q, s, Qs, rs, z, w):
    """:func:`idyn.kernels.pyramid_lcp` (into ``Q``), its ``equilibrate`` (into ``s``,
    ``Qs``, ``rs``) and, if ``basis`` is not empty, :func:`basis_guess` (into ``z``, ``w``) in
    one call. Returns the
    Cholesky factor of W_GG, a code (-1: W_GG is not positive definite; 0: no guess, or the
    basis is singular or gives a negative z; 1: z >= 0, to be checked by the residuals) and
    ``max|rs|``, ``||Qs||_inf``."""
    r = np.zeros(rs.shape[0])
    try:
        U = pyramid_lcp(W, u, R, G, sel, sign, b, C, mu, edged, Q, r)
    except Exception:       # numpy's LinAlgError from the Cholesky factorisation
        return np.zeros((0, 0)), -1, 0.0, 0.0
    equilibrate(Q, r, s, Qs, rs)
    if basis.shape[0] == 0:
        return U, 0, 0.0, 0.0
    try:
        nonnegative, q_norm, m_norm = basis_guess(Qs, rs, basis, z, w)
    except Exception:       # singular basis
        return U, 0, 0.0, 0.0
    return U, 1 if nonnegative else 0, q_norm, m_norm


@cached_jit
def pyramid_lcp_try(W, u, R, G, sel, sign, b, C, mu, edged, basis, tol, no_slip, sticky, Q, s, Qs, rs, z, w,
                    impulses):
    """One pass of :class:`idyn.sim.contact_models.AnitescuPotra`'s active set as far as it goes
    without Lemke's method: :func:`pyramid_lcp_guess` and, when the basis guess passes the
    residual check every solver uses (:func:`idyn.lcp.residuals.residuals_pass` at ``tol``), its
    impulses (:func:`idyn.kernels.pyramid_impulses`) and the active-set update (:func:`update_sticky`, w_N of
    the unscaled LCP). Returns the Cholesky factor of W_GG and a code: -1 W_GG is not positive
    definite; 0 the guess is not accepted (``Qs``, ``rs``, ``s`` hold the scaled LCP for Lemke);
    1 solved, ``sticky`` unchanged; 2 solved, ``sticky`` changed."""
    U, code, q_norm, m_norm = pyramid_lcp_guess(W, u, R, G, sel, sign, b, C, mu, edged, basis, Q, s, Qs, rs, z, w)
    if code < 1 or not residuals_pass(z, w, q_norm, m_norm, tol):
        return U, min(code, 0)
    m = impulses.shape[0]
    pyramid_impulses(z, s, m, edged, W, u, R, G, U, impulses)
    w_n = np.empty(m)
    for i in range(m):
        w_n[i] = w[i] / s[i]
    return U, 2 if update_sticky(impulses[:, 0], w_n, u, no_slip, sticky) else 1


@cached_jit
def no_slip_rows(W, sticky):
    """The contact-space rows [S; T] of the ``sticky`` contacts (m = sticky.size) and whether
    they are independent (:func:`rows_independent`)."""
    m = sticky.shape[0]
    count = 0
    for i in range(m):
        if sticky[i]:
            count += 1
    rows = np.empty(2 * count, dtype=np.intp)
    k = 0
    for i in range(m):
        if sticky[i]:
            rows[k] = m + i
            rows[count + k] = 2 * m + i
            k += 1
    return rows, count == 0 or rows_independent(W, rows)


@cached_jit
def dissipation_qp(W, u, phi, dt, mu, rows, sign, cones, H, c, A_in, b_in):
    """Fill the QP of :class:`idyn.sim.contact_models.MaximalDissipation` (paper eqs. 69-72) over
    the pyramid variables x = [f_N, f_S+, f_S-, f_T+, f_T-] of m contacts, the signed selection
    ``rows``, ``sign`` of the contact space: ``H = sign sign^T W[rows, rows]``,
    ``c = sign u[rows]``, the non-penetration rows ``A_in[:m] = W[:m, rows] sign`` with
    ``b_in[:m] = -(u_N + phi / dt)``, and mu of the ``cones`` contacts in their cone rows (the
    last rows of A_in, whose other entries, like x >= 0, are in place)."""
    m, n, nb = phi.shape[0], rows.shape[0], cones.shape[0]
    for i in range(n):
        c[i] = sign[i] * u[rows[i]]
        for j in range(n):
            H[i, j] = sign[i] * sign[j] * W[rows[i], rows[j]]
    for i in range(m):
        b_in[i] = -(u[i] + phi[i] / dt)
        for j in range(n):
            A_in[i, j] = W[i, rows[j]] * sign[j]
    first = A_in.shape[0] - nb
    for k in range(nb):
        A_in[first + k, cones[k]] = mu[cones[k]]


@cached_jit
def qp_active_guess(H, c, A, b, eps, active, tol, x):
    """The minimiser ``x`` of ``1/2 x^T (H + eps I) x + c^T x`` subject to ``A x >= b`` if the
    rows ``active`` (independent) are the active ones. Active bound rows (``x_j >= 0``: one
    nonzero entry, 1, and b = 0) fix their variables at zero; the other variables F and active
    rows O solve the KKT system

        [H_FF + eps I, -A_OF^T; A_OF, 0] [x_F; y_O] = [-c_F; b_O]

    (LAPACK gesv; well conditioned where the bounds pin H's null directions, unlike H + eps I
    alone), and a fixed variable's bound multiplier is its row of the stationarity,
    ``y_j = ((H + eps I) x + c - A_O^T y_O)_j``. Returns whether (x, y) passes the KKT
    conditions it does not hold by construction: multipliers ``y >= -tol (1 + max|y|)`` and every
    row ``A_i x - b_i >= -tol ((1 + max|x|)(1 + max_j |A_ij|) + |b_i|)`` (the row scale of
    :func:`idyn.kernels.row_slack`). With H + eps I positive definite that x is the QP's
    unique minimiser, to these tolerances."""
    n = c.shape[0]
    fixed = np.zeros(n, dtype=np.bool_)
    other = np.empty(active.shape[0], dtype=np.intp)
    ko = 0
    for a in range(active.shape[0]):
        row = active[a]
        nonzero, col = 0, 0
        for j in range(n):
            if A[row, j] != 0.0:
                nonzero += 1
                col = j
        if nonzero == 1 and A[row, col] == 1.0 and b[row] == 0.0:
            fixed[col] = True
        else:
            other[ko] = row
            ko += 1
    free = np.flatnonzero(~fixed)
    nf = free.shape[0]
    K = np.zeros((nf + ko, nf + ko))
    rhs = np.empty(nf + ko)
    for p in range(nf):
        rhs[p] = -c[free[p]]
        for q in range(nf):
            K[p, q] = H[free[p], free[q]]
        K[p, p] += eps
    for o in range(ko):
        rhs[nf + o] = b[other[o]]
        for p in range(nf):
            K[nf + o, p] = A[other[o], free[p]]
            K[p, nf + o] = -A[other[o], free[p]]
    try:
        sol = np.linalg.solve(K, rhs)
    except Exception:       # numpy's LinAlgError: singular KKT matrix
        return False
    x[:] = 0.0
    for p in range(nf):
        x[free[p]] = sol[p]
    y = np.zeros(n + ko)            # bound multipliers by variable, then those of the rows O
    for o in range(ko):
        y[n + o] = sol[nf + o]
    for j in range(n):
        if fixed[j]:
            g = c[j]
            for q in range(n):
                g += H[j, q] * x[q]
            for o in range(ko):
                g -= A[other[o], j] * y[n + o]
            y[j] = g
    y_max = max_abs(y)
    for i in range(y.shape[0]):
        if not y[i] >= -tol * (1.0 + y_max):      # also rejects NaN
            return False
    x_max = max_abs(x)
    for row in range(A.shape[0]):
        slack, scale = row_slack(A, b, x, row, x_max)
        if not slack >= -tol * scale:
            return False
    return True


@cached_jit
def tight_rows(A, b, x, tol, out):
    """Rows of ``A x >= b`` that ``x`` holds with equality, to ``tol`` relative to the row scale
    of :func:`qp_active_guess`, and that are independent of the tight rows before them
    (Gram-Schmidt; a residual norm above 1e-9 of the row's): their indices into ``out``, their
    count returned. The active set :func:`qp_active_guess` tries on the next step."""
    n = x.shape[0]
    x_max = max_abs(x)
    basis = np.empty((min(A.shape[0], n), n))
    count = 0
    for row in range(A.shape[0]):
        slack, scale = row_slack(A, b, x, row, x_max)
        if abs(slack) > tol * scale or count == basis.shape[0]:
            continue
        v = A[row].copy()
        norm0 = math.sqrt(np.dot(v, v))
        for q in range(count):
            v -= np.dot(basis[q], v) * basis[q]
        norm = math.sqrt(np.dot(v, v))
        if norm > 1e-9 * norm0:
            basis[count] = v / norm
            out[count] = row
            count += 1
    return count


@cached_jit
def dissipation_try(W, u, phi, dt, mu, rows, sign, cones, extra_c, ridge, active, tol, price, edged, R, H, c, A_in,
                    b_in, x, impulses):
    """:class:`idyn.sim.contact_models.MaximalDissipation`'s step as far as it goes without
    quadprog, in one call: the QP (:func:`dissipation_qp`, ``extra_c`` added to the normal rows
    of ``c`` unless empty), its ridge ``eps = ridge max(max_i |H_ii|, 1)`` (that of
    :func:`idyn.qp.solve_built`'s first attempt for ``ridge`` its first relative value), and if
    ``active`` is not empty, :func:`qp_active_guess` (into ``x``), the separation check of the
    contacts ``price`` (:func:`idyn.separation.separating_loads`, its compiled pass) and the
    impulses. Returns ``eps`` and a code: 0 no accepted guess (H, c, A_in, b_in hold the QP);
    1 solved, ``impulses`` filled; 2 ``x`` solves the QP but a contact of ``price`` separates
    loaded (to be priced)."""
    m = phi.shape[0]
    dissipation_qp(W, u, phi, dt, mu, rows, sign, cones, H, c, A_in, b_in)
    for i in range(extra_c.shape[0]):
        c[i] += extra_c[i]
    largest = 0.0
    for i in range(H.shape[0]):
        largest = max(largest, abs(H[i, i]))
    eps = ridge * max(largest, 1.0)
    if active.shape[0] == 0 or not qp_active_guess(H, c, A_in, b_in, eps, active, tol, x):
        return eps, 0
    if price.shape[0]:
        speed = np.empty(m)
        for i in range(m):
            s = u[i]
            for j in range(x.shape[0]):
                s += A_in[i, j] * x[j]
            speed[i] = s
        separating = np.empty(m, dtype=np.bool_)
        separating_into(phi, dt, x[:m], speed, separating)
        for i in range(m):
            if separating[i] and price[i]:
                return eps, 2
    pyramid_impulses(x, np.ones(x.shape[0]), m, edged, W, u, R, np.zeros(0, dtype=np.intp), np.zeros((0, 0)),
                     impulses)
    return eps, 1
