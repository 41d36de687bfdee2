"""ID_LCP,mu (paper Sec. 5, eqs. 52-68): complementarity contact with Coulomb friction.

The MLCP of eq. 59 is written in the reduced form of :mod:`idyn.controllers.dynamics`, with the
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
Sec. 8.2).  Contacts with ``mu = inf`` use ``mu_inf`` (100, as the experiments simulate it).

The reduced LCP is, in exact arithmetic, the friction-pyramid LCP of
:mod:`idyn.friction_pyramid` for the inverse-dynamics Delassus matrix ``J_u M_uu^-1 J_u^T`` and
``u = J_u p + J_a qd_des``.  lcp-coulomb keeps the paper's MLCP of eq. 59 because ``mindiff``
(Algorithm 3) enumerates the MLCP's solutions and picks by its unconstrained part
``x = [v+_u; dt tau]``, which the reduction returns with ``Q`` (docs/design.md).

Every LCP answer is checked in physical units (non-interpenetration and complementarity at
the predicted velocity); an answer that fails even after regularisation is replaced by the
prediction of the one-stage complementarity-free model (``out.info.fallback``).

Option ``mindiff=True``: for at most ``mindiff_max_contacts`` contacts (the enumeration is
``2^(6m)``, Algorithm 3) every LCP solution is enumerated by :func:`idyn.lcp.mindiff` and the
one whose ``x = [v+_u; dt tau]`` is closest to the previous step's is used (Sec. 5.3); larger
contact sets use Lemke.

Option ``tie_break`` (our addition; default ``"none"``, the paper's plain Lemke).  The ID LCP
is indeterminate: with four feet sticking, any split of the weight is a solution, and Lemke's
vertex carries a standing LINKS on two diagonal feet (a1: 14.4 N m of torque where 9.8 N m
suffice).  ``"force"`` or ``"torque"`` then pick, on the *face* of Lemke's answer, the solution
of least impulse norm ``|[f_N; f_F]|`` or of least torque norm (plus 1e-6 of the impulse
norm, to which the torque is blind along opposite pyramid edges).  The face is the convex
piece of the solution set with Lemke's complementarity pattern: impulses whose ``w`` is zero
(touching, not sliding that way) may take any value ``>= 0`` with that ``w`` held, multipliers
``lambda`` that are positive (sliding) likewise, every other variable stays zero with its
``w >= 0``; every point of it solves the same LCP.  Moves along the null space of the face's
block of ``Q`` keep the held ``w`` at Lemke's values, so the QP (:func:`idyn.qp.solve_qp`) has
only inequalities; it is the analogue of Stage II (Sec. 6.2.4), restricted to Lemke's face
where Algorithm 3 (Sec. 5.3) would enumerate every face.  "force" follows the paper's aim (3)
of Sec. 1, forces spread evenly over the contacts (and Ott et al.'s least force norm against
slip): standing, it gives each LINKS foot a quarter of the weight and no friction; "torque"
(Stage II's criterion) uses 12-22 % of the friction cone to lower the torque further.

Why the default stays "none": on the trot the face is almost always a point.  The stance
feet slide in Lemke's answers, and a sliding foot's friction is fixed at the pyramid limit.
They slide because the commanded joint velocity moves the stance feet relative to each other,
which no base motion can absorb (the splayed-legs case of Sec. 4.5), so the "internal friction
at the pyramid limit" of the trot is not indeterminacy but the Coulomb model's answer to an
inconsistent command; the tie-break costs a QP per multi-contact step without keeping LINKS
up (docs/design.md).

Option ``consistent_stance`` (our addition, default False; Sec. 4.5's consistency applied to
Coulomb contact): when Lemke's answer has a loaded contact sliding and at least two loaded
contacts, ``qd_des`` is moved by the least Euclidean norm (as eq. 46) that lets every loaded
contact stick and stay (``[N; S; T] v+ = [-phi/dt; 0; 0]`` solvable by some base velocity: the
combinations of those rows that the base cannot move are zeroed), and the LCP is solved again
for the moved step (``out.info.details["qd_change"]``, rad/s).  The torques then realise the moved velocity,
at the cost of a second LCP.  The inconsistency comes from the shared error feedback
(:mod:`idyn.controllers.feedback`), where a contact-consistent projection would belong; plain Lemke
(``tie_break="none"``) trots the paper's course (docs/results.md).

Option ``consistency_check`` (the common option, default False here, as published): Lemke's
answers are checked against eq. 54, so only the complementarity-free fallback after a failed LCP
can close a contact; with True such a step's command is moved minimally to a consistent one
(eqs. 46-51 with the Coulomb pyramid, :mod:`idyn.controllers.consistency`) and the LCP solved
again for it (``info.details["consistency_violation"]``, ``["desired_deviation"]``).

Option ``warm_start`` (True): on LCPs of at least :data:`idyn.controllers.warm_start.MIN_WARM_VARIABLES`
variables, Lemke's method starts from the previous step's terminal basis
(``LCPResult.basic``), remembered by contact identity (:mod:`idyn.controllers.warm_start`): one
compiled solve when it still solves (:func:`idyn.lcp.lemke.basis_checked`), else Lemke's path
from it (:func:`idyn.lcp.lemke.warm_lemke`); when that path fails (a singular basis, a
secondary ray, a rejected answer) the cold start with its regularisation fallback runs, so
Lemke's robustness on degenerate problems is kept.
``out.info.details["lcp_start"]`` says which (``"warm"``, ``"cold"``, ``"cold (warm basis failed)"``).
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from idyn.contact import NO_SLIP_MU
from idyn.errors import InvalidInputError, SolverError
from idyn.lcp import mindiff
from idyn.lcp.lemke import warm_checked, warm_lemke
from idyn.lcp.mlcp import reduce_checked
from idyn.lcp.regularized import regularized_checked
from idyn.qp import DEFAULT_BACKEND, solve_qp

from .base import Controller, OverBudget, Solution, register
from .consistency import CONSISTENCY_TOL, consistency_violation, consistent_step
from .dissipation import build_stage_one, solve_one_stage
from ._dynamics_kernel import coulomb_mlcp
from .dynamics import Step
from .warm_start import MIN_WARM_VARIABLES, BasisMemory, contact_keys

#: relative tolerance of the physical acceptance check of an LCP answer
CHECK_TOL = 1e-6
#: regularisation of the complementarity-free fallback (as ``qp-coulomb-1stage``'s default)
ONE_STAGE_REGULARIZATION = 1e-6
#: objectives of the tie-break among the solutions of Lemke's face (module docstring)
TIE_BREAKS = ("none", "force", "torque")
#: relative size below which a ``w`` counts as zero (and a ``lambda`` as zero) on the face
FACE_TOL = 1e-9
#: relative singular value below which a direction counts as in the null space of ``Q_II``
NULL_TOL = 1e-9
#: weight of the impulse norm added to the torque objective, relative to it
FORCE_WEIGHT = 1e-6


@register
class LCPCoulomb(Controller):
    name = "lcp-coulomb"
    consistency_default = False   # its LCP answers are consistent by construction: only its fallback can close

    def __init__(self, model, *, mindiff: bool = False, mindiff_max_contacts: int = 2,
                 mu_inf: float = NO_SLIP_MU, tie_break: str = "none", consistent_stance: bool = False,
                 warm_start: bool = True, **common):
        super().__init__(model, **common)
        if not (np.isfinite(mu_inf) and mu_inf > 0):
            raise InvalidInputError(f"mu_inf must be positive and finite, got {mu_inf}")
        if tie_break not in TIE_BREAKS:
            raise InvalidInputError(f"unknown tie_break {tie_break!r}; choose from {', '.join(TIE_BREAKS)}")
        self.tie_break, self.consistent_stance = tie_break, bool(consistent_stance)
        self.use_mindiff, self.mindiff_max_contacts, self.mu_inf = mindiff, int(mindiff_max_contacts), mu_inf
        self._x_prev = None
        if not isinstance(warm_start, (bool, np.bool_)):
            raise InvalidInputError(f"warm_start must be True or False, got {warm_start!r}")
        self.warm_start = bool(warm_start)
        #: the last Lemke answer's pattern, by contact identity; this step's contact keys
        self._basis, self._keys = BasisMemory(), None

    def reset(self) -> None:
        super().reset()
        self._x_prev = None
        self._basis.reset()

    def _solve(self, q, v, vdot, contacts) -> Solution:
        step = self._step(q, v, vdot, contacts)
        if step.m == 0:
            tau, v_next = step.resolve(np.zeros(self.model.nv))
            return Solution(tau, np.zeros((0, 3)), v_next)
        k = 5 * step.m
        R = step.directions(pyramid=True)
        self._keys = contact_keys(contacts) if self.warm_start and 6 * step.m >= MIN_WARM_VARIABLES else None
        if self._keys is None and self.warm_start:
            self._basis.reset()
        try:
            z, x, info = self._solve_lcp(step, self._mlcp(step))
            if self.consistent_stance:
                step, z, x, info = self._stance_consistent(step, z, x, info)
            tau, v_next, forces = step.pyramid_outputs(R, z[:k])
            bad = step.complementarity_violation(z[:step.m], v_next)
            if not bad <= CHECK_TOL:      # NaN (a non-finite answer) fails too
                raise SolverError(f"the LCP answer violates eq. 54 by {bad:.3g} (relative)")
        except SolverError as exc:
            # The paper's implementation regularises (done inside lemke_regularized); when even
            # that fails we predict with the complementarity-free model of Sec. 6 instead.
            if self.out_of_time("qp-coulomb-1stage"):
                raise OverBudget(f"budget spent after {exc}") from exc
            z, info = self._complementarity_free(step)
            info.update(fallback="qp-coulomb-1stage", error=str(exc))
            tau, v_next, forces = step.pyramid_outputs(R, z)
            x = None
            if self.consistency_check:
                step, z, x, info, (tau, v_next, forces) = self._consistent(step, z, info, (tau, v_next, forces))
        self._x_prev = x
        info["lcp_z"] = z
        return Solution(tau, forces, v_next, info)

    def _complementarity_free(self, step: Step):
        """The fallback model: Sec. 6's complementarity-free one-stage QP on ``step``."""
        return solve_one_stage(build_stage_one(step, coulomb=True), ONE_STAGE_REGULARIZATION, DEFAULT_BACKEND,
                               self.out_of_time)

    def _warm_fallbacks(self, state, desired, contacts) -> None:
        q, v, checked = self._check(state, desired, contacts)
        self._complementarity_free(self._step(q, v, np.zeros(self.model.nv), checked))

    def _consistent(self, step: Step, z, info, outputs):
        """Sec. 4.5 after a failed LCP (:mod:`idyn.controllers.consistency`): when the fallback's
        answer closes a contact beyond its gap, move ``qd_des`` minimally to a consistent one and
        solve the LCP again for it; the fallback's answer stands if that fails.  Returns
        ``(step, z, x, info, (tau, v_next, forces))``."""
        closing = consistency_violation(step, outputs[1])
        if closing <= CONSISTENCY_TOL or self.out_of_time("consistency"):
            return step, z, None, info, outputs
        checked = {"consistency_violation": closing}
        moved = consistent_step(step, checked, DEFAULT_BACKEND, coulomb=np.ones(step.m, dtype=bool))
        if moved is None or self.out_of_time("consistent lcp"):
            return step, z, None, {**info, **checked}, outputs
        try:
            z2, x2, info2 = self._solve_lcp(moved, self._mlcp(moved))
            out2 = moved.pyramid_outputs(moved.directions(pyramid=True), z2[:5 * moved.m])
            if not moved.complementarity_violation(z2[:moved.m], out2[1]) <= CHECK_TOL:
                raise SolverError("the consistent LCP answer violates eq. 54")
        except SolverError:
            return step, z, None, {**info, **checked}, outputs
        info2.update(checked)
        return moved, z2, x2, info2, out2

    def _stance_consistent(self, step: Step, z, x, info):
        """Move ``qd_des`` minimally (Euclidean, as eq. 46) so that the contacts Lemke's answer
        loads can stick, and solve again (module docstring); the first answer if nothing moves."""
        m = step.m
        loaded = np.flatnonzero(z[:m] > FACE_TOL * (1.0 + z[:m].max()))
        if loaded.size < 2 or not np.any(z[5 * m + loaded] > 0.0):
            return step, z, x, info
        rows = np.concatenate((loaded, loaded + m, loaded + 2 * m))
        R = step.rows[rows]
        Ru, Ra = R[:, step.u], R[:, step.a]
        U, s, _ = np.linalg.svd(Ru)
        C = U[:, _rank(s):]                                        # combinations blind to the base
        if C.shape[1] == 0:
            return step, z, x, info
        b = np.zeros(rows.size)
        b[:loaded.size] = step.jac.phi[loaded] / step.dt
        K = C.T @ Ra
        e = C.T @ (Ra @ step.qd + b)
        dqd = -np.linalg.lstsq(K, e, rcond=None)[0]
        moved = step.with_desired(step.qd + dqd)
        try:
            z2, x2, info2 = self._solve_lcp(moved, self._mlcp(moved))
        except SolverError:
            return step, z, x, info
        info2["qd_change"] = float(np.abs(dqd).max())
        return moved, z2, x2, info2

    def _mlcp(self, step: Step):
        """The MLCP blocks ``(A, B, C, D, g, h)`` of the module docstring, in one compiled call
        (:func:`idyn.controllers._dynamics_kernel.coulomb_mlcp`)."""
        m, n = step.m, step.nu + self.model.na
        A, B, C, D = np.empty((n, n)), np.empty((6 * m, 6 * m)), np.empty((n, 6 * m)), np.empty((6 * m, n))
        g, h = np.empty(n), np.empty(6 * m)
        coulomb_mlcp(step.rows, step.M, step.p, step.v, step.qd, step.h, step.jac.phi, step.jac.mu, self.mu_inf,
                     step.dt, step.u_index, step.a_index, A, B, C, D, g, h)
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
        lcp, start = None, "cold"
        if self._keys is not None:
            layout = _layout(step.m)
            warm = self._basis.recall(self._keys, *layout)
            if warm.size:
                lcp, warm_pivots = warm_checked(red.Q, red.r, warm), 0
                if lcp is None:                       # the path from that basis, then cold
                    lcp = warm_lemke(red.Q, red.r, warm)
                    warm_pivots = lcp.pivots
                    lcp = lcp if lcp.solved else None
                start = "warm" if lcp is not None else "cold (warm basis failed)"
        if lcp is None:
            lcp = regularized_checked(red.Q, red.r, stop=lambda: self.out_of_time("regularized lemke"))
            if start != "cold":
                lcp = replace(lcp, pivots=lcp.pivots + warm_pivots)
        if self._keys is not None:
            if lcp.solved:
                self._basis.store(self._keys, *layout, lcp.basic if lcp.basic is not None else lcp.basis)
            else:
                self._basis.reset()
        info = {"status": lcp.status.value, "pivots": lcp.pivots, "solver": "lemke",
                "regularization": lcp.regularization, "lcp_w": lcp.w, "lcp_start": start}
        if not lcp.solved:
            raise SolverError(f"Coulomb LCP unsolved: {lcp.status.value}")
        z, x = lcp.z, red.unconstrained(lcp.z)
        if self.tie_break != "none" and not self.out_of_time("tie-break"):   # Lemke's z stands without it
            Q = red.Q if lcp.regularization == 0.0 else red.Q + lcp.regularization * np.eye(red.r.size)
            z, info["tie_break"] = self._tie_break(step, Q, red.r, lcp.z, lcp.w, x)
            if z is not lcp.z:
                info["lemke_z"], info["lcp_w"], x = lcp.z, Q @ z + red.r, red.unconstrained(z)
        return z, x, info

    def _tie_break(self, step: Step, Q, r, z, w, x):
        """The solution on the face of Lemke's answer ``(z, w)`` (unconstrained part ``x``) that
        minimises the ``tie_break`` objective (module docstring): ``(z, status)``, Lemke's own
        ``z`` when the face is a single point or the QP fails."""
        k = 5 * step.m
        face = solution_face(z, w, k)
        idx = np.flatnonzero(face)
        basis = face_directions(Q[np.ix_(idx, idx)])
        if basis.shape[1] == 0:
            return z, "unique"
        rest = np.flatnonzero(~face)
        impulses = idx < k
        Nf = basis[impulses]                                    # d [f_N; f_F] / d s on the face
        G, e0 = self._objective(step, idx[impulses], z, x)
        GN = G @ Nf
        H, c = GN.T @ GN, GN.T @ e0
        if self.tie_break != "force":
            # the torque is blind to opposite pyramid edges growing together: the least
            # impulse norm among its minimisers, by a small relative weight
            weight = FORCE_WEIGHT * max(float(np.abs(GN).max(initial=0.0)) ** 2, 1e-300)
            H += weight * (Nf.T @ Nf)
            c += weight * (Nf.T @ z[idx[impulses]])
        Q_rest = Q[np.ix_(rest, idx)]
        w_rest = Q_rest @ z[idx] + r[rest]
        res = solve_qp(H, c, A_in=np.vstack((basis, Q_rest @ basis)),
                       b_in=-np.concatenate((z[idx], np.maximum(w_rest, 0.0))))
        if not res.solved:
            return z, f"kept lemke ({res.status.value})"
        out = np.zeros_like(z)
        out[idx] = np.maximum(z[idx] + basis @ res.x, 0.0)
        return out, "solved"

    def _objective(self, step: Step, cols, z, x):
        """``(G, e0)``: the tie-break objective is ``|e0 + G dy|^2`` for a move ``dy`` of the
        face's impulses (columns ``cols`` of ``[f_N; f_F]``) from Lemke's answer ``(z, x)``."""
        if self.tie_break == "force":
            return np.eye(cols.size), z[cols]
        R = step.directions(pyramid=True)[cols]
        dvu = step.solve_A(R[:, step.u].T)                      # d v+_u / d y = A^-1 R_u^T (eq. 94)
        return step.B.T @ dvu - R[:, step.a].T, x[step.nu:]     # d (dt tau) / d y (eq. 90), dt tau


