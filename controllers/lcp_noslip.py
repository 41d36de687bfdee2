"""ID_LCP,inf (paper Sec. 4, eqs. 36-51): complementarity, no-slip contact.

Per step, in the reduced form of :mod:`controllers.dynamics` (only the unactuated velocity
``v+_u`` is unknown once ``P v+ = qd_des``):

1. **FIND-INDICES** (Algorithm 1, :func:`idyn.lcp.find_indices`) on the unactuated block
   ``A = M_uu`` and the unactuated columns of ``S``, ``T``.  With ``X = [P^T S_S^T T_T^T]``,
   ``X`` has full column rank iff the chosen tangent rows restricted to the unactuated columns
   are independent (``P`` covers the actuated ones), so the reduced call keeps exactly the rows
   the full-size Algorithm 1 keeps, at ``O(nu^3 + n nu^2)`` instead of ``O(nv^3 + n nv^2)``.
2. The no-slip MLCP (eq. 42) reduced to the LCP of eqs. 44-45: the kept tangent rows
   ``G v+_u = b`` (``b = -[S; T]_a qd_des``) are equality constraints, the contact-free velocity
   is ``f* = p + A^-1 G^T mu0`` with ``mu0 = (G A^-1 G^T)^-1 (b - G p)``, and the LCP
   ``(N f* + N_a qd_des + phi/dt, N_u W N_u^T)`` with the constrained inverse inertia ``W`` is
   solved by Algorithm 2 (:func:`idyn.lcp.ppm_contact`), **warm-started** from the previous
   call's active set (Sec. 4.6, indeterminacy mitigation), remembered by contact identity so
   it survives contacts appearing and disappearing (:mod:`controllers.warm_start`).
3. **Torques** by the linear solve of Sec. 4.5: the tangential impulses follow from the
   equality constraints (``mu = (G A^-1 G^T)^-1 (b - G p - G A^-1 N_u^T f_N)``), then
   :meth:`controllers.dynamics.Step.resolve` gives ``tau`` and ``v+`` (eqs. 37-38).
4. **Consistency check** (Sec. 4.5): ``N v+ >= -phi/dt``.  With ``check_tangential=True``
   also ``S v+ = T v+ = 0`` for *all* contacts: Algorithm 1 may drop tangent rows whose
   constraints are only implied when the desired motion is consistent (Appendix E assumes zero
   right-hand sides, ours are ``-S_a qd_des``), so with inconsistent desired accelerations the
   predicted feet may slip.  Off by default, as in the paper (error feedback makes almost
   every closed-loop step slightly inconsistent, and the QP then runs every step).  If the
   check fails, the minimal-deviation QP of
   eqs. 46-51 is solved: minimise ``|P v+ - qd_des|^2`` subject to non-interpenetration, no
   slip and the first-order dynamics.  Re-derived from the garbled text: we let the contact
   impulses vary with ``v+`` and ``tau`` (with ``f_N >= 0``), which keeps the QP feasible
   (any torque with its forward no-slip solution is a feasible point, the paper's argument)
   and add a ``1e-8`` ridge on the impulses so the QP is strictly convex.

Near-dependent tangent rows.  Tangent rows of contacts on one plane span only the planar
motions ``(x, y, yaw)`` of the base: with three feet down, three of the six rows are dependent.
A foot touching down a few micrometres above the plane (or a simulator's contact points at
slightly different depths) makes its rows independent by a sine of ``1e-4``, and Algorithm 1's
test "``X^T M^-1 X`` not singular" keeps them.  ``G A^-1 G^T`` then has a condition number of
about ``1e8``, and any mismatch of the right-hand sides ``b`` (the desired motion is never
exactly consistent in closed loop) is enforced by tangential impulses of ``1e8`` N s: this
made idyn.sim diverge at the first three-foot touchdown of a trot.  Whether such a row is
independent is a question about geometry that contact detection answers only to about
``1e-4`` m, so Algorithm 1 here treats a row as dependent when its distance from the span of
the kept rows (in the ``A^-1`` metric) is below ``tangent_dependence_tol = 1e-3`` of its norm
(a ``0.1`` mm height difference over a ``0.1`` m lever); Appendix E's argument (dropped rows
are implied by the kept ones) then holds up to that geometric tolerance.

Separating contacts.  A contact whose LCP answer separates (``f_N = 0`` and its bodies move
apart, ``N v+ > 0``) cannot transmit a tangential impulse: ``|f_t| <= mu f_N`` gives ``f_t = 0`` for every finite ``mu``,
and no-slip is the ``mu -> inf`` limit (Sec. 2.3.2).  Read literally, eqs. 40-41 instead hold
such a contact's tangential velocity at zero with an unbounded impulse, e.g. a stance foot that
the simulator already lifts and slides (observed in PyBullet: 1 kN of tangential force on a foot
with zero normal force, then divergence).  So the tangent rows of separating contacts are
released and the LCP is solved again (warm-started), until the released set is exactly the set
of separating contacts of the answer (a released contact that becomes loaded sticks again; a
repeated set ends the iteration, at most ``m + 1`` solves, almost always one or two).
A contact that is not yet closed (``phi > 0``) but does not recede keeps its rows: it is the
anticipated contact of Sec. 4.1, and fingertips a fraction of a micrometre from a grasped box
still hold it (the no-slip grasp of Sec. 8.4.1).

Options: ``consistency_tol`` (1e-6 m/s), ``check_tangential`` (False), ``warm_start`` (True),
``qp_backend``, ``tangent_dependence_tol`` (1e-3).  ``info["slip_released"]`` counts released
contacts.
"""
from __future__ import annotations

