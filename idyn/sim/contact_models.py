"""Contact models of the simulator: contact impulses for one velocity-level time step.

Every model sees the same :class:`ContactProblem`, the discretized dynamics of paper eq. 37

    M (v+ - v) = N^T f_N + S^T f_S + T^T f_T + dt (P^T tau - h(q, v)),

with M, h and the contact Jacobians evaluated at the start of the step, so that
v+ = v* + M^-1 J^T f with the free velocity v* = v + dt M^-1 (P^T tau - h) and J = [N; S; T].
Everything a model needs lives in contact space: the Delassus matrix W = J M^-1 J^T (3m x 3m)
and the free contact velocities u* = J v*. A model returns impulses f = [f_N, f_S, f_T] per
contact; forces are f / dt. Restitution is zero in every model.

Models (the names the simulator and CLI accept):

* ``ap-lcp``: Stewart-Trinkle / Anitescu-Potra, the friction-pyramid LCP of paper eqs. 52-56 and
  64 (the simulation form: v is unknown instead of tau) solved by our lexicographic Lemke with
  the regularisation fallback. Contacts with mu >= :data:`NO_SLIP_MU` are no-slip (as the
  authors' simulator did, Sec. 7.5 "infinity ... simulated as 100").
* ``noslip``: every contact no-slip (paper Sec. 2.3.2, 4.4: S v+ = T v+ = 0).
* ``qp``: the complementarity-free, maximally dissipative model of paper Sec. 2.3.4 (eqs. 29-33)
  with the pyramid of eqs. 69-72, the model of the QP controllers.
* ``compliant``: the L-stable constraint solver of the second paper with a true friction cone
  (:mod:`idyn.constraint_solver`).
* ``penalty``: a spring-damper ground (compliant terrain, paper Sec. 7.5) with Coulomb friction.

No-slip in the simulator. The controller's no-slip model (eqs. 40-42) constrains the tangential
velocity of every contact it is given. A simulator must not glue a contact that carries no load
(a foot lifting off would drag the ground along), so here the no-slip equality holds at contacts
that are loaded or kept closed, and is released at contacts that separate with zero normal
impulse: the limit mu -> inf of the Coulomb pyramid (tangential impulse <= mu f_N). This is
found by a small active-set loop (rarely more than one solve); dependent tangential rows are
removed by Algorithm 1 (:func:`idyn.lcp.find_indices`), which leaves the solution unchanged
(paper Appendix E).

With torques given, that rule does not always have one answer: a touching contact can be both
held and loaded, and released and unloaded (sliding at zero load), under the same torques. The
loop takes the held one (it starts from every contact held). ``lcp-noslip`` decides the same
rule from its own answers, whose torques change with the held set, so on such steps the two pick
different answers (most of the matched pair's prediction error; docs/design.md). ``NoSlip(hold="state")`` is the rule both can share:
the held contacts are chosen from the state at the start of the step, before any impulse, as
those touching and not moving apart, ``max(phi, phi + dt N v) <= CONTACT_GAP``
(:data:`idyn.contact.CONTACT_GAP`); the others get no friction. It is ``lcp-noslip``'s
``release="state"`` (:mod:`idyn.controllers.lcp_noslip`, "The state rule"), whose answers this model
reproduces to round-off. The price is one step of friction at a lift-off: a contact that was
touching and at rest at the start of the step keeps its no-slip rows through the step even if
it ends it apart unloaded.
"""
from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field

import numpy as np

from ..contact import CONTACT_GAP, NO_SLIP_MU
from ..errors import InvalidInputError, SolverError
from ..friction_pyramid import NO_COMPLIANCE, NO_FACTOR, NO_ROWS, Layouts, Pyramid, PyramidLCP
from ..lcp import LCPStatus, find_indices, lemke_regularized
from ..lcp.residuals import DEFAULT_TOL
from ..kernels import pyramid_impulses
from ..qp import DEFAULT_BACKEND, REGULARIZATION_SCHEDULE, solve_built
from ..separation import closing_speed, price_separation, separating_loads
from ._step_kernel import (dissipation_try, factor_contact_space, no_slip_rows, pyramid_lcp_try, qp_active_guess,
                           step_problem, tight_rows, update_sticky)


