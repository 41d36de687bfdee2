"""Planar base motion: the commanded base twist and the poses it leads to (paper Sec. 7.2.1).

The locomotion planner takes a desired planar base velocity (x_dot, y_dot, theta_dot) in the
robot's heading frame. :func:`predict` integrates it in closed form (constant twist: a circular
arc), which is what the planner needs to place a swing foot where the base will be in the
middle of the next stance phase.

The scalar helpers (:func:`arc`, :func:`clamp`, :func:`wrap_angle`, :func:`hypot`) are compiled
(:mod:`idyn.jit`): the planner's per-step loop calls them from its compiled step, and Python
callers get the same numbers from the same code.
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
    """The base rotation of the floating-base configuration ``q`` into ``out`` (3 x 3), as
    ``pin.Quaternion(q[3:7]).normalized().toRotationMatrix()`` forms it from the quaternion (x,
    y, z, w), bit for bit: Eigen's vectorised squared norm ``(x^2 + z^2) + (y^2 + w^2)`` (two SSE2
    lanes, then their sum), each coefficient divided by its root, then Eigen's
    ``toRotationMatrix`` products. One compiled call instead of pinocchio's three (the closed
    loop forms this rotation every step)."""
    x, y, z, w = q[3], q[4], q[5], q[6]
    norm = math.sqrt((x * x + z * z) + (y * y + w * w))
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    out[0, 0], out[0, 1], out[0, 2] = 1.0 - (tyy + tzz), txy - twz, txz + twy
    out[1, 0], out[1, 1], out[1, 2] = txy + twz, 1.0 - (txx + tzz), tyz - twx
    out[2, 0], out[2, 1], out[2, 2] = txz - twy, tyz + twx, 1.0 - (txx + tyy)


def rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@cached_jit
def clamp(x: float, bound: float) -> float:
    """``x`` limited to [-bound, bound]: np.clip's result for a scalar (NaN included), i.e.
    Python's ``min(max(x, -bound), bound)`` (each keeps its first argument unless the second
    compares strictly beyond it)."""
    low = -bound if -bound > x else x
    return bound if bound < low else low


@cached_jit
def wrap_angle(a: float) -> float:
    """``a`` wrapped into [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


#: Veltkamp's splitting constant 2^27 + 1 (an exact product of two doubles in :func:`_two_product`)
_SPLIT = 134217729.0
_DBL_MIN = 2.2250738585072014e-308


@cached_jit
def _two_product(a: float, b: float) -> tuple[float, float]:
    """``(a b, error)`` with ``a b + error`` exactly the product (Dekker's algorithm; no
    overflow for the scaled operands of :func:`hypot`)."""
    p = a * b
    c = _SPLIT * a
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = _SPLIT * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


@cached_jit
def _scaled_norm(x: float, y: float, largest: float) -> float:
    """CPython's ``vector_norm`` for two finite non-negative coordinates, ``largest`` > 0 the
    larger: both scaled by a power of two below 1, their squares summed exactly (compensated)
    and the square root corrected once (correctly rounded)."""
    scale = math.ldexp(1.0, -math.frexp(largest)[1])
    total, frac1, frac2 = 1.0, 0.0, 0.0
    for v in (x * scale, y * scale):
        hi, lo = _two_product(v, v)
        s = total + hi
        frac1 += lo
        frac2 += (total - s) + hi
        total = s
    h = math.sqrt(total - 1.0 + (frac1 + frac2))
    hi, lo = _two_product(-h, h)
    s = total + hi
    frac1 += lo
    frac2 += (total - s) + hi
    h += (s - 1.0 + (frac1 + frac2)) / (2.0 * h)
    return h / scale


@cached_jit
def hypot(x: float, y: float) -> float:
    """``math.hypot(x, y)`` as CPython computes it (its correctly rounded ``vector_norm``), for
    compiled code: numba's ``math.hypot`` is the C library's, which differs from Python's in
    the last bit for about 0.1 % of arguments, and the compiled planner must give the numbers
    its Python form gave."""
    x, y = abs(x), abs(y)
    if math.isinf(x) or math.isinf(y):
        return math.inf
    if math.isnan(x) or math.isnan(y):
        return math.nan
    largest = x if x >= y else y
    if largest == 0.0:
        return largest
    if math.frexp(largest)[1] < -1023:       # subnormal: rescale first, as CPython does
        return _DBL_MIN * _scaled_norm(x / _DBL_MIN, y / _DBL_MIN, largest / _DBL_MIN)
    return _scaled_norm(x, y, largest)
