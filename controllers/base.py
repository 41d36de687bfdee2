"""The controller contract (docs/conventions.md) and the registry ``make`` / ``available``.

Every controller is built by ``controllers.make(name, model, **options)`` and used as::

    ctrl.reset()
    out = ctrl.compute(RobotState(q, v, t), Desired(q_des, v_des, vdot_des), contacts)
    out.tau              # (na,) actuator torques, always finite
    out.contact_forces   # (len(contacts), 3) [normal, s, t] in newtons, each contact's frame
    out.info             # ControlInfo: status, pivots, fallback, solve_time, v_next, ...

A controller imports no simulator: the loop (PyBullet, idyn.sim, MuJoCo, hardware) supplies the
state and the geometric contact candidates and applies ``tau``.

Common options of every controller: ``dt`` (control period, 1e-3 s), ``feedback`` (True: add the
shared PID error feedback of :mod:`idyn.controllers.feedback` to the desired acceleration; False:
feed-forward only), ``kp``, ``kv``, ``ki``, ``integral_limit`` (its gains),
``penetration_recovery`` (fraction of a negative gap corrected per step, default 0: see
:mod:`idyn.controllers.dynamics`), ``impact`` (True: a contact closing faster than
``impact_speed_tol`` = 1e-2 m/s first receives the passive touchdown impulse of
:mod:`idyn.controllers.impact`; False: the paper's literal models, whose prescribed joint velocities
then absorb the impact), ``merge_duplicates`` (True: exactly duplicated contacts are solved once
and share the force equally, :mod:`idyn.controllers.duplicates`; False: the solver gets every copy,
as the paper's controllers did in its timing experiment, Sec. 8.4.2 and Fig. 19; ``lcp-noslip``
and the controllers that predict no forces never merge).

``consistency_check`` (the paper's Sec. 4.5, eqs. 46-51, :mod:`idyn.controllers.consistency`):
when the model's answer closes a contact beyond its gap (``N v+ < -phi/dt``, an inconsistent
desired motion), the desired velocity is moved minimally to a consistent one; default per
controller (:attr:`Controller.consistency_default`: on for every contact-predicting controller
but ``lcp-coulomb``, whose LCP answers are consistent by construction; the controllers without a
contact model, ``pid`` and the sensed-force ID, have none and reject True).

``budget`` (seconds of wall time per :meth:`Controller.compute` call, default
:data:`DEFAULT_BUDGET`; None: unbounded) and ``plausibility_margin`` (the margin of the impulse bound,
:data:`PLAUSIBILITY_MARGIN`; None: no bound) are common too: see "Bounded step" and
"Plausibility" below.

*Bounded step.*  Compiled solvers cannot be interrupted, so the budget is enforced between
stages: a controller asks :meth:`Controller.out_of_time` before each stage that is a refinement
or a retry (Stage II, another separation-pricing round, the regularised-Lemke and QP retries of
Stage I, every further attempt of a QP's ridge schedule (:func:`idyn.qp.solve_built`'s
``stop``), lcp-coulomb's regularised Lemke runs, one-stage fallback and tie-break, lcp-noslip's
further release rounds and consistency QP) and skips it
once the budget is spent; ``details["budget_skipped"]`` names what was skipped.  When no contact
answer exists yet, the step ends with ``Status.OVER_BUDGET`` and the contact-free fallback.
Every solver inside a stage has an iteration or pivot cap (Lemke, ppm, DAQP: :mod:`idyn.qp`), so
each stage is bounded too.  What is guaranteed: no stage *starts* after the budget is spent, so a
call returns within ``budget`` plus the longest single stage started before it (plus the
fallback, tens of microseconds); the fuzzer measures that margin (``docs/safety.md``).  It is
not a hard real-time guarantee (the OS, a cold cache, a garbage collection still add their time).

*Plausibility.*  A step's predicted contact impulses must not exceed the physical bound
:meth:`Controller.impulse_bound` (what could stop the robot's motion, commanded joint motion
included, plus gravity over the step, times ``plausibility_margin``); an answer beyond it is
replaced by the contact-free fallback with ``Status.IMPLAUSIBLE``.

``out.info`` is a :class:`ControlInfo`: how the step's solve finished (an :class:`idyn.Status`,
the enum the LCP and QP solvers report too), the fallback that produced ``tau`` if any, pivots,
solve time, the predicted velocity, the touchdown impact forces and the controller's own extras.
"""
from __future__ import annotations

