"""Compiled step of :class:`planners.balance.BalanceController` (paper Sec. 7.3).

Every control step the balance term forms a PD wrench from the base pose error, in the goal's
heading frame, and maps it to joint torques through the contact normals (c_N = max(0, N_b w),
tau = -N_q^T c_N): one compiled call on the controller's workspace record. The rotation error
log3(R_goal R^T) and the joint Jacobians the rows of N are formed from come from pinocchio.
Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np

from idyn._contact_kernel import contact_rows
from idyn.jit import cached_jit


def workspace_dtype(njoints: int, nv: int, na: int, contacts: int) -> np.dtype:
    """The record of one :class:`~planners.balance.BalanceController`: its fixed indices (base
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
def balance_torque(ws, m, two_bodies, R, q, v, goal, e_r, kp, kv, J):
    """One balance step on the record ``ws`` (:func:`workspace_dtype`).

    The base wrench (base axes; dual of pinocchio's base velocity) into ``wrench``: with the
    goal rows ``goal`` (position, rpy, linear, angular; world), the base rotation ``R`` and the
    rotation error ``e_r`` (world axes), errors e_p = position - q[:3], e_v = linear - R v_lin,
    e_w = angular - R v_ang; gains act in the goal's heading frame H = R_z(yaw): force = H (kp[:3]
    * H^T e_p + kv[:3] * H^T e_v), torque = H (kp[3:] * H^T e_r + kv[3:] * H^T e_w), wrench =
    [R^T force; R^T torque]. Then the contact rows [N; S; T] of its first ``m`` contacts from
    the world joint Jacobian ``J`` (:func:`idyn._contact_kernel.contact_rows`, as
    :func:`idyn.contact.jacobians_at`), the compressive normal forces c_n = max(0, N_b wrench)
    (N_b: the base columns of N) into ``c_n`` and tau = -(N^T c_n)[actuated] into ``tau``
    (zero without contacts)."""
    w = ws[0]
    yaw = goal[1, 2]
    c, s = math.cos(yaw), math.sin(yaw)
    for k in range(2):                     # k = 0: force, k = 1: torque
        e = np.empty(3)
        r = np.empty(3)
        idx = w.lin if k == 0 else w.ang
        for i in range(3):
            e[i] = goal[0, i] - q[i] if k == 0 else e_r[i]
            rate = R[i, 0] * v[idx[0]] + R[i, 1] * v[idx[1]] + R[i, 2] * v[idx[2]]
            r[i] = (goal[2, i] if k == 0 else goal[3, i]) - rate
        b = 3 * k
        h0 = kp[b] * (c * e[0] + s * e[1]) + kv[b] * (c * r[0] + s * r[1])
        h1 = kp[b + 1] * (c * e[1] - s * e[0]) + kv[b + 1] * (c * r[1] - s * r[0])
        h2 = kp[b + 2] * e[2] + kv[b + 2] * r[2]
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
