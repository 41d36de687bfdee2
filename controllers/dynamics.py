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

Touchdown (:mod:`idyn.controllers.impact`).  With ``impact=True`` (default) a contact that closes
faster than its gap allows first receives the passive inelastic impact of the friction-pyramid
LCP (eqs. 52-56 with only the contact impulses acting: actuators cannot act impulsively,
:mod:`idyn.impact`); the step is then built from the post-impact velocity
``v'`` (``Step.v``), with ``h`` still evaluated at the measured velocity (``Step.v_measured``)
so that the step's dynamics over the period, impact included, remain those of eq. 37.

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

import dataclasses
import operator
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import lapack

from idyn import RobotModel
from idyn.model import as_slice
from idyn.contact import ContactJacobians, contact_inputs
from idyn.errors import SolverError
from idyn.lcp.find_indices import pivoted_kept_mask
from idyn.lcp.qr import check_info

from . import _dynamics_kernel as kernel
from .impact import IMPACT_SPEED_TOL, passive_impact

#: sine of the angle (in the A^-1 metric) below which Algorithm 1 treats a tangent row as
#: dependent on the rows already kept; see "Near-dependent tangent rows" in
#: :mod:`idyn.controllers.lcp_noslip`
TANGENT_DEPENDENCE_TOL = 1e-3


def pyramid_forces(z: np.ndarray) -> np.ndarray:
    """(m, 3) [normal, s, t] from pyramid components ``[f_N; f_S+; f_S-; f_T+; f_T-]``."""
    return z.reshape(5, -1).T.dot(kernel.PYRAMID_TO_FRAME)


