"""Compiled per-leg arithmetic of :class:`planners.leg_kinematics.LegKinematics`.

The planner evaluates the leg Jacobians and their inverses one to three times per 1 ms control
step. As numpy calls on (L, 3, n) arrays (an einsum with the Levi-Civita symbol, transposes, a
stacked SVD) they cost 20-60 us per evaluation for a few hundred flops (measured on the trot's
recorded states, ``idyn bench-loop``). :func:`leg_jacobians` and :func:`surely_regular` do the
same arithmetic in the same order as the numpy expressions they replace, bit for bit. The
Newton iteration's loops (residuals, steps, joint rates and accelerations) sum in index order
and agree with the stacked ``matmul`` and ``einsum`` they replace to round-off only (OpenBLAS
and einsum order and fuse their sums their own way; 3000 replayed trot steps: joint targets
within 2e-13 relative).  Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from idyn._lapack_kernel import general_solve
from idyn.jit import cached_jit
from idyn.placements import placed_points, rotate


@cached_jit
def leg_jacobians(Jw, leg_v, x, out):
    """``out[l] = J_lin + omega x x_l`` (3 x n) for each leg ``l``: the base-axes Jacobian of foot
    point ``x[l]`` from the world joint Jacobian ``Jw`` (6 x nv, [linear at the origin;
    angular]) restricted to the leg's columns ``leg_v[l]`` (the velocity of a point is
    ``v_O + omega x p``). Into ``out`` (L, 3, n), which the caller allocates."""
    for leg in range(leg_v.shape[0]):
        x0, x1, x2 = x[leg, 0], x[leg, 1], x[leg, 2]
        for k in range(leg_v.shape[1]):
            c = leg_v[leg, k]
            w0, w1, w2 = Jw[3, c], Jw[4, c], Jw[5, c]
            out[leg, 0, k] = Jw[0, c] + (w1 * x2 - w2 * x1)
            out[leg, 1, k] = Jw[1, c] + (w2 * x0 - w0 * x2)
            out[leg, 2, k] = Jw[2, c] + (w0 * x1 - w1 * x0)


@cached_jit
def _cross(a0, a1, a2, b0, b1, b2):
    """``a x b`` as Eigen's ``cross`` forms it (the plain formula, coefficient by coefficient)."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@cached_jit
def foot_jacobians(Jw, leg_v, placements, joints, offsets, x, out):
    """The foot points ``x[l] = t + R offsets[l]`` in the placements of their joints ``joints[l]``
    (:func:`idyn.placements.placed_points`: pinocchio's frame placements, bit for bit; ``placements``:
    the (njoints, 12) rows of ``data.oMi``), then :func:`leg_jacobians` at those points into ``out``."""
    placed_points(placements, joints, offsets, x)
    leg_jacobians(Jw, leg_v, x, out)


@cached_jit
def surely_regular(J, threshold, out):
    """``out[l]`` True when the 3 x 3 leg Jacobian ``J[l]`` certainly has its smallest singular
    value above ``threshold``, from ``sigma_min >= |det J| / ||J||_F^2`` (``|det J| = s1 s2 s3 <=
    s1^2 sigma_min`` and ``s1 <= ||J||_F``), with a 1e-6 relative margin for round-off. False
    means "not certain": the caller decides with the singular values themselves. Returns
    whether every leg is certain."""
    all_ok = True
    for leg in range(J.shape[0]):
        a = J[leg]
        det = (a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1])
               - a[0, 1] * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
               + a[0, 2] * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]))
        frob = 0.0
        for i in range(3):
            for j in range(3):
                frob += a[i, j] * a[i, j]
        regular = abs(det) > threshold * (1.0 + 1e-6) * frob
        out[leg] = regular
        all_ok = all_ok and regular
    return all_ok


