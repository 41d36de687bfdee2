"""The compiled layer of :mod:`idyn.planners`: every numba kernel of the planners, in one module.

Each planner keeps its whole per-step state in a numpy record (a workspace, ``*_dtype``) and
calls one kernel per control step on it; pinocchio's passes, dense solves and anything the
kernel cannot certify stay in Python around that call.  Cached on disk (:mod:`idyn.jit`).
The gait's phase rule and the base motion's helpers (:mod:`idyn.planners.gait`,
:mod:`idyn.planners.base_motion`) are compiled where they are defined and called from here.

* **Swing splines** (:class:`idyn.planners.spline.ClampedCubicSpline`): the one evaluation of a
  swing spline, for the planner's compiled step and for Python callers.
* **Leg inverse kinematics** (:class:`idyn.planners.leg_kinematics.LegKinematics`): resolved-rate
  Newton IK of every leg at once (q <- q + J^-1 (x_goal - x(q)), with a per-leg
  backtracking line search) as one compiled loop between pinocchio's passes: pinocchio gives the
  foot points (its frame placements) and the world joint Jacobians; the loop forms each leg's
  3 x n foot Jacobian from the latter (the velocity of a point p is v_O + omega x p), the
  residuals, the inverses and the steps. It hands back to Python for each pinocchio pass, for
  an inverse it cannot certify (the SVD and damping) and for the line search.
* **Balance term** (:class:`idyn.planners.balance.BalanceController`, paper Sec. 7.3): every
  control step the balance term forms a PD wrench from the base pose error, in the goal's
  heading frame, and maps it to joint torques through the contact normals (c_N = max(0, N_b w),
  tau = -N_q^T c_N): one compiled call on the controller's workspace record. The rotation error
  log3(R_goal R^T) and the joint Jacobians the rows of N are formed from come from pinocchio.
* **Planner step** (:class:`idyn.planners.quadruped_planner.QuadrupedPlanner`): every 1 ms the
  planner ramps its twist toward the command, integrates the gait pose, asks the
  gait which feet are in stance, moves each foot (held, probing, settling or on its swing spline)
  and expresses the targets relative to the gait pose: one compiled call on the planner's
  workspace, a numpy record (:func:`plan_dtype`) that holds the plan's whole state. The two
  things it cannot do itself are handed back to Python, which calls it again to resume:

  * planning a swing spline at liftoff (a dense solve, :class:`idyn.planners.spline.ClampedCubicSpline`),
    status :data:`NEED_SWINGS` with the legs flagged in ``replan``;
  * the measured foot positions (a pinocchio pass), wanted only when a late foot touches or a
    swing foot touches down early, status :data:`NEED_MEASURED`.
"""
from __future__ import annotations

import math

import numpy as np

from idyn.jit import cached_jit
from idyn.kernels import contact_rows

from .base_motion import arc, clamp, wrap_angle
from .gait import stance_flags


# ---------------------------------------------------------------------- Swing splines


@cached_jit
def evaluate_into(knots, coef, ends, t, x, xd, xdd):
    """Position, velocity and acceleration at time ``t`` into ``x``, ``xd``, ``xdd``.

    Segment ``k`` (from ``knots[k]``) is ``sum_p coef[k, p] s^p`` (p = 0..3) with ``s = t -
    knots[k]``; before the first knot the curve continues from ``ends[0]`` at rate ``ends[1]``,
    after the last from ``ends[2]`` at rate ``ends[3]``, without acceleration."""
    first, last = knots[0], knots[-1]
    if t < first or t > last:
        e, t_end = (0, first) if t < first else (2, last)
        for j in range(x.shape[0]):
            x[j] = ends[e, j] + ends[e + 1, j] * (t - t_end)
            xd[j] = ends[e + 1, j]
            xdd[j] = 0.0
        return
    k = 0                                  # the segment: the last knot <= t (the last segment at t = last)
    while k < knots.shape[0] - 2 and knots[k + 1] <= t:
        k += 1
    s = t - knots[k]
    for j in range(x.shape[0]):
        a1, a2, a3 = coef[k, 1, j], coef[k, 2, j], coef[k, 3, j]
        x[j] = coef[k, 0, j] + s * (a1 + s * (a2 + s * a3))
        xd[j] = a1 + s * (2.0 * a2 + 3.0 * s * a3)
        xdd[j] = 2.0 * a2 + 6.0 * s * a3

