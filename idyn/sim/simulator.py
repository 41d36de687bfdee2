"""A pinocchio time-stepping simulator with pluggable contact models (paper Sec. 2.3.1, 4.2).

One step of :class:`Simulator` is the velocity-level scheme of Stewart-Trinkle / Anitescu-Potra,
discretized exactly as the inverse dynamics controllers discretize it (paper eq. 37), so that a
controller predicting with the same contact model reproduces the simulator's forces:

1. contacts are detected at the start of the step (:meth:`World.detect`; the same set that
   :meth:`Simulator.contacts` hands to a controller),
2. M(q), h(q, v) and the contact Jacobians N, S, T are evaluated at (q, v) of the start; one
   pinocchio pass (:class:`idyn.model.Workspace`) serves both the detection and the dynamics,
3. with ``impacts="passive"``, contacts closing faster than their gaps allow first receive a
   passive inelastic impact that takes v to v' (:mod:`idyn.sim.impact`); otherwise v' = v,
4. v* = v' + dt M^-1 (P^T tau - h); the contact model returns impulses f with
   v+ = v* + M^-1 (N^T f_N + S^T f_S + T^T f_T), the non-penetration rows stabilized by
   phi / dt (eq. 35-36),
5. semi-implicit Euler: q+ = q (+) dt v+ on the configuration manifold.

The forces of the last step (impulses / dt, per contact [normal, s, t], an impact's included)
are reported exactly as the model computed them (:attr:`Simulator.last`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ..contact import Contact, ContactSet
from ..errors import InvalidInputError, NonFiniteError, ShapeError, SolverError
from ..model import RobotModel, Workspace
from .contact_models import ContactModel, ContactProblem, ContactSolution, make
from ._step_kernel import advance
from .impact import IMPACT_MODES, IMPACT_SPEED_TOL, PassiveImpacts
from .world import World


@dataclass
class StepResult:
    """What one step did: the contacts it used and their forces (newtons, [normal, s, t]);
    ``impact`` is the part of ``forces`` due to a passive impact (None: there was none)."""

    contact_set: ContactSet
    forces: np.ndarray
    solution: ContactSolution
    _contacts: list[Contact] | None = field(default=None, repr=False)
    impact: np.ndarray | None = None

    @property
    def contacts(self) -> list[Contact]:
        """The step's contacts as :class:`idyn.Contact` objects (built on first use)."""
        if self._contacts is None:
            self._contacts = self.contact_set.contacts()
        return self._contacts

    @property
    def normal_total(self) -> float:
        """Sum of the normal forces (N), the quantity of paper Table 5."""
        return float(self.forces[:, 0].sum()) if len(self.forces) else 0.0


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` (a fresh array owned by the simulator) made read-only."""
    a.flags.writeable = False
    return a


class _StepPass(Workspace):
    """The simulator's one pinocchio pass per step: :meth:`Workspace.compute` without its input
    checks and copies (the simulator's state is validated when set and read-only) and without
    the Jacobians' time variation (a velocity-level step needs no drift terms, eq. 37)."""

    def compute(self, q, v) -> "_StepPass":
        pm, data = self._pm, self._data
        self.q, self.v = q, v
        self.M = self.model._symmetric(pin.crba(pm, data, q))
        self.h = pin.nonLinearEffects(pm, data, q, v)
        self.J = pin.computeJointJacobians(pm, data, q)
        self.dJ = None
        pin.updateFramePlacements(pm, data)
        return self


class Simulator:
    """Time-stepping simulation of ``model`` in ``world`` with one contact model.

    Parameters
    ----------
    model, world: the multibody and its collision world (``world.model`` must be ``model``).
    contact_model: a :class:`ContactModel` or a name of :data:`idyn.sim.MODELS`.
    dt: time step (s).
    impacts: ``"step"`` (contacts that close during a step are resolved by the step's contact
        model, with the held torques: the time-stepping scheme) or ``"passive"`` (they first
        receive an inelastic impact with the actuators passive, as in an event-driven simulator;
        :mod:`idyn.sim.impact`).
    impact_speed_tol: approach speed (m/s) beyond the gap's allowance that is an impact.
    model_options: constructor options of a contact model given by name (e.g. the ``qp``
        model's ``separation_weight``); the model is bound to ``model`` (:meth:`ContactModel.bind`).
    """

    def __init__(self, model: RobotModel, world: World, contact_model: str | ContactModel = "ap-lcp",
                 dt: float = 1e-3, *, impacts: str = "step", impact_speed_tol: float = IMPACT_SPEED_TOL,
                 **model_options):
        if world.model is not model:
            raise InvalidInputError("the world must be built on the simulated model")
        dt = float(dt)
        if not (np.isfinite(dt) and 0.0 < dt <= 0.1):
            raise InvalidInputError(f"time step dt must be in (0, 0.1] s, got {dt}")
        self.model, self.world, self.dt = model, world, dt
        self.contact_model = make(contact_model, **model_options) if isinstance(contact_model, str) \
            else contact_model
        self.contact_model.bind(model)
        if impacts not in IMPACT_MODES:
            raise InvalidInputError(f"impacts must be one of {IMPACT_MODES}, got {impacts!r}")
        self.impacts = impacts
        self._impacts = PassiveImpacts(impact_speed_tol) if impacts == "passive" else None
        self._data = model.pinocchio_model.createData()
        self._workspace = _StepPass(model)
        self._actuated = np.asarray(model.actuated_v, dtype=np.intp)
        self.reset(model.neutral(), np.zeros(model.nv))

    # ---------------------------------------------------------------- state
    @property
    def q(self) -> np.ndarray:
        """Configuration (read-only; assign a new one to move the system)."""
        return self._q

    @q.setter
    def q(self, q) -> None:
        self._set_state(q, self._v)

    @property
    def v(self) -> np.ndarray:
        """Generalized velocity (read-only; assign a new one to change it)."""
        return self._v

    @v.setter
    def v(self, v) -> None:
        self._set_state(self._q, v)

    def reset(self, q, v=None) -> None:
        self.t = 0.0
        self.last: StepResult | None = None
        self.contact_model.reset()
        self._set_state(q, np.zeros(self.model.nv) if v is None else v)

    def _set_state(self, q, v) -> None:
        """Validated read-only copies of (q, v), then the step pass and detection there."""
        self._q, self._v = _frozen(self.model.check_q(q).copy()), _frozen(self.model.check_v(v).copy())
        self._detect()

    def _detect(self) -> None:
        """The step pass at the current state (M, h, Jacobians, placements), then detection."""
        ws = self._workspace.compute(self._q, self._v)
        self._pending, ja, jb, two_bodies, frames = self.world.detect_joints_at(ws, self.dt)
        #: the arguments of the contact rows (:func:`idyn.kernels.contact_rows`)
        self._pending_rows = (ws.J, self.model.support, ja, jb, two_bodies, frames, self._pending.points)
        self._pending_contacts: list[Contact] | None = None

    def contact_set(self) -> ContactSet:
        """The contacts the next step will use, as arrays (no per-contact objects)."""
        return self._pending

    def contacts(self) -> list[Contact]:
        """The contacts the next step will use (detected at the current state)."""
        if self._pending_contacts is None:
            self._pending_contacts = self._pending.contacts()
        return list(self._pending_contacts)

    # ---------------------------------------------------------------- stepping
    def problem(self, tau) -> ContactProblem:
        """The contact problem of the next step under actuator torques ``tau`` (na)."""
        ws = self._workspace
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.model.na,):
            raise ShapeError(f"tau must have shape ({self.model.na},), got {tau.shape}")
        cs = self._pending
        problem = ContactProblem.of_step(ws.M, self._v, ws.h, tau, self._actuated, self.dt, self._pending_rows,
                                         cs.phi, cs.mu)
        if problem is None:
            raise NonFiniteError("tau contains NaN or infinite values")
        # finite inputs can still overflow (|tau| 1e159 from a controller that lost the robot):
        # stop here with the simulator's error, not with a contact solver's complaint about NaN
        if not problem.finite:
            raise SolverError(f"the simulation diverged at t = {self.t:.4f} s (|v| = {np.abs(self._v).max():.3g}, "
                              f"|tau| = {np.abs(tau).max():.3g}): check the torques and the time step")
        return problem

    def step(self, tau) -> StepResult:
        """Advance by dt with torques ``tau`` held over the step; returns what the step did."""
        problem, impact = self.problem(tau), None
        if self._impacts is not None:
            problem, impact = self._impacts.resolve(problem)
        sol = self.contact_model.solve(problem)
        v_next = np.empty(self.model.nv)
        if not advance(problem.v_free, problem.Minv_JT, sol.impulses, v_next):
            raise SolverError(
                f"the {self.contact_model.name} contact model produced a non-finite velocity "
                f"(status {sol.status}) at t = {self.t:.4f} s")
        q_next = pin.integrate(self.model.pinocchio_model, self._q, v_next * self.dt)
        if not np.isfinite(q_next).all():
            raise SolverError(f"the simulation diverged at t = {self.t:.4f} s (|v+| = {np.abs(v_next).max():.3g}): "
                              "check the torques and the time step")
        impulses = sol.impulses if impact is None else sol.impulses + impact
        self.last = StepResult(self._pending, impulses / self.dt, sol, self._pending_contacts,
                               None if impact is None else impact / self.dt)
        self._q, self._v = _frozen(q_next), _frozen(v_next)
        self.t += self.dt
        self._detect()
        return self.last

    # ---------------------------------------------------------------- energy
    def kinetic_energy(self) -> float:
        return float(0.5 * self.v @ self.model.mass_matrix(self.q) @ self.v)

    def potential_energy(self) -> float:
        """Gravitational potential energy (pinocchio's, zero at the world origin height)."""
        return float(pin.computePotentialEnergy(self.model.pinocchio_model, self._data, self.q))

    def energy(self) -> float:
        return self.kinetic_energy() + self.potential_energy()