import numpy as np

from idyn.errors import InvalidInputError, SolverError
from idyn.lcp.ppm_contact import project_constraints, solve_factored
from idyn.qp import solve_qp

from . import _noslip_kernel as kernel
from .base import Controller, Solution, register
from .dynamics import TANGENT_DEPENDENCE_TOL, Step
from .warm_start import ActiveSetMemory, contact_keys

#: ridge on the impulses in the consistency QP (relative to the unit weight on |P v+ - qd|^2)
CONSISTENCY_RIDGE = 1e-8
_NONE = np.zeros(0, dtype=np.intp)


@register
class LCPNoSlip(Controller):
    name = "lcp-noslip"
    merges_duplicate_contacts = False   # Algorithm 2 handles dependent contacts (Appendix F)

    def __init__(self, model, *, consistency_tol: float = 1e-6, check_tangential: bool = False,
                 warm_start: bool = True, qp_backend: str = "quadprog",
                 tangent_dependence_tol: float = TANGENT_DEPENDENCE_TOL, **common):
        super().__init__(model, **common)
        if not consistency_tol > 0:
            raise InvalidInputError(f"consistency_tol must be positive, got {consistency_tol}")
        self.consistency_tol, self.check_tangential = consistency_tol, check_tangential
        self.warm_start, self.qp_backend = warm_start, qp_backend
        if not 0.0 < tangent_dependence_tol < 1.0:
            raise InvalidInputError(f"tangent_dependence_tol must be in (0, 1), got {tangent_dependence_tol}")
        self.tangent_dependence_tol = tangent_dependence_tol
        self._active = ActiveSetMemory()

    def reset(self) -> None:
        super().reset()
        self._active.reset()

    def _solve(self, q, v, vdot, contacts) -> Solution:
        step = self._step(q, v, vdot, contacts)
        m, info = step.m, {}
        if m == 0:
            tau, v_next = step.resolve(np.zeros(self.model.nv))
            return Solution(tau, np.zeros((0, 3)), v_next)
        impulses = self._lcp(step, contact_keys(contacts), info) if step.nu else np.zeros(3 * m)
        R = step.directions(pyramid=False)
        tau, v_next = step.resolve(R.T.dot(impulses))
        wN = step.normal_speeds(v_next)
        if step.complementarity_violation(impulses[:m], v_next, wN) > self.consistency_tol:
            info["status"] = "numerical_failure"   # whatever the solver's own test said
        if info.get("status", "solved") != "solved" or not self._consistent(step, v_next, wN):
            impulses, tau, v_next = self._min_deviation(step, impulses, tau, v_next, info)
        return Solution(tau, step.forces_from_impulses(impulses, pyramid=False), v_next, info)

    # ------------------------------------------------------------------ steps 1-3
    def _lcp(self, step: Step, keys: list, info: dict) -> np.ndarray:
        """Impulses ``[f_N; f_S; f_T]`` of the no-slip LCP (steps 1-3 of the module docstring).

        Tangent rows are offered to Algorithm 1 only for contacts that do not separate: the
        released set is the set of contacts whose previous answer had ``f_N = 0`` and
        ``N v+ > 0``, re-solved until it repeats (see "Separating contacts" in the module
        docstring).
        """
        m = step.m
        released = np.zeros(m, dtype=bool)
        seen = {released.tobytes()}                  # every released set tried, this one included
        candidates = np.arange(m)
        for _ in range(m + 1):
            impulses, w = self._lcp_with_rows(step, candidates, keys, info)
            if info["status"] != "solved" or impulses[:m].min() > 0.0:   # every contact loaded:
                break                                        # nothing released, a set already seen
            receding = w - step.jac.phi / step.dt > self.consistency_tol   # N v+ > 0
            update = (impulses[:m] <= 0.0) & receding                # release; a loaded contact
            if update.tobytes() in seen:                             # sticks again
                break
            released = update
            seen.add(released.tobytes())
            candidates = np.flatnonzero(~released)
        info["slip_released"] = int(np.count_nonzero(released))
        return impulses

    def _lcp_with_rows(self, step: Step, contacts: np.ndarray, keys: list, info: dict):
        """Solve the LCP with no-slip rows offered for ``contacts`` only; ``(impulses, w_N)``."""
        m = step.m
        s_idx, t_idx = step.independent_tangents(contacts, self.tangent_dependence_tol)
        kept = np.concatenate((s_idx + m, t_idx + 2 * m))      # rows of [N; S; T]
        white = step.white
        # G A^-1 G^T's Cholesky factor (positive definite: Algorithm 1), b - G p and eq. 45's r
        U, residual, r = np.zeros((kept.size, kept.size)), np.empty(kept.size), np.empty(m)
        if not kernel.contact_free_motion(white, step.rows, kept, step.L, step.p, step.qd, step.jac.phi, step.dt,
                                          step.u_index, step.a_index, U, residual, r):
            raise np.linalg.LinAlgError("G A^-1 G^T is not positive definite")
        warm = self._active.recall(keys) if self.warm_start else _NONE
        # Algorithm 2 (ppm_contact) with W the inverse inertia constrained by the kept rows
        res = solve_factored(project_constraints(white[:, :m], white.take(kept, axis=1)), r, warm)
        self._active.store(keys, res.basis)
        info.update(status=res.status.value, pivots=info.get("pivots", 0) + res.pivots, lcp_w=res.w,
                    kept_tangent_rows=(s_idx.size, t_idx.size))
        # Sec. 4.5: the equality multipliers are the tangential impulses
        impulses = np.zeros(3 * m)
        kernel.impulses(U, residual, white, kept, res.z, impulses)
        return impulses, res.w

    # ------------------------------------------------------------------ step 4
    def _consistent(self, step: Step, v_next: np.ndarray, wN: np.ndarray) -> bool:
        """``wN = N v+ + phi/dt >= -tol`` and, with ``check_tangential``, no tangential slip."""
        J, tol = step.jac, self.consistency_tol
        if wN.min() < -tol:
            return False
        return not self.check_tangential or bool(
            np.all(np.abs(J.S @ v_next) <= tol) and np.all(np.abs(J.T @ v_next) <= tol))

    def _min_deviation(self, step: Step, impulses, tau, v_next, info: dict):
        return min_deviation(step, impulses, tau, v_next, info, self.qp_backend)


