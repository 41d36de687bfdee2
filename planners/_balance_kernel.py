"""Compiled step of :class:`idyn.planners.balance.BalanceController` (paper Sec. 7.3).

Every control step the balance term forms a PD wrench from the base pose error, in the goal's
heading frame, and maps it to joint torques through the contact normals (c_N = max(0, N_b w),
tau = -N_q^T c_N): one compiled call on the controller's workspace record. The rotation error
log3(R_goal R^T) and the joint Jacobians the rows of N are formed from come from pinocchio.
Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np

from idyn.kernels import contact_rows
from idyn.jit import cached_jit


def workspace_dtype(njoints: int, nv: int, na: int, contacts: int) -> np.dtype:
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
    """One balance step on the record ``ws`` (:func:`workspace_dtype`).

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