@dataclass
class ContactProblem:
    """The data of one step (paper eq. 37) in generalized and in contact space.

    ``J`` stacks [N; S; T] (3m x nv, normal rows first); ``W = J M^-1 J^T``; ``u_free = J v*``.
    """

    M: np.ndarray
    v: np.ndarray
    f: np.ndarray           #: non-contact generalized force P^T tau - h
    dt: float
    J: np.ndarray
    phi: np.ndarray
    mu: np.ndarray
    chol: tuple = field(init=False, repr=False)
    v_free: np.ndarray = field(init=False, repr=False)
    Minv_JT: np.ndarray = field(init=False, repr=False)
    W: np.ndarray = field(init=False, repr=False)
    u_free: np.ndarray = field(init=False, repr=False)
    finite: bool = field(init=False, repr=False)    #: v_free and u_free are finite

    def __post_init__(self):
        # the factorisation and the contact space in one compiled call (:mod:`._step_kernel`)
        k, nv = self.J.shape
        self.v_free, self.Minv_JT, self.W, self.u_free = np.empty(nv), np.empty((nv, k)), np.empty((k, k)), np.empty(k)
        self._factored(*factor_contact_space(self.M, self.J, self.v, self.f, self.dt, self.v_free, self.Minv_JT,
                                             self.W, self.u_free))

    def _factored(self, U: np.ndarray, code: int) -> None:
        """Keep the factor of M and whether the contact space is finite (the code of
        :func:`._step_kernel.factor_contact_space`)."""
        if code < 0:
            raise SolverError("the mass matrix is not positive definite (LAPACK potrf failed)")
        self.chol = (U, False)
        self.finite = code > 0

    @classmethod
    def of_step(cls, M, v, h, tau, actuated, dt: float, rows: tuple, phi, mu) -> "ContactProblem | None":
        """The problem of a simulator step with actuator torques ``tau`` on the velocities
        ``actuated`` (f = P^T tau - h) and the contact rows of ``rows`` (the
        arguments of :func:`idyn.kernels.contact_rows` but the output), built in one
        compiled call (:func:`._step_kernel.step_problem`); None if ``tau`` is not finite."""
        p = cls.__new__(cls)
        nv, k = v.shape[0], 3 * phi.shape[0]
        p.M, p.v, p.dt, p.phi, p.mu = M, v, dt, phi, mu
        p.f, p.J, p.v_free, p.Minv_JT, p.W, p.u_free = (np.empty(nv), np.empty((k, nv)), np.empty(nv), np.empty((nv, k)),
                                                       np.empty((k, k)), np.empty(k))
        U, code = step_problem(M, h, tau, actuated, *rows, v, dt, p.f, p.J, p.v_free, p.Minv_JT, p.W, p.u_free)
        if code == -2:
            return None
        p._factored(U, code)
        return p

    @property
    def m(self) -> int:
        return self.phi.shape[0]

    def velocity(self, impulses: np.ndarray) -> np.ndarray:
        """v+ = v* + M^-1 J^T f for impulses (m, 3) ordered [normal, s, t]."""
        return self.v_free + self.Minv_JT @ impulses.T.reshape(-1)

    def restarted(self, v: np.ndarray, *, forces: bool = True, phi: np.ndarray | None = None) -> "ContactProblem":
        """The same step (M, J, W and the factorisation of M reused) from start velocity ``v``:
        with the non-contact force f over dt if ``forces``, else none (v* = v, an instantaneous
        impact), and with gaps ``phi`` if given."""
        p = copy.copy(self)
        p.v = v
        p.v_free = v + (self.v_free - self.v) if forces else v.copy()
        if not forces:
            p.f = np.zeros_like(self.f)
        if phi is not None:
            p.phi = phi
        p.u_free = self.J @ p.v_free
        return p


