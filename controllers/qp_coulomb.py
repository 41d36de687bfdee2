"""ID_QP,mu (paper Sec. 6): maximal-dissipation contact prediction with Coulomb friction.

``qp-coulomb`` is the paper's two-stage controller (Stage I, then the Stage II torque smoothing
that removes the torque chatter of indeterminate contact, Fig. 15); ``qp-coulomb-1stage`` is the
regularised one-stage variant of Sec. 6.1.  The mathematics is in :mod:`idyn.controllers.dissipation`.

Options (besides the common ones of :class:`idyn.controllers.Controller`):
  ``stage2`` (True; False gives "Stage I alone", the indeterminate controller of Fig. 15),
  ``stage1_solver`` ("lemke": the KKT LCP as the authors did, footnote 1; or "qp"),
  ``ridge`` (1e-6, Stage II tie-break), ``qp_backend`` (:mod:`idyn.qp`: "daqp", bounded, the
  default; "quadprog", unbounded; or "cvxopt"),
  ``objective`` ("contact-work": the contact impulses' maximal dissipation; "kinetic-energy":
  eqs. 95-98 literally; see "Which energy" in :mod:`idyn.controllers.dissipation`),
  ``separation_weight`` (1.0 with Coulomb friction, 0 under no slip: Stage I prices the
  separation speed of touching contacts like the kinetic energy of this many robot masses; 0 is
  the relaxation as published, whose sliding loaded feet are predicted to lift off; see
  "Separation of touching contacts" in :mod:`idyn.controllers.dissipation`),
  ``stage2_objective`` ("torque": Stage II minimises the whole torque |tau|^2, as the authors'
  code does; "correction": eqs. 105-107 as printed, |y|^2 with y = tau - f_ID, eq. 87; see
  :func:`idyn.controllers.dissipation.contact_free_torque`),
  ``gap_rate`` (False, as published: True measures the normal velocity of each contact with a
  friction bound in Stage I's objective as its end-of-step gap rate, so contacts at a distance are
  loaded only to close their gap; see "Contacts at a distance" in :mod:`idyn.controllers.dissipation`),
  ``warm_start`` (True: Stage I's Lemke tries the previous step's basis first, remembered by
  contact identity, :mod:`idyn.controllers.warm_start`, on LCPs of at least
  :data:`~idyn.controllers.warm_start.MIN_WARM_VARIABLES` variables; a cold start when it fails, as the
  authors warm-start their LCP solver for Fig. 19; ``info.details["stage1_start"]`` says which;
  and Stage II's QP starts DAQP's working set from the rows active at the previous step's answer),
  ``consistency_check`` (True; the common option, Sec. 4.5: when Stage I's answer closes a contact
  beyond its gap, ``N v+ < -phi/dt``, which happens when Stage I is infeasible for the command and
  regularised, ``qd_des`` moves minimally to a command for which Stage I is feasible, eqs. 46-51
  with the Coulomb pyramid in place of eqs. 48-49 (:mod:`idyn.controllers.consistency`), and
  Stage I runs again; ``info.details``: ``"consistency_violation"`` (m/s), ``"desired_deviation"``
  (rad/s), ``"consistency_qp"``, ``"inconsistent_stage1_status"``),
  ``command_effort`` (True: after such a move Stage II minimises ``|tau - e|^2`` instead of
  ``|tau|^2``, ``e`` the torque the removed part of the command asks for,
  :func:`idyn.controllers.consistency.command_effort`: among the impulses Stage I leaves free, the
  internal squeeze that effort produces against a rigid contact; without it a grasp's squeeze
  is the least one, friction at the cone's limit, and the box slips out; docs/results.md; with
  ``stage2_objective="correction"`` the two add: ``|tau - f_ID - e|^2``, f_ID of the commanded
  motion).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from idyn.errors import InvalidInputError
from idyn.qp import DEFAULT_BACKEND

from .base import Controller, Solution, register
from .consistency import CONSISTENCY_TOL, command_effort, consistency_violation, consistent_step
from .dissipation import (OBJECTIVES, STAGE2_OBJECTIVES, build_stage_one, contact_free_torque, new_outputs,
                          price_separation, solve_one_stage, solve_priced, solve_stage_two, stage_one_layout,
                          stage_two_layout)
from .dissipation import stage_two_by_dual
from .dynamics import Step
from .warm_start import MIN_WARM_VARIABLES, BasisMemory, contact_keys


class DissipationController(Controller):
    """Shared body of the Sec. 6 controllers; subclasses fix the friction model."""

    #: True: Coulomb pyramid (eq. 101) for contacts with finite mu; False: mu = inf everywhere
    coulomb: ClassVar[bool] = True
    consistency_default = True
    #: Algorithm 1's dependence tolerance of the no-slip equalities (eqs. 40-41); None: no such rows
    no_slip_tol: float | None = None
    #: without Coulomb friction: the cone coefficient of the contacts held by no-slip rows (inf: none)
    held_mu: float = np.inf

    def __init__(self, model, *, stage2: bool = True, stage1_solver: str = "lemke",
                 ridge: float = 1e-6, qp_backend: str = DEFAULT_BACKEND,
                 objective: str = "contact-work", separation_weight: float | None = None,
                 gap_rate: bool = False, warm_start: bool = True, command_effort: bool = True,
                 stage2_objective: str = "torque", **common):
        super().__init__(model, **common)
        if not isinstance(command_effort, (bool, np.bool_)):
            raise InvalidInputError(f"command_effort must be True or False, got {command_effort!r}")
        self.command_effort = bool(command_effort)
        if stage2_objective not in STAGE2_OBJECTIVES:
            raise InvalidInputError(f"stage2_objective must be one of {STAGE2_OBJECTIVES}, got {stage2_objective!r}")
        self.stage2_objective = stage2_objective
        if separation_weight is None:   # priced where the cone makes the relaxation buy friction
            separation_weight = 1.0 if self.coulomb else 0.0   # with normal impulse, not under no slip
        if not (np.isfinite(separation_weight) and separation_weight >= 0):
            raise InvalidInputError(f"separation_weight must be finite and >= 0, got {separation_weight}")
        self.separation_weight = float(separation_weight)
        self._separation_mass = self.separation_weight * model.total_mass   # kg
        if objective not in OBJECTIVES:
            raise InvalidInputError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        self.objective = objective
        if not isinstance(gap_rate, (bool, np.bool_)):
            raise InvalidInputError(f"gap_rate must be True or False, got {gap_rate!r}")
        self.gap_rate = bool(gap_rate)
        if stage1_solver not in ("lemke", "qp"):
            raise InvalidInputError(f"stage1_solver must be 'lemke' or 'qp', got {stage1_solver!r}")
        if not (np.isfinite(ridge) and ridge > 0):
            raise InvalidInputError(f"ridge must be positive, got {ridge}")
        self.stage2, self.stage1_solver, self.ridge, self.qp_backend = stage2, stage1_solver, ridge, qp_backend
        #: the work arrays of Stage I and II, made once per problem size
        self._buffers: dict = {}
        if not isinstance(warm_start, (bool, np.bool_)):
            raise InvalidInputError(f"warm_start must be True or False, got {warm_start!r}")
        self.warm_start = bool(warm_start)
        #: Stage I's last Lemke basis and Stage II's last active rows, by contact identity
        self._basis, self._active = BasisMemory(), BasisMemory()

    def reset(self) -> None:
        super().reset()
        self._basis.reset()
        self._active.reset()

    def _solve(self, q, v, vdot, contacts) -> Solution:
        """One step: the reduced dynamics (:meth:`idyn.controllers.dynamics.StepDynamics.update`),
        Stage I's data (:func:`idyn.controllers.dissipation.build_stage_one`), Stage I with its
        separation price (:meth:`_stage_one`), Stage II (with the torques of its answer), then
        :meth:`_finish`."""
        step = self._step(q, v, vdot, contacts)
        if step.m == 0:
            tau, v_next = step.resolve(np.zeros(self.model.nv))
            return Solution(tau, np.zeros((0, 3)), v_next)
        prob, z, info, keys = self._contact_model(step, contacts)
        if self.consistency_check and self.no_slip_tol is None:
            step, prob, z, info = self._consistent(step, prob, z, info)
        effort = info.pop("effort", None)      # of a command the consistency check moved
        outputs = None
        if self.stage2 and not self.out_of_time("stage2"):   # Stage I's answer stands without it
            outputs = new_outputs(step)
            rows = None
            if self.warm_start and prob.k + prob.cone.shape[0] >= MIN_WARM_VARIABLES:
                rows = stage_two_layout(prob, prob.mu)
                keys = contact_keys(contacts) if keys is None else keys
                prob.stage_two_active = self._active.recall(keys, *rows)
            # the torque Stage II measures from: the effort of a command the consistency check moved
            # (command_effort), plus eqs. 105-107's f_ID under stage2_objective="correction" (f_ID
            # is linear in the command: f_ID of the moved step plus the removed part's effort is
            # the commanded one's)
            offset = effort
            if self.stage2_objective == "correction":
                offset = contact_free_torque(step) + (0.0 if effort is None else effort)
            z, stage2 = solve_stage_two(step, prob, z, self.ridge, self.qp_backend, outputs, self._buffers,
                                        self.out_of_time, offset)
            info.update(stage2)
            if rows is not None and prob.stage_two_active is not None:
                self._active.store(keys, *rows, prob.stage_two_active)
            elif self.warm_start:
                self._active.reset()
        info["unenforceable_contacts"] = prob.unenforceable
        if self.no_slip_tol is not None:
            info["kept_tangent_rows"] = prob.kept_tangent_rows
        return self._finish(step, prob, z, info, outputs)

    def _contact_model(self, step: Step, contacts) -> tuple:
        """``(prob, z, info, keys)``: Stage I's problem and answer (:meth:`_stage_one_solved`)."""
        return self._stage_one_solved(step, contacts)

    def _stage_one_solved(self, step: Step, contacts, held: np.ndarray | None = None) -> tuple:
        """``(prob, z, info, keys)``: Stage I's data (:func:`idyn.controllers.dissipation.build_stage_one`,
        no-slip rows for the ``held`` contacts if given), its answer (:meth:`_stage_one`, warm-started
        by contact identity) and the contact keys (None if not made)."""
        prob = build_stage_one(step, self.coulomb, self.no_slip_tol, self.objective, self.gap_rate,
                               lcp=self.stage1_solver == "lemke", buffers=self._buffers, held=held,
                               held_mu=self.held_mu)
        layout = keys = None
        if (self.warm_start and self.stage1_solver == "lemke" and not prob.E.shape[0]
                and prob.k + prob.G.shape[0] >= MIN_WARM_VARIABLES):
            keys, layout = contact_keys(contacts), stage_one_layout(prob, prob.mu)
            if layout is not None:
                prob.warm = self._basis.recall(keys, *layout)
        z, info = self._stage_one(step, prob)
        if layout is not None and prob.warm is not None:
            self._basis.store(keys, *layout, prob.warm)
        elif self.warm_start:
            self._basis.reset()
        return prob, z, info, keys

    def _consistent(self, step: Step, prob, z: np.ndarray, info: dict):
        """Sec. 4.5 for Coulomb contacts (:mod:`idyn.controllers.consistency`): when Stage I's
        answer ``z`` closes a contact beyond its gap (Stage I was infeasible for ``qd_des`` and
        regularised), move ``qd_des`` minimally to where Stage I is feasible and solve Stage I
        again for the moved step; ``(step, prob, z, info)`` of the answer that stands."""
        _, v_next, _ = step.pyramid_outputs(prob.R, z)
        closing = consistency_violation(step, v_next)
        if closing <= CONSISTENCY_TOL or self.out_of_time("consistency"):
            return step, prob, z, info
        checked = {"consistency_violation": closing}
        moved = consistent_step(step, checked, self.qp_backend, coulomb=np.ones(step.m, dtype=bool))
        if moved is None or self.out_of_time("consistent stage1"):
            info.update(checked)
            return step, prob, z, info
        prob2 = build_stage_one(moved, self.coulomb, self.no_slip_tol, self.objective, self.gap_rate,
                                lcp=self.stage1_solver == "lemke")
        z2, info2 = self._stage_one(moved, prob2)
        if self.command_effort:
            info2["effort"] = command_effort(step, moved)
        info2.update(checked, inconsistent_stage1_status=info.get("stage1_status", info.get("status")))
        return moved, prob2, z2, info2

    def _stage_one(self, step: Step, prob) -> tuple[np.ndarray, dict]:
        """Stage I with the separation of the contacts that separate under load priced
        (:func:`idyn.controllers.dissipation.solve_priced`)."""
        return solve_priced(step, prob, self._separation_mass, self.stage1_solver, self.qp_backend,
                            out_of_time=self.out_of_time)

    def _warm_fallbacks(self, state, desired, contacts) -> None:
        """Stage I re-solved after a separation price (:func:`~idyn.controllers.dissipation.solve_priced`:
        a contact loaded yet separating), whose KKT LCP update is called from Python; and Stage II
        by its dual, which only many contacts (or, for qp-noslip, many released ones) reach."""
        q, v, checked = self._check(state, desired, contacts)
        step = self._step(q, v, np.zeros(self.model.nv), checked)
        prob = build_stage_one(step, self.coulomb, self.no_slip_tol, self.objective, self.gap_rate,
                               lcp=self.stage1_solver == "lemke", buffers=self._buffers)
        price_separation(step, prob, np.zeros(1, dtype=np.intp), 1.0)
        z, _ = self._stage_one(step, prob)
        if self.stage2 and prob.W.shape[1]:
            stage_two_by_dual(step, prob, z, self.ridge, prob.mu if prob.cone.shape[0] else np.zeros(0), None)

    def _finish(self, step: Step, prob, z: np.ndarray, info: dict, outputs: tuple | None = None) -> Solution:
        """Torques and forces from the impulses ``z`` (eq. 79), unless ``outputs`` has them."""
        tau, v_next, forces = step.pyramid_outputs(prob.R, z) if outputs is None else outputs
        return Solution(tau, forces, v_next, info)


@register
class QPCoulomb(DissipationController):
    """ID_QP,mu: Stage I + Stage II (paper Sec. 6.2)."""

    name = "qp-coulomb"


@register
class QPCoulombOneStage(DissipationController):
    """ID_QP,mu one-stage (Sec. 6.1): Stage I with a regularised, strictly convex Hessian.

    Option ``regularization`` (1e-6): ``eps = regularization * max(diag Z^T A Z)``.
    """

    name = "qp-coulomb-1stage"

    def __init__(self, model, *, regularization: float = 1e-6, **options):
        super().__init__(model, stage2=False, stage1_solver="qp", **options)
        if not (np.isfinite(regularization) and regularization > 0):
            raise InvalidInputError(f"regularization must be positive, got {regularization}")
        self.regularization = regularization

    def _stage_one(self, step, prob):
        return solve_priced(step, prob, self._separation_mass, self.stage1_solver, self.qp_backend,
                            lambda p: solve_one_stage(p, self.regularization, self.qp_backend, self.out_of_time),
                            out_of_time=self.out_of_time)
