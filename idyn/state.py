"""Plain state containers shared by testbeds, planners and controllers (docs/conventions.md).

They live in the core so that a testbed (PyBullet, idyn.sim, hardware) can produce a
:class:`RobotState` without importing any controller; ``controllers`` re-exports them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import validation


@dataclass(frozen=True)
class RobotState:
    """Measured generalized state in pinocchio conventions: q (nq), v (nv), time t (s)."""

    q: np.ndarray
    v: np.ndarray
    t: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "q", validation.vector(self.q, None, "state.q"))
        object.__setattr__(self, "v", validation.vector(self.v, None, "state.v"))
        if not np.isfinite(self.t):
            raise validation.NonFiniteError("state.t must be finite")

    @classmethod
    def prechecked(cls, q: np.ndarray, v: np.ndarray, t: float) -> "RobotState":
        """Without the checks, for a testbed that reads the state every control step and has
        already checked it (e.g. :class:`idyn.robots.pybullet.base.StateReader` checks q, v finite in
        one pass): float64 vectors q (nq) and v (nv) it does not modify later, a finite time
        ``t``. Built in ~0.3 instead of ~3 us; anything else is the caller's bug, not an
        error this raises."""
        state = object.__new__(cls)
        state.__dict__.update(q=q, v=v, t=t)
        return state


@dataclass(frozen=True)
class Desired:
    """Desired positions, velocities and accelerations of the actuated joints (each na).

    The positions are :meth:`idyn.RobotModel.joint_positions`: ``q[model.actuated_q]`` for joints
    with nq = nv (revolute, prismatic), the angle (rad) of a continuous joint, compared with the
    measured configuration by pinocchio's ``difference`` (modulo 2 pi)."""

    q: np.ndarray
    v: np.ndarray
    vdot: np.ndarray

    def __post_init__(self):
        for name in ("q", "v", "vdot"):
            object.__setattr__(self, name, validation.vector(getattr(self, name), None, f"desired.{name}"))
        n = {self.q.size, self.v.size, self.vdot.size}
        if len(n) != 1:
            raise validation.ShapeError(
                f"desired q, v, vdot must have equal lengths, got {self.q.size}, {self.v.size}, {self.vdot.size}")
