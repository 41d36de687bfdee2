"""ID_LCP,mu (paper Sec. 5, eqs. 52-68): complementarity contact with Coulomb friction.

The MLCP of eq. 59 is written in the reduced form of :mod:`controllers.dynamics`, with the
unconstrained variables ``x = [v+_u; dt tau]`` and the complementarity variables
``y = [f_N; f_F; lambda]`` (``f_F`` the four pyramid components of every contact, ordered as
``D = [S; -S; T; -T]``, ``lambda`` the sliding-speed multipliers)::

    A = [[M_uu, 0], [M_au, -I]]       C = -[[R_u^T, 0], [R_a^T, 0]]
    g = -[M_uu p; M_au v_u - M_aa (qd_des - v_a) - dt h_a]
    D = [[N_u, 0], [F_u, 0], [0, 0]]  h = [N_a qd_des + phi/dt; F_a qd_des; 0]
    B = [[0, 0, 0], [0, 0, E], [mu, -E^T, 0]]

so that ``w_N = N v+ + phi/dt`` (eq. 54), ``w_F = F v+ + E lambda`` (55) and
``w_lambda = mu f_N - E^T f_F`` (56), with ``E`` the 4m x m block of ones per contact (the LCP
of eq. 64 is garbled in the text; this is Anitescu & Potra's, which the paper follows).  The
first row block is the unactuated dynamics, the second the actuated rows that define ``tau``
(eq. 58).  :func:`idyn.lcp.mlcp_to_lcp` (Appendix C) gives the copositive LCP of eq. 64, solved
by :func:`idyn.lcp.lemke_regularized` (Lemke, lexicographic, with the regularisation fallback of
Sec. 8.2).  Contacts with ``mu = inf`` use ``mu_inf`` (100, as SPEC section 6 simulates it).

Every LCP answer is checked in physical units (non-interpenetration and complementarity at
the predicted velocity); an answer that fails even after regularisation is replaced by the
prediction of the one-stage complementarity-free model (``info["fallback"]``).

Option ``mindiff=True``: for at most ``mindiff_max_contacts`` contacts (the enumeration is
``2^(6m)``, Algorithm 3) every LCP solution is enumerated by :func:`idyn.lcp.mindiff` and the
one whose ``x = [v+_u; dt tau]`` is closest to the previous step's is used (Sec. 5.3); larger
contact sets use Lemke.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from idyn.errors import InvalidInputError, SolverError
from idyn.lcp import mindiff
from idyn.lcp.mlcp import reduce_checked
from idyn.lcp.regularized import regularized_checked

from .base import Controller, Solution, register
from .dissipation import build_stage_one, solve_one_stage
from .dynamics import Step

#: relative tolerance of the physical acceptance check of an LCP answer
CHECK_TOL = 1e-6
#: regularisation of the complementarity-free fallback (as ``qp-coulomb-1stage``'s default)
ONE_STAGE_REGULARIZATION = 1e-6


@register
class LCPCoulomb(Controller):
    name = "lcp-coulomb"

    def __init__(self, model, *, mindiff: bool = False, mindiff_max_contacts: int = 2,
                 mu_inf: float = 100.0, **common):
        super().__init__(model, **common)
        if not (np.isfinite(mu_inf) and mu_inf > 0):
            raise InvalidInputError(f"mu_inf must be positive and finite, got {mu_inf}")
        self.use_mindiff, self.mindiff_max_contacts, self.mu_inf = mindiff, int(mindiff_max_contacts), mu_inf
        self._x_prev = None

    def reset(self) -> None:
        super().reset()
        self._x_prev = None

    def _solve(self, q, v, vdot, contacts) -> Solution:
        step = self._step(q, v, vdot, contacts)
        if step.m == 0:
            tau, v_next = step.resolve(np.zeros(self.model.nv))
            return Solution(tau, np.zeros((0, 3)), v_next)
        k = 5 * step.m
        R = step.directions(pyramid=True)
        try:
            z, x, info = self._solve_lcp(step, self._mlcp(step))
            tau, v_next = step.resolve(R.T @ z[:k])
            bad = step.complementarity_violation(z[:step.m], v_next)
            if bad > CHECK_TOL:
                raise SolverError(f"the LCP answer violates eq. 54 by {bad:.3g} (relative)")
        except SolverError as exc:
            # The paper's implementation regularises (done inside lemke_regularized); when even
            # that fails we predict with the complementarity-free model of Sec. 6 instead.
            z, info = solve_one_stage(build_stage_one(step, coulomb=True), ONE_STAGE_REGULARIZATION, "quadprog")
            info.update(fallback="qp-coulomb-1stage", error=str(exc))
            tau, v_next = step.resolve(R.T @ z)
            x = None
        self._x_prev = x
        info["lcp_z"] = z
        return Solution(tau, step.forces_from_impulses(z[:k], pyramid=True), v_next, info)

    def _mlcp(self, step: Step):
        """The MLCP blocks ``(A, B, C, D, g, h)`` of the module docstring."""
        J, u, a, m, na, dt = step.jac, step.u, step.a, step.m, self.model.na, step.dt
        nu = step.nu
        R = step.directions(pyramid=True)                      # (5m, nv): [N; F]
        F = R[m:]
        A = np.zeros((nu + na, nu + na))                      # [[M_uu, 0], [M_au, -I]]
        A[:nu, :nu], A[nu:, :nu] = step.A, step.B.T
        A[nu:, nu:].flat[::na + 1] = -1.0
        C = np.zeros((nu + na, 6 * m))                        # -[[R_u^T, 0], [R_a^T, 0]]
        C[:nu, :5 * m], C[nu:, :5 * m] = -R[:, u].T, -R[:, a].T
        dva = step.qd - step.v[a]
        g = -np.concatenate((step.A @ step.p, step.B.T @ step.v[u] - step.Ma[:, a] @ dva - dt * step.h[a]))
        D = np.zeros((6 * m, nu + na))
        D[:5 * m, :nu] = R[:, u]                              # [N_u; F_u]
        h = np.concatenate((J.N[:, a] @ step.qd + J.phi / dt, F[:, a] @ step.qd, np.zeros(m)))
        B = _friction_blocks(m).copy()                        # [[0, 0, 0], [0, 0, E], [mu, -E^T, 0]]
        B[5 * m:, :m].flat[::m + 1] = np.where(np.isfinite(J.mu), J.mu, self.mu_inf)
        return A, B, C, D, g, h

    def _solve_lcp(self, step: Step, mlcp):
        A, B, C, D, g, h = mlcp
        if self.use_mindiff and step.m <= self.mindiff_max_contacts:
            x0 = self._x_prev if self._x_prev is not None and self._x_prev.size == A.shape[0] \
                else np.zeros(A.shape[0])
            res = mindiff(A, B, C, D, g, h, x0, max_size=6 * self.mindiff_max_contacts)
            lcp = res.lcp
            info = {"status": lcp.status.value, "pivots": lcp.pivots, "solver": "mindiff",
                    "solutions": res.solutions, "regularization": 0.0, "lcp_w": lcp.w}
            if lcp.solved:
                return lcp.z, res.x, info
        red = reduce_checked(A, B, C, D, g, h)                # mlcp_to_lcp of the blocks built above
        lcp = regularized_checked(red.Q, red.r)
        info = {"status": lcp.status.value, "pivots": lcp.pivots, "solver": "lemke",
                "regularization": lcp.regularization, "lcp_w": lcp.w}
        if not lcp.solved:
            raise SolverError(f"Coulomb LCP unsolved: {lcp.status.value}")
        return lcp.z, red.unconstrained(lcp.z), info


@lru_cache(maxsize=None)
def _friction_blocks(m: int) -> np.ndarray:
    """``B`` of the module docstring for ``m`` contacts with zero ``mu`` (read-only; the
    structure depends on ``m`` only): ``E`` in the ``w_F`` rows, ``-E^T`` in the ``w_lambda``
    rows, ``E`` the 4m x m block of identities."""
    E = np.tile(np.eye(m), (4, 1))
    B = np.zeros((6 * m, 6 * m))
    B[m:5 * m, 5 * m:] = E
    B[5 * m:, m:5 * m] = -E.T
    B.setflags(write=False)
    return B
