"""A pinocchio time-stepping simulator with pluggable contact models (paper Sec. 2.3.1, 4.2).

One step of :class:`Simulator` is the velocity-level scheme of Stewart-Trinkle / Anitescu-Potra,
discretized exactly as the inverse dynamics controllers discretize it (paper eq. 37), so that a
controller predicting with the same contact model reproduces the simulator's forces:

1. contacts are detected at the start of the step (:meth:`World.detect`; the same set that
   :meth:`Simulator.contacts` hands to a controller),
2. M(q), h(q, v) and the contact Jacobians N, S, T are evaluated at (q, v) of the start,
3. v* = v + dt M^-1 (P^T tau - h); the contact model returns impulses f with
   v+ = v* + M^-1 (N^T f_N + S^T f_S + T^T f_T), the non-penetration rows stabilized by
   phi / dt (eq. 35-36),
4. semi-implicit Euler: q+ = q (+) dt v+ on the configuration manifold.

The forces of the last step (impulses / dt, per contact [normal, s, t]) are reported exactly as
the model computed them (:attr:`Simulator.last`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .. import validation
from ..contact import Contact, contact_jacobians
from ..errors import InvalidInputError, SolverError
from ..model import RobotModel
from .contact_models import ContactModel, ContactProblem, ContactSolution, make
from .world import ContactSet, World


@dataclass
class StepResult:
    """What one step did: the contacts it used and their forces (newtons, [normal, s, t])."""

    contacts: list[Contact]
    forces: np.ndarray
    solution: ContactSolution

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
        self._pending: ContactSet = self.world.detect(self.q, self.v, self.dt)
        self._pending_contacts: list[Contact] | None = None

    def contacts(self) -> list[Contact]:
        """The contacts the next step will use (detected at the current state)."""
        if self._pending_contacts is None:
            self._pending_contacts = self._pending.contacts()
        return list(self._pending_contacts)

    # ---------------------------------------------------------------- stepping
    def problem(self, tau) -> ContactProblem:
        """The contact problem of the next step under actuator torques ``tau`` (na)."""
        model = self.model
        tau = validation.vector(tau, model.na, "tau")
        q, v = self.q, self.v
        f = -model.bias_forces(q, v)
        f[model.actuated_v] += tau
        if not np.isfinite(f).all():
            raise SolverError(f"the simulation diverged at t = {self.t:.4f} s (|v| = {np.abs(v).max():.3g}): "
                              "check the torques and the time step")
        M = model.mass_matrix(q)
        contacts = self.contacts()
        cj = contact_jacobians(model, q, contacts)
        return ContactProblem(M, v, f, self.dt, cj.stacked(), cj.phi, cj.mu)

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
        self.last = StepResult(self.contacts(), sol.impulses / self.dt, sol)
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