@dataclass
class ContactSolution:
    """Impulses (m, 3) [normal, s, t] in N s, and how the solver fared."""

    impulses: np.ndarray
    status: str = "solved"
    pivots: int = 0
    regularization: float = 0.0
    iterations: int = 0
    #: contacts whose separation the ``qp`` model priced (:mod:`idyn.separation`)
    separation_priced: int = 0


class ContactModel:
    """Interface: ``solve(problem) -> ContactSolution``; ``name`` is the CLI name."""

    name = "abstract"

    def solve(self, problem: ContactProblem) -> ContactSolution:
        raise NotImplementedError

    def reset(self) -> None:
        """Forget anything carried between steps (warm starts); called by Simulator.reset."""

    def bind(self, model) -> None:
        """Learn the simulated :class:`idyn.RobotModel` (called by the Simulator); models that
        need nothing of it ignore it."""


class AnitescuPotra(ContactModel):
    """Friction-pyramid LCP (paper eqs. 52-56, 64), no-slip for mu >= ``no_slip_mu``.

    The LCP of :mod:`idyn.friction_pyramid` (built there, for the touchdown impact as well), with
    b_N = phi / dt and C = 0 for rigid contact (eq. 54, the stabilized non-penetration constraint
    of eq. 36) and the tangential rows of the held no-slip contacts as equalities.
    """

    name = "ap-lcp"

    def __init__(self, no_slip_mu: float = NO_SLIP_MU, all_no_slip: bool = False):
        self.no_slip_mu = float(no_slip_mu)
        self.all_no_slip = bool(all_no_slip)
        self._warm: dict[tuple, np.ndarray] = {}
        self._layouts = Layouts(PyramidLCP.without)

    def reset(self) -> None:
        self._warm = {}

    def normal_terms(self, problem: ContactProblem) -> tuple[np.ndarray, np.ndarray | None]:
        """(b_N, C): the constant and the compliance of the normal rows (rigid: phi/dt, None = 0)."""
        return problem.phi / problem.dt, None

    def solve(self, problem: ContactProblem) -> ContactSolution:
        m = problem.m
        if m == 0:
            return ContactSolution(np.zeros((0, 3)))
        no_slip = np.ones(m, bool) if self.all_no_slip else problem.mu >= self.no_slip_mu
        b, C = self.normal_terms(problem)
        sticky = no_slip.copy()     # without no-slip contacts the set never changes: one solve
        pivots, out = 0, None
        for _ in range(2 * m + 2):
            out, changed = self._solve_set(problem, no_slip, sticky, b, C)
            pivots += out.pivots
            if not changed:
                break
        else:
            out.status = "active_set_not_converged"
        out.pivots = pivots
        return out

    def _solve_set(self, problem, no_slip, sticky, b, C) -> tuple[ContactSolution, bool]:
        """Solve with tangential equalities at ``sticky`` contacts and no friction at the other
        no-slip contacts, then update ``sticky`` (:func:`._step_kernel.update_sticky`: release
        the contacts that separate unloaded, restore the released ones that carry load); returns
        the solution and whether ``sticky`` changed.

        The LCP is solved equilibrated (:mod:`idyn.friction_pyramid` says why). The previous
        step's basic set is tried first: in steady contact the set of positive impulses does not
        change from step to step, so one solve of ``Q_aa z_a = -r_a`` usually gives the exact
        solution. It is accepted only through the residuals every solver uses
        (:func:`idyn.lcp.residuals.residuals_pass`, with w formed as Q z + r, so its equation
        error is zero), else Lemke's method runs from scratch. The accepted case is one compiled
        call (:func:`._step_kernel.pyramid_lcp_try`).
        """
        m, W, u = problem.m, problem.W, problem.u_free
        mask = no_slip.tobytes()
        lay = self._layouts[m, mask]
        G = self._independent_tangent_rows(problem, sticky)
        key = (mask, sticky.tobytes())
        basis = self._warm.get(key)
        impulses = np.empty((m, 3))
        A, code = pyramid_lcp_try(W, u, lay.R, G, lay.sel, lay.sign, b, NO_COMPLIANCE if C is None else C, problem.mu,
                                  lay.edged, _NO_BASIS if basis is None else basis, DEFAULT_TOL, no_slip, sticky,
                                  lay.Q, lay.s, lay.Qs, lay.rs, lay.z, lay.w, impulses)
        if code < 0:
            raise SolverError("the no-slip rows' Delassus block is not positive definite")
        if code:
            return ContactSolution(impulses, _SOLVED), code == 2
        res = lemke_regularized(lay.Qs, lay.rs)
        self._warm = {key: res.basis} if res.solved else {}
        impulses = lay.impulses(res.z, W, u, G, A)
        changed = update_sticky(impulses[:, 0], res.w[:m] / lay.s[:m], u, no_slip, sticky)
        return ContactSolution(impulses, res.status.value, res.pivots, res.regularization), changed

    @staticmethod
    def _independent_tangent_rows(problem: ContactProblem, sticky: np.ndarray) -> np.ndarray:
        """Contact-space indices of the no-slip rows of the ``sticky`` contacts kept by Algorithm 1
        (paper Sec. 4.4)."""
        rows, independent = no_slip_rows(problem.W, sticky)
        if independent:          # nothing to remove
            return rows
        m, contacts = problem.m, np.flatnonzero(sticky)
        S, T = problem.J[m + contacts], problem.J[2 * m + contacts]
        ks, kt = find_indices(problem.M, None, S, T)
        return np.concatenate((m + contacts[ks], 2 * m + contacts[kt]))