@cached_jit
def regular_inverses(J, threshold, ok, out):
    """If every leg is surely regular (:func:`surely_regular`, flags into ``ok``): ``out[l] =
    J[l]^-1`` for every leg and True; else False (``out`` not complete). Each inverse is what
    ``np.linalg.inv`` computes, LAPACK's dgesv against the identity on the Fortran-ordered
    matrix, called here without numpy's per-call gufunc set-up (5.5 -> 3.8 us for four legs;
    scipy's LAPACK build, bit-identical to numpy's on the tests' random and recorded legs)."""
    if not surely_regular(J, threshold, ok):
        return False
    n = J.shape[1]
    a, b = np.empty((n, n)).T, np.empty((n, n)).T      # Fortran order, as LAPACK reads them
    pivots = np.empty(n, np.int32)
    for leg in range(J.shape[0]):
        for j in range(n):
            for i in range(n):
                a[i, j] = J[leg, i, j]
                b[i, j] = 1.0 if i == j else 0.0
        if general_solve(a, b, pivots) != 0:      # exactly singular: excluded by the bound, kept as a guard
            return False
        for j in range(n):
            for i in range(n):
                out[leg, i, j] = b[i, j]
    return True


@cached_jit
def _error(targets, x, leg, r):
    """``r[leg] = targets[leg] - x[leg]`` and its Euclidean norm."""
    s = 0.0
    for i in range(x.shape[1]):
        r[leg, i] = targets[leg, i] - x[leg, i]
        s += r[leg, i] * r[leg, i]
    return np.sqrt(s)


@cached_jit
def residuals(targets, x, tol, stuck, r, err, active):
    """One Newton iteration's bookkeeping for every leg: ``r = targets - x``, ``err = |r|`` and
    ``active = (err > tol) & ~stuck``, into ``r``, ``err``, ``active``; returns whether any leg is
    active."""
    any_active = False
    for leg in range(x.shape[0]):
        err[leg] = _error(targets, x, leg, r)
        moving = err[leg] > tol and not stuck[leg]
        active[leg] = moving
        any_active = any_active or moving
    return any_active


@cached_jit
def decreased(targets, x_try, err, active, r_try, e_try, ok):
    """Whether the trial points ``x_try`` reduce the error of every active leg: ``r_try = targets
    - x_try``, ``e_try = |r_try|`` and ``ok = ~active | (e_try < err)`` into ``r_try``, ``e_try``,
    ``ok``; returns ``ok.all()``."""
    all_ok = True
    for leg in range(x_try.shape[0]):
        e_try[leg] = _error(targets, x_try, leg, r_try)
        better = not active[leg] or e_try[leg] < err[leg]
        ok[leg] = better
        all_ok = all_ok and better
    return all_ok


@cached_jit
def per_leg_into(A, x, out):
    """``out[l] = A[l] x[l]`` for (L, m, k) ``A`` and (L, k) ``x`` (batched matrix-vector products)."""
    for leg in range(A.shape[0]):
        for j in range(A.shape[1]):
            s = 0.0
            for i in range(A.shape[2]):
                s += A[leg, j, i] * x[leg, i]
            out[leg, j] = s


@cached_jit
def newton_steps(J_inv, r, active, step):
    """``step[l] = J_inv[l] r[l]`` for the active legs, zero for the others."""
    per_leg_into(J_inv, r, step)
    for leg in range(step.shape[0]):
        if not active[leg]:
            step[leg] = 0.0


@cached_jit
def leg_rates(J_inv, xd, leg_v, qd, v, leg_q, q_legs, q):
    """:func:`per_leg_into` (qd = J^-1 xd, into ``qd``), also written into the velocity vector
    ``v`` at the legs' indices ``leg_v`` (L, n); and the leg angles ``q_legs`` into the
    configuration ``q`` at ``leg_q`` (pinocchio's vectors for the drift pass)."""
    per_leg_into(J_inv, xd, qd)
    for leg in range(leg_v.shape[0]):
        for j in range(leg_v.shape[1]):
            v[leg_v[leg, j]] = qd[leg, j]
            q[leg_q[leg, j]] = q_legs[leg, j]