import operator
import time
from abc import ABC, ABCMeta, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from idyn import Contact, RobotModel, validation
from idyn.errors import InvalidInputError, NonFiniteError
from idyn.lcp.inputs import finite_data
from idyn.state import Desired, RobotState
from idyn.status import Status

from ._reduced_kernel import all_finite
from .duplicates import merge_duplicates, split_forces
from .dynamics import Step, StepDynamics
from .feedback import DEFAULT_GAINS, ErrorFeedback
from .impact import IMPACT_SPEED_TOL

#: default time budget of a step (s).  Generous on purpose: 50 control periods at 1 kHz, so that
#: no answer of normal operation depends on the machine's load (step times of the trots and of
#: the fuzz states: docs/safety.md); a real-time loop sets ``budget=dt`` and measures that its
#: controller meets it
DEFAULT_BUDGET = 0.05

#: default margin of the plausibility bound (:meth:`Controller.impulse_bound`): the bound is
#: already the impulse that could stop the whole robot and drive its joints to the command, so
#: contact impulses 10 times beyond it are no prediction of a rigid contact model but a
#: numerical artefact (internal forces between contacts can exceed the net impulse, which is why
#: there is a margin; docs/safety.md has the measured ratios of normal operation)
PLAUSIBILITY_MARGIN = 10.0


@dataclass(frozen=True, slots=True)
class ControlInfo:
    """What a control step reports besides its torques and forces (:attr:`ControlOutput.info`).

    Attributes:
        controller: the registry name of the controller that ran.
        status: how the step's solve finished. ``Status.SOLVED``: ``tau`` comes from a solved
            contact model, the controller's own or the one named by ``fallback``;
            ``Status.REGULARIZED``: from that model with its LCP regularised (``M + eps I``,
            ``details["regularization"]``). Otherwise why
            the controller's model failed (an LCP or QP status, ``FAILED`` when it raised,
            ``NON_FINITE`` when its answer was not finite, ``IMPLAUSIBLE`` when its impulses
            exceeded :meth:`Controller.impulse_bound`, ``OVER_BUDGET`` when the budget was spent
            before it had an answer), and ``fallback`` names what produced ``tau``.
        pivots: pivots (LCP) or active-set iterations (QP) of the main solve, 0 if none.
        fallback: None, or the name of the fallback that produced ``tau`` and ``contact_forces``
            (``"no-contact-id"``: contact-free inverse dynamics, eqs. 88-90 with no impulses,
            and zero forces; ``"qp-coulomb-1stage"``: lcp-coulomb's complementarity-free model;
            ``"min-deviation"``: lcp-noslip's consistency QP, eqs. 46-51, after its LCP failed).
        solve_time: seconds of wall time the whole :meth:`Controller.compute` call took.
        v_next: the generalised velocity predicted at the end of the step (nv,), or None for a
            controller that predicts none.
        impact_forces: None, or after a touchdown impact (:mod:`idyn.controllers.impact`) the (m, 3)
            part of ``contact_forces`` (N, [normal, s, t]) due to the impact impulse.
        merged_contacts: how many exactly duplicated contacts were solved as one copy
            (:mod:`idyn.controllers.duplicates`), 0 if none.
        error: None, or the message of the exception the controller's model raised.
        details: the controller's own extras, by name (read, do not modify), e.g. Stage I and II
            statuses (``"stage1_status"``, ``"stage2_status"``), ``"kept_tangent_rows"``,
            ``"unenforceable_contacts"``, ``"separation_priced"``, lcp-noslip's and qp-noslip's ``"held"``,
            ``"slip_released"`` and ``"consistency_qp"``; each controller's module documents its
            own. Their statuses are strings (the sub-solves' ``Status.value``).
    """

    controller: str
    status: Status
    pivots: int = 0
    fallback: str | None = None
    solve_time: float = 0.0
    v_next: np.ndarray | None = None
    impact_forces: np.ndarray | None = None
    merged_contacts: int = 0
    error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ControlOutput:
    """What :meth:`Controller.compute` returns."""

    tau: np.ndarray
    contact_forces: np.ndarray
    info: ControlInfo


