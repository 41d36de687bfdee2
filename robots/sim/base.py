"""What every idyn.sim testbed shares: the simulator, held torques, stepping and sensed forces.

The methods and conventions are those of :mod:`idyn.robots.pybullet` (docs/conventions.md), so an
experiment runs unchanged on either backend:

* ``contacts()`` returns exactly the contacts the next :meth:`step` will use, detected at the
  current state (so a controller predicting with the simulator's contact model sees the same
  problem, paper Sec. 8.2);
* ``sensed_contact_forces()`` returns the forces [normal, s, t] (N) of the last step exactly as
  the contact model computed them (impulse / dt), aligned with the list last returned by
  ``contacts()`` or with a given list (matched by body pair and nearest point).
"""
from __future__ import annotations

import numpy as np

from idyn.contact import Contact
from idyn.errors import InvalidInputError
from idyn.sim import Simulator
from idyn.state import RobotState


class SimTestbed:
    """A :class:`idyn.sim.Simulator` behind the PyBullet testbed interface."""

    def __init__(self, simulator: Simulator):
        self.sim = simulator
        self.model = simulator.model
        self.dt = simulator.dt
        self._tau = np.zeros(self.model.na)
        self._contacts: list[Contact] = []

    # ---------------------------------------------------------------- time and torques
    @property
    def t(self) -> float:
        return self.sim.t

    @property
    def na(self) -> int:
        return self.model.na

    @property
    def contact_margin(self) -> float:
        """(m) the simulator's detection margin (:class:`idyn.sim.World`; it also reports pairs
        closing to within it in the coming step, :class:`idyn.robots.testbed.Testbed`)."""
        return self.sim.world.margin

    def apply(self, tau) -> None:
        """Set the actuated joint torques (pinocchio actuated order), held until changed."""
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.na,) or not np.isfinite(tau).all():
            raise InvalidInputError(f"tau must be {self.na} finite numbers, got shape {tau.shape}")
        self._tau = tau.copy()

    def step(self) -> None:
        """Advance the simulation by dt with the held torques."""
        self.sim.step(self._tau)

    def _restart(self, q, v) -> None:
        self.sim.reset(q, v)
        self._tau = np.zeros(self.na)
        self._contacts = []

    # ---------------------------------------------------------------- state and contacts
    def state(self) -> RobotState:
        return RobotState(self.sim.q.copy(), self.sim.v.copy(), self.sim.t)

    def contacts(self) -> list[Contact]:
        """The contacts of the next step (remembered for :meth:`sensed_contact_forces`)."""
        self._contacts = self.sim.contacts()
        return list(self._contacts)

    def sensed_contact_forces(self, contacts=None) -> np.ndarray:
        """(n, 3) forces [normal, s, t] (N) of the last step on each contact's body A.

        Each requested contact takes the force of the last step's contact between the same two
        bodies nearest to its point, re-expressed in the requested contact's frame; rows with no
        such contact (or before the first step) are zero.
        """
        contacts = self._contacts if contacts is None else list(contacts)
        out = np.zeros((len(contacts), 3))
        last = self.sim.last
        if last is None or not contacts or not last.contact_set.m:
            return out
        done = last.contact_set
        world_forces = np.einsum("mij,mi->mj", done.frames(), last.forces)
        free = dict(enumerate(zip(done.body_a, done.body_b)))      # the step's contacts not yet matched
        for i, c in enumerate(contacts):
            same = [j for j, pair in free.items() if pair == (c.body_a, c.body_b)]
            if same:
                best = same[0] if len(same) == 1 else \
                    same[int(np.argmin(np.linalg.norm(done.points[same] - c.point, axis=1)))]
                del free[best]
                out[i] = c.frame() @ world_forces[best]
        return out

    def sensed_normal_total(self) -> float:
        """Sum of the normal forces of the last step (N), the quantity of paper Table 5."""
        return 0.0 if self.sim.last is None else self.sim.last.normal_total

    # ---------------------------------------------------------------- lifetime (PyBullet parity)
    def close(self) -> None:
        """Nothing to release (kept for interface parity with the PyBullet testbeds)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
