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
   call's active set (Sec. 4.6, indeterminacy mitigation).
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

Options: ``consistency_tol`` (1e-6 m/s), ``check_tangential`` (False), ``warm_start`` (True),
``qp_backend``.
"""
from __future__ import annotations

import numpy as np

from idyn.errors import InvalidInputError, SolverError
from idyn.lcp import find_indices, ppm_contact
from idyn.qp import solve_qp

from .base import Controller, Solution, register
from .dynamics import Step

#: ridge on the impulses in the consistency QP (relative to the unit weight on |P v+ - qd|^2)
CONSISTENCY_RIDGE = 1e-8


@register
class LCPNoSlip(Controller):
    name = "lcp-noslip"

    def __init__(self, model, *, consistency_tol: float = 1e-6, check_tangential: bool = False,
                 warm_start: bool = True, qp_backend: str = "quadprog", **common):
        super().__init__(model, **common)
        if not consistency_tol > 0:
            raise InvalidInputError(f"consistency_tol must be positive, got {consistency_tol}")
        self.consistency_tol, self.check_tangential = consistency_tol, check_tangential
        self.warm_start, self.qp_backend = warm_start, qp_backend
        self._basis = None

    def reset(self) -> None:
        super().reset()
        self._basis = None

    def _solve(self, q, v, vdot, contacts) -> Solution:
        step = self._step(q, v, vdot, contacts)
        m, info = step.m, {}
        if m == 0:
            tau, v_next = step.resolve(np.zeros(self.model.nv))
            return Solution(tau, np.zeros((0, 3)), v_next)
        impulses = self._lcp(step, info) if step.nu else np.zeros(3 * m)
        R = step.directions(pyramid=False)
        tau, v_next = step.resolve(R.T @ impulses)
        if step.complementarity_violation(impulses[:m], v_next) > self.consistency_tol:
            info["status"] = "numerical_failure"   # whatever the solver's own test said
        if info.get("status", "solved") != "solved" or not self._consistent(step, v_next):
            impulses, tau, v_next = self._min_deviation(step, impulses, tau, v_next, info)
        return Solution(tau, step.forces_from_impulses(impulses, pyramid=False), v_next, info)

    # ------------------------------------------------------------------ steps 1-3
    def _lcp(self, step: Step, info: dict) -> np.ndarray:
        J, u, a, m = step.jac, step.u, step.a, step.m
        A = step.A
        s_idx, t_idx = find_indices(A, None, J.S[:, u], J.T[:, u])
        G = np.vstack((J.S[s_idx][:, u], J.T[t_idx][:, u]))
        b = -np.vstack((J.S[s_idx][:, a], J.T[t_idx][:, a])) @ step.qd
        Gw = step.whiten(G.T)                                  # L^-1 G^T
        if G.shape[0]:
            SG = np.linalg.cholesky(Gw.T @ Gw)                  # G A^-1 G^T, positive definite
            solve_SG = lambda r: np.linalg.solve(SG.T, np.linalg.solve(SG, r))  # noqa: E731
            f_star = step.p + step.solve_A(G.T @ solve_SG(b - G @ step.p))
        else:
            solve_SG = None
            f_star = step.p
        offset = J.N[:, a] @ step.qd + J.phi / step.dt
        warm = self._basis if self.warm_start else None
        res = ppm_contact(J.N[:, u], A, f_star, warm, constraints=G if G.shape[0] else None, offset=offset)
        self._basis = res.basis
        info.update(status=res.status.value, pivots=res.pivots, lcp_w=res.w,
                    kept_tangent_rows=(s_idx.size, t_idx.size))
        fN = res.z
        mu = np.zeros(G.shape[0])
        if solve_SG is not None:
            Nw = step.whiten(J.N[:, u].T)
            mu = solve_SG(b - G @ step.p - Gw.T @ (Nw @ fN))
        fS, fT = np.zeros(m), np.zeros(m)
        fS[s_idx], fT[t_idx] = mu[:s_idx.size], mu[s_idx.size:]
        return np.concatenate((fN, fS, fT))

    # ------------------------------------------------------------------ step 4
    def _consistent(self, step: Step, v_next: np.ndarray) -> bool:
        J, tol = step.jac, self.consistency_tol
        if np.any(J.N @ v_next + J.phi / step.dt < -tol):
            return False
        return not self.check_tangential or bool(
            np.all(np.abs(J.S @ v_next) <= tol) and np.all(np.abs(J.T @ v_next) <= tol))

    def _min_deviation(self, step: Step, impulses, tau, v_next, info: dict):
        """Eqs. 46-51: the consistent end velocity closest to the desired one."""
        J, u, a, m, na = step.jac, step.u, step.a, step.m, self.model.na
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
                      backend=self.qp_backend)
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