@dataclass
class Solution:
    """What a controller's ``_solve`` returns: torques, forces and its own info entries.

    :meth:`Controller.compute` turns ``info`` into the step's :class:`ControlInfo`: the keys
    ``"status"`` (an :class:`idyn.Status` or its value; default SOLVED), ``"pivots"``,
    ``"fallback"`` and ``"error"`` become its fields, every other key goes to its ``details``.
    """

    tau: np.ndarray
    contact_forces: np.ndarray
    v_next: np.ndarray | None
    info: dict = field(default_factory=dict)


class _WarmedUp(ABCMeta):
    """Builds a controller, then warms it up (:meth:`Controller.warm_up`) unless the keyword
    ``warm_up=False`` is given: its kernels are ready before any loop calls it."""

    def __call__(cls, *args, warm_up: bool = True, **options):
        controller = super().__call__(*args, **options)
        if warm_up:
            controller.warm_up()
        return controller


class Controller(ABC, metaclass=_WarmedUp):
    """Base class: validation, error feedback, timing and the never-non-finite guarantee.

    Construction runs :meth:`warm_up` (keyword ``warm_up=False`` skips it)."""

    #: registry name
    name: ClassVar[str] = ""
    #: whether ``contact_forces`` are predictions (False for PID and the sensed-force ID)
    predicts_contact_forces: ClassVar[bool] = True
    #: whether the model may solve exactly duplicated contacts once and split their force
    #: equally (:mod:`idyn.controllers.duplicates`; exact for every model that sets it); the
    #: ``merge_duplicates`` option turns it off per instance
    merges_duplicate_contacts: ClassVar[bool] = True
    #: the default of the ``consistency_check`` option (Sec. 4.5, :mod:`idyn.controllers.consistency`);
    #: None for a controller without a contact model to check
    consistency_default: ClassVar[bool | None] = None

    def __init__(self, model: RobotModel, *, dt: float = 1e-3, feedback: bool = True,
                 kp=DEFAULT_GAINS["kp"], kv=DEFAULT_GAINS["kv"], ki=DEFAULT_GAINS["ki"],
                 integral_limit: float | None = None, penetration_recovery: float = 0.0,
                 impact: bool = True, impact_speed_tol: float = IMPACT_SPEED_TOL,
                 merge_duplicates: bool = True, budget: float | None = DEFAULT_BUDGET,
                 plausibility_margin: float | None = PLAUSIBILITY_MARGIN, consistency_check: bool | None = None):
        if not isinstance(model, RobotModel):
            raise InvalidInputError(f"model must be an idyn.RobotModel, got {type(model).__name__}")
        if not (np.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"dt must be positive and finite, got {dt}")
        self.model = model
        self.dt = float(dt)
        if budget is not None and not (isinstance(budget, (int, float, np.floating, np.integer))
                                       and not isinstance(budget, bool) and budget > 0):
            raise InvalidInputError(f"budget must be a positive number of seconds or None, got {budget!r}")
        #: seconds of wall time per compute call (inf: unbounded); see "Bounded step"
        self.budget = float("inf") if budget is None else float(budget)
        if plausibility_margin is not None and not (
                isinstance(plausibility_margin, (int, float, np.floating, np.integer))
                and not isinstance(plausibility_margin, bool) and plausibility_margin >= 1):
            raise InvalidInputError(f"plausibility_margin must be a number >= 1 or None, got {plausibility_margin!r}")
        #: margin of :meth:`impulse_bound` (inf: no bound)
        self.plausibility_margin = float("inf") if plausibility_margin is None else float(plausibility_margin)
        self._bounded = plausibility_margin is not None
        # the bound's constants (the model is immutable): m and m |g| dt
        self._mass = model.total_mass
        self._weight_impulse = self._mass * float(np.linalg.norm(model.gravity)) * self.dt
        self._deadline = float("inf")
        self._last_step: Step | None = None
        self._skipped: list[str] = []
        if not 0.0 <= penetration_recovery <= 1.0:
            raise InvalidInputError(f"penetration_recovery must be in [0, 1], got {penetration_recovery}")
        if not (np.isfinite(impact_speed_tol) and impact_speed_tol >= 0):
            raise InvalidInputError(f"impact_speed_tol must be finite and >= 0, got {impact_speed_tol}")
        if not isinstance(merge_duplicates, (bool, np.bool_)):
            raise InvalidInputError(f"merge_duplicates must be a bool, got {merge_duplicates!r}")
        #: whether :meth:`compute` merges exact duplicates (the option, where the model allows it)
        self.merge_duplicates = bool(merge_duplicates) and self.merges_duplicate_contacts \
            and self.predicts_contact_forces
        self.dynamics = StepDynamics(model, self.dt, penetration_recovery, impact, impact_speed_tol)
        self._shapes = ((model.nq,), (model.nv,), (model.na,), (model.na,), (model.na,))   # of _check's vectors
        self._checked: list = []     # the contacts _check last accepted
        self.feedback = ErrorFeedback(model, kp, kv, ki, integral_limit) if feedback else None
        if consistency_check is not None and not isinstance(consistency_check, (bool, np.bool_)):
            raise InvalidInputError(f"consistency_check must be True, False or None, got {consistency_check!r}")
        if consistency_check and self.consistency_default is None:
            raise InvalidInputError(f"{self.name} predicts no contact forces: it has no consistency check")
        #: whether Sec. 4.5's consistency check runs (:mod:`idyn.controllers.consistency`)
        self.consistency_check = bool(self.consistency_default if consistency_check is None else consistency_check)

    # ------------------------------------------------------------------ contract
    def warm_up(self) -> None:
        """Run every kind of step once on synthetic states of the model, so that no compiled
        kernel is compiled or loaded inside the caller's loop (:mod:`idyn.controllers.warm_up`), then
        :meth:`reset`."""
        from .warm_up import warm_up
        warm_up(self)

    def reset(self) -> None:
        """Forget all history (integral of the error, warm starts, sensed forces)."""
        if self.feedback is not None:
            self.feedback.reset()

    def compute(self, state: RobotState, desired: Desired, contacts: Sequence[Contact] = ()) -> ControlOutput:
        """Torques for one control step (see the module docstring)."""
        t0 = time.perf_counter()
        q, v, contacts = self._check(state, desired, contacts)
        vdot = self.command(q, v, desired)
        self._deadline, self._last_step, self._skipped = t0 + self.budget, None, []
        status, pivots, fallback, error, details = Status.SOLVED, 0, None, None, {}
        merged_count, impact = 0, None
        sol = None
        merged = self.merge_duplicates and len(contacts) > 1
        if merged:
            solved_for, owner, copies = merge_duplicates(contacts)
            merged = len(solved_for) < len(contacts)
            merged_count = len(contacts) - len(solved_for)
        try:
            sol = self._solve(q, v, vdot, solved_for if merged else contacts)
        except OverBudget as exc:
            status, error = Status.OVER_BUDGET, str(exc)
        except Exception as exc:  # noqa: BLE001 -- inputs are validated above: any failure here
            # is numerical (or a solver bug) and must not reach the control loop; it is reported
            status, error = Status.FAILED, f"{type(exc).__name__}: {exc}"
        if sol is not None:
            if sol.info:
                details = sol.info    # the step's own dict: its four fields are taken out
                status = self._status(details.pop("status", Status.SOLVED))
                pivots = int(details.pop("pivots", 0))
                fallback = details.pop("fallback", None)
                error = details.pop("error", None)
            if merged:
                sol.contact_forces = split_forces(sol.contact_forces, owner, copies)
            impact = self.dynamics.last_impact if self.predicts_contact_forces else None
            if impact is not None and merged:   # included in contact_forces; reported for the residual checks
                impact = split_forces(impact, owner, copies)
        if sol is None or not all_finite(sol.tau, sol.contact_forces.ravel(), _NOTHING, _NOTHING, _NOTHING):
            sol = self._fallback(q, v, vdot, len(contacts))
            fallback, impact = "no-contact-id", None     # the fallback's forces hold no impact
            if status.solved:
                status = Status.NON_FINITE
        elif self._bounded and fallback != "no-contact-id" and self._last_step is not None \
                and sol.contact_forces.size:
            f = sol.contact_forces
            ratio = float(np.sqrt((f * f).sum(axis=1)).sum()) * self.dt / self.impulse_bound(self._last_step)
            if not ratio <= 1.0:
                details = {**details, "rejected_status": status.value, "impulse_ratio": ratio}
                sol = self._fallback(q, v, vdot, len(contacts))
                status, fallback, impact = Status.IMPLAUSIBLE, "no-contact-id", None
        if self._skipped:
            details = {**details, "budget_skipped": tuple(self._skipped)}
        self._deadline = float("inf")     # a stage called outside compute is not budgeted
        info = ControlInfo(self.name, status, pivots, fallback, time.perf_counter() - t0, sol.v_next, impact,
                           merged_count, error, details)
        return ControlOutput(sol.tau, sol.contact_forces, info)

    def impulse_bound(self, step: Step) -> float:
        """The plausibility bound of a step's contact impulses (N s): ``sum_i |lambda_i| dt``
        over the contacts' (normal, s, t) forces must not exceed it.

        With the actuated joints held to their commanded end velocity (eq. 39) the robot moves
        as one composite rigid body, whose effective mass at any point in any direction is at
        most its total mass ``m``.  Bringing a contact point from its free end velocity ``u_i``
        (``[N; S; T] v+`` at zero impulse, which holds the base's momentum, gravity over the step
        and the commanded joint motion) to rest takes at most ``m |u_i|``.  A touchdown impact
        stops at most the robot's momentum, at most ``sqrt(m v^T M(q) v)`` by Cauchy-Schwarz over
        its mass elements.  So

            I = m max_i |u_i| + sqrt(m v^T M v) + m |g| dt

        is what could stop the robot's motion plus gravity over the step.  Several contacts can
        push against each other (internal forces: nearly dependent contacts make a rigid model's
        impulses large), hence the margin: the bound is ``plausibility_margin * I``."""
        m = self._mass
        v = step.v if step.v_measured is None else step.v_measured
        u = step.free_velocity.reshape(3, -1)
        stop = m * float(np.sqrt((u * u).sum(axis=0).max())) if u.size else 0.0
        momentum = float(np.sqrt(m * max(float(v @ step.M @ v), 0.0)))
        return self.plausibility_margin * (stop + momentum + self._weight_impulse)

    def out_of_time(self, stage: str) -> bool:
        """Whether this call's budget is spent; if so, records that ``stage`` is skipped
        (``details["budget_skipped"]``).  Ask before a stage that refines or retries."""
        if time.perf_counter() < self._deadline:
            return False
        self._skipped.append(stage)
        return True

    def _status(self, raw) -> Status:
        """``raw`` (a :class:`Status` or its value) as a :class:`Status`; a string no member has
        is a bug in the controller and raises ValueError."""
        try:
            return _STATUS[raw]
        except (KeyError, TypeError):
            raise ValueError(f"controller {self.name!r} reported status {raw!r}, which is no idyn.Status "
                             f"({', '.join(s.value for s in Status)})") from None

    def command(self, q, v, desired: Desired) -> np.ndarray:
        """Desired actuated acceleration after the shared error feedback (Sec. 7.3)."""
        if self.feedback is None:
            return desired.vdot
        return self.feedback.acceleration(q, v, desired, self.dt)

    # ------------------------------------------------------------------ for subclasses
    @abstractmethod
    def _solve(self, q: np.ndarray, v: np.ndarray, vdot: np.ndarray, contacts: list[Contact]) -> Solution:
        """Controller-specific work; may raise (idyn.errors.SolverError, ...): the base class then
        reports the error in ``info`` and falls back."""

    def _warm_fallbacks(self, state, desired, contacts) -> None:
        """Run, once, the fallback models this controller switches to when its solver fails
        (a data-dependent path the warm-up's ordinary states do not reach); none here."""

    def _fallback(self, q, v, vdot, m: int) -> Solution:
        """Contact-free inverse dynamics (eqs. 88-90 with no impulses); zero torque if even that
        is not finite."""
        step = self.dynamics.update(q, v, vdot, ())
        tau, v_next = step.resolve(np.zeros(self.model.nv))
        if not np.all(np.isfinite(tau)):
            tau, v_next = np.zeros(self.model.na), None
        return Solution(tau, np.zeros((m, 3)), v_next)

    # ------------------------------------------------------------------ validation
    def _check(self, state, desired, contacts) -> tuple[np.ndarray, np.ndarray, list[Contact]]:
        if not isinstance(state, RobotState):
            raise InvalidInputError(f"state must be a RobotState, got {type(state).__name__}")
        if not isinstance(desired, Desired):
            raise InvalidInputError(f"desired must be a Desired, got {type(desired).__name__}")
        model = self.model
        q, v, vectors = state.q, state.v, (state.q, state.v, desired.q, desired.v, desired.vdot)
        # RobotState and Desired hold float vectors; one finiteness test covers all five, and
        # only a failure (or a size mismatch) goes through the per-vector checks for its message
        if (q.shape, v.shape, desired.q.shape, desired.v.shape, desired.vdot.shape) != self._shapes \
                or not all_finite(*vectors):
            for x, n, name in zip(vectors, self._shapes, ("q", "v", "desired.q", "desired.v", "desired.vdot")):
                validation.vector(x, n[0], name)
        model.check_quaternions(q)        # QuaternionError: pinocchio's (x, y, z, w), unit norm
        if isinstance(contacts, Contact):
            raise InvalidInputError("contacts must be a sequence of idyn.Contact objects, got one Contact "
                                    "(pass [contact])")
        try:
            contacts = list(contacts)
        except TypeError:
            raise InvalidInputError(f"contacts must be a sequence of idyn.Contact objects (empty for none), got "
                                    f"{type(contacts).__name__}") from None
        last = self._checked
        if len(contacts) != len(last) or not all(map(operator.is_, contacts, last)):
            for c in contacts:
                if not isinstance(c, Contact):
                    raise InvalidInputError(f"contacts must be idyn.Contact objects, got {type(c).__name__}")
            # UnknownFrameError for a body the model lacks (names are looked up once, then cached)
            model.check_bodies([c.body_a for c in contacts] + [c.body_b for c in contacts])
            self._checked = contacts      # the same (frozen) objects next step need no second look
        return q, v, contacts

    def _step(self, q, v, vdot, contacts) -> Step:
        step = self.dynamics.update(q, v, vdot, contacts)
        self._last_step = step      # for compute's plausibility bound
        # a finite state can still overflow the dynamics (a velocity of 1e160 squares to inf in
        # h(q, v)): no solver is handed them (compute reports the error and falls back)
        if not finite_data(step.h, step.M, step.p, step.L):
            raise NonFiniteError("the step's dynamics are not finite: h(q, v), M(q) or the free velocity overflow")
        return step


