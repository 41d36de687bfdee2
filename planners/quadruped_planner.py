"""The locomotion planner of the paper's experiments (Sec. 7.2.1, docs/planner.md).

Given a commanded planar base twist, :class:`QuadrupedPlanner` produces, every control step,
desired joint positions, velocities and accelerations (``idyn.state.Desired``) for the legs:

* **gait** - a :class:`~idyn.planners.gait.Gait` says which feet are in stance;
* **stance feet** hold their footholds in the world. Relative to a base that moves with the
  commanded twist, a held foot moves with velocity -J_base * twist, where J_base are the base
  columns of the foot Jacobian (Pacer integrates exactly this velocity in the base frame; holding
  the world point is the same motion without integration drift). Its acceleration is obtained by
  differencing that velocity between control steps;
* **swing feet** follow, per axis, a velocity-clamped cubic spline planned at liftoff through
  start, start + h up, goal + h up + 0.1 (goal - start) and goal, with the stance velocity at
  both ends (zero in the world frame) and zero end accelerations
  (:class:`~idyn.planners.spline.ClampedCubicSpline`). The goal is the foot's nominal position under
  the base pose predicted, from the measured base and the command, for the middle of the next
  stance phase. The authors fix the four control points but not when each is reached; the
  lift and the crossing are short and the lowering takes the last half of the swing, so the foot
  arrives slowly (see :meth:`QuadrupedPlanner._plan_swing`);
* **inverse kinematics** is done per leg relative to the *gait pose* (level, at the planned
  height, kept within ``max_lead`` of the measured base), so tracking the joints also levels
  the base: resolved-rate Newton iterations with backtracking (beta 0.75), warm-started from
  the previous step; qd = J^-1 xd and qdd = J^-1 (xdd - Jdot qd).

The planner also integrates the commanded twist into a *gait pose* (the planned base pose);
:meth:`QuadrupedPlanner.base_goal` reports it for the balance term
(:class:`~idyn.planners.balance.BalanceController`).

The planner's state lives in one workspace record (immutable model + reusable workspace): each
control step is one compiled call (:func:`idyn.planners.kernels.plan_motion`, which hands back
only for a swing spline's solve and the measured feet), the leg IK (one compiled Newton loop
between its pinocchio passes, :meth:`LegKinematics.solve_begun`), the drift pass and one
compiled call for the joint accelerations.
:meth:`QuadrupedPlanner.plan_checked` is the closed loop's entry, with the base rotation and the
contact flags it already has.

Nothing here is specific to one robot: the model, the foot frames, the leg joints and the
standing configuration are constructor arguments (``experiments`` connects a
``robots.Quadruped`` to them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from idyn import RobotModel, validation
from idyn.errors import InvalidInputError, NonFiniteError
from idyn.state import Desired, RobotState

from . import kernels as kernel
from .base_motion import BaseCommand, PlanarPose, rot_z, yaw_of
from .gait import Gait, TrotGait
from .leg_kinematics import LegKinematics
from .spline import ClampedCubicSpline

#: knots of a swing spline: its four control points and the two virtual knots
_SWING_KNOTS = 6


@dataclass(frozen=True)
class BaseGoal:
    """Planned base pose and velocity: ``position`` (world), ``rpy`` (roll, pitch, yaw),
    ``linear`` and ``angular`` velocity (world axes)."""

    position: np.ndarray
    rpy: np.ndarray
    linear: np.ndarray
    angular: np.ndarray

    def __post_init__(self):
        for name in ("position", "rpy", "linear", "angular"):
            object.__setattr__(self, name, validation.vector(getattr(self, name), 3, f"goal.{name}"))

    @classmethod
    def _trusted(cls, position, rpy, linear, angular) -> "BaseGoal":
        """Without the checks, for the planner's own finite 3-vectors."""
        goal = object.__new__(cls)
        for name, value in (("position", position), ("rpy", rpy), ("linear", linear), ("angular", angular)):
            object.__setattr__(goal, name, value)
        return goal