@lru_cache(maxsize=64)
def _layout(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(contact, block)`` of the LCP's variables ``[f_N; f_S+; f_S-; f_T+; f_T-; lambda]`` of
    ``m`` contacts (blocks 0-5), for :class:`idyn.controllers.warm_start.BasisMemory`."""
    contact, block = np.tile(np.arange(m), 6), np.repeat(np.arange(6), m)
    contact.setflags(write=False)
    block.setflags(write=False)
    return contact, block


def solution_face(z: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Mask of the variables of the LCP answer ``(z, w)`` that may be positive on its face:
    impulses ``[f_N; f_F]`` (the first ``k``) whose ``w`` is zero (touching, not sliding in that
    direction), multipliers ``lambda`` that are positive (sliding).  See the module docstring."""
    tol_w = FACE_TOL * (1.0 + float(np.abs(w).max(initial=0.0)))
    tol_z = FACE_TOL * (1.0 + float(np.abs(z[k:]).max(initial=0.0)))
    return np.concatenate((w[:k] <= tol_w, z[k:] > tol_z))


def face_directions(Q_face: np.ndarray) -> np.ndarray:
    """Orthonormal basis (columns) of the null space of the face's block ``Q_II``: the moves
    of the face variables that leave their ``w`` at Lemke's values."""
    if Q_face.shape[0] == 0:
        return np.zeros((0, 0))
    _, s, Vt = np.linalg.svd(Q_face)
    return Vt[_rank(s):].T


def _rank(s: np.ndarray) -> int:
    """Numerical rank from singular values ``s`` (descending): those above ``NULL_TOL`` of the
    largest."""
    return int(np.count_nonzero(s > NULL_TOL * max(float(s[0]), 1e-300)))