class OverBudget(Exception):
    """Raised by a controller's ``_solve`` when the budget is spent before it has any contact
    answer (:meth:`Controller.out_of_time`): :meth:`Controller.compute` reports
    ``Status.OVER_BUDGET`` and falls back to contact-free inverse dynamics."""


#: the vectors :func:`all_finite` is not given (it always takes five)
_NOTHING = np.zeros(0)
#: each Status by itself and by its value
_STATUS = {**{s: s for s in Status}, **{s.value: s for s in Status}}


# ---------------------------------------------------------------------- registry
_REGISTRY: dict[str, type[Controller]] = {}


def register(cls: type[Controller]) -> type[Controller]:
    """Class decorator adding a controller to :func:`make` under ``cls.name``."""
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"controller name {cls.name!r} empty or already registered")
    _REGISTRY[cls.name] = cls
    return cls


def available() -> list[str]:
    """Names accepted by :func:`make`, in registration order."""
    return list(_REGISTRY)


def make(name: str, model: RobotModel, **options) -> Controller:
    """Build the controller ``name`` for ``model``; ``options`` are its keyword arguments."""
    if name not in _REGISTRY:
        raise InvalidInputError(f"unknown controller {name!r}; available: {', '.join(available())}")
    warm_up = options.pop("warm_up", True)
    try:
        controller = _REGISTRY[name](model, warm_up=False, **options)
    except TypeError as exc:  # unknown option
        raise InvalidInputError(f"controller {name!r}: {exc}") from exc
    if warm_up:     # outside the try: a failure in a step is no unknown option
        controller.warm_up()
    return controller


__all__ = ["DEFAULT_BUDGET", "ControlInfo", "Controller", "ControlOutput", "OverBudget", "PLAUSIBILITY_MARGIN",
           "Solution", "available", "make", "register"]