@dataclass
class Step:
    """One control step's dynamics in the reduced form of the module docstring."""

    dt: float
    u: slice | np.ndarray    #: unactuated velocity indices (a slice when contiguous)
    a: slice | np.ndarray    #: actuated velocity indices (a slice when contiguous)
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
    v_measured: np.ndarray | None = None   #: the measured velocity when an impact replaced it
    impact: np.ndarray | None = None       #: (m, 3) forces [normal, s, t] (N) of that impact
    #: ``dt h_u`` and ``B (qd_des - v_a)``: the terms of eqs. 88-90 that every :meth:`resolve`
    #: with the desired ``qd`` shares (set by :meth:`StepDynamics.update`)
    dt_h_u: np.ndarray | None = None
    B_dva: np.ndarray | None = None
    u_index: np.ndarray | None = None      #: ``u`` and ``a`` as index arrays (compiled loops)
    a_index: np.ndarray | None = None
    # computed on first use (see the properties)
    _white: np.ndarray | None = field(default=None, repr=False)
    _free: np.ndarray | None = field(default=None, repr=False)
    _pyramid: np.ndarray | None = field(default=None, repr=False)

    # -------------------------------------------------------------- sizes and blocks
    def __post_init__(self):
        self.m = self.jac.m           #: number of contacts
        self.nu = self.A.shape[0]     #: number of unactuated velocity coordinates

    @property
    def rows(self) -> np.ndarray:
        """``[N; S; T]`` (3m x nv), the contact Jacobian (read-only use)."""
        J = self.jac
        return J.rows if J.rows is not None else J.stacked()

    @property
    def white(self) -> np.ndarray:
        """``L^-1 [N; S; T]_u^T`` (nu x 3m): every contact row whitened once per step, so that
        ``X_u A^-1 Y_u^T = white[:, x]^T white[:, y]`` for any rows x, y (no A^-1 formed)."""
        if self._white is None:
            self._white = self.whiten(self.rows[:, self.u].T)
        return self._white

    @property
    def free_velocity(self) -> np.ndarray:
        """``[N; S; T] v+`` at zero contact impulse (``v+_u = p``, ``v+_a = qd_des``), (3m,)."""
        if self._free is None:
            self._free = np.empty(3 * self.m)
            kernel.free_velocity(self.rows, self.p, self.qd, self.u_index, self.a_index, self._free)
        return self._free

    @property
    def pyramid_rows(self) -> np.ndarray:
        """``[N; S; -S; T; -T]`` (5m x nv), the friction-pyramid impulse directions (Sec. 5.1)."""
        if self._pyramid is None:
            R, m = self.rows, self.m
            neg = -R[m:]
            self._pyramid = np.concatenate((R[:2 * m], neg[:m], R[2 * m:], neg[m:]))
        return self._pyramid

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

    def independent_tangents(self, candidates: np.ndarray, dependence_tol: float
                             ) -> tuple[np.ndarray, np.ndarray]:
        """FIND-INDICES (Algorithm 1) on the reduced form: the contacts among ``candidates``
        whose ``S`` and ``T`` rows are kept as no-slip equalities ``(s_idx, t_idx)``.

        With ``X = [P^T S_S^T T_T^T]``, ``X`` has full column rank iff the chosen tangent rows
        restricted to the unactuated columns are independent (``P`` covers the actuated ones), so
        the call on ``A = M_uu`` keeps as many rows as the full-size Algorithm 1.  A row within
        ``dependence_tol`` (sine of its angle, ``A^-1`` metric) of the span of the kept ones counts
        as dependent (see :mod:`idyn.controllers.lcp_noslip`, "Near-dependent tangent rows").

        Row order.  Algorithm 1 scans ``S_1, T_1, S_2, ...`` and keeps every row independent of
        the rows before it, so which independent subset it keeps depends on the order, and a
        subset can be independent yet badly conditioned: two feet at nearly the same lateral
        position, whose ``S`` rows differ only by a 3 mm yaw lever, were kept in place of the
        other foot's ``T`` row (a 0.26 m lever), and holding yaw through the 3 mm lever took
        opposing tangential forces of 5.9e5 N (LINKS in PyBullet).  The rows are therefore
        offered to Algorithm 1 in the order of a column-pivoted QR of the whitened rows (largest
        remaining distance from the span first), which keeps the same number of rows, spanning
        the same space, with the best-conditioned greedy choice.
        """
        k, m = candidates.size, self.m
        if k == 0 or self.nu == 0:
            return candidates[:0], candidates[:0]
        white = self.white                                  # X^T A^-1 X = H^T H
        # one memory layout for both (the slice of the Fortran-ordered ``white`` is Fortran-ordered):
        # a subset of the contacts (qp-noslip's release rule) compiles no other specialisation
        H = white[:, m:] if k == m else np.asfortranarray(
            white.take(np.concatenate((candidates + m, candidates + 2 * m)), axis=1))
        kept = np.zeros(2 * k, dtype=bool)
        check_info(pivoted_kept_mask(H, dependence_tol * dependence_tol, kept), "geqp3")
        return candidates[kept[:k]], candidates[kept[k:]]

    # -------------------------------------------------------------- contact directions
    def directions(self, pyramid: bool) -> np.ndarray:
        """Rows of ``R^T``: ``[N; S; -S; T; -T]`` (friction pyramid, Sec. 5.1) or ``[N; S; T]``
        (computed once per step: read-only use)."""
        return self.pyramid_rows if pyramid else self.rows

    def forces_from_impulses(self, z: np.ndarray) -> np.ndarray:
        """(m, 3) contact forces [normal, s, t] in newtons from impulses ``z = [f_N; f_S; f_T]``
        (pyramid impulses: :meth:`pyramid_outputs`)."""
        out = z.reshape(3, self.m).T / self.dt
        if self.impact is not None:       # the touchdown impulse is contact force of this step
            out = out + self.impact
        return out

    def pyramid_outputs(self, R: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(tau, v+, forces)`` for pyramid impulses ``z`` along the rows ``R`` of
        :meth:`directions` (``pyramid=True``): :meth:`resolve` of ``R^T z`` and the forces
        ``[f_N, f_S+ - f_S-, f_T+ - f_T-] / dt`` (plus :attr:`impact`)."""
        tau, v_next, forces = np.empty(self.a_index.size), np.empty(self.v.size), np.empty((self.m, 3))
        kernel.pyramid_outputs(R, z, self.L, self.v, self.qd, self.dt_h_u, self.B_dva, self.Ma, self.h, self.dt,
                               self.u_index, self.a_index, self.impact_rows, tau, v_next, forces)
        return tau, v_next, forces

    @property
    def impact_rows(self) -> np.ndarray:
        """:attr:`impact`, or (0, 3) without a touchdown impact: the form the compiled loops take."""
        return _NO_IMPACT if self.impact is None else self.impact

    def normal_speeds(self, v_next: np.ndarray) -> np.ndarray:
        """``w_N = N v+ + phi/dt`` (eqs. 36, 54): non-negative when no contact closes further."""
        out = np.empty(self.m)
        kernel.normal_speeds(self.jac.N, v_next, self.jac.phi, self.dt, out)
        return out

    def complementarity_violation(self, fN: np.ndarray, v_next: np.ndarray, wN: np.ndarray | None = None
                                  ) -> float:
        """Violation of ``0 <= f_N _|_ N v+ + phi/dt >= 0`` (eqs. 36, 54) in units of the
        contact-free normal speed: 0 for an exact solution.  Controllers use it to accept an
        LCP answer in physical units, whatever the solver's own residual test said.  ``wN``:
        :meth:`normal_speeds` of ``v_next`` if the caller has it.  The violation is
        ``max(-min(w_N, 0), max_i f_N,i |w_N,i| / (1 + f_N,i))`` over the scale
        ``1 + max_i |N v+(0) + phi/dt|_i`` (:attr:`free_velocity`)."""
        if wN is None:
            wN = self.normal_speeds(v_next)
        return kernel.complementarity_violation(fN, wN, self.free_velocity, self.jac.phi, self.dt)

    def with_desired(self, qd: np.ndarray) -> "Step":
        """This step with the desired actuated end velocity ``qd`` in place of :attr:`qd` (eq. 39):
        ``p`` of eq. 93 moves by ``-A^-1 B (qd - self.qd)``; the contact rows, ``M`` and ``h`` are
        shared (Sec. 4.5's consistent desired motion, :mod:`idyn.controllers.consistency`)."""
        qd = np.array(qd, dtype=float)
        Bd = self.B @ (qd - self.qd)
        return dataclasses.replace(self, qd=qd, p=self.p - self.solve_A(Bd), B_dva=self.B_dva + Bd, _free=None,
                                   _pyramid=self._pyramid, _white=self._white)

    # -------------------------------------------------------------- solution recovery
    def resolve(self, generalized_impulse: np.ndarray, qd: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """``(tau, v+)`` for a generalized contact impulse ``R^T z`` (eqs. 88-90).

        ``qd`` overrides the desired actuated end velocity (used by the consistency QP of
        Sec. 4.5, which moves it minimally).
        """
        B_dva = self.B_dva if qd is None else self.B @ (qd - self.v[self.a])
        tau, v_next = np.empty(self.a_index.size), np.empty(self.v.size)
        kernel.resolve(generalized_impulse, self.L, self.v, self.qd if qd is None else qd, self.dt_h_u,
                               B_dva, self.Ma, self.h, self.dt, self.u_index, self.a_index, tau, v_next)
        return tau, v_next


class StepDynamics:
    """Reusable workspace of one controller: the model, its index sets and the control period."""

    def __init__(self, model: RobotModel, dt: float, penetration_recovery: float = 0.0,
                 impact: bool = True, impact_speed_tol: float = IMPACT_SPEED_TOL):
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be positive and finite, got {dt}")
        if not 0.0 <= penetration_recovery <= 1.0:
            raise ValueError(f"penetration_recovery must be in [0, 1], got {penetration_recovery}")
        self.model = model
        self.dt = float(dt)
        self.penetration_recovery = float(penetration_recovery)
        if not (np.isfinite(impact_speed_tol) and impact_speed_tol >= 0):
            raise ValueError(f"impact_speed_tol must be finite and >= 0, got {impact_speed_tol}")
        self.impact, self.impact_speed_tol = bool(impact), float(impact_speed_tol)
        #: (m, 3) forces [normal, s, t] (N) of the last update's touchdown impulse, or None
        self.last_impact: np.ndarray | None = None
        #: the last update's impact LCP status ("solved", or why Lemke's method and its
        #: regularisation failed: the step then ran from the measured velocity); None: no impact
        self.last_impact_status: str | None = None
        self.u, self.a = as_slice(model.unactuated_v), as_slice(model.actuated_v)
        self._u_index, self._a_index = model.unactuated_v.astype(np.intp), model.actuated_v.astype(np.intp)
        self.nu, self._nv = model.unactuated_v.size, model.nv
        #: the pinocchio workspace of :meth:`update` (M, h and the joint Jacobians in one pass)
        self.workspace = model.workspace()
        both = isinstance(self.u, slice) and isinstance(self.a, slice)
        self._uu = (self.u, self.u) if both else np.ix_(model.unactuated_v, model.unactuated_v)
        self._ua = (self.u, self.a) if both else np.ix_(model.unactuated_v, model.actuated_v)
        #: per contact count, the arrays :meth:`update` writes (rows, gaps, L, free)
        self._arrays: dict[int, tuple] = {}
        #: the contacts of the last :meth:`update` and their inputs (:func:`contact_inputs`)
        self._contacts: list = []
        self._inputs: tuple | None = None

    def update(self, q: np.ndarray, v: np.ndarray, vdot_a: np.ndarray, contacts) -> Step:
        """The :class:`Step` at (q, v), which the caller has validated
        (:meth:`idyn.controllers.Controller.compute` does): one pinocchio pass (M, h and the joint
        Jacobians), the contact rows, gaps, the Cholesky factor of ``A`` and ``p``
        (:func:`kernel.step_arrays`), after the touchdown impact when a contact closes too fast
        (see :mod:`idyn.controllers.impact`).

        The step's arrays belong to this workspace, as ``M`` and ``h`` to the pinocchio
        workspace: the next update with as many contacts overwrites them (copy to keep)."""
        ws = self.workspace.compute_checked(q, v, drift=False, placements=False)
        ja, jb, two_bodies, frames, points, phi, mu = self._contact_inputs(contacts)
        m, na, nu, dt = phi.size, self._a_index.size, self.nu, self.dt
        M, h = ws.M, ws.h
        arrays = self._arrays.get(m)
        if arrays is None:     # gaps: see "Gap stabilization" above; free: [qd_des, dt h_u, B dva, p]
            rows, gaps, free = np.empty((3 * m, self._nv)), np.empty(m), np.empty(na + 3 * nu)
            arrays = self._arrays[m] = [rows, gaps, np.zeros((nu, nu), order="F"), free, free[:na],
                                        free[na:na + nu], free[na + nu:na + 2 * nu], free[na + 2 * nu:],
                                        ContactJacobians.from_stacked(rows, gaps, mu)]
        rows, gaps, L, free, qd, dt_h_u, B_dva, p, jac = arrays
        if jac.mu is not mu:
            jac = arrays[8] = ContactJacobians.from_stacked(rows, gaps, mu)
        self.last_impact, self.last_impact_status = None, None
        info = kernel.step_arrays(ws.J, self.model.support, ja, jb, two_bodies, frames, points, phi, v, dt,
                                  self.penetration_recovery, self.impact_speed_tol if self.impact else np.inf, M, h,
                                  vdot_a, self._u_index, self._a_index, rows, gaps, L, free)
        v_measured = None
        if info < 0:                                               # a contact closes too fast
            v_after, hit = passive_impact(M, v, jac, dt)
            self.last_impact_status = hit.status
            if hit.solved:
                v_measured, v, self.last_impact = v, v_after, hit.impulses / dt
            info = kernel.reduced_step(M, h, v, vdot_a, dt, self._u_index, self._a_index, L, free)
        if info:
            raise SolverError("the unactuated block of M is not positive definite")
        return Step(dt, self.u, self.a, M, M[self._uu], M[self._ua], M[self.a], h, L, v, qd, p, jac, v_measured,
                    self.last_impact, dt_h_u, B_dva, self._u_index, self._a_index)

    def _contact_inputs(self, contacts: list) -> tuple:
        """:func:`idyn.contact.contact_inputs` of ``contacts``.  A :class:`idyn.Contact` is frozen
        and its frame read-only, so while the same objects are given (a caller holding its
        contact list) their bodies, frames, gaps and friction coefficients are those of the
        last call; only the points, which may be views of a caller's arrays, are read again."""
        last = self._contacts
        if len(contacts) == len(last) and all(map(operator.is_, contacts, last)) and last:
            ja, jb, two_bodies, frames, _, phi, mu = self._inputs
            return ja, jb, two_bodies, frames, np.array([c.point for c in contacts]), phi, mu
        self._inputs = inputs = contact_inputs(self.model, contacts)
        self._contacts = list(contacts)
        return inputs


_NO_IMPACT = np.zeros((0, 3))   # Step.impact without a touchdown impact
