"""Compiled Newton iteration of :class:`idyn.planners.leg_kinematics.LegKinematics`.

Resolved-rate Newton IK of every leg at once (q <- q + J^-1 (x_goal - x(q)), with a per-leg
backtracking line search) as one compiled loop between pinocchio's passes: pinocchio gives the
foot points (its frame placements) and the world joint Jacobians; the loop forms each leg's
3 x n foot Jacobian from the latter (the velocity of a point p is v_O + omega x p), the
residuals, the inverses and the steps. It hands back to Python for each pinocchio pass, for
an inverse it cannot certify (the SVD and damping) and for the line search. Cached on disk
(:mod:`idyn.jit`).
"""
from __future__ import annotations

import numpy as np

from idyn.jit import cached_jit

#: statuses of :func:`newton_advance`: finished, or what Python must do before calling it again
DONE, NEED_PASS, NEED_INVERSE, NEED_BACKTRACK = 0, 1, 2, 3
#: its stages (``stage`` of the workspace): where the next call resumes
GATHER, ITERATE, STEP, TRIAL, GATHER_FINISH, FINISH, RATES = 0, 1, 2, 3, 4, 5, 6


def newton_dtype(legs: int, joints: int, nq: int, nv: int) -> np.dtype:
    """The record of :class:`idyn.planners.leg_kinematics.LegKinematics`'s Newton iteration: the leg
    indices (velocity, configuration, actuated), pinocchio's configuration and velocity vectors
    (its passes read them in place), the iterate and trial (angles, foot points, Jacobians), the
    inverses, residuals, step, errors and the per-leg flags (int8: numba has no nested bools).
    Aligned, as numba wants its arguments."""
    L, n = legs, joints
    return np.dtype([
        ("leg_v", "i8", (L, n)), ("leg_q", "i8", (L, n)), ("leg_actuated", "i8", (L, n)), ("threshold", "f8"),
        ("iters", "i8"), ("stage", "i8"),
        ("pin_q", "f8", (nq,)), ("pin_v", "f8", (nv,)),
        ("q", "f8", (L, n)), ("x", "f8", (L, 3)), ("J", "f8", (L, 3, n)),
        ("q_try", "f8", (L, n)), ("x_try", "f8", (L, 3)), ("J_try", "f8", (L, 3, n)),
        ("J_inv", "f8", (L, n, 3)), ("r", "f8", (L, 3)), ("r_try", "f8", (L, 3)), ("step", "f8", (L, n)),
        ("err", "f8", (L,)), ("e_try", "f8", (L,)), ("active", "i1", (L,)), ("ok", "i1", (L,)),
        ("stuck", "i1", (L,)), ("regular", "i1", (L,)),
    ], align=True)


@cached_jit
def foot_jacobians(Jw, leg_v, points, x, J):
    """``x[l] = points[l]`` (pinocchio's foot frame translations) and ``J[l] = J_lin + omega x
    x_l`` (3 x n): the foot point's Jacobian over the leg's columns ``leg_v[l]`` from the world
    joint Jacobian ``Jw`` (6 x nv, [linear at the origin; angular]). The base is at the origin,
    so world axes are base axes."""
    for leg in range(leg_v.shape[0]):
        p = points[leg]
        x0, x1, x2 = p[0], p[1], p[2]
        x[leg, 0], x[leg, 1], x[leg, 2] = x0, x1, x2
        for k in range(leg_v.shape[1]):
            c = leg_v[leg, k]
            w0, w1, w2 = Jw[3, c], Jw[4, c], Jw[5, c]
            J[leg, 0, k] = Jw[0, c] + (w1 * x2 - w2 * x1)
            J[leg, 1, k] = Jw[1, c] + (w2 * x0 - w0 * x2)
            J[leg, 2, k] = Jw[2, c] + (w0 * x1 - w1 * x0)


@cached_jit
def regular_inverses(J, threshold, regular, out):
    """For 3 x 3 legs: ``regular[l]`` = the smallest singular value of ``J[l]`` is certainly
    above ``threshold``, from ``sigma_min >= |det J| / ||J||_F^2`` (``|det J| = s1 s2 s3 <= s1^2
    sigma_min``, ``s1 <= ||J||_F``; 1e-6 relative margin for round-off). If every leg is
    certain, ``out[l] = J[l]^-1`` (adjugate over determinant) and True; else False (``out``
    incomplete: the caller decides with the singular values)."""
    all_ok = True
    for leg in range(J.shape[0]):
        a = J[leg]
        c00 = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
        c01 = a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]
        c02 = a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]
        det = a[0, 0] * c00 + a[0, 1] * c01 + a[0, 2] * c02
        frob = 0.0
        for i in range(3):
            for j in range(3):
                frob += a[i, j] * a[i, j]
        ok = abs(det) > threshold * (1.0 + 1e-6) * frob
        regular[leg] = ok
        all_ok = all_ok and ok
        if not all_ok:
            continue
        d = 1.0 / det
        b = out[leg]
        b[0, 0], b[1, 0], b[2, 0] = c00 * d, c01 * d, c02 * d
        b[0, 1] = (a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]) * d
        b[1, 1] = (a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]) * d
        b[2, 1] = (a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1]) * d
        b[0, 2] = (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]) * d
        b[1, 2] = (a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]) * d
        b[2, 2] = (a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]) * d
    return all_ok