#: relative tolerance of the KKT conditions that accept the qp model's warm start
#: (:func:`._step_kernel.qp_active_guess`), and of the tight rows it keeps for the next step
GUESS_TOL = 1e-9
#: active sets the qp model keeps (one per layout and set of priced contacts)
_WARM_LIMIT = 64
#: no contact whose separation is priced (:func:`._step_kernel.dissipation_try`)
_NO_PRICE = np.zeros(0, dtype=bool)
#: no basis to try (:func:`._step_kernel.pyramid_lcp_guess`)
_NO_BASIS = np.zeros(0, dtype=np.intp)
_SOLVED = LCPStatus.SOLVED.value


class NoSlip(AnitescuPotra):
    """No-slip at every contact (paper Sec. 2.3.2, eqs. 40-43), whatever its mu.

    ``hold`` chooses the contacts that keep their no-slip rows: ``"force"`` (default) the
    active-set loop of :class:`AnitescuPotra` (released when they separate unloaded),
    ``"state"`` those touching and not moving apart at the start of the step (see "No-slip in the
    simulator" in the module docstring), the others frictionless.
    """

    name = "noslip"
    #: the rules of ``hold``
    HOLD_RULES = ("force", "state")

    def __init__(self, hold: str = "force"):
        if hold not in self.HOLD_RULES:
            raise InvalidInputError(f"hold must be one of {self.HOLD_RULES}, got {hold!r}")
        super().__init__(all_no_slip=True)
        self.hold = hold

    def solve(self, problem: ContactProblem) -> ContactSolution:
        if self.hold == "force" or problem.m == 0:
            return super().solve(problem)
        m = problem.m
        held = np.maximum(problem.phi, problem.phi + problem.dt * (problem.J[:m] @ problem.v)) <= CONTACT_GAP
        b, C = self.normal_terms(problem)
        solution, _ = self._solve_set(problem, np.ones(m, dtype=bool), held, b, C)
        return solution


class Penalty(AnitescuPotra):
    """Spring-damper normal contact with Coulomb friction (the compliant terrain, Sec. 7.5).

    The normal force is that of a spring (stiffness k) and damper (b) on the *end-of-step* gap,
    f_N / dt = max(0, -k phi+ - b phi_dot+) with phi+ = phi + dt N v+, i.e. implicit in v+ and so
    stable for any k, b and dt. In the LCP above this is the normal row
    w_N = N v+ + k phi / beta + f_N / (dt beta), beta = b + k dt (b_N = k phi / beta,
    C = 1 / (dt beta)); friction and no-slip are as in ``ap-lcp``.
    """

    name = "penalty"

    def __init__(self, stiffness: float = 1.2e4, damping: float = 300.0, no_slip_mu: float = NO_SLIP_MU):
        if not (np.isfinite(stiffness) and stiffness > 0 and np.isfinite(damping) and damping >= 0):
            raise InvalidInputError(f"penalty needs stiffness > 0 and damping >= 0, got {stiffness}, {damping}")
        super().__init__(no_slip_mu)
        self.stiffness, self.damping = float(stiffness), float(damping)

    def normal_terms(self, problem):
        beta = self.damping + self.stiffness * problem.dt
        m = problem.m
        return self.stiffness * problem.phi / beta, np.full(m, 1.0 / (problem.dt * beta))