# ---------------------------------------------------------------------- Leg inverse kinematics


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

# ---------------------------------------------------------------------- Balance term


def balance_dtype(njoints: int, nv: int, na: int, contacts: int) -> np.dtype:
    """The record of one :class:`~idyn.planners.balance.BalanceController`: its fixed indices (base
    linear and angular velocity, base and actuated velocities) and support masks, the wrench,
    forces and torques it answers, and room for the data of ``contacts`` contacts (frames,
    points, joints of bodies A and B, the 3m rows [N; S; T]). Aligned, as numba wants it."""
    m = contacts
    return np.dtype([
        ("lin", "i8", (3,)), ("ang", "i8", (3,)), ("base_v", "i8", (6,)), ("actuated_v", "i8", (na,)),
        ("support", "f8", (njoints, nv)), ("wrench", "f8", (6,)), ("tau", "f8", (na,)),
        ("c_n", "f8", (m,)), ("frames", "f8", (m, 3, 3)), ("points", "f8", (m, 3)),
        ("ja", "i8", (m,)), ("jb", "i8", (m,)), ("rows", "f8", (3 * m, nv)),
    ], align=True)


@cached_jit
def relative_rotation(G, R, out):
    """``out = G R^T`` (3 x 3): the rotation from the base's orientation ``R`` to the goal's
    ``G`` (world axes), whose log3 is the rotation error. Compiled: numpy's product of two 3 x 3
    matrices costs several microseconds inside the closed loop."""
    for i in range(3):
        for j in range(3):
            out[i, j] = G[i, 0] * R[j, 0] + G[i, 1] * R[j, 1] + G[i, 2] * R[j, 2]


@cached_jit
def balance_torque(ws, m, two_bodies, R, q, v, goal, e_r, kp, kv, J):
    """One balance step on the record ``ws`` (:func:`balance_dtype`).

    The base wrench (base axes; dual of pinocchio's base velocity) into ``wrench``: with the
    goal rows ``goal`` (position, rpy, linear, angular; world), the base rotation ``R`` and the
    rotation error ``e_r`` (world axes), errors e_p = position - q[:3], e_v = linear - R v_lin,
    e_w = angular - R v_ang; gains act in the goal's heading frame H = R_z(yaw): force = H (kp[:3]
    * H^T e_p + kv[:3] * H^T e_v), torque = H (kp[3:] * H^T e_r + kv[3:] * H^T e_w), wrench =
    [R^T force; R^T torque]. Then the contact rows [N; S; T] of its first ``m`` contacts from
    the world joint Jacobian ``J`` (:func:`idyn.kernels.contact_rows`, as
    :func:`idyn.contact.jacobians_at`), the compressive normal forces c_n = max(0, N_b wrench)
    (N_b: the base columns of N) into ``c_n`` and tau = -(N^T c_n)[actuated] into ``tau``
    (zero without contacts)."""
    w = ws[0]
    yaw = goal[1, 2]
    c, s = math.cos(yaw), math.sin(yaw)
    for k in range(2):                     # k = 0: force, k = 1: torque
        idx = w.lin if k == 0 else w.ang
        b = 3 * k
        e0, e1, e2 = (goal[0, 0] - q[0], goal[0, 1] - q[1], goal[0, 2] - q[2]) if k == 0 else (e_r[0], e_r[1], e_r[2])
        r0 = goal[2 + k, 0] - (R[0, 0] * v[idx[0]] + R[0, 1] * v[idx[1]] + R[0, 2] * v[idx[2]])
        r1 = goal[2 + k, 1] - (R[1, 0] * v[idx[0]] + R[1, 1] * v[idx[1]] + R[1, 2] * v[idx[2]])
        r2 = goal[2 + k, 2] - (R[2, 0] * v[idx[0]] + R[2, 1] * v[idx[1]] + R[2, 2] * v[idx[2]])
        h0 = kp[b] * (c * e0 + s * e1) + kv[b] * (c * r0 + s * r1)
        h1 = kp[b + 1] * (c * e1 - s * e0) + kv[b + 1] * (c * r1 - s * r0)
        h2 = kp[b + 2] * e2 + kv[b + 2] * r2
        w0, w1 = c * h0 - s * h1, s * h0 + c * h1
        for j in range(3):
            w.wrench[b + j] = R[0, j] * w0 + R[1, j] * w1 + R[2, j] * h2
    w.tau[:] = 0.0
    if m == 0:
        return
    rows = w.rows[:3 * m]
    contact_rows(J, w.support, w.ja[:m], w.jb[:m], two_bodies, w.frames[:m], w.points[:m], rows)
    for i in range(m):
        f = 0.0
        for k in range(6):
            f += rows[i, w.base_v[k]] * w.wrench[k]
        w.c_n[i] = max(f, 0.0)
    for j in range(w.actuated_v.shape[0]):
        t = 0.0
        for i in range(m):
            t += rows[i, w.actuated_v[j]] * w.c_n[i]
        w.tau[j] = -t

