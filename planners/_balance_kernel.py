"""Compiled arithmetic of :class:`planners.balance.BalanceController` (paper Sec. 7.3).

Every control step the balance term forms a PD wrench from the base pose error and maps it to
joint torques through the contact normals: about twenty numpy calls on 3-vectors and 3 x 3
matrices plus two products with the rows of N, some 35 us. These loops do the same arithmetic
with the heading rotation written out; the goal's rotation and the rotation error's log3 still
come from pinocchio (their product, :func:`relative_rotation`, is compiled), the joint
Jacobians the rows of N are formed from too. The results agree with the numpy expressions to
round-off, not bit for bit (OpenBLAS fuses its products into FMAs in its own order; 3000
replayed trot steps: torques within 7e-17 N m).
:func:`balance_torque` is a whole step in one call on the controller's workspace record: the
wrench, the contact rows and the forces. Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from idyn._contact_kernel import contact_rows
from idyn.jit import cached_jit


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma``: the FMA instruction where the CPU has it)."""
    def codegen(context, builder, signature, args):
        double = ir.DoubleType()
        fma = builder.module.declare_intrinsic("llvm.fma", [double], ir.FunctionType(double, [double] * 3))
        return builder.call(fma, args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@cached_jit
def relative_rotation(G, R, out):
    """``out = G R^T`` (3 x 3) as numpy's ``G.dot(R.T)`` gives it with an OpenBLAS that uses FMA
    (its dgemm kernels on x86-64 since Haswell, this project's machines): each entry
    ``fma(g2, r2, fma(g1, r1, g0 r0))``. One compiled call instead of numpy's, whose BLAS call
    cost 5 us a step inside the closed loop (0.7 isolated)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = _fma(G[i, 2], R[j, 2], _fma(G[i, 1], R[j, 1], G[i, 0] * R[j, 0]))


@cached_jit
def _rotate(R, x, index, i):
    """Component ``i`` of ``R x[index]`` (a base-axes velocity in world axes)."""
    return R[i, 0] * x[index[0]] + R[i, 1] * x[index[1]] + R[i, 2] * x[index[2]]


@cached_jit
def _heading_pd(c, s, kp, kv, k, e0, e1, e2, r0, r1, r2, R, out):
    """``out[k:k+3] = R^T H (kp[k:k+3] * H^T e + kv[k:k+3] * H^T r)`` with ``H = R_z`` of cosine
    ``c`` and sine ``s``: a PD law in the heading frame, returned in base axes."""
    h0 = kp[k] * (c * e0 + s * e1) + kv[k] * (c * r0 + s * r1)
    h1 = kp[k + 1] * (c * e1 - s * e0) + kv[k + 1] * (c * r1 - s * r0)
    h2 = kp[k + 2] * e2 + kv[k + 2] * r2
    w0, w1 = c * h0 - s * h1, s * h0 + c * h1
    for j in range(3):
        out[k + j] = R[0, j] * w0 + R[1, j] * w1 + R[2, j] * h2


@cached_jit
def pd_wrench(R, q, v, lin, ang, position, yaw, linear, angular, e_r, kp, kv, out):
    """The base wrench (base axes; dual of pinocchio's base velocity) into ``out`` (6).

    Errors in world axes: position ``position - q[:3]``, rotation ``e_r``, linear and angular
    velocity ``linear - R v[lin]``, ``angular - R v[ang]`` (``R``: base orientation). Gains act in
    the goal's heading frame H = R_z(yaw): force = H (kp[:3] * H^T e_p + kv[:3] * H^T e_v),
    torque = H (kp[3:] * H^T e_r + kv[3:] * H^T e_w); ``out = [R^T force; R^T torque]``."""
    c, s = math.cos(yaw), math.sin(yaw)
    _heading_pd(c, s, kp, kv, 0, position[0] - q[0], position[1] - q[1], position[2] - q[2],
                linear[0] - _rotate(R, v, lin, 0), linear[1] - _rotate(R, v, lin, 1),
                linear[2] - _rotate(R, v, lin, 2), R, out)
    _heading_pd(c, s, kp, kv, 3, e_r[0], e_r[1], e_r[2],
                angular[0] - _rotate(R, v, ang, 0), angular[1] - _rotate(R, v, ang, 1),
                angular[2] - _rotate(R, v, ang, 2), R, out)


@cached_jit
def virtual_forces(N, w, base_v, actuated_v, c_n, tau):
    """Compressive normal forces ``c_n = max(0, N_b w)`` (``N_b``: the base columns ``base_v`` of
    the normal rows ``N``) and the joint torques ``tau = -(N^T c_n)[actuated_v]``, into ``c_n``
    and ``tau``."""
    for i in range(N.shape[0]):
        f = 0.0
        for k in range(base_v.shape[0]):
            f += N[i, base_v[k]] * w[k]
        c_n[i] = max(f, 0.0)
    for j in range(actuated_v.shape[0]):
        t = 0.0
        for i in range(N.shape[0]):
            t += N[i, actuated_v[j]] * c_n[i]
        tau[j] = -t


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
    """One balance step on the record ``ws`` (:func:`workspace_dtype`): the wrench
    :func:`pd_wrench` for the goal rows ``goal`` (position, rpy, linear, angular) into
    ``wrench``; the contact rows [N; S; T] of its first ``m`` contacts from the world joint
    Jacobian ``J`` (:func:`idyn._contact_kernel.contact_rows`, the compiled loop behind
    :func:`idyn.contact.jacobians_at`, so the same numbers) and :func:`virtual_forces` of N into
    ``c_n`` and ``tau`` (zero without contacts)."""
    w = ws[0]
    pd_wrench(R, q, v, w.lin, w.ang, goal[0], goal[1, 2], goal[2], goal[3], e_r, kp, kv, w.wrench)
    if m == 0:
        w.tau[:] = 0.0
        return
    rows = w.rows[:3 * m]
    contact_rows(J, w.support, w.ja[:m], w.jb[:m], two_bodies, w.frames[:m], w.points[:m], rows)
    virtual_forces(rows[:m], w.wrench, w.base_v, w.actuated_v, w.c_n[:m], w.tau)