@cached_jit
def frame_drifts(joints, offsets, placements, velocities, accelerations, out):
    """``out[l]``: the classical linear acceleration, in world axes, of the point ``offsets[l]``
    of joint ``joints[l]`` after pinocchio's second-order forward kinematics, the same operations
    as ``pin.getFrameClassicalAcceleration(..., LOCAL_WORLD_ALIGNED).linear`` (bit for bit):
    with the joint's world rotation R and its spatial velocity (v, w) and acceleration (a, al) in
    joint axes, ``R (a + al x p) + (R w) x (R (v + w x p))``. ``placements``, ``velocities``,
    ``accelerations``: pinocchio's ``data.oMi`` (rotation column-major first), ``data.v`` and
    ``data.a`` as (njoints, 12), (njoints, 6) and (njoints, 6) rows [linear; angular]. At zero
    joint acceleration this is the feet's drift Jdot qd."""
    for leg in range(joints.shape[0]):
        j = joints[leg]
        R, v, a = placements[j], velocities[j], accelerations[j]
        p0, p1, p2 = offsets[leg, 0], offsets[leg, 1], offsets[leg, 2]
        c0, c1, c2 = _cross(v[3], v[4], v[5], p0, p1, p2)
        l0, l1, l2 = rotate(R, v[0] + c0, v[1] + c1, v[2] + c2)
        w0, w1, w2 = rotate(R, v[3], v[4], v[5])
        c0, c1, c2 = _cross(a[3], a[4], a[5], p0, p1, p2)
        a0, a1, a2 = rotate(R, a[0] + c0, a[1] + c1, a[2] + c2)
        c0, c1, c2 = _cross(w0, w1, w2, l0, l1, l2)
        out[leg, 0], out[leg, 1], out[leg, 2] = a0 + c0, a1 + c1, a2 + c2


@cached_jit
def accelerations_into(J_inv, xdd, drift, out):
    """``out[l] = J_inv[l] (xdd[l] - drift[l])``: the joint accelerations qdd = J^-1 (xdd - Jdot qd)
    (``drift``: (L, 3))."""
    for leg in range(J_inv.shape[0]):
        d = drift[leg]
        for j in range(J_inv.shape[1]):
            s = 0.0
            for i in range(J_inv.shape[2]):
                s += J_inv[leg, j, i] * (xdd[leg, i] - d[i])
            out[leg, j] = s


#: statuses of :func:`newton_advance`: finished, or what Python must do before calling it again
DONE, NEED_PASS, NEED_INVERSE, NEED_BACKTRACK = 0, 1, 2, 3
#: its stages (``stage`` of the workspace): where the next call resumes
GATHER, ITERATE, STEP, TRIAL, GATHER_FINISH, FINISH, RATES = 0, 1, 2, 3, 4, 5, 6


def newton_dtype(legs: int, joints: int, nq: int, nv: int) -> np.dtype:
    """The record of :class:`planners.leg_kinematics.LegKinematics`'s Newton iteration: the leg
    indices (velocity, configuration, actuated), each foot's joint and point in it, pinocchio's
    configuration and velocity vectors (its passes read them in place), the iterate and trial
    (angles, foot points, Jacobians), the inverses, residuals, step, errors and the per-leg flags
    (int8: numba has no nested bools). Aligned, as numba wants its arguments."""
    L, n = legs, joints
    return np.dtype([
        ("leg_v", "i8", (L, n)), ("leg_q", "i8", (L, n)), ("leg_actuated", "i8", (L, n)), ("threshold", "f8"),
        ("foot_joint", "i8", (L,)), ("foot_offset", "f8", (L, 3)),
        ("iters", "i8"), ("stage", "i8"),
        ("pin_q", "f8", (nq,)), ("pin_v", "f8", (nv,)),
        ("q", "f8", (L, n)), ("x", "f8", (L, 3)), ("J", "f8", (L, 3, n)),
        ("q_try", "f8", (L, n)), ("x_try", "f8", (L, 3)), ("J_try", "f8", (L, 3, n)),
        ("J_inv", "f8", (L, n, 3)), ("r", "f8", (L, 3)), ("r_try", "f8", (L, 3)), ("step", "f8", (L, n)),
        ("err", "f8", (L,)), ("e_try", "f8", (L,)), ("active", "i1", (L,)), ("ok", "i1", (L,)),
        ("stuck", "i1", (L,)), ("regular", "i1", (L,)),
    ], align=True)