# ---------------------------------------------------------------------- Planner step


#: statuses of :func:`plan_motion`
DONE, NEED_SWINGS, NEED_MEASURED, TIME_WENT_BACKWARDS = 0, 1, 2, 3


def plan_dtype(legs: int, joints: int, knots: int) -> np.dtype:
    """The record of one planner's state and step outputs, for ``legs`` legs of ``joints``
    joints and swing splines of ``knots`` knots (flags are int8: numba has no nested bools).
    Aligned: views of its fields go to compiled calls, and numba types an unaligned array
    argument by its slow Python path (~3 us a call)."""
    L, n, K = legs, joints, knots
    return np.dtype([
        # parameters (written by QuadrupedPlanner.reset)
        ("max_acceleration", "f8"), ("max_yaw_acceleration", "f8"), ("max_lead", "f8"),
        ("max_yaw_lead", "f8"), ("max_climb_rate", "f8"), ("touchdown_window", "f8"),
        ("probe_speed", "f8"), ("probe_depth", "f8"), ("height", "f8"), ("period", "f8"),
        ("duty_factor", "f8"), ("phases", "f8", (L,)),
        # the plan: gait start and last time (NaN before the first step), gait pose, twist
        ("t0", "f8"), ("t_prev", "f8"), ("pose", "f8", (3,)), ("z", "f8"), ("vz", "f8"),
        ("command", "f8", (3,)), ("twist", "f8", (3,)), ("twist_rate", "f8", (3,)),
        ("dt", "f8"), ("tg", "f8"), ("stage", "i8"), ("next_leg", "i8"),
        # per leg: flags, probing, footholds and swing splines
        ("scheduled", "i1", (L,)), ("now", "i1", (L,)), ("stance", "i1", (L,)), ("early", "i1", (L,)),
        ("swinging", "i1", (L,)), ("replan", "i1", (L,)), ("touching", "i1", (L,)),
        ("probe", "f8", (L,)), ("settle", "f8", (L,)), ("feet", "f8", (L, 3)),
        ("knots", "f8", (L, K)), ("coef", "f8", (L, K - 1, 4, 3)), ("ends", "f8", (L, 4, 3)),
        # step outputs: world foot rates, targets relative to the gait pose, base goal, joints
        ("pd", "f8", (L, 3)), ("pdd", "f8", (L, 3)), ("x_rel", "f8", (L, 3)), ("xd", "f8", (L, 3)),
        ("xdd", "f8", (L, 3)), ("linear", "f8", (3,)), ("goal", "f8", (4, 3)),
        ("q_legs", "f8", (L, n)), ("qd_legs", "f8", (L, n)), ("qdd_legs", "f8", (L, n)),
        ("q_guess", "f8", (L, n)),
    ], align=True)


@cached_jit
def ramp(w, vx, vy, wz, dt):
    """The planned twist (vx, vy, wz) after ``dt`` s of following ``w.command`` within the
    acceleration limits (norm-limited in the plane, separately in yaw; an infinite limit is
    none)."""
    sx, sy, sw = w.command[0] - vx, w.command[1] - vy, w.command[2] - wz
    n, cap = math.hypot(sx, sy), w.max_acceleration * dt
    if n > cap:
        sx, sy = sx * (cap / n), sy * (cap / n)
    sw = clamp(sw, w.max_yaw_acceleration * dt)
    return vx + sx, vy + sy, wz + sw


