"""Compiled control step of :class:`idyn.planners.quadruped_planner.QuadrupedPlanner`.

Every 1 ms the planner ramps its twist toward the command, integrates the gait pose, asks the
gait which feet are in stance, moves each foot (held, probing, settling or on its swing spline)
and expresses the targets relative to the gait pose: one compiled call on the planner's
workspace, a numpy record (:func:`workspace_dtype`) that holds the plan's whole state. The two
things it cannot do itself are handed back to Python, which calls it again to resume:

* planning a swing spline at liftoff (a dense solve, :class:`idyn.planners.spline.ClampedCubicSpline`),
  status :data:`NEED_SWINGS` with the legs flagged in ``replan``;
* the measured foot positions (a pinocchio pass), wanted only when a late foot touches or a
  swing foot touches down early, status :data:`NEED_MEASURED`.

Cached on disk (:mod:`idyn.jit`); the step is one flat kernel over a few leaf helpers, so it
compiles in about a second.
"""
from __future__ import annotations

import math

import numpy as np

from idyn.jit import cached_jit

from ._leg_kernel import newton_begin
from ._spline_kernel import evaluate_into
from .base_motion import arc, clamp, wrap_angle
from .gait import stance_flags

#: statuses of :func:`plan_motion`
DONE, NEED_SWINGS, NEED_MEASURED, TIME_WENT_BACKWARDS = 0, 1, 2, 3


def workspace_dtype(legs: int, joints: int, knots: int) -> np.dtype:
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
    from ``q_guess``: :func:`idyn.planners._leg_kernel.newton_begin`), :data:`NEED_SWINGS` (the legs
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
