"""A pinocchio time-stepping simulator with pluggable contact models (paper Sec. 2.3.1, 4.2).

One step of :class:`Simulator` is the velocity-level scheme of Stewart-Trinkle / Anitescu-Potra,
discretized exactly as the inverse dynamics controllers discretize it (paper eq. 37), so that a
controller predicting with the same contact model reproduces the simulator's forces:

1. contacts are detected at the start of the step (:meth:`World.detect`; the same set that
   :meth:`Simulator.contacts` hands to a controller),
2. M(q), h(q, v) and the contact Jacobians N, S, T are evaluated at (q, v) of the start; one
   pinocchio pass (:class:`idyn.model.Workspace`) serves both the detection and the dynamics,
3. v* = v + dt M^-1 (P^T tau - h); the contact model returns impulses f with
   v+ = v* + M^-1 (N^T f_N + S^T f_S + T^T f_T), the non-penetration rows stabilized by
   phi / dt (eq. 35-36),
4. semi-implicit Euler: q+ = q (+) dt v+ on the configuration manifold.

The forces of the last step (impulses / dt, per contact [normal, s, t]) are reported exactly as
the model computed them (:attr:`Simulator.last`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from .. import validation
from ..contact import Contact, ContactSet, stacked_contact_jacobian
from ..errors import InvalidInputError, SolverError
from ..model import RobotModel
from .contact_models import ContactModel, ContactProblem, ContactSolution, make
from .world import World


@dataclass
class StepResult:
    """What one step did: the contacts it used and their forces (newtons, [normal, s, t])."""

    contact_set: ContactSet
    forces: np.ndarray
    solution: ContactSolution
    _contacts: list[Contact] | None = field(default=None, repr=False)

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


class Simulator:
    """Time-stepping simulation of ``model`` in ``world`` with one contact model.

    Parameters
    ----------
    model, world: the multibody and its collision world (``world.model`` must be ``model``).
    contact_model: a :class:`ContactModel` or a name of :data:`idyn.sim.MODELS`.
    dt: time step (s).
    model_options: constructor options of a contact model given by name.
    """

    def __init__(self, model: RobotModel, world: World, contact_model: str | ContactModel = "ap-lcp",
                 dt: float = 1e-3, **model_options):
        if world.model is not model:
            raise InvalidInputError("the world must be built on the simulated model")
        dt = float(dt)
        if not (np.isfinite(dt) and 0.0 < dt <= 0.1):
            raise InvalidInputError(f"time step dt must be in (0, 0.1] s, got {dt}")
        self.model, self.world, self.dt = model, world, dt
        self.contact_model = make(contact_model, **model_options) if isinstance(contact_model, str) \
            else contact_model
        self._data = model.pinocchio_model.createData()
        self._workspace = model.workspace()
        self.reset(model.neutral(), np.zeros(model.nv))

    # ---------------------------------------------------------------- state
    def reset(self, q, v=None) -> None:
        self.q = self.model.check_q(q).copy()
        self.v = np.zeros(self.model.nv) if v is None else self.model.check_v(v).copy()
        self.t = 0.0
        self.last: StepResult | None = None
        self.contact_model.reset()
        self._detect()

    def _detect(self) -> None:
        """The step pass at the current state (M, h, Jacobians, placements), then detection."""
        self._workspace.compute(self.q, self.v)
        self._pending: ContactSet = self.world.detect(self.q, self.v, self.dt, self._workspace)
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
        model, ws = self.model, self._workspace
        tau = validation.vector(tau, model.na, "tau")
        q, v = self.q, self.v
        if not ws.is_at(q, v):      # q or v were assigned directly: re-evaluate the dynamics
            ws.compute(q, v)
        f = -ws.h
        f[model.actuated_v] += tau
        if not np.isfinite(f).all():
            raise SolverError(f"the simulation diverged at t = {self.t:.4f} s (|v| = {np.abs(v).max():.3g}): "
                              "check the torques and the time step")
        cs = self._pending
        return ContactProblem(ws.M, v, f, self.dt, stacked_contact_jacobian(ws, cs), cs.phi, cs.mu)

    def step(self, tau) -> StepResult:
        """Advance by dt with torques ``tau`` held over the step; returns what the step did."""
        problem = self.problem(tau)
        sol = self.contact_model.solve(problem)
        v_next = problem.velocity(sol.impulses)
        if not np.isfinite(v_next).all():
            raise SolverError(
                f"the {self.contact_model.name} contact model produced a non-finite velocity "
                f"(status {sol.status}) at t = {self.t:.4f} s")
        q_next = self.model.integrate(self.q, v_next, self.dt)
        if not np.isfinite(q_next).all():
            raise SolverError(f"the simulation diverged at t = {self.t:.4f} s (|v+| = {np.abs(v_next).max():.3g}): "
                              "check the torques and the time step")
        self.last = StepResult(self._pending, sol.impulses / self.dt, sol, self._pending_contacts)
        self.q = q_next
        self.v = v_next
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