@cached_jit
def predict_planned(ws, duration):
    """The gait pose (x, y, yaw) after ``duration`` s of the planned twist ramping toward the
    command, in 10 ms midpoint steps."""
    w = ws[0]
    x, y, yaw = w.pose[0], w.pose[1], w.pose[2]
    vx, vy, wz = w.twist[0], w.twist[1], w.twist[2]
    n = max(1, int(math.ceil(duration / 0.01)))
    h = duration / n
    for _ in range(n):
        nx, ny, nw = ramp(w, vx, vy, wz, h)
        x, y, yaw = arc(x, y, yaw, 0.5 * (vx + nx), 0.5 * (vy + ny), 0.5 * (wz + nw), h)
        vx, vy, wz = nx, ny, nw
    return x, y, yaw


@cached_jit
def gait_frame_motion(ws):
    """Foot targets relative to the gait pose, and the pose's own velocity.

    The gait pose (record ``ws[0]``) has its origin at b = (``pose[0]``, ``pose[1]``, ``z``)
    (world), heading yaw = ``pose[2]``, planned twist ``twist`` = (vx, vy, wz) in its heading
    frame changing at ``twist_rate``, and vertical speed ``vz``.
    Its origin moves with world velocity V = R (vx, vy, 0) + (0, 0, vz) (written to ``linear``)
    and acceleration A = R (vx', vy', 0) + wz e_z x R (vx, vy, 0). For the world foot points
    ``feet`` with velocities ``pd`` and accelerations ``pdd`` (L, 3), in the frame R = R_z(yaw)
    turning with angular velocity w = wz e_z (W = [w]x):

        x_rel = R^T (p - b),    xd = R^T (pd - V) - W x_rel,
        xdd = R^T (pdd - A) - 2 W R^T (pd - V) - W' x_rel + W W x_rel,

    written into ``x_rel``, ``xd``, ``xdd``.
    """
    w = ws[0]
    feet, pd, pdd, twist, twist_rate, vz = w.feet, w.pd, w.pdd, w.twist, w.twist_rate, w.vz
    linear, x_rel, xd, xdd = w.linear, w.x_rel, w.xd, w.xdd
    ox, oy, oz = w.pose[0], w.pose[1], w.z
    c, s = math.cos(w.pose[2]), math.sin(w.pose[2])
    wz, wz_rate = twist[2], twist_rate[2]
    planar_x = c * twist[0] - s * twist[1]
    planar_y = s * twist[0] + c * twist[1]
    linear[0], linear[1], linear[2] = planar_x, planar_y, vz
    ax = c * twist_rate[0] - s * twist_rate[1] - wz * planar_y
    ay = s * twist_rate[0] + c * twist_rate[1] + wz * planar_x
    for leg in range(feet.shape[0]):
        dx, dy = feet[leg, 0] - ox, feet[leg, 1] - oy
        x0, x1 = c * dx + s * dy, c * dy - s * dx            # R^T (p - b), planar part
        vx, vy = pd[leg, 0] - planar_x, pd[leg, 1] - planar_y
        v0, v1 = c * vx + s * vy, c * vy - s * vx            # R^T (pd - V)
        gx, gy = pdd[leg, 0] - ax, pdd[leg, 1] - ay
        x_rel[leg, 0], x_rel[leg, 1], x_rel[leg, 2] = x0, x1, feet[leg, 2] - oz
        xd[leg, 0] = v0 + wz * x1                             # - W x_rel = (wz x1, -wz x0, 0)
        xd[leg, 1] = v1 - wz * x0
        xd[leg, 2] = pd[leg, 2] - vz
        xdd[leg, 0] = (c * gx + s * gy) + 2.0 * wz * v1 + wz_rate * x1 - wz * wz * x0
        xdd[leg, 1] = (c * gy - s * gx) - 2.0 * wz * v0 - wz_rate * x0 - wz * wz * x1
        xdd[leg, 2] = pdd[leg, 2]


