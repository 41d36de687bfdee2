"""The manipulator's reference motion (paper Sec. 7.2.2, docs/planner.md).

The arm joints follow q = q0 + A cos(w t) - A with A = 0.1 rad and w = 10 rad/s (period
0.63 s), starting at rest at q0 = 1.5708. The fingers hold q0 - 0.01 rad (0.01 rad past the
reference grasp, in the closing direction) with zero velocity and acceleration while they touch
the box, and close further while they do not.
"""
from __future__ import annotations

import math

import numpy as np

from idyn import validation
from idyn.errors import InvalidInputError
from idyn.state import Desired


class ArmSinusoid:
    """Desired q, v, vdot of an arm with fingers (paper Sec. 7.2.2).

    Parameters
    ----------
    q0:
        Reference configuration of the actuated joints (na): 1.5708 for the arm joints and
        +-pi/4 for the fingers in the paper's manipulator.
    finger_joints:
        Indices (into the actuated vector) of the finger joints; every other joint follows the
        sinusoid.
    close_sign:
        Per finger, the sign of dq that closes the finger on the object. The authors' "q0 - 0.01"
        is ``close_sign = -1``; a model whose fingers are mirrored passes its own signs.
    amplitude, omega:
        The sinusoid q0 + amplitude (cos(omega t) - 1).
    grip:
        Closing offset (rad) held while touching.
    close_speed, max_close:
        While a finger does not touch, its target closes further at ``close_speed`` (rad/s), at
        most ``max_close`` (rad) beyond the grip; the extra closure is kept once it touches.
    """

    def __init__(self, q0, finger_joints=(), close_sign=-1.0, *, amplitude: float = 0.1,
                 omega: float = 10.0, grip: float = 0.01, close_speed: float = 0.5,
                 max_close: float = 0.3):
        self.q0 = validation.vector(q0, None, "q0").copy()
        fingers = np.asarray(finger_joints, dtype=int).ravel()
        if fingers.size and (fingers.min() < 0 or fingers.max() >= self.q0.size
                             or np.unique(fingers).size != fingers.size):
            raise InvalidInputError(f"finger indices {fingers} invalid for {self.q0.size} joints")
        self.fingers = fingers
        self.arm = np.setdiff1d(np.arange(self.q0.size), fingers)
        self.close_sign = np.broadcast_to(np.asarray(close_sign, dtype=float), fingers.shape).copy()
        if not np.isin(self.close_sign, (-1.0, 1.0)).all():
            raise InvalidInputError(f"close_sign must be +-1 per finger, got {close_sign}")
        for name, value in (("amplitude", amplitude), ("omega", omega), ("grip", grip),
                            ("close_speed", close_speed), ("max_close", max_close)):
            if not (math.isfinite(value) and value >= 0):
                raise InvalidInputError(f"{name} must be finite and >= 0, got {value}")
        self.amplitude, self.omega, self.grip = float(amplitude), float(omega), float(grip)
        self.close_speed, self.max_close = float(close_speed), float(max_close)
        self.reset()

    def reset(self) -> None:
        self._extra = np.zeros(self.fingers.size)   # closure beyond the grip (rad, >= 0)
        self._t_prev = None

    def arm_reference(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Analytic q, v, vdot of the arm joints at time t."""
        A, w = self.amplitude, self.omega
        c, s = math.cos(w * t), math.sin(w * t)
        q0 = self.q0[self.arm]
        ones = np.ones_like(q0)
        return q0 + A * (c - 1.0), -A * w * s * ones, -A * w * w * c * ones

    def desired(self, t: float, touching=None) -> Desired:
        """Desired q, v, vdot at time ``t``; ``touching`` holds one flag per finger (default:
        all touching)."""
        if not math.isfinite(t):
            raise InvalidInputError(f"time must be finite, got {t}")
        touching = (np.ones(self.fingers.size, dtype=bool) if touching is None
                    else np.asarray(touching, dtype=bool).ravel())
        if touching.size != self.fingers.size:
            raise InvalidInputError(f"touching needs {self.fingers.size} flags, got {touching.size}")
        dt = 0.0 if self._t_prev is None else max(t - self._t_prev, 0.0)
        self._t_prev = t
        closing = ~touching & (self._extra < self.max_close)
        self._extra = np.minimum(self._extra + closing * self.close_speed * dt, self.max_close)

        q, v, a = np.empty(self.q0.size), np.zeros(self.q0.size), np.zeros(self.q0.size)
        q[self.arm], v[self.arm], a[self.arm] = self.arm_reference(t)
        q[self.fingers] = self.q0[self.fingers] + self.close_sign * (self.grip + self._extra)
        v[self.fingers] = self.close_sign * self.close_speed * closing
        return Desired(q, v, a)
