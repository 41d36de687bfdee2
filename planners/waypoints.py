"""The waypoint task of the quadruped experiments (paper Sec. 7.6, SPEC section 5).

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
from idyn.state import RobotState

from .base_motion import BaseCommand, clamp, wrap_angle, yaw_of

#: The paper's waypoints (m, world x-y).
PAPER_WAYPOINTS = ((0.0, 0.0), (0.25, 0.0), (0.0, 0.25), (0.0, -0.25), (-0.25, 0.0))


class WaypointFollower:
    """Turns the measured base pose into a :class:`~planners.base_motion.BaseCommand`.

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

    def __init__(self, waypoints=PAPER_WAYPOINTS, *, tolerance: float = 0.025, speed: float = 0.2,
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
        self._points = [tuple(p) for p in pts.tolist()]    # the same numbers as Python floats
        self.tolerance, self.speed = float(tolerance), float(speed)
        self.heading_tolerance, self.max_turn_rate = float(heading_tolerance), float(max_turn_rate)
        self.gait_period, self.cycle = float(gait_period), bool(cycle)
        self.reset()

    def reset(self) -> None:
        self.index = 0          #: index of the waypoint being approached
        self.reached = 0        #: number of waypoints reached so far

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
        x, y = float(q[0]), float(q[1])
        if self.done:
            return BaseCommand()
        for _ in range(len(self.waypoints)):     # bounded: every waypoint may be within reach
            wx, wy = self._points[self.index]
            if np.hypot(wx - x, wy - y) >= self.tolerance:
                break
            self.reached += 1
            if self.done:
                return BaseCommand()
            self.index = (self.index + 1) % len(self.waypoints)
        wx, wy = self._points[self.index]
        yaw = yaw_of(pin.Quaternion(q[3:7]).normalized().toRotationMatrix())
        error = wrap_angle(math.atan2(wy - y, wx - x) - yaw)
        rate = error / self.gait_period
        if abs(error) < self.heading_tolerance:
            return BaseCommand(vx=self.speed, wz=rate)
        return BaseCommand(wz=clamp(rate, self.max_turn_rate))