@cached_jit
def plan_motion(ws, ik, t, base_p, R, command, measured, have_measured, touching_given):
    """One control step of the planner's motion at time ``t`` for the measured base position
    ``base_p`` and rotation ``R`` and the commanded twist ``command`` (vx, vy, wz); resumes
    where the last call returned when ``ws[0].stage`` is 1. Returns :data:`DONE` (``x_rel``,
    ``xd``, ``xdd``, ``goal`` and ``q_guess`` written, and the leg IK's record ``ik`` started
    from ``q_guess``: :func:`idyn.planners.kernels.newton_begin`), :data:`NEED_SWINGS` (the legs
    that lift off, or swing without a spline, flagged in ``replan``), :data:`NEED_MEASURED`
    (``next_leg`` set: the measured feet are wanted) or :data:`TIME_WENT_BACKWARDS` (nothing
    changed)."""
    w = ws[0]
    L = w.feet.shape[0]
    if w.stage == 0:
        # the gait pose: ramp the planned twist toward the command and integrate it, kept within
        # max_lead / max_yaw_lead of the measured pose; the height follows the footholds at most
        # at max_climb_rate
        dt = t - w.t_prev
        if dt < 0:
            return TIME_WENT_BACKWARDS
        for k in range(3):      # element loops here: an array assignment compiles numba's
            w.command[k] = command[k]       # shape-error message (seconds of cold compile)
        w.t_prev, w.dt, w.tg = t, dt, t - w.t0
        if dt <= 0:      # first call
            w.twist[0], w.twist[1], w.twist[2] = ramp(w, w.twist[0], w.twist[1], w.twist[2], 0.0)
        else:
            mx, my, myaw = base_p[0], base_p[1], math.atan2(R[1, 0], R[0, 0])
            vx, vy, wz = w.twist[0], w.twist[1], w.twist[2]
            x, y, yaw = arc(w.pose[0], w.pose[1], w.pose[2], vx, vy, wz, dt)    # the twist planned last step
            nx, ny, nw = ramp(w, vx, vy, wz, dt)
            w.twist_rate[0], w.twist_rate[1], w.twist_rate[2] = (nx - vx) / dt, (ny - vy) / dt, (nw - wz) / dt
            w.twist[0], w.twist[1], w.twist[2] = nx, ny, nw
            dx, dy = x - mx, y - my
            dist = math.hypot(dx, dy)
            if dist > w.max_lead:
                dx, dy = dx * w.max_lead / dist, dy * w.max_lead / dist
            dyaw = clamp(wrap_angle(yaw - myaw), w.max_yaw_lead)
            w.pose[0], w.pose[1], w.pose[2] = mx + dx, my + dy, myaw + dyaw
            total = 0.0      # mean height of the footholds: held feet where they are, swing feet where they land
            for i in range(L):
                total += w.ends[i, 2, 2] if w.swinging[i] else w.feet[i, 2]
            rest = total / L + w.height - w.z
            w.vz = clamp(rest / dt, w.max_climb_rate)
            w.z += w.vz * dt
        # the schedule; the legs that lift off (or swing without a spline) want a spline
        stance_flags(w.phases, w.period, w.duty_factor, w.tg, w.now)
        replan = False
        for i in range(L):
            w.stance[i] = w.now[i]
            if not touching_given:
                w.touching[i] = 1
            for k in range(3):
                w.pd[i, k] = w.pdd[i, k] = 0.0
            w.replan[i] = not w.now[i] and (w.scheduled[i] or (not w.early[i] and not w.swinging[i]))
            replan = replan or w.replan[i] != 0
        w.stage, w.next_leg = 1, 0
        if replan:
            return NEED_SWINGS
    # world foot targets (feet), velocities and accelerations (pd, pdd) from leg next_leg on:
    # stance feet hold their footholds (reaching down while late, settling at the probing speed
    # once touched), swing feet follow their splines until an early touchdown
    dt, tg = w.dt, w.tg
    for i in range(w.next_leg, L):
        down = w.touching[i] != 0
        if w.now[i]:
            if w.swinging[i]:                                   # planned touchdown
                for k in range(3):
                    w.feet[i, k] = w.ends[i, 2, k]
                w.swinging[i] = 0
                w.probe[i] = 0.0
                w.settle[i] = math.nan
            w.early[i] = 0
            if down and w.probe[i] > 0.0:                       # a late foot touched: hold it there,
                if not have_measured:                           # reached at the probing speed
                    w.next_leg = i
                    return NEED_MEASURED
                w.settle[i] = measured[i, 2]
                w.probe[i] = 0.0
            if down and not math.isnan(w.settle[i]):
                gap = w.settle[i] - w.feet[i, 2]
                move = clamp(gap, w.probe_speed * dt)
                if move == gap:                                 # arrives in this step
                    w.settle[i] = math.nan
                w.feet[i, 2] += move
                w.pd[i, 2] = move / dt if dt > 0 else 0.0
            if not down and w.probe[i] < w.probe_depth:         # late: reach down
                step, room = w.probe_speed * dt, w.probe_depth - w.probe[i]
                step = room if room < step else step
                w.feet[i, 2] -= step
                w.probe[i] += step
                w.pd[i, 2] = -w.probe_speed
            continue
        if w.early[i]:
            w.stance[i] = 1
            continue
        late = tg >= w.knots[i, 0] + w.touchdown_window * (w.knots[i, -1] - w.knots[i, 0])
        if touching_given and down and late:                    # early touchdown: stance on contact
            if not have_measured:
                w.next_leg = i
                return NEED_MEASURED
            for k in range(3):
                w.feet[i, k] = measured[i, k]
            w.swinging[i] = 0
            w.early[i] = w.stance[i] = 1
            continue
        evaluate_into(w.knots[i], w.coef[i], w.ends[i], tg, w.feet[i], w.pd[i], w.pdd[i])
    # the step's outputs: targets relative to the gait pose, the base goal (position, rpy, linear
    # and angular velocity) and the IK's warm start, the last solution advanced by its rates and
    # accelerations (second order)
    for i in range(L):
        w.scheduled[i] = w.now[i]
    gait_frame_motion(ws)
    w.goal[0, 0], w.goal[0, 1], w.goal[0, 2] = w.pose[0], w.pose[1], w.z
    w.goal[1, 0], w.goal[1, 1], w.goal[1, 2] = 0.0, 0.0, w.pose[2]
    for k in range(3):
        w.goal[2, k] = w.linear[k]
    w.goal[3, 0], w.goal[3, 1], w.goal[3, 2] = 0.0, 0.0, w.twist[2]
    h = 0.5 * w.dt
    for i in range(w.q_legs.shape[0]):
        for j in range(w.q_legs.shape[1]):
            w.q_guess[i, j] = w.q_legs[i, j] + w.dt * (w.qd_legs[i, j] + h * w.qdd_legs[i, j])
    w.stage = 0
    newton_begin(ik, w.q_guess)
    return DONE


@cached_jit
def joint_targets(ws, ik, drift, out_q, out_v, out_a):
    """The step's joint targets from the solved leg IK (record ``ik``: angles ``q``, inverses
    ``J_inv``, joint indices ``leg_actuated``) and the feet's drifts Jdot qd (L, 3): qdd = J^-1
    (xdd - Jdot qd) into ``qdd_legs``, the angles into ``q_legs``, and the actuated vectors of
    desired q, v, vdot (zero except the leg joints). Returns whether they are all finite (the
    check :class:`idyn.state.Desired` makes of new arrays)."""
    w, k = ws[0], ik[0]
    out_q[:] = 0.0
    out_v[:] = 0.0
    out_a[:] = 0.0
    for leg in range(k.leg_actuated.shape[0]):
        for j in range(k.leg_actuated.shape[1]):
            s = 0.0
            for i in range(3):
                s += k.J_inv[leg, j, i] * (w.xdd[leg, i] - drift[leg, i])
            w.qdd_legs[leg, j] = s
            w.q_legs[leg, j] = k.q[leg, j]
            i = k.leg_actuated[leg, j]
            out_q[i], out_v[i], out_a[i] = k.q[leg, j], w.qd_legs[leg, j], s
    for i in range(out_q.shape[0]):
        if not (math.isfinite(out_q[i]) and math.isfinite(out_v[i]) and math.isfinite(out_a[i])):
            return False
    return True
