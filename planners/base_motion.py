"""Planar base motion: the commanded base twist and the poses it leads to (paper Sec. 7.2.1).

The locomotion planner takes a desired planar base velocity (x_dot, y_dot, theta_dot) in the
robot's heading frame. :func:`predict` integrates it in closed form (constant twist: a circular
arc), which is what the planner needs to place a swing foot where the base will be in the
middle of the next stance phase.

The scalar helpers (:func:`arc`, :func:`clamp`, :func:`wrap_angle`) are compiled (:mod:`idyn.jit`):
the planner's per-step loop calls them from its compiled step, and Python callers get the same
numbers from the same code.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from idyn.errors import InvalidInputError
from idyn.jit import cached_jit


@dataclass(frozen=True)
class BaseCommand:
    """Commanded planar base twist: forward ``vx`` and lateral ``vy`` (m/s) in the heading
    frame, yaw rate ``wz`` (rad/s)."""

    vx: float = 0.0
    vy: float = 0.0
    wz: float = 0.0

    def __post_init__(self):
        for name in ("vx", "vy", "wz"):
            if not math.isfinite(getattr(self, name)):
                raise InvalidInputError(f"base command {name} must be finite, got {getattr(self, name)}")


@dataclass(frozen=True)
class PlanarPose:
    """A base pose on the ground plane: position (x, y) and heading ``yaw``."""

    x: float
    y: float
    yaw: float

    def transform(self, local) -> np.ndarray:
        """World coordinates of a point given in this pose's heading frame (z passes through)."""
        local = np.asarray(local, dtype=float)
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return np.array([self.x + c * local[0] - s * local[1],
                         self.y + s * local[0] + c * local[1], local[2]])


def predict(pose: PlanarPose, command: BaseCommand, duration: float) -> PlanarPose:
    """The pose reached after ``duration`` seconds of the constant twist ``command``.

    Exact for a constant body-frame twist: the displacement is the twist's heading-frame
    velocity integrated along the rotating heading (a circular arc; a straight line when the
    yaw rate is zero).
    """
    return PlanarPose(*arc(pose.x, pose.y, pose.yaw, command.vx, command.vy, command.wz, duration))


@cached_jit
def arc(x: float, y: float, yaw: float, vx: float, vy: float, wz: float,
        duration: float) -> tuple[float, float, float]:
    """:func:`predict` on plain numbers: the pose (x, y, yaw) reached from (x, y, yaw) after
    ``duration`` seconds of the twist (vx, vy, wz), for the planner's per-step use."""
    dyaw = wz * duration
    if abs(dyaw) < 1e-9:     # straight line (second-order term kept for continuity)
        fx, fy = duration, 0.5 * dyaw * duration
    else:
        fx = math.sin(dyaw) / wz
        fy = (1.0 - math.cos(dyaw)) / wz
    # heading-frame displacement: R(fy-term) applied to (vx, vy)
    dx = fx * vx - fy * vy
    dy = fy * vx + fx * vy
    c, s = math.cos(yaw), math.sin(yaw)
    return x + c * dx - s * dy, y + s * dx + c * dy, yaw + dyaw


def yaw_of(rotation: np.ndarray) -> float:
    """Heading (yaw about world z) of a rotation matrix: the direction of its x axis in the plane."""
    return math.atan2(rotation[1, 0], rotation[0, 0])


@cached_jit
def base_rotation(q, out) -> None:
    """The base rotation of the floating-base configuration ``q`` into ``out`` (3 x 3): the
    rotation of its quaternion (x, y, z, w) = ``q[3:7]`` after normalising it (a simulator's
    state holds it unit to round-off), ``R = I + 2 w [v]x + 2 [v]x^2`` with ``v = (x, y, z)``.
    One compiled call per control step (the closed loop forms this rotation every step)."""
    x, y, z, w = q[3], q[4], q[5], q[6]
    s = 2.0 / (x * x + y * y + z * z + w * w)       # 2 / |q|^2: the normalisation folded in
    out[0, 0], out[0, 1], out[0, 2] = 1.0 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)
    out[1, 0], out[1, 1], out[1, 2] = s * (x * y + z * w), 1.0 - s * (x * x + z * z), s * (y * z - x * w)
    out[2, 0], out[2, 1], out[2, 2] = s * (x * z - y * w), s * (y * z + x * w), 1.0 - s * (x * x + y * y)


def rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@cached_jit
def clamp(x: float, bound: float) -> float:
    """``x`` limited to [-bound, bound] (NaN stays NaN)."""
    low = -bound if -bound > x else x
    return bound if bound < low else low


@cached_jit
def wrap_angle(a: float) -> float:
    """``a`` wrapped into [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi
