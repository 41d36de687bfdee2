"""ID_LCP,inf (paper Sec. 4, eqs. 36-51): complementarity, no-slip contact.

Per step, in the reduced form of :mod:`idyn.controllers.dynamics` (only the unactuated velocity
``v+_u`` is unknown once ``P v+ = qd_des``):

1. **FIND-INDICES** (Algorithm 1) on the unactuated block ``A = M_uu`` and the unactuated
   columns of ``S``, ``T`` (:func:`idyn.lcp.find_indices.kept_tangent_rows`, the rows
   :meth:`idyn.controllers.dynamics.Step.independent_tangents` keeps).  With ``X = [P^T S_S^T T_T^T]``,
   ``X`` has full column rank iff the chosen tangent rows restricted to the unactuated columns
   are independent (``P`` covers the actuated ones), so the reduced call keeps as many rows as
   the full-size Algorithm 1, spanning the same space, at ``O(nu^3 + n nu^2)`` instead of
   ``O(nv^3 + n nv^2)``.  Not the same rows: they are offered in the order of a column-pivoted
   QR rather than the paper's ``S_1, T_1, S_2, ...`` (the paper's order can keep a badly
   conditioned subset; see ``independent_tangents``), and the dependence tolerance is a sine
   in the ``A^-1`` metric.  :func:`idyn.lcp.find_indices` is Algorithm 1 in the paper's order.
2. The no-slip MLCP (eq. 42) reduced to the LCP of eqs. 44-45: the kept tangent rows
   ``G v+_u = b`` (``b = -[S; T]_a qd_des``) are equality constraints, the contact-free velocity
   is ``f* = p + A^-1 G^T mu0`` with ``mu0 = (G A^-1 G^T)^-1 (b - G p)``, and the LCP
   ``(N f* + N_a qd_des + phi/dt, N_u W N_u^T)`` with the constrained inverse inertia ``W`` is
   solved by Algorithm 2 (:func:`idyn.lcp.ppm_contact`), **warm-started** from the previous
   call's active set (Sec. 4.6, indeterminacy mitigation), remembered by contact identity so
   it survives contacts appearing and disappearing (:mod:`idyn.controllers.warm_start`).
3. **Torques** by the linear solve of Sec. 4.5: the tangential impulses follow from the
   equality constraints (``mu = (G A^-1 G^T)^-1 (b - G p - G A^-1 N_u^T f_N)``), then
   :meth:`idyn.controllers.dynamics.Step.resolve` gives ``tau`` and ``v+`` (eqs. 37-38).
4. **Consistency check** (Sec. 4.5): ``N v+ >= -phi/dt``.  With ``check_tangential=True``
   also ``S v+ = T v+ = 0`` for the touching contacts (``phi <= contact_gap``; the held ones
   under the state rule): Algorithm 1 may drop tangent rows whose constraints are only implied
   when the desired motion is consistent (Appendix E assumes zero right-hand sides, ours are
   ``-S_a qd_des``), so with inconsistent desired accelerations the predicted feet may slip
   (by default the desired motion is first made consistent with them: "Consistent desired
   motion" below).  Off by default, as in the
   paper (error feedback makes almost every closed-loop step slightly inconsistent, and the QP
   then runs every step).  If the check fails, or the LCP has no solution (Algorithm 2 and
   Lemke fail: the desired motion admits no non-penetrating answer, e.g. fingers closing on a
   rigid box from both sides), the minimal-deviation QP of eqs. 46-51 is solved
   (:func:`idyn.controllers.consistency.min_deviation`: its objective, re-derived from the garbled text, and why its
   impulses stay physical).

Algorithm 2's dependent contacts.  Algorithm 2 never lets an index enter whose column lies in
the span of the active ones; by Appendix F its ``w`` is then a combination of the active
``w``, which are zero.  That holds for the velocity part of ``w`` but not when the dependency
among the normals leaves a combination of the right-hand sides free: four feet on a plane with
three tangent rows kept leave the base three motions for four normals, and warm-started with
three feet active, a desired motion that presses the fourth foot down needs an exchange of
feet that Algorithm 2 does not make (its answer then fails the residual check).  The LCP
(symmetric positive semi-definite, so Lemke's method solves it or proves it infeasible) is
then solved by Lemke's method (:func:`idyn.lcp.lemke`, no regularisation: a compliance added
to rigid contacts would change the model) before the consistency QP is considered;
``out.info.details["lcp_fallback"]`` says ``"lemke"`` or ``"failed"``.

Near-dependent tangent rows.  Tangent rows of contacts on one plane span only the planar
motions ``(x, y, yaw)`` of the base: with three feet down, three of the six rows are dependent.
A foot touching down a few micrometres above the plane (or a simulator's contact points at
slightly different depths) makes its rows independent by a sine of ``1e-4``, and Algorithm 1's
test "``X^T M^-1 X`` not singular" keeps them.  ``G A^-1 G^T`` then has a condition number of
about ``1e8``, and any mismatch of the right-hand sides ``b`` (the desired motion is never
exactly consistent in closed loop) is enforced by huge tangential impulses, which make a
simulated trot diverge at its first three-foot touchdown.  Whether such a row is
independent is a question about geometry that contact detection answers only to about
``1e-4`` m, so Algorithm 1 here treats a row as dependent when its distance from the span of
the kept rows (in the ``A^-1`` metric) is below ``tangent_dependence_tol = 1e-3`` of its norm
(a ``0.1`` mm height difference over a ``0.1`` m lever); Appendix E's argument (dropped rows
are implied by the kept ones) then holds up to that geometric tolerance.

Consistent desired motion.  Appendix E's argument needs zero right-hand sides; ours are
``-[S; T]_a qd_des``, and a desired motion that moves the held feet relative to each other in a
way no base motion follows leaves the dropped rows violated: the predicted feet slip, where
the no-slip simulator, given the torques, holds them (docs/design.md).  With ``consistent_desired=True``
(default) the desired actuated velocity is first moved to the closest one (the Euclidean
measure of eq. 46) under which every dropped row is implied by the kept ones
(:func:`consistent_desired`: one small least-squares solve per LCP), so the kept rows hold the
held contacts, up to the dependence tolerance.  It is the minimal-deviation step of Sec. 4.5
restricted to the tangent rows and taken every step instead of after a failed check
(``consistent_desired=False``: Algorithm 1 as published); ``out.info.details["tangent_projection"]`` is the
change ``|delta qd|``.

Separating contacts.  A contact with ``f_N = 0`` whose gap is open at the end of the step cannot
transmit a tangential impulse: ``|f_t| <= mu f_N`` gives ``f_t = 0`` for every finite ``mu``, and
no-slip is the ``mu -> inf`` limit (Sec. 2.3.2).  Read literally, eqs. 40-41 instead hold the
tangential velocity of every contact in the set at zero, with unbounded impulses through the
gap: a stance foot the simulator already lifts and, just as much, an anticipated contact
(Sec. 4.1) that approaches but stays open, e.g. a swing foot in the simulator's contact set
(docs/design.md).  So the tangent rows of an unloaded contact are released when its gap at the end of
the step, ``dt (N v+ + phi/dt)`` (``dt w``, the LCP slack), exceeds ``contact_gap`` (1 um) or
its bodies move apart (``N v+ > consistency_tol``); the LCP is solved again (warm-started) with
the rows of the other contacts.  This is the release rule of idyn.sim's no-slip model (which
releases at ``w > 0``) up to ``contact_gap``, applied to other answers (see "The state rule"):
the manipulator's reference grasp places the
fingertips 0.34 um from the box (the PyBullet testbed reads it as touching, ``|phi| < 1 um``),
and fingertips resting on the box at such a gap hold it through their no-slip rows (the
no-slip grasp of Sec. 8.4.1), where ``w > 0`` would drop it the first step.
Fingers 50 um away hold nothing, whatever the friction.  Iteration: a released contact stays
released while unloaded and sticks again when loaded (as in the simulator; a sliding contact,
below, stays released), until the
released set repeats (at most ``m + 1`` solves, almost always one or two).  If it ends in a
cycle (releasing loads a contact, holding it unloads it: no answer satisfies both, the desired
motion is inconsistent with the model) on an answer with friction through an open gap, the
open contacts are released as well and that answer is kept: it loads no contact beyond what the
model allows, only lets a loaded contact slide without friction.

Sliding touchdown.  A contact whose tangential speed at the start of the step exceeds
``slide_speed`` (``IMPACT_SPEED_TOL`` = 1 cm/s) keeps no no-slip rows in that step.  Holding it
would stop the slide within one control period, and with the joint velocities prescribed
(eq. 38) the actuators would deliver that tangential impulse (hundreds of newtons on a foot
landing while sliding; docs/design.md).  In the no-slip world that stop is a plastic tangential impact, delivered by the
contact with the actuators passive, as for a touchdown (:mod:`idyn.controllers.impact`, which
handles the normal approach only); the controller models the contact without friction for the
step and holds it once it has stopped.  Touching contacts that slide are released too (limited
to arriving contacts, the rule would hold a foot sliding below the surface).  The price is in
grasps: fingertips on a slipping box are all released, and the normal-only LCP of fingers
closing on it can answer with huge cancelling impulses (docs/design.md).

The state rule (``release="state"``).  The release rule above reads the controller's answers,
whose torques change with the released set; the simulator reads its answers under the one
torque it is given.  Under given torques a touching contact can often be held and loaded, or
released and unloaded (sliding at zero load): both satisfy the rule, the no-slip limit of
Coulomb friction has no unique answer there.  The controller releases such a contact (held
with its own torques it would lift unloaded) and idyn.sim's loop, which starts from every
contact held, holds and loads it; most of the matched pair's prediction error comes from
such choices (docs/design.md).  A rule that reads the answer cannot be shared; with ``release="state"`` the held contacts are chosen from
the state at the start of the step, before any impulse: those touching and not moving apart,
``max(phi, phi + dt N v) <= contact_gap`` (:func:`holds_by_state`, ``v`` after the touchdown
impact); the others get no friction, and there is no iteration.  idyn.sim's ``noslip`` model
with ``hold="state"`` applies the same rule and, under the controller's torques, finds the
controller's answer (tests/test_noslip_state_rule.py; figures in docs/results.md).
A held contact sliding faster than
``slide_speed`` is first stopped by a passive tangential impulse (:func:`passive_tangential_stop`,
actuators passive as in a touchdown; the simulator, which holds it through the step, ends at
the same velocity: impulses along held rows do not change the answer of the held LCP).  The
price, and why ``"force"`` stays the default: a contact touching and at rest at the start of a
step keeps its rows to the end of it even if it lifts unloaded (friction through the opening
gap for one step), and in PyBullet, whose contacts are soft and chosen by the schedule, that
costs tracking (docs/design.md).

Options: ``consistency_tol`` (1e-6 m/s), ``check_tangential`` (False), ``warm_start`` (True),
``qp_backend``, ``tangent_dependence_tol`` (1e-3), ``contact_gap`` (1e-6 m), ``slide_speed``
(1e-2 m/s; ``inf`` holds every contact), ``release`` (``"force"`` or ``"state"``),
``consistent_desired`` (True), ``consistency_check`` (the common option, True: a solved LCP whose
answer is inconsistent goes to the consistency QP; False keeps it, and only a failed LCP does).
``out.info.details["held"]`` marks the contacts that kept their no-slip rows and ``["slip_released"]``
counts the others, ``["release_cycle"]`` says whether the release iteration ended in a
cycle, ``["slide_stopped"]`` counts the contacts the state rule stopped passively.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from idyn.contact import CONTACT_GAP
from idyn.errors import InvalidInputError, SolverError
from idyn.lcp import LCPResult
from idyn.lcp.find_indices import kept_tangent_rows
from idyn.lcp.lemke import checked_lemke
from idyn.lcp.ppm_contact import solve_projected
from idyn.lcp.qr import check_info
from idyn.qp import DEFAULT_BACKEND

from . import _noslip_kernel as kernel
from .base import Controller, OverBudget, Solution, register
from .dynamics import TANGENT_DEPENDENCE_TOL, Step
from .impact import IMPACT_SPEED_TOL
from .warm_start import ActiveSetMemory, contact_keys
# Sec. 4.5's consistency QP, shared by every controller (re-exported: the name's old home)
from .consistency import CONSISTENCY_FRICTION, impulse_energy, min_deviation  # noqa: F401

#: tangential speed (m/s) above which a contact keeps no no-slip rows in the step (``release="force"``)
#: or is first stopped by a passive tangential impulse (``release="state"``)
SLIDE_SPEED = IMPACT_SPEED_TOL
#: how the no-slip rows of a step's contacts are chosen: from the answer (``"force"``, default) or
#: from the state at the start of the step (``"state"``, idyn.sim's ``noslip`` model with
#: ``hold="state"``); see "Separating contacts" and "The state rule" in the module docstring
RELEASE_RULES = ("force", "state")
_NONE = np.zeros(0, dtype=np.intp)


@register
class LCPNoSlip(Controller):
    name = "lcp-noslip"
    merges_duplicate_contacts = False   # Algorithm 2 handles dependent contacts (Appendix F)
    consistency_default = True

    def __init__(self, model, *, consistency_tol: float = 1e-6, check_tangential: bool = False,
                 warm_start: bool = True, qp_backend: str = DEFAULT_BACKEND,
                 tangent_dependence_tol: float = TANGENT_DEPENDENCE_TOL, contact_gap: float = CONTACT_GAP,
                 slide_speed: float = SLIDE_SPEED, release: str = "force", consistent_desired: bool = True,
                 **common):
        super().__init__(model, **common)
        if not consistency_tol > 0:
            raise InvalidInputError(f"consistency_tol must be positive, got {consistency_tol}")
        self.consistency_tol, self.check_tangential = consistency_tol, check_tangential
        self.warm_start, self.qp_backend = warm_start, qp_backend
        if not 0.0 < tangent_dependence_tol < 1.0:
            raise InvalidInputError(f"tangent_dependence_tol must be in (0, 1), got {tangent_dependence_tol}")
        self.tangent_dependence_tol = tangent_dependence_tol
        if not (np.isfinite(contact_gap) and contact_gap >= 0):
            raise InvalidInputError(f"contact_gap must be finite and >= 0, got {contact_gap}")
        self.contact_gap = float(contact_gap)
        self.slide_speed = float(slide_speed)
        if release not in RELEASE_RULES:
            raise InvalidInputError(f"release must be one of {RELEASE_RULES}, got {release!r}")
        self.release, self.consistent_desired = release, bool(consistent_desired)
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
        if self.release == "state":
            held = holds_by_state(step, self.contact_gap)
            step = self._stop_sliding(step, held, info)
        else:
            held = None
        impulses, qd = self._lcp(step, contact_keys(contacts), info, held) if step.nu else (np.zeros(3 * m), None)
        R = step.directions(pyramid=False)
        tau, v_next = step.resolve(R.T.dot(impulses), qd=qd)
        wN = step.normal_speeds(v_next)
        if not step.complementarity_violation(impulses[:m], v_next, wN) <= self.consistency_tol:   # NaN fails
            info["status"] = "numerical_failure"   # whatever the solver's own test said
        sticking = step.jac.phi <= self.contact_gap if held is None else held
        if info.get("status", "solved") != "solved" or (self.consistency_check
                                                         and not self._consistent(step, v_next, wN, sticking)):
            if self.out_of_time("consistency qp"):   # no answer of the model without it
                raise OverBudget(f"budget spent before the consistency QP ({info.get('status', 'solved')})")
            impulses, tau, v_next = min_deviation(step, impulses, tau, v_next, info, self.qp_backend,
                                                  sticking=sticking)
        return Solution(tau, step.forces_from_impulses(impulses), v_next, info)

    # ------------------------------------------------------------------ steps 1-3
    def _lcp(self, step: Step, keys: list, info: dict, held: np.ndarray | None = None):
        """``(impulses [f_N; f_S; f_T], desired actuated velocity)`` of the no-slip LCP (steps 1-3
        of the module docstring; the velocity is ``step.qd`` made consistent with the kept rows,
        see "Consistent desired motion").

        Tangent rows are offered to Algorithm 1 for the ``held`` contacts if given (the state
        rule), else for the contacts not released: unloaded contacts whose gap is open at the
        end of the step (see "Separating contacts" in the module docstring).
        """
        m = step.m
        if held is not None:
            impulses, _, qd = self._lcp_with_rows(step, np.flatnonzero(held), keys, info)
            info["held"], info["slip_released"] = held, m - int(np.count_nonzero(held))
            return impulses, qd

        def solve(released):
            impulses, w, qd = self._lcp_with_rows(step, (~released).nonzero()[0], keys, info)
            return (impulses, qd), impulses, w, info["status"] == "solved"

        (impulses, qd), _ = release_rounds(step, self._sliding(step), solve, self.consistency_tol,
                                           self.contact_gap, self.out_of_time, info)
        return impulses, qd

    def _sliding(self, step: Step) -> np.ndarray:
        """Contacts whose tangential speed at the start of the step exceeds ``slide_speed``."""
        return sliding_contacts(step, self.slide_speed)

    def _stop_sliding(self, step: Step, held: np.ndarray, info: dict) -> Step:
        """The step after the passive tangential stop of the ``held`` contacts that slide faster
        than ``slide_speed`` (see "The state rule" in the module docstring); ``step`` itself if
        none does."""
        stopped = np.flatnonzero(held & self._sliding(step))
        if not stopped.size:
            return step
        info["slide_stopped"] = int(stopped.size)
        return passive_tangential_stop(step, stopped)

    def _kept_rows(self, step: Step, contacts: np.ndarray) -> tuple[np.ndarray, int]:
        """``(rows, s_count)``: the tangent rows of ``[N; S; T]`` Algorithm 1 keeps for the sorted
        ``contacts`` (:func:`idyn.lcp.find_indices.kept_tangent_rows`, the rows
        :meth:`Step.independent_tangents` keeps), ``S`` rows first, ``s_count`` of them."""
        if contacts.size == 0 or step.nu == 0:
            return _NONE, 0
        tol = self.tangent_dependence_tol
        kept, s_count, info = kept_tangent_rows(step.white, contacts, tol * tol)
        check_info(info, "geqp3")
        return kept, s_count

    def _lcp_with_rows(self, step: Step, contacts: np.ndarray, keys: list, info: dict):
        """Solve the LCP with no-slip rows offered for ``contacts`` only; ``(impulses, w_N, qd)``
        with ``qd`` the desired actuated velocity it was solved for (see "Consistent desired
        motion" in the module docstring)."""
        m = step.m
        kept, s_count = self._kept_rows(step, contacts)          # rows of [N; S; T]
        white = step.white
        # G A^-1 G^T's Cholesky factor (positive definite: Algorithm 1), b - G p and eq. 45's r
        U, residual, r = np.zeros((kept.size, kept.size)), np.empty(kept.size), np.empty(m)
        if not kernel.contact_free_motion(white, step.rows, kept, step.L, step.p, step.qd, step.jac.phi, step.dt,
                                          step.u_index, step.a_index, U, residual, r):
            raise np.linalg.LinAlgError("G A^-1 G^T is not positive definite")
        qd = step.qd
        if self.consistent_desired:
            qd, p, info["tangent_projection"] = consistent_desired(step, kept, contacts, U)
            if qd is not step.qd:       # b - G p and r for the moved desired motion
                kernel.contact_free_motion(white, step.rows, kept, step.L, p, qd, step.jac.phi, step.dt,
                                           step.u_index, step.a_index, U, residual, r)
        warm = self._active.recall(keys) if self.warm_start else _NONE
        # Algorithm 2 (ppm_contact) with W the inverse inertia constrained by the kept rows
        res, G = solve_projected(white, m, kept, r, warm)
        if not res.solved:          # see "Algorithm 2's dependent contacts" in the module docstring
            lemke = checked_lemke(G.T @ G, r)
            info["lcp_fallback"] = "lemke" if lemke.solved else "failed"
            if lemke.solved:
                res = LCPResult(lemke.z, lemke.w, lemke.status, res.pivots + lemke.pivots, 0.0,
                                np.flatnonzero(lemke.z > 0.0))
        self._active.store(keys, res.basis)
        info.update(status=res.status.value, pivots=info.get("pivots", 0) + res.pivots, lcp_w=res.w,
                    kept_tangent_rows=(s_count, kept.size - s_count))
        # Sec. 4.5: the equality multipliers are the tangential impulses
        impulses = np.zeros(3 * m)
        kernel.impulses(U, residual, white, kept, res.z, impulses)
        return impulses, res.w, qd

    # ------------------------------------------------------------------ step 4
    def _consistent(self, step: Step, v_next: np.ndarray, wN: np.ndarray, touching: np.ndarray) -> bool:
        """``wN = N v+ + phi/dt >= -tol`` and, with ``check_tangential``, no tangential slip of
        the ``touching`` contacts."""
        J, tol = step.jac, self.consistency_tol
        if wN.min() < -tol:
            return False
        return not self.check_tangential or bool(
            np.all(np.abs(J.S[touching] @ v_next) <= tol) and np.all(np.abs(J.T[touching] @ v_next) <= tol))


def sliding_contacts(step: Step, slide_speed: float) -> np.ndarray:
    """Contacts whose tangential speed at the start of the step exceeds ``slide_speed`` (none
    for ``inf``): "Sliding touchdown" in the module docstring."""
    if not np.isfinite(slide_speed):
        return np.zeros(step.m, dtype=bool)
    m, rv = step.m, step.rows.dot(step.v)
    return np.hypot(rv[m:2 * m], rv[2 * m:]) > slide_speed


def release_rounds(step: Step, sliding: np.ndarray, solve, consistency_tol: float, contact_gap: float,
                   out_of_time, info: dict):
    """The release rule ("Separating contacts" in the module docstring) around a no-slip model:
    ``solve(released)`` answers with the no-slip rows of the contacts not ``released`` and returns
    ``(answer, impulses, w, solved)`` (``impulses`` starting with the ``m`` normal impulses,
    ``w = N v+ + phi/dt``); starting from the ``sliding`` contacts released, an unloaded contact
    whose gap opens is released and a loaded one held again, until the released set repeats
    (a cycle ending on friction through an open gap releases those contacts too).  Returns
    ``(answer, released)`` and sets ``info["held"]``, ``["slip_released"]``, ``["release_cycle"]``.
    ``out_of_time(stage)`` (the controller's budget): True keeps the answer in hand."""
    m = step.m
    released = sliding.copy()
    seen = {released.tobytes()}                  # every released set tried, this one included
    gap_speed = step.jac.phi / step.dt
    opening = max(consistency_tol, contact_gap / step.dt)   # end-of-step gap, as speed
    unloaded_open, exhausted = released, False
    for _ in range(m + 1):
        answer, impulses, w, solved_ok = solve(released)
        if not solved_ok:
            break
        if out_of_time("release rounds"):
            unloaded_open = released        # the answer in hand is for `released`: keep it
            break
        update, unloaded_open = np.empty(m, dtype=bool), np.empty(m, dtype=bool)
        changed = kernel.release_update(impulses, w, gap_speed, opening, consistency_tol, sliding, released,
                                        update, unloaded_open)
        if update.tobytes() in seen:                                  # converged, or a cycle
            info["release_cycle"] = changed
            break
        solved, released = released, update
        seen.add(released.tobytes())
    else:   # m + 1 new sets without a repeat (the rule re-holds loaded contacts): the answer
        info["release_cycle"] = exhausted = True   # in hand is the last set solved, not `released`
    if (unloaded_open & ~released).any():   # a cycle ended on friction through an open gap:
        released = released | unloaded_open   # release those too and keep that answer
        answer = solve(released)[0]
    elif exhausted:
        released = solved                     # the label of the answer returned
    info["held"], info["slip_released"] = ~released, int(np.count_nonzero(released))
    return answer, released


def holds_by_state(step: Step, contact_gap: float) -> np.ndarray:
    """The contacts the state rule holds: touching at the start of the step and not moving apart
    beyond ``contact_gap`` over it at their start velocity, ``max(phi, phi + dt N v) <=
    contact_gap`` (``v`` after the touchdown impact; the rule of idyn.sim's ``noslip`` model with
    ``hold="state"``)."""
    phi = step.jac.phi
    return np.maximum(phi, phi + step.dt * step.jac.N.dot(step.v)) <= contact_gap


def passive_tangential_stop(step: Step, contacts: np.ndarray) -> Step:
    """The step from the velocity after the impulse that stops the tangential motion of
    ``contacts`` with the actuators passive: ``v' = v + M^-1 G^T mu`` with ``G = [S; T]`` of
    those contacts and ``G v' = 0`` (the least kinetic energy change that does it, the plastic
    tangential impact of no-slip contact).  As for a touchdown (:mod:`idyn.controllers.impact`), the
    desired end velocity keeps its increment over the start velocity (``qd - v_a``), ``h`` stays
    that of the measured velocity, and the impulse is contact force of the step (``Step.impact``).
    """
    m, dt = step.m, step.dt
    G = np.concatenate((step.rows[m + contacts], step.rows[2 * m + contacts]))
    MiGt = cho_solve(cho_factor(step.M, lower=True, check_finite=False), G.T, check_finite=False)
    mu = -np.linalg.lstsq(G @ MiGt, G @ step.v, rcond=None)[0]    # G M^-1 G^T may be singular
    dv = MiGt @ mu
    forces = np.zeros((m, 3))
    forces[contacts, 1], forces[contacts, 2] = mu[:contacts.size] / dt, mu[contacts.size:] / dt
    return dataclasses.replace(
        step, v=step.v + dv, qd=step.qd + dv[step.a], p=step.p + dv[step.u],
        v_measured=step.v if step.v_measured is None else step.v_measured,
        impact=forces if step.impact is None else step.impact + forces, _free=None)


def consistent_desired(step: Step, kept: np.ndarray, contacts: np.ndarray, U: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, float]:
    """``(qd, p, |qd - step.qd|)``: the desired actuated end velocity closest to ``step.qd``
    (the Euclidean measure of eq. 46) under which the tangent rows of ``contacts`` that Algorithm
    1 left out of ``kept`` (rows of ``[N; S; T]``) hold whenever the kept ones do, and ``p`` of
    eq. 93 for it (``step.qd`` itself when no row was left out).  ``U`` is the upper Cholesky
    factor of the kept rows' ``G A^-1 G^T``.

    A dropped row ``g_d`` is, on the unactuated columns and in the ``A^-1`` metric, the
    combination ``C_d^T G_K`` of the kept rows up to ``tangent_dependence_tol``.  With the kept
    rows held, ``g_d v+ = (g_d,a - C_d^T G_K,a) qd`` up to that tolerance, so the rows are
    implied (Appendix E) exactly when ``B qd = 0`` with ``B = G_D,a - C^T G_K,a``; the minimal
    change is ``-B^+ B qd``, and ``p = v_u + A^-1 (-dt h_u - B_M (qd - v_a))`` moves by
    ``-A^-1 B_M delta``.  See "Consistent desired motion" in the module docstring.
    """
    m, offered = step.m, contacts.tolist()
    left = {i + m for i in offered}.union([i + 2 * m for i in offered]).difference(kept.tolist())
    if not left:
        return step.qd, step.p, 0.0
    dropped = np.array(sorted(left), dtype=np.intp)     # few rows: Python sets, not boolean masks
    B, delta = np.empty((dropped.size, step.qd.size)), np.empty(step.qd.size)
    if not kernel.tangent_consistency(U, step.white, step.rows, kept, dropped, step.a_index, step.qd, B, delta):
        delta = -np.linalg.lstsq(B, B @ step.qd, rcond=None)[0]     # B's rows dependent: its pseudo-inverse
    return step.qd + delta, step.p - step.solve_A(step.B @ delta), float(np.linalg.norm(delta))