class MaximalDissipation(ContactModel):
    """Complementarity-free impulses of paper Sec. 2.3.4 / eqs. 69-72 (the QP controllers' model).

        minimize    1/2 v+^T M v+            (= 1/2 f^T W f + f^T u* + const)
        subject to  N v+ >= -phi / dt,  f_N >= 0,  f_F >= 0,  mu_i f_N,i >= 1^T f_F,i

    over x = [f_N, f_F] with the pyramid edges D = [S; -S; T; -T], so f = X x and the QP is
    ``1/2 x^T (X^T W X) x + x^T X^T u*``. Contacts with mu >= ``no_slip_mu`` have no bound on f_F
    (no slip). Solved by :func:`idyn.qp.solve_qp`.

    Separation price (:mod:`idyn.separation`, the QP controllers' Stage I rule): a touching
    contact that carries normal impulse yet ends the step apart gets ``w/2 |N_c v+|^2`` added,
    with ``N_c v+ = (W X)_c x + u*_c`` the contact's normal row of the velocity map:
    ``H += w P^T P``, ``c += w P^T u*_c`` with ``P = (W X)_c``; the QP is solved again until no
    new contact is flagged. ``w = separation_weight x`` the mass of the robot the simulator binds
    (:meth:`bind`). ``separation_weight`` None (default) matches the controllers' defaults:
    1 at the contacts with a friction bound (``qp-coulomb``), 0 at no-slip ones (``qp-noslip``);
    a number applies to every contact, 0 is the relaxation as published. A model used on its own,
    bound to no robot, has no mass to weigh the price with: under the default it solves the
    published relaxation, and a number above 0 is an error.

    Contacts at a distance (:mod:`idyn.separation`): with ``gap_rate`` the objective's normal rows
    of the contacts with a friction bound measure their end-of-step gap rate, ``c[:m] +=``
    :func:`idyn.separation.closing_speed` (the QP controllers' option of the same name), so a
    contact at a distance is loaded only to end the step touching (frictionless: eq. 35's LCP);
    off (default), every detected contact is stopped as if it touched, as published.

    Warm start. The Hessian is singular (opposite pyramid edges have opposite columns), so
    :func:`idyn.qp.solve_built` solves the QP with the ridge ``eps I`` of its first
    regularisation, by ``backend`` (:mod:`idyn.qp`'s bounded default) from scratch. In steady contact the active rows do not change from step to step, so the
    active set of the last solve (its tight rows, independent ones) is tried first: one KKT
    solve of the same ridge QP (:func:`._step_kernel.qp_active_guess`), accepted when its
    multipliers are >= 0 and every row holds, to :data:`GUESS_TOL` relative; with H + eps I
    positive definite that is the unique minimiser the backend computes. Otherwise the backend
    runs as before. tests/test_sim_qp_warm_start.py checks the guess against quadprog on the same
    problems (agreement: docs/design.md).
    """

    name = "qp"

    def __init__(self, no_slip_mu: float = NO_SLIP_MU, backend: str = DEFAULT_BACKEND,
                 separation_weight: float | None = None, gap_rate: bool = False):
        self.no_slip_mu = float(no_slip_mu)
        self.backend = backend
        if separation_weight is not None:
            try:
                separation_weight = float(separation_weight)
            except (TypeError, ValueError):
                raise InvalidInputError(f"separation_weight must be a number, got {separation_weight!r}") from None
            if not (np.isfinite(separation_weight) and separation_weight >= 0):
                raise InvalidInputError(f"separation_weight must be finite and >= 0, got {separation_weight}")
        self.separation_weight = separation_weight
        if not isinstance(gap_rate, (bool, np.bool_)):
            raise InvalidInputError(f"gap_rate must be True or False, got {gap_rate!r}")
        self.gap_rate = bool(gap_rate)
        self.robot_mass: float | None = None
        self._layouts = Layouts(_QPLayout)
        self._active: dict[tuple, np.ndarray] = {}

    def reset(self) -> None:
        self._active = {}

    def bind(self, model) -> None:
        self.robot_mass = float(model.total_mass)

    def _separation_price(self, bounded: np.ndarray) -> tuple[float, np.ndarray | None]:
        """``(w in kg, mask of the contacts it prices)``; ``(0, None)``: nothing is priced."""
        if self.separation_weight is None:
            weight, priceable = (1.0, bounded) if self.robot_mass is not None else (0.0, None)
        else:
            weight, priceable = self.separation_weight, np.ones(bounded.size, dtype=bool)
            if weight > 0 and self.robot_mass is None:
                raise InvalidInputError("separation_weight is in robot masses: bind the qp model to the "
                                        "simulated robot first (Simulator does)")
        if weight == 0 or not priceable.any():
            return 0.0, None
        return weight * self.robot_mass, priceable

    def solve(self, problem: ContactProblem) -> ContactSolution:
        m = problem.m
        if m == 0:
            return ContactSolution(np.zeros((0, 3)))
        bounded = problem.mu < self.no_slip_mu
        lay = self._layouts[m, bounded.tobytes()]
        # x = [f_N, f_S+, f_S-, f_T+, f_T-]: the pyramid variables of every contact, so the
        # Hessian X^T W X and the normal rows of W X are signed gathers of W (one compiled call);
        # the arrays are built here, finite (the simulator checked the problem), so the QP's
        # input checks are skipped (solve_built)
        weight, priceable = self._separation_price(bounded)
        key = bounded.tobytes()
        H, c, A_in, b_in = lay.H, lay.c, lay.A_in, lay.b_in
        impulses = np.empty((m, 3))
        gap = closing_speed(problem.phi, problem.dt, bounded) if self.gap_rate else NO_COMPLIANCE
        eps, code = dissipation_try(problem.W, problem.u_free, problem.phi, problem.dt, problem.mu, lay.rows, lay.sign,
                                    lay.cones, gap, REGULARIZATION_SCHEDULE[0], self._active.get((key, b""), _NO_BASIS),
                                    GUESS_TOL, _NO_PRICE if priceable is None else priceable, lay.edged, lay.R, H, c,
                                    A_in, b_in, lay.x, impulses)
        if code == 1:
            return ContactSolution(impulses, _SOLVED, 0, eps, 0, 0)
        x, status, iterations = (lay.x, _SOLVED, 0) if code == 2 else self._quadprog(H, c, A_in, b_in, (key, b""), eps)
        priced, u_N = np.zeros(m, dtype=bool), problem.u_free[:m]
        while priceable is not None:
            new = separating_loads(problem.phi, problem.dt, x[:m], A_in[:m] @ x + u_N) & priceable & ~priced
            if not new.any():
                break
            priced |= new
            rows = np.flatnonzero(new)      # N_c v+ = A_in[c] x + u*_c: the non-penetration rows
            H, c = price_separation(H, c, A_in[rows], u_N[rows], weight)
            x, status, eps, iterations = self._solve_qp(H, c, A_in, b_in, (key, priced.tobytes()))
        pyramid_impulses(x, lay.unit, m, lay.edged, problem.W, problem.u_free, lay.R, NO_ROWS, NO_FACTOR, impulses)
        return ContactSolution(impulses, status, 0, eps, iterations, int(np.count_nonzero(priced)))

    def _solve_qp(self, H, c, A_in, b_in, key) -> tuple[np.ndarray, str, float, int]:
        """``(x, status, ridge, iterations)`` of the QP, first from the active set of the last
        solve with this ``key`` (the layout and the priced contacts; see the class docstring,
        "Warm start"), else by :meth:`_quadprog`."""
        # solve_built's first attempt on this Hessian, singular by construction (the columns of
        # opposite pyramid edges are opposite): quadprog with the ridge eps I below
        eps = REGULARIZATION_SCHEDULE[0] * max(float(np.abs(np.diagonal(H)).max()), 1.0)
        active, x = self._active.get(key), np.empty(H.shape[0])
        if active is not None and qp_active_guess(H, c, A_in, b_in, eps, active, GUESS_TOL, x):
            return x, _SOLVED, eps, 0
        x, status, iterations = self._quadprog(H, c, A_in, b_in, key, eps)
        return x, status, eps, iterations

    def _quadprog(self, H, c, A_in, b_in, key, eps) -> tuple[np.ndarray, str, int]:
        """``(x, status, iterations)`` of the QP by :func:`idyn.qp.solve_built` (zero impulses
        if it failed: the status reports it); its active set is kept for ``key`` when it solved
        the QP with the ridge ``eps`` the warm start uses."""
        n = H.shape[0]
        res = solve_built(H, c, np.zeros((0, n)), np.zeros(0), A_in, b_in, backend=self.backend)
        self._active.pop(key, None)
        if not res.solved:
            return np.zeros(n), res.status.value, res.iterations
        if res.regularization == eps:    # the QP the guess solves (strictly convex: one minimiser)
            rows = np.empty(A_in.shape[0], dtype=np.intp)
            if len(self._active) >= _WARM_LIMIT:
                self._active.clear()
            self._active[key] = rows[:tight_rows(A_in, b_in, res.x, GUESS_TOL, rows)]
        return res.x, res.status.value, res.iterations


