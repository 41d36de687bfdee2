"""Inverse dynamics with sensed contact forces: the paper's reference controllers ID(t-1) and
ID(t-2) (Sec. 7.3, Fig. 12).

How measured forces reach the controller: the loop calls
:meth:`SensedForceID.observe_contact_forces` once per control step, after stepping the robot or
simulator, with the contacts and the forces applied over that step (same format as
``ControlOutput.contact_forces``: (k, 3) [normal, s, t] newtons in each contact's frame).
``compute`` then uses the observation made ``delay`` steps earlier (``sensed-1``: the latest,
i.e. forces from the previous step; ``sensed-2``: the one before).  The contract of
``compute(state, desired, contacts)`` is unchanged, so the controller runs in any loop; until
``delay`` observations exist it assumes no contact force.

The torques are the reduced inverse dynamics of :mod:`idyn.controllers.dynamics` with the sensed
generalized impulse ``dt J(q)^T f`` as a known external force; ``contact_forces`` reports the
sensed forces used, attributed to the given contacts (same bodies, nearest point) and
re-expressed in their frames.
"""
from __future__ import annotations

from collections import deque
from typing import ClassVar

import numpy as np

from idyn import Contact, contact_jacobians, validation
from idyn.errors import InvalidInputError

from .base import Controller, Solution, register


class SensedForceID(Controller):
    predicts_contact_forces = False
    delay: ClassVar[int] = 1

    def __init__(self, model, **common):
        super().__init__(model, **common)
        self._history: deque = deque(maxlen=self.delay)

    def reset(self) -> None:
        super().reset()
        self._history.clear()

    def observe_contact_forces(self, contacts, forces) -> None:
        """Record the forces the environment applied over the last step (module docstring)."""
        contacts = list(contacts)
        if not all(isinstance(c, Contact) for c in contacts):
            raise InvalidInputError("observed contacts must be idyn.Contact objects")
        forces = validation.matrix(np.reshape(forces, (-1, 3)) if np.size(forces) else np.zeros((0, 3)),
                                   (len(contacts), 3), "sensed contact forces")
        self._history.append((contacts, forces.copy()))

    def _solve(self, q, v, vdot, contacts) -> Solution:
        step = self._step(q, v, vdot, ())
        if len(self._history) < self.delay:
            tau, v_next = step.resolve(np.zeros(self.model.nv))
            return Solution(tau, np.zeros((len(contacts), 3)), v_next, {"sensed": "none yet"})
        seen, forces = self._history[0]
        jac = contact_jacobians(self.model, q, seen, workspace=self.dynamics.workspace)   # the step's pass
        impulse = self.dt * (jac.rows.T @ forces.T.ravel()) if seen else np.zeros(self.model.nv)   # [N; S; T]^T f
        tau, v_next = step.resolve(impulse)
        return Solution(tau, attribute(seen, forces, contacts), v_next, {"sensed_contacts": len(seen)})


def attribute(seen: list[Contact], forces: np.ndarray, contacts: list[Contact]) -> np.ndarray:
    """Express each sensed force at the nearest given contact between the same bodies (each
    sensed force used once, given contacts served in order, ties to the first sensed one);
    given contacts without a match get zero."""
    out = np.zeros((len(contacts), 3))
    if not seen or not contacts:
        return out
    if len(seen) == len(contacts) and all(s is c for s, c in zip(seen, contacts)):
        out[:] = forces                    # the loop measured the very contacts it gives: same frames
        return out
    match = _nearest_unused(seen, contacts)
    got = np.flatnonzero(match >= 0)
    if got.size:
        given = np.array([contacts[j].frame() for j in got])
        sensed = np.array([seen[i].frame() for i in match[got]])
        world = np.einsum("kji,kj->ki", sensed, forces[match[got]])   # sensed frame -> world
        out[got] = np.einsum("kij,kj->ki", given, world)              # world -> given frame
    return out


def _nearest_unused(seen: list[Contact], contacts: list[Contact]) -> np.ndarray:
    """For each given contact in order, the nearest not yet used sensed contact between the same
    bodies (-1: none)."""
    pairs = {}
    seen_pair = np.array([pairs.setdefault((s.body_a, s.body_b), len(pairs)) for s in seen])
    given_pair = np.array([pairs.get((c.body_a, c.body_b), -1) for c in contacts])
    gap = np.array([c.point for c in contacts])[:, None, :] - np.array([s.point for s in seen])[None]
    dist = np.sqrt(np.einsum("gsi,gsi->gs", gap, gap))
    dist[given_pair[:, None] != seen_pair[None, :]] = np.inf       # other bodies: never
    match = np.full(len(contacts), -1)
    for j in range(len(contacts)):
        best = int(np.argmin(dist[j]))
        if np.isfinite(dist[j, best]):
            match[j] = best
            dist[:, best] = np.inf                                  # used once
    return match


@register
class SensedOneStep(SensedForceID):
    """ID(t-1): forces sensed one control step earlier."""

    name = "sensed-1"
    delay = 1


@register
class SensedTwoSteps(SensedForceID):
    """ID(t-2): forces sensed two control steps earlier."""

    name = "sensed-2"
    delay = 2