@cached_jit
def set_legs(w, q_legs):
    """The leg angles ``q_legs`` (L, n) into pinocchio's configuration ``w.pin_q``."""
    for leg in range(q_legs.shape[0]):
        for j in range(q_legs.shape[1]):
            w.pin_q[w.leg_q[leg, j]] = q_legs[leg, j]


@cached_jit
def newton_begin(ws, q_init):
    """Start the iteration of the record ``ws`` from the leg angles ``q_init`` (into ``q`` and
    pinocchio's configuration): the next :func:`newton_advance` call wants pinocchio's pass at
    them done."""
    w = ws[0]
    w.q[:] = q_init
    w.stuck[:] = 0
    w.iters = 0
    set_legs(w, w.q)
    w.stage = GATHER


@cached_jit
def _inverses(w):
    """:func:`regular_inverses` of ``w.J`` into ``w.J_inv`` for square legs; False when Python's
    :meth:`~planners.leg_kinematics.LegKinematics.inverse` must decide (SVD, damping)."""
    return w.J.shape[2] == 3 and regular_inverses(w.J, w.threshold, w.regular, w.J_inv)


@cached_jit
def newton_advance(ws, Jw, placements, targets, tol, max_iters, xd, qd):
    """Resolved-rate Newton IK of every leg (:meth:`~planners.leg_kinematics.LegKinematics.solve`)
    as one compiled loop between pinocchio's passes, begun by :func:`newton_begin` and resuming
    at ``ws[0].stage`` (``tol`` and ``max_iters`` as there). Returns :data:`NEED_PASS` when
    pinocchio's joint Jacobians and placements are wanted at ``w.pin_q`` (``Jw`` and
    ``placements``, the (njoints, 12) rows of ``data.oMi``, are their live views),
    :data:`NEED_INVERSE` when ``w.J_inv`` must be formed from ``w.J`` in Python,
    :data:`NEED_BACKTRACK` when a full step failed (Python's line search, then ``stage`` set by
    it), :data:`DONE` with ``w.q``, ``w.x``, ``w.J``, ``w.err`` the answer. Given ``xd`` (else
    None) it also forms the final inverses and the joint rates ``qd = J^-1 xd`` (into ``qd`` and ``w.pin_v``, the angles into ``w.pin_q``: the
    configuration of the drift pass). The same operations as the Python loop, in its order."""
    w = ws[0]
    while True:
        stage = w.stage
        if stage == GATHER or stage == GATHER_FINISH:
            foot_jacobians(Jw, w.leg_v, placements, w.foot_joint, w.foot_offset, w.x, w.J)
            w.stage = ITERATE if stage == GATHER else FINISH
        elif stage == ITERATE:
            if w.iters == max_iters:         # iterations exhausted: the error at the last iterate
                residuals(targets, w.x, tol, w.stuck, w.r, w.err, w.active)
                w.stage = FINISH
            elif not residuals(targets, w.x, tol, w.stuck, w.r, w.err, w.active):
                w.stage = FINISH
            else:
                w.iters += 1
                w.stage = STEP
                if not _inverses(w):
                    return NEED_INVERSE
        elif stage == STEP:     # full Newton step first; its pass also gives the Jacobians if accepted
            newton_steps(w.J_inv, w.r, w.active, w.step)
            w.q_try[:] = w.q + w.step
            set_legs(w, w.q_try)
            w.stage = TRIAL
            return NEED_PASS
        elif stage == TRIAL:
            foot_jacobians(Jw, w.leg_v, placements, w.foot_joint, w.foot_offset, w.x_try, w.J_try)
            if not decreased(targets, w.x_try, w.err, w.active, w.r_try, w.e_try, w.ok):
                return NEED_BACKTRACK
            w.q[:] = w.q_try
            w.x[:] = w.x_try
            w.J[:] = w.J_try
            w.stage = ITERATE
        elif stage == FINISH:
            w.stage = RATES
            if xd is not None and not _inverses(w):
                return NEED_INVERSE
        else:
            if xd is not None:
                leg_rates(w.J_inv, xd, w.leg_v, qd, w.pin_v, w.leg_q, w.q, w.pin_q)
            return DONE