def min_deviation(step: Step, impulses, tau, v_next, info: dict, qp_backend: str = "quadprog"):
    """Eqs. 46-51: the consistent end velocity closest to the desired one; ``(z, tau, v+)`` with
    ``z = [f_N; f_S; f_T]`` impulses (the given answer is kept, flagged, if the QP fails)."""
    J, u, a, m, na = step.jac, step.u, step.a, step.m, step.qd.size
    R = step.directions(pyramid=False)                     # (3m, nv)
    Zr = step.solve_A(R[:, u].T)                           # A^-1 R_u^T   (nu, 3m)
    Zb = step.solve_A(step.B)                              # A^-1 B       (nu, na)

    def rows(X):  # X v+ = [X_a - X_u Zb] delta + [X_u Zr] z + (X_u p + X_a qd)
        return np.hstack((X[:, a] - X[:, u] @ Zb, X[:, u] @ Zr)), X[:, u] @ step.p + X[:, a] @ step.qd

    Nrow, n0 = rows(J.N)
    Trow, t0 = rows(np.vstack((J.S, J.T)))
    k = na + 3 * m
    H = np.diag(np.concatenate((np.ones(na), np.full(3 * m, CONSISTENCY_RIDGE))))
    sel = np.zeros((m, k))
    sel[:, na:na + m] = np.eye(m)
    qp = solve_qp(H, np.zeros(k), A_eq=Trow, b_eq=-t0,
                  A_in=np.vstack((Nrow, sel)), b_in=np.concatenate((-n0 - J.phi / step.dt, np.zeros(m))),
                  backend=qp_backend)
    info["consistency_qp"] = qp.status.value
    if not qp.solved:
        if info.get("status") != "solved":
            raise SolverError(f"no-slip LCP {info.get('status')} and consistency QP {qp.status.value}")
        return impulses, tau, v_next  # keep the LCP answer; the flag tells the caller
    delta, z = qp.x[:na], qp.x[na:]
    z[:m] = np.maximum(z[:m], 0.0)
    tau, v_next = step.resolve(R.T @ z, qd=step.qd + delta)
    info["desired_deviation"] = float(np.linalg.norm(delta))
    return z, tau, v_next