@cached_jit
def _errors(targets, x, r, e):
    """``r = targets - x`` and the per-leg norms ``e``."""
    for leg in range(x.shape[0]):
        s = 0.0
        for i in range(3):
            r[leg, i] = targets[leg, i] - x[leg, i]
            s += r[leg, i] * r[leg, i]
        e[leg] = np.sqrt(s)


@cached_jit
def newton_begin(ws, q_init):
    """Start the iteration of the record ``ws`` from the leg angles ``q_init`` (into ``q`` and
    pinocchio's configuration): the next :func:`newton_advance` call wants pinocchio's pass at
    them done."""
    w = ws[0]
    for leg in range(q_init.shape[0]):
        for j in range(q_init.shape[1]):
            w.q[leg, j] = q_init[leg, j]
            w.pin_q[w.leg_q[leg, j]] = q_init[leg, j]
        w.stuck[leg] = 0
    w.iters = 0
    w.stage = GATHER


@cached_jit
def newton_advance(ws, Jw, points, targets, tol, max_iters, xd, qd):
    """Resolved-rate Newton IK of every leg (:meth:`~idyn.planners.leg_kinematics.LegKinematics.solve`)
    begun by :func:`newton_begin`, resuming at ``ws[0].stage`` (``tol``, ``max_iters`` as
    there). ``Jw``: pinocchio's world joint Jacobians, ``points``: its foot frame translations
    (live views of the last pass). Returns :data:`NEED_PASS` when pinocchio's pass is wanted at
    ``w.pin_q``, :data:`NEED_INVERSE` when ``w.J_inv`` must be formed from ``w.J`` in Python,
    :data:`NEED_BACKTRACK` when a full step failed (Python's line search sets ``stage``),
    :data:`DONE` with ``w.q``, ``w.x``, ``w.J``, ``w.err`` the answer. Given ``xd`` (else None)
    it also forms the final inverses and the joint rates ``qd = J^-1 xd`` (into ``qd`` and
    ``w.pin_v``, the angles into ``w.pin_q``: the configuration of the drift pass)."""
    w = ws[0]
    q, x, J, q_try, x_try, J_try = w.q, w.x, w.J, w.q_try, w.x_try, w.J_try
    J_inv, r, r_try, step, err, e_try = w.J_inv, w.r, w.r_try, w.step, w.err, w.e_try
    active, ok, stuck, regular = w.active, w.ok, w.stuck, w.regular
    leg_v, leg_q, pin_q, pin_v, threshold = w.leg_v, w.leg_q, w.pin_q, w.pin_v, w.threshold
    L, n = q.shape[0], q.shape[1]
    square = J.shape[2] == 3
    while True:
        stage = w.stage
        if stage == GATHER or stage == GATHER_FINISH:
            foot_jacobians(Jw, leg_v, points, x, J)
            w.stage = ITERATE if stage == GATHER else FINISH
        elif stage == ITERATE:
            _errors(targets, x, r, err)
            any_active = False
            for leg in range(L):
                moving = err[leg] > tol and not stuck[leg]
                active[leg] = moving
                any_active = any_active or moving
            if w.iters == max_iters or not any_active:      # converged, or the error at the last iterate
                w.stage = FINISH
            else:
                w.iters += 1
                w.stage = STEP
                if not (square and regular_inverses(J, threshold, regular, J_inv)):
                    return NEED_INVERSE
        elif stage == STEP:     # full Newton step first; its pass also gives the Jacobians if accepted
            for leg in range(L):
                for j in range(n):
                    s = 0.0
                    if active[leg]:
                        for i in range(3):
                            s += J_inv[leg, j, i] * r[leg, i]
                    step[leg, j] = s
                    q_try[leg, j] = q[leg, j] + s
                    pin_q[leg_q[leg, j]] = q_try[leg, j]
            w.stage = TRIAL
            return NEED_PASS
        elif stage == TRIAL:
            foot_jacobians(Jw, leg_v, points, x_try, J_try)
            _errors(targets, x_try, r_try, e_try)
            all_ok = True
            for leg in range(L):
                better = not active[leg] or e_try[leg] < err[leg]
                ok[leg] = better
                all_ok = all_ok and better
            if not all_ok:
                return NEED_BACKTRACK
            for leg in range(L):         # element loops: an array assignment compiles numba's
                for i in range(3):       # shape-error message (seconds of cold compile)
                    x[leg, i] = x_try[leg, i]
                    for j in range(n):
                        J[leg, i, j] = J_try[leg, i, j]
                for j in range(n):
                    q[leg, j] = q_try[leg, j]
            w.stage = ITERATE
        elif stage == FINISH:
            w.stage = RATES
            if xd is not None and not (square and regular_inverses(J, threshold, regular, J_inv)):
                return NEED_INVERSE
        else:
            if xd is not None:
                for leg in range(L):
                    for j in range(n):
                        s = 0.0
                        for i in range(3):
                            s += J_inv[leg, j, i] * xd[leg, i]
                        qd[leg, j] = s
                        pin_v[leg_v[leg, j]] = s
                        pin_q[leg_q[leg, j]] = q[leg, j]
            return DONE
