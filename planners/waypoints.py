"""The waypoint task of the quadruped experiments (paper Sec. 7.6, docs/planner.md).

The robot trots through (0,0) -> (0.25,0) -> (0,0.25) -> (0,-0.25) -> (-0.25,0). A waypoint
counts as reached within 0.025 m of the base. Towards the current waypoint the robot walks
forward at 0.2 m/s, steering with yaw rate = heading error / gait period, while the heading
error is below pi/8; otherwise it turns in place at that yaw rate, capped at 1.5 rad/s. The
task stresses acceleration from and to rest, turning in place and turning while walking.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from idyn import validation
from idyn.errors import InvalidInputError
from idyn.jit import cached_jit
from idyn.state import RobotState

from .base_motion import BaseCommand, clamp, wrap_angle, yaw_of

#: The paper's waypoints (m, world x-y).
PAPER_WAYPOINTS = ((0.0, 0.0), (0.25, 0.0), (0.0, 0.25), (0.0, -0.25), (-0.25, 0.0))
#: the forward speed of the paper's trot (m/s), for LINKS
PAPER_SPEED = 0.2


class WaypointFollower:
    """Turns the measured base pose into a :class:`~idyn.planners.base_motion.BaseCommand`.

    Parameters
    ----------
    waypoints:
        Sequence of (x, y) world points, visited in order.
    tolerance:
        A waypoint is reached when the base is within this planar distance (m).
    speed:
        Forward speed while walking (m/s).
    heading_tolerance:
        Walk when |heading error| is below this (rad), otherwise turn in place.
    max_turn_rate:
        Cap of the turn-in-place yaw rate (rad/s).
    gait_period:
        The yaw rate is heading error / gait period (s).
    cycle:
        After the last waypoint start again from the first (keeps a 30 s run moving); if False
        the robot stands (zero command) once every waypoint is reached.
    """

    def __init__(self, waypoints=PAPER_WAYPOINTS, *, tolerance: float = 0.025, speed: float = PAPER_SPEED,
                 heading_tolerance: float = math.pi / 8, max_turn_rate: float = 1.5,
                 gait_period: float = 0.3, cycle: bool = True):
        pts = np.asarray(waypoints, dtype=float)
        if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] == 0:
            raise InvalidInputError(f"waypoints must be a non-empty (n, 2) array, got shape {pts.shape}")
        validation.matrix(pts, (None, 2), "waypoints")
        for name, value in (("tolerance", tolerance), ("speed", speed),
                            ("heading_tolerance", heading_tolerance),
                            ("max_turn_rate", max_turn_rate), ("gait_period", gait_period)):
            if not (math.isfinite(value) and value > 0):
                raise InvalidInputError(f"{name} must be positive, got {value}")
        self.waypoints = pts.copy()
        self.waypoints.setflags(write=False)
        self._points = pts.copy()    # writable twin for the compiled rule (numba types read-only arrays slowly)
        self.tolerance, self.speed = float(tolerance), float(speed)
        self.heading_tolerance, self.max_turn_rate = float(heading_tolerance), float(max_turn_rate)
        self.gait_period, self.cycle = float(gait_period), bool(cycle)
        self.reset()

    def reset(self) -> None:
        """Start again from the first waypoint; the parameters (attributes) in effect for the
        next commands are the ones set at this call."""
        self._progress = np.zeros(2, dtype=np.int64)    # index, reached
        self._twist = np.zeros(3)
        self._rule = np.array([self.tolerance, self.speed, self.heading_tolerance, self.max_turn_rate,
                               self.gait_period, self.cycle], dtype=float)

    @property
    def index(self) -> int:
        """Index of the waypoint being approached."""
        return int(self._progress[0])

    @property
    def reached(self) -> int:
        """Number of waypoints reached so far."""
        return int(self._progress[1])

    @property
    def done(self) -> bool:
        return not self.cycle and self.reached >= len(self.waypoints)

    @property
    def target(self) -> np.ndarray:
        return self.waypoints[self.index].copy()

    def command(self, state: RobotState) -> BaseCommand:
        """Advance past reached waypoints and return the base twist for the current one."""
        q = validation.vector(state.q, None, "state.q")
        if q.size < 7:
            raise InvalidInputError("waypoint following needs a floating-base state (q[:7] = base pose)")
        yaw = yaw_of(pin.Quaternion(q[3:7]).normalized().toRotationMatrix())
        return BaseCommand(*self.twist_at(float(q[0]), float(q[1]), yaw))

    def twist_at(self, x: float, y: float, yaw: float) -> np.ndarray:
        """:meth:`command` for the base at planar pose (``x``, ``y``, ``yaw``), as the array
        (vx, vy, wz) (this follower's own, overwritten by the next call): the closed loop's
        per-step form, which takes the heading from the base rotation it already has."""
        waypoint_twist(self._points, self._rule, x, y, yaw, self._progress, self._twist)
        return self._twist


@cached_jit
def waypoint_twist(points, rule, x, y, yaw, progress, out):
    """The follower's rule (module docstring) for the base at (``x``, ``y``, ``yaw``): advance
    ``progress`` = (index, reached) past reached waypoints and write the twist (vx, vy, wz) into
    ``out`` (zero once a non-cycling follower is done). ``rule`` holds tolerance, speed,
    heading tolerance, turn-rate cap, gait period and the cycle flag (1.0 or 0.0)."""
    tolerance, speed, heading_tolerance, max_turn_rate, gait_period = rule[0], rule[1], rule[2], rule[3], rule[4]
    cycle = rule[5] != 0.0
    n = points.shape[0]
    out[0] = out[1] = out[2] = 0.0
    if not cycle and progress[1] >= n:
        return
    for _ in range(n):     # bounded: every waypoint may be within reach
        k = progress[0]
        if np.hypot(points[k, 0] - x, points[k, 1] - y) >= tolerance:
            break
        progress[1] += 1
        if not cycle and progress[1] >= n:
            return
        progress[0] = (k + 1) % n
    k = progress[0]
    error = wrap_angle(math.atan2(points[k, 1] - y, points[k, 0] - x) - yaw)
    rate = error / gait_period
    if abs(error) < heading_tolerance:
        out[0], out[2] = speed, rate
    else:
        out[2] = clamp(rate, max_turn_rate)
