"""The per-step quantities every inverse-dynamics controller shares (paper Sec. 3, 4.2, 6.2.2).

Discretised dynamics (paper eq. 37, first order, impulses ``z`` along the contact directions,
``h = C(q, v) v + g(q)`` from pinocchio so the paper's ``f_ext = -h``)::

    M (v+ - v) = R^T z + dt P^T tau - dt h,        P v+ = qd_des = v_a + dt vdot_des  (38-39)

Reduced form (Sec. 6.2.2).  Order the velocity into unactuated coordinates ``u`` (floating base,
appended free bodies such as the grasped box) and actuated ones ``a`` and write
``M = [[A, B], [B^T, C]]`` (eq. 83, with ``u`` playing the paper's base block ``nb``).  The
actuated rows only define ``tau``; the unactuated rows give the end-of-step velocity of the
unactuated coordinates as an affine function of the contact impulses::

    v+_u = p + Z z,   Z = A^-1 R_u,   p = v_u + A^-1 (-dt h_u - B (qd_des - v_a))        (94)
    dt tau = B^T (v+_u - v_u) + C (qd_des - v_a) + dt h_a - R_a z                           (90)

This is eqs. 88-94 of the paper with ``M^-1`` never formed: by the Schur-complement identity
``D - E G^-1 E^T = A^-1`` the paper's ``Z = ([D E] - E G^-1 [E^T G]) R`` (eq. 92) equals
``A^-1 R_u`` and its ``p`` (eq. 93) equals ours, so one Cholesky factorisation of the small
``A`` (6 x 6 for a quadruped, 6 x 6 for the box) replaces the factorisation of ``M``.  A fixed
base robot without free bodies has no ``u`` block at all and the controller reduces to RNEA.

Gap stabilization (eq. 35).  The non-penetration rows are ``N v+ >= -phi/dt``.  A positive gap
lets a contact that is about to form be modelled (Sec. 3.2).  A negative gap (the bodies already
overlap) is, by default, clamped to zero: ``-phi/dt`` would then demand a separation speed that
removes the whole overlap in one control step, and a simulator or a real robot that rests with a
small steady overlap (PyBullet's LINKS rests 1e-5 m deep, i.e. 1 cm/s at 1 kHz) makes the
controller push off every step and oscillate.  ``penetration_recovery`` (0 to 1) re-enables that
fraction of the correction.

:class:`StepDynamics` is the reusable per-controller workspace (index sets, selection data);
:meth:`StepDynamics.update` returns a :class:`Step` holding one control step's quantities.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import lapack

from idyn import RobotModel
from idyn.contact import ContactJacobians, contact_jacobians
from idyn.errors import SolverError


@dataclass
class Step:
    """One control step's dynamics in the reduced form of the module docstring."""

    dt: float
    u: np.ndarray            #: unactuated velocity indices
    a: np.ndarray            #: actuated velocity indices
    M: np.ndarray            #: generalized inertia (nv x nv)
    A: np.ndarray            #: M_uu (eq. 83)
    B: np.ndarray            #: M_ua
    Ma: np.ndarray           #: actuated rows of M, M_a. = [B^T C]
    h: np.ndarray            #: bias forces C v + g (nv)
    L: np.ndarray            #: lower Cholesky factor of A = M_uu
    v: np.ndarray            #: velocity at the start of the step
    qd: np.ndarray           #: desired actuated velocity at the end of the step (eq. 39)
    p: np.ndarray            #: unactuated end velocity without contact impulses (eq. 93)
    jac: ContactJacobians    #: N, S, T, phi, mu of the step's contacts

    # -------------------------------------------------------------- sizes and blocks
    @property
    def m(self) -> int:
        return self.jac.m

    @property
    def nu(self) -> int:
        return self.u.size

    def solve_A(self, X: np.ndarray) -> np.ndarray:
        """``A^-1 X`` from the Cholesky factor of ``A`` (LAPACK potrs; no inverse formed)."""
        if self.nu == 0:
            return np.zeros((0,) + X.shape[1:])
        return lapack.dpotrs(self.L, X, lower=1)[0]

    def whiten(self, X: np.ndarray) -> np.ndarray:
        """``L^-1 X``: then ``X^T A^-1 X = (L^-1 X)^T (L^-1 X)`` (no A^-1 formed)."""
        if self.nu == 0:
            return np.zeros((0,) + X.shape[1:])
        return lapack.dtrtrs(self.L, X, lower=1)[0]

    # -------------------------------------------------------------- contact directions
    def directions(self, pyramid: bool) -> np.ndarray:
        """Rows of ``R^T``: ``[N; S; -S; T; -T]`` (friction pyramid, Sec. 5.1) or ``[N; S; T]``."""
        J = self.jac
        if pyramid:
            return np.vstack((J.N, J.S, -J.S, J.T, -J.T))
        return np.vstack((J.N, J.S, J.T))

    def forces_from_impulses(self, z: np.ndarray, pyramid: bool) -> np.ndarray:
        """(m, 3) contact forces [normal, s, t] in newtons from impulses ``z`` (layout of
        :meth:`directions`)."""
        m = self.m
        if pyramid:
            fn, fsp, fsm, ftp, ftm = z.reshape(5, m)
            out = np.column_stack((fn, fsp - fsm, ftp - ftm))
        else:
            out = z.reshape(3, m).T.copy()
        return out / self.dt

    def complementarity_violation(self, fN: np.ndarray, v_next: np.ndarray) -> float:
        """Violation of ``0 <= f_N _|_ N v+ + phi/dt >= 0`` (eqs. 36, 54) in units of the
        contact-free normal speed: 0 for an exact solution.  Controllers use it to accept an
        LCP answer in physical units, whatever the solver's own residual test said."""
        J = self.jac
        wN = J.N @ v_next + J.phi / self.dt
        free = J.N[:, self.u] @ self.p + J.N[:, self.a] @ self.qd + J.phi / self.dt
        scale = 1.0 + float(np.abs(free).max(initial=0.0))
        return max(float(-wN.min(initial=0.0)), float((fN * np.abs(wN) / (1.0 + fN)).max(initial=0.0))) / scale

    # -------------------------------------------------------------- solution recovery
    def resolve(self, generalized_impulse: np.ndarray, qd: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """``(tau, v+)`` for a generalized contact impulse ``R^T z`` (eqs. 88-90).

        ``qd`` overrides the desired actuated end velocity (used by the consistency QP of
        Sec. 4.5, which moves it minimally).
        """
        g = generalized_impulse
        qd = self.qd if qd is None else qd
        dva = qd - self.v[self.a]
        v_next = np.empty_like(self.v)
        v_next[self.a] = qd
        if self.nu:
            v_next[self.u] = self.v[self.u] + self.solve_A(g[self.u] - self.dt * self.h[self.u] - self.B @ dva)
        dv = v_next - self.v
        tau = (self.Ma @ dv + self.dt * self.h[self.a] - g[self.a]) / self.dt
        return tau, v_next


class StepDynamics:
    """Reusable workspace of one controller: the model, its index sets and the control period."""

    def __init__(self, model: RobotModel, dt: float, penetration_recovery: float = 0.0):
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be positive and finite, got {dt}")
        if not 0.0 <= penetration_recovery <= 1.0:
            raise ValueError(f"penetration_recovery must be in [0, 1], got {penetration_recovery}")
        self.model = model
        self.dt = float(dt)
        self.penetration_recovery = float(penetration_recovery)
        self.u = np.asarray(model.unactuated_v, dtype=int)
        self.a = np.asarray(model.actuated_v, dtype=int)
        self._uu = np.ix_(self.u, self.u)
        self._ua = np.ix_(self.u, self.a)

    def update(self, q: np.ndarray, v: np.ndarray, vdot_a: np.ndarray, contacts) -> Step:
        """Evaluate M, h (pinocchio CRBA / RNEA), the contact Jacobians and ``p`` at (q, v)."""
        model, dt, u, a = self.model, self.dt, self.u, self.a
        M = model.mass_matrix(q)
        h = model.bias_forces(q, v)
        jac = contact_jacobians(model, q, contacts)
        if jac.m and jac.phi.min() < 0.0:   # see "Gap stabilization" above
            jac = replace(jac, phi=np.where(jac.phi < 0.0, self.penetration_recovery * jac.phi, jac.phi))
        qd = v[a] + dt * vdot_a
        A, B = M[self._uu], M[self._ua]
        L = np.zeros((0, 0))
        if u.size:
            L, info = lapack.dpotrf(A, lower=1, clean=1)
            if info != 0:
                raise SolverError("the unactuated block of M is not positive definite")
        step = Step(dt, u, a, M, A, B, M[a], h, L, v, qd, np.zeros(u.size), jac)
        if u.size:
            step.p = v[u] + step.solve_A(-dt * h[u] - B @ (qd - v[a]))
        return step