class QuadrupedPlanner:
    """Gait, stance and swing foot trajectories and leg IK for a legged robot (paper Sec. 7.2.1).

    Parameters
    ----------
    model:
        Floating-base :class:`idyn.RobotModel` of the robot.
    feet:
        Leg label -> foot frame name; the labels must match the gait's legs.
    leg_joints:
        Leg label -> pinocchio velocity indices of that leg's actuated joints.
    q_stand:
        A standing configuration (nq) with the base level: it defines each foot's nominal
        position under the base and the nominal base height above the feet.
    foot_offsets:
        Leg label -> the planned point in the foot frame (the foot sphere centre); default zero.
    gait:
        Timing and step height; default :class:`~idyn.planners.gait.TrotGait` (the paper's trot).
    overstep:
        Fraction of the step added beyond the goal at the third control point (0.1 in Pacer).
    swing_timing:
        Fractions of the swing at which the second and third control points are reached (the
        first is reached at liftoff, the last at touchdown). The default lifts in the first
        sixth, moves across in the next third and lowers in the last half, so the foot arrives
        slowly (see :meth:`_plan_swing`).
    max_acceleration, max_yaw_acceleration:
        The planned base twist follows the command at most this fast (m/s^2, rad/s^2); ``None``
        follows it instantly. The task starts and stops the robot (paper Sec. 7.6, "acceleration
        to and from rest"): a velocity step would ask the feet for an infinite acceleration.
    max_lead, max_yaw_lead:
        The gait pose integrates the planned twist but is kept within this distance (m) and
        heading difference (rad) of the measured base, so the goal cannot run away from a robot
        that cannot keep up (slipping on mu = 0.1, turning limits).
    max_climb_rate:
        Speed (m/s) at which the planned base height follows the footholds (uneven ground).
    touchdown_window:
        Fraction of a swing after which a foot that touches the ground becomes a stance foot
        (Pacer's "stance on contact"); a foot still in the air at its planned touchdown keeps
        descending at ``probe_speed`` (m/s), at most ``probe_depth`` (m), until it touches; its
        foothold then moves back up to the height where it touched, at ``probe_speed``.
        Measured on LINKS (qp-coulomb, PyBullet): keeping the probed foothold, below the ground
        by the depth searched, ratcheted the footholds down 2-6 mm a step, since the next swing
        lands at the height it left (planned feet 5.6 cm below rigid ground, base rolled 0.3
        rad, fall at 4.8 s); moving it to the touched point at once is a 2-6 mm jump of the
        desired foot (compliant-low fell in 2 of 3 10 s runs); moving it at the probing speed,
        rigid-high and compliant-low completed 3 of 3.
    ik_tol, ik_max_iters:
        Newton tolerance on each foot's position (m; Pacer used 1e-3) and the iteration cap per
        control step.
    """

    def __init__(self, model: RobotModel, feet: dict, leg_joints: dict, q_stand, *,
                 foot_offsets=None, gait: Gait | None = None, overstep: float = 0.1,
                 swing_timing: tuple[float, float] = (1.0 / 6.0, 0.5),
                 max_acceleration: float | None = 1.0, max_yaw_acceleration: float | None = 8.0,
                 max_lead: float = 0.05, max_yaw_lead: float = 0.25, max_climb_rate: float = 0.05,
                 touchdown_window: float = 0.5, probe_speed: float = 0.1, probe_depth: float = 0.03,
                 ik_tol: float = 1e-6, ik_max_iters: int = 20):
        self.model = model
        self.gait = gait or TrotGait()
        if set(self.gait.legs) != set(feet):
            raise InvalidInputError(f"gait legs {sorted(self.gait.legs)} != feet {sorted(feet)}")
        self.kin = LegKinematics(model, {leg: feet[leg] for leg in self.gait.legs}, leg_joints,
                                 foot_offsets)
        self.legs = self.kin.legs
        q_stand = model.check_q(q_stand)
        self._q_stand_legs = self.kin.angles(q_stand).copy()
        rot = pin.Quaternion(q_stand[3:7]).normalized().toRotationMatrix()
        if rot[2, 2] < 1.0 - 1e-6:
            raise InvalidInputError("q_stand must have a level base (zero roll and pitch)")
        # nominal foot positions in the heading frame of the standing base
        local = self.kin.positions(self._q_stand_legs)
        heading = rot_z(yaw_of(rot))
        self._nominal = (heading.T @ rot @ local.T).T        # (L, 3), z < 0: below the base
        self._height = float(-np.mean(self._nominal[:, 2]))  # base height above the foot plane
        self.overstep = float(overstep)
        lift, lower = (float(f) for f in swing_timing)
        if not 0.0 < lift < lower < 1.0:
            raise InvalidInputError(f"swing_timing must satisfy 0 < lift < lower < 1, got {swing_timing}")
        self.swing_timing = (lift, lower)
        for name, value in (("max_acceleration", max_acceleration),
                            ("max_yaw_acceleration", max_yaw_acceleration)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InvalidInputError(f"{name} must be positive or None, got {value}")
        self.max_acceleration, self.max_yaw_acceleration = max_acceleration, max_yaw_acceleration
        self.max_lead, self.max_yaw_lead = float(max_lead), float(max_yaw_lead)
        self.max_climb_rate = float(max_climb_rate)
        if not 0.0 < touchdown_window <= 1.0:
            raise InvalidInputError(f"touchdown_window must lie in (0, 1], got {touchdown_window}")
        self.touchdown_window = float(touchdown_window)
        self.probe_speed, self.probe_depth = float(probe_speed), float(probe_depth)
        self.ik_tol, self.ik_max_iters = float(ik_tol), int(ik_max_iters)
        L, n = self.kin.leg_v.shape
        self._ws = np.zeros(1, kernel.plan_dtype(L, n, _SWING_KNOTS))
        self._w = self._ws.view(np.recarray)[0]      # the same record, with attribute access
        # views of the fields the per-step glue reads (attribute access on the record is slow)
        self._view = {name: self._ws[name][0] for name in
                      ("touching", "stance", "goal", "replan", "x_rel", "xd", "xdd", "q_guess", "q_legs",
                       "qd_legs", "qdd_legs")}
        self._touching = self._view["touching"]
        self._measured = np.zeros((L, 3))
        #: the step's answer, validated once here and refilled in place by every step
        self._desired = Desired(np.zeros(model.na), np.zeros(model.na), np.zeros(model.na))
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the plan; the next :meth:`plan` call starts the gait at that call's time. The
        parameters (attributes) in effect for the next steps are the ones set at this call."""
        w = self._w
        command = w.command.copy()                                  # the command outlives a reset
        self._ws[0] = np.zeros((), self._ws.dtype)
        w.command[:] = command
        inf = math.inf
        w.max_acceleration = inf if self.max_acceleration is None else self.max_acceleration
        w.max_yaw_acceleration = inf if self.max_yaw_acceleration is None else self.max_yaw_acceleration
        for name in ("max_lead", "max_yaw_lead", "max_climb_rate", "touchdown_window", "probe_speed",
                     "probe_depth"):
            setattr(w, name, getattr(self, name))
        w.height, w.period, w.duty_factor = self._height, self.gait.period, self.gait.duty_factor
        w.phases[:] = [self.gait.touchdown[leg] for leg in self.legs]
        w.t0 = w.t_prev = math.nan
        w.settle[:] = math.nan                                      # height a late foothold moves to
        w.scheduled[:] = 1
        w.q_legs[:] = self._q_stand_legs
        self._started = False
        self.ik_error = np.zeros(len(self.legs))

    @property
    def command(self) -> BaseCommand:
        """The commanded base twist in effect (set by :meth:`set_command` or :meth:`plan`)."""
        return BaseCommand(*map(float, self._w.command))

    def set_command(self, command: BaseCommand) -> None:
        if not isinstance(command, BaseCommand):
            raise InvalidInputError(f"command must be a BaseCommand, got {type(command).__name__}")
        self._w.command[:] = (command.vx, command.vy, command.wz)

    @property
    def stance(self) -> dict[str, bool]:
        """Stance flag of every leg at the last planned step: the gait's schedule, plus swing
        feet that touched down early."""
        flags = self._view["stance"] if self._started else np.zeros(len(self.legs), bool)
        return dict(zip(self.legs, map(bool, flags)))

    @property
    def stance_flags(self) -> np.ndarray:
        """:attr:`stance` as int8 flags in :attr:`legs` order (a live view of the planner's
        workspace, overwritten by the next step: the closed loop's per-step form)."""
        return self._view["stance"]

    @property
    def foot_targets(self) -> np.ndarray:
        """(L, 3) planned world foot points at the last planned step (legs in :attr:`legs`)."""
        return self._w.feet.copy()

    def base_goal(self) -> BaseGoal:
        """The gait pose: where the plan wants the base (level, at the nominal height), and its
        planned velocity."""
        if not self._started:
            raise InvalidInputError("base_goal() needs at least one plan() call")
        return BaseGoal._trusted(*self.goal_rows().copy())

    def goal_rows(self) -> np.ndarray:
        """:meth:`base_goal` as the (4, 3) rows position, rpy, linear, angular (a live view of the
        planner's workspace, overwritten by the next step)."""
        return self._view["goal"]

    # ------------------------------------------------------------------ planning
    def plan(self, state: RobotState, command: BaseCommand | None = None, touching=None) -> Desired:
        """Desired actuated q, v, vdot for the measured ``state`` at time ``state.t``.

        ``touching`` (optional, one flag per leg in :attr:`legs` order) says which feet are on
        the ground; with it, late swing feet that touch become stance feet and stance feet that
        have not yet touched keep reaching down (see ``touchdown_window``).
        """
        if command is not None:
            self.set_command(command)
        q, _ = self.model.check_state(state)
        if touching is not None:
            touching = np.asarray(touching, dtype=bool).ravel()
            if touching.size != len(self.legs):
                raise InvalidInputError(f"touching needs {len(self.legs)} flags, got {touching.size}")
            self._touching[:] = touching
        R = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
        d = self.plan_checked(q, float(state.t), R, self._w.command.copy(), touching is not None)
        return Desired(d.q.copy(), d.v.copy(), d.vdot.copy())

    __call__ = plan

    def plan_checked(self, q: np.ndarray, t: float, R: np.ndarray, command: np.ndarray,
                     touching: bool) -> Desired:
        """:meth:`plan` for a validated configuration ``q`` at time ``t``, its base rotation
        ``R`` and the twist ``command`` (vx, vy, wz), with the feet's contact flags already in
        :attr:`touching_flags` when ``touching`` (the closed loop's per-step form: it has the
        rotation and the flags at hand). The answer is the planner's own :class:`Desired`, its
        arrays overwritten by the next step (:meth:`plan` returns a copy)."""
        base_p = q[:3]
        if not self._started:
            self._start(t, q, base_p, R)
        ws, measured, ik = self._ws, self._measured, self.kin.workspace
        have_measured = False
        status = kernel.plan_motion(ws, ik, t, base_p, R, command, measured, have_measured, touching)
        if status == kernel.TIME_WENT_BACKWARDS:
            raise InvalidInputError(f"time went backwards: {t} after {self._w.t_prev}; call reset()")
        try:
            while status != kernel.DONE:
                if status == kernel.NEED_SWINGS:
                    for i in np.flatnonzero(self._view["replan"]):
                        self._plan_swing(i)
                else:
                    measured[:] = base_p + self.kin.positions(self.kin.angles(q)) @ R.T
                    have_measured = True
                status = kernel.plan_motion(ws, ik, t, base_p, R, command, measured, have_measured, touching)
        except BaseException:
            self._w.stage = 0          # the next step starts afresh, not inside this one
            raise
        return self._joint_targets()

    @property
    def touching_flags(self) -> np.ndarray:
        """The feet's contact flags for :meth:`plan_checked` (int8, :attr:`legs` order; a live view
        the caller writes before the step)."""
        return self._touching

    # ------------------------------------------------------------------ internals
    def _joint_targets(self) -> Desired:
        """Leg IK of the step's targets relative to the gait pose (begun by the step's compiled
        call): q by Newton from the warm start, qd = J^-1 xd, qdd = J^-1 (xdd - Jdot qd)."""
        view, kin, desired = self._view, self.kin, self._desired
        self.ik_error = kin.solve_begun(view["x_rel"], view["xd"], view["qd_legs"], self.ik_tol,
                                        self.ik_max_iters).copy()
        if not kernel.joint_targets(self._ws, kin.workspace, kin.drifts(), desired.q, desired.v, desired.vdot):
            raise NonFiniteError("the planned joint targets are not finite")
        return desired

    def _start(self, t, q, base_p, base_R) -> None:
        """First call: start the gait now, from the measured feet and base."""
        w = self._w
        w.t0 = w.t_prev = t
        w.q_legs[:] = self.kin.angles(q)
        w.feet[:] = base_p + self.kin.positions(w.q_legs) @ base_R.T
        w.pose[:] = (float(base_p[0]), float(base_p[1]), yaw_of(base_R))
        w.z = float(np.mean(w.feet[:, 2])) + self._height
        w.stance[:] = 1                      # every foot starts on the ground
        self._started = True

    def _predict_planned(self, duration: float) -> PlanarPose:
        """The gait pose after ``duration`` s of the planned twist ramping toward the command."""
        return PlanarPose(*kernel.predict_planned(self._ws, duration))

    def _plan_swing(self, i: int) -> None:
        """Spline of a swing that starts now (or started before the planner did), in the world
        frame: the foot is at rest at both ends.

        The four control points are the authors' (start, start + h up, goal + h up + overstep
        (goal - start), goal); :attr:`swing_timing` says when the middle two are reached. With
        the points equally spaced in time the last third of a 75 ms swing lowers the foot 1.5 cm
        in 25 ms, and 20 ms before touchdown the planned foot still descends at 1.08 m/s, 9.9 mm
        up. A real foot lands early (9-22 ms measured on LINKS, from tracking error and uneven
        ground) and then strikes at that speed: a foot 1 mm too low hits at 0.34 m/s. Reaching
        the third point at mid-swing (default (1/6, 1/2)) gives the lowering 37.5 ms; the
        crossing keeps its 25 ms, so the horizontal speed is unchanged and the lift takes the
        first 12.5 ms instead. The descent over the last 20 ms is then at most 0.43 m/s and a
        foot 1 mm too low hits at 0.21 m/s; the end conditions (world velocity and acceleration
        zero) are unchanged.
        """
        w, leg = self._w, self.legs[i]
        tg = w.tg
        liftoff, touchdown = self.gait.swing_window(leg, tg)
        mid_stance = self._predict_planned((touchdown - tg) + 0.5 * self.gait.stance_duration)
        start = w.feet[i].copy()
        goal = mid_stance.transform(self._nominal[i])
        goal[2] = start[2]                    # land at the height the foot left (no terrain map)
        up = np.array([0.0, 0.0, self.gait.step_height])
        points = np.array([start, start + up, goal + up + self.overstep * (goal - start), goal])
        times = liftoff + np.array([0.0, *self.swing_timing, 1.0]) * (touchdown - liftoff)
        zero = np.zeros(3)
        spline = ClampedCubicSpline(times, points, zero, zero)
        for name, value in zip(("knots", "coef", "ends"), spline.pieces()):
            w[name][i] = value
        w.swinging[i], w.early[i] = 1, 0
