"""Trajectory sources of the paper's experiments (Sec. 7.2, docs/planner.md).

* :class:`TrotGait` / :class:`Gait` - gait timing (which foot is in stance when);
* :class:`QuadrupedPlanner` - stance and swing foot trajectories and leg IK, giving desired
  joint q, v, vdot every control step;
* :class:`WaypointFollower` - the waypoint task that commands the base twist;
* :class:`BalanceController` - the base PD mapped to virtual compressive normal forces;
* :class:`ArmSinusoid` - the manipulator's reference motion and grasp.

Planners depend only on :mod:`idyn`; robots are passed in as models, frame names and indices.
"""
from .arm import ArmSinusoid
from .balance import BalanceController, BalanceOutput
from .base_motion import BaseCommand, PlanarPose, predict
from .gait import Gait, TrotGait
from .leg_kinematics import LegKinematics
from .quadruped_planner import BaseGoal, QuadrupedPlanner
from .spline import ClampedCubicSpline
from .waypoints import PAPER_SPEED, PAPER_WAYPOINTS, WaypointFollower

__all__ = ["ArmSinusoid", "BalanceController", "BalanceOutput", "BaseCommand", "BaseGoal",
           "ClampedCubicSpline", "Gait", "LegKinematics", "PAPER_WAYPOINTS", "PlanarPose",
           "QuadrupedPlanner", "TrotGait", "WaypointFollower", "predict"]
