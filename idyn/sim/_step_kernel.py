"""The arithmetic of one idyn.sim step on its small arrays, compiled.

A step of the LINKS quadruped works on a dozen probe points, 18 velocities and 3m <= 12 contact
rows: as numpy calls (gathers, masks, stacking, small matrix products, LAPACK solves through
scipy's wrappers) each piece costs 1-3 us of call overhead for well under a microsecond of
arithmetic, which put the step at 5-6x PyBullet's ``stepSimulation`` (``idyn bench sim``).
These loops do the same arithmetic in one call each:

* :func:`speculative_keep`: which candidate pairs are contacts (detection, paper Sec. 3.3),
* :func:`contact_space`: the contact-space data of eq. 37, v* = v + dt M^-1 f, M^-1 J^T,
  W = J M^-1 J^T and u* = J v*, from the Cholesky factor of M,
* :func:`pyramid_lcp`, :func:`pyramid_impulses`, :func:`scaled_lcp`, :func:`basis_guess`,
  :func:`update_sticky`: the friction-pyramid LCP of ``ap-lcp`` with its no-slip rows eliminated
  (Schur complement), equilibrated, tried with the last basis, and its impulses.

The solves use the shared :func:`idyn._triangular.gram_solve`. The results agree with the numpy
forms they replace to round-off (sums are accumulated in a different order than BLAS does).
Into arrays the caller allocates (:mod:`idyn._contact_kernel` says why); cached on disk
(:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np

from .._triangular import gram_solve
from ..jit import cached_jit


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
def speculative_keep(phi, a, b, joints, points, normals, J, support, v, margin, reach, dt, keep):
    """Indices (into ``keep``; their count is returned) of the candidate pairs that are contacts:
    gap ``phi <= margin``, or apart by at most ``reach`` and closing within the step at their
    normal speed (``phi + dt min(0, n . (v_A(p) - v_B(p))) <= margin``). Shapes ``a``, ``b``
    (-1: the static world) ride on the joints ``joints[a]``, ``joints[b]``."""
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
            keep[count] = i
            count += 1
    return count


@cached_jit
def contact_space(U, J, v, f, dt, v_free, Minv_JT, W, u_free):
    """The contact-space data of a step (paper eq. 37) into the output arrays, with M = U^T U:
    ``v_free = v + dt M^-1 f``, ``Minv_JT = M^-1 J^T``, ``W = J M^-1 J^T`` (symmetrized as
    (W + W^T) / 2) and ``u_free = J v_free``. Returns whether v_free and u_free are finite."""
    nv, k = v.shape[0], J.shape[0]
    x = np.empty(nv)
    gram_solve(U, nv, f, x)
    finite = True
    for i in range(nv):
        v_free[i] = v[i] + dt * x[i]
        finite &= math.isfinite(v_free[i])
    for c in range(k):
        gram_solve(U, nv, J[c], x)
        for i in range(nv):
            Minv_JT[i, c] = x[i]
    for i in range(k):
        s = 0.0
        for p in range(nv):
            s += J[i, p] * v_free[p]
        u_free[i] = s
        finite &= math.isfinite(s)
        for j in range(i + 1):
            aij = 0.0
            aji = 0.0
            for p in range(nv):
                aij += J[i, p] * Minv_JT[p, j]
                aji += J[j, p] * Minv_JT[p, i]
            W[i, j] = W[j, i] = (aij + aji) * 0.5
    return finite


@cached_jit
def scaled_lcp(Q, r, s, Qs, rs):
    """The LCP (Q, r) equilibrated: ``Qs = s Q s``, ``rs = s r`` with ``s`` (output) 1 / sqrt of
    the positive diagonal entries (impulse rows) and the mean of those square roots elsewhere
    (the lambda rows, zero diagonal; 1 if no entry is positive)."""
    n = r.shape[0]
    total = 0.0
    count = 0
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
def _gather(A, rows, cols):
    """``A[np.ix_(rows, cols)]`` as a new array."""
    out = np.empty((rows.shape[0], cols.shape[0]))
    for i in range(rows.shape[0]):
        for j in range(cols.shape[0]):
            out[i, j] = A[rows[i], cols[j]]
    return out


@cached_jit
def rows_independent(W, rows):
    """Whether the Delassus block ``W[rows, rows]`` is nonsingular: its smallest eigenvalue
    (LAPACK syevd) above 1e-9 times its largest (else Algorithm 1 picks the rows)."""
    d = np.linalg.eigvalsh(_gather(W, rows, rows))
    return d[0] > 1e-9 * d[-1]


@cached_jit
def pyramid_lcp(W, u, R, G, sel, sign, b, C, mu, edged, Q, r):
    """Fill the friction-pyramid LCP of :class:`idyn.sim.contact_models.AnitescuPotra` (paper
    eqs. 52-56, 64) into ``Q``, ``r`` (``Q`` holding the constant E / -E^T entries): the rows
    ``R`` of the contact space with the no-slip equality rows ``G`` eliminated by a Schur
    complement (paper Sec. 4.4),

        Wr = W_RR - W_RG W_GG^-1 W_GR,   ur = u_R - W_RG W_GG^-1 u_G,

    gathered by ``sel`` with signs ``sign`` into the [N, D] block (no friction matrices
    multiplied); ``b`` added to the m normal rows of r and the compliance ``C`` (empty: none) to
    their diagonal; ``mu`` of the ``edged`` contacts in their lambda rows. Returns the upper
    Cholesky factor of W_GG (LAPACK potrf; numpy's LinAlgError if it is not positive definite)."""
    nr, ng, top = R.shape[0], G.shape[0], sel.shape[0]
    Wr = _gather(W, R, R)
    ur = np.empty(nr)
    for i in range(nr):
        ur[i] = u[R[i]]
    U = np.zeros((ng, ng))
    if ng:
        U = np.ascontiguousarray(np.linalg.cholesky(_gather(W, G, G)).T)
        X = _gather(W, G, R)               # becomes W_GG^-1 W_GR, column by column
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
            s = u[G[g]]
            for j in range(R.shape[0]):
                s += W[G[g], R[j]] * f_R[j]
            x[g] = s
        gram_solve(U, ng, x, x)
        for g in range(ng):
            flat[G[g]] = -x[g]
    for i in range(m):
        for d in range(3):
            out[i, d] = flat[d * m + i]


@cached_jit
def basis_guess(Q, r, basis, z, w):
    """The LCP (Q, r) solution with basic set ``basis`` into ``z``, ``w = Q z + r``: solves
    ``Q_aa z_a = -r_a`` (LAPACK gesv; numpy's LinAlgError if singular). Returns whether z_a >= 0,
    and ``max|r|`` and ``||Q||_inf`` for the residual check."""
    n = r.shape[0]
    za = np.linalg.solve(_gather(Q, basis, basis), -r[basis])
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
def plane_contacts(poses, owner, local, radii, normal, offset, joints, J, support, v, margin, reach, dt,
                   points, normals, phi, shape):
    """Detection in a world of probes (sphere centres, box corners) on the multibody against one
    plane: :func:`place_points`, :func:`plane_features` and :func:`speculative_keep` in one call,
    the kept pairs compacted in order to the front of ``points``, ``normals``, ``phi`` and
    ``shape`` (the probe's shape, ``owner``). Returns their count."""
    k = owner.shape[0]
    centres = np.empty((k, 3))
    place_points(poses, owner, local, centres)
    plane_features(centres, radii, normal, offset, points, normals, phi)
    keep = np.empty(k, dtype=np.intp)
    count = speculative_keep(phi, owner, np.full(k, -1), joints, points, normals, J, support, v, margin, reach,
                             dt, keep)
    for i in range(count):          # keep is increasing: compaction in place
        src = keep[i]
        phi[i] = phi[src]
        shape[i] = owner[src]
        for r in range(3):
            points[i, r] = points[src, r]
            normals[i, r] = normals[src, r]
    return count


@cached_jit
def pyramid_lcp_guess(W, u, R, G, sel, sign, b, C, mu, edged, basis, Q, s, Qs, rs, z, w):
    """:func:`pyramid_lcp` (into ``Q``), :func:`scaled_lcp` (into ``s``, ``Qs``, ``rs``) and, if
    ``basis`` is not empty, :func:`basis_guess` (into ``z``, ``w``) in one call. Returns the
    Cholesky factor of W_GG, a code (-1: W_GG is not positive definite; 0: no guess, or the
    basis is singular or gives a negative z; 1: z >= 0, to be checked by the residuals) and
    ``max|rs|``, ``||Qs||_inf``."""
    r = np.zeros(rs.shape[0])
    try:
        U = pyramid_lcp(W, u, R, G, sel, sign, b, C, mu, edged, Q, r)
    except Exception:       # numpy's LinAlgError from the Cholesky factorisation
        return np.zeros((0, 0)), -1, 0.0, 0.0
    scaled_lcp(Q, r, s, Qs, rs)
    if basis.shape[0] == 0:
        return U, 0, 0.0, 0.0
    try:
        nonnegative, q_norm, m_norm = basis_guess(Qs, rs, basis, z, w)
    except Exception:       # singular basis
        return U, 0, 0.0, 0.0
    return U, 1 if nonnegative else 0, q_norm, m_norm


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