class _QPLayout(Pyramid):
    """The inequality rows of :class:`MaximalDissipation` for one layout: non-penetration (filled
    per step), x >= 0 and the cone rows mu_i f_N,i - 1^T f_F,i >= 0 of the ``bounded`` contacts."""

    def __init__(self, m: int, bounded: bytes):
        super().__init__(m, np.arange(m))
        cones = np.flatnonzero(np.frombuffer(bounded, dtype=bool))
        nb = cones.size
        self.A_in = np.zeros((m + 5 * m + nb, 5 * m))
        self.A_in[m:6 * m] = np.eye(5 * m)
        cone_rows = 6 * m + np.arange(nb)
        for k in range(4):
            self.A_in[cone_rows, (k + 1) * m + cones] = -1.0
        self.cones = cones
        self.unit = np.ones(5 * m)       # the QP's x is not scaled
        #: the step's work arrays (A_in's non-penetration rows and cone entries, H, c, the
        #: non-penetration entries of b_in and x are written by each solve)
        n = 5 * m
        self.H, self.c, self.b_in, self.x = np.empty((n, n)), np.empty(n), np.zeros(self.A_in.shape[0]), np.empty(n)


#: Model names in the order the CLI lists them.
MODELS = ("ap-lcp", "noslip", "qp", "compliant", "penalty")


def make(name: str, **options) -> ContactModel:
    """A contact model by name (see :data:`MODELS`); options go to its constructor (an option it
    does not take is an InvalidInputError)."""
    if name == "compliant":
        from .compliant import Compliant as cls
    else:
        cls = {"ap-lcp": AnitescuPotra, "noslip": NoSlip, "qp": MaximalDissipation, "penalty": Penalty}.get(name)
    if cls is None:
        raise InvalidInputError(f"unknown contact model {name!r}; choose one of {MODELS}")
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as exc:
        raise InvalidInputError(f"contact model {name!r}: {exc}") from None
    return cls(**options)
