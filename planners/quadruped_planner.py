"""The locomotion planner of the paper's experiments (Sec. 7.2.1, SPEC section 5).

Given a commanded planar base twist, :class:`QuadrupedPlanner` produces, every control step,
desired joint positions, velocities and accelerations (``idyn.state.Desired``) for the legs:

* **gait** - a :class:`~planners.gait.Gait` says which feet are in stance;
* **stance feet** hold their footholds in the world. Relative to a base that moves with the
  commanded twist, a held foot moves with velocity -J_base * twist, where J_base are the base
  columns of the foot Jacobian (Pacer integrates exactly this velocity in the base frame; holding
  the world point is the same motion without integration drift). Its acceleration is obtained by
  differencing that velocity between control steps;
* **swing feet** follow, per axis, a velocity-clamped cubic spline planned at liftoff through
  start, start + h up, goal + h up + 0.1 (goal - start) and goal, with the stance velocity at
  both ends (zero in the world frame) and zero end accelerations
  (:class:`~planners.spline.ClampedCubicSpline`). The goal is the foot's nominal position under
  the base pose predicted, from the measured base and the command, for the middle of the next
  stance phase. SPEC section 5 fixes the four control points but not when each is reached; the
  lift and the crossing are short and the lowering takes the last half of the swing, so the foot
  arrives slowly (see :meth:`QuadrupedPlanner._plan_swing`);
* **inverse kinematics** is done per leg relative to the *gait pose* (level, at the planned
  height, kept within ``max_lead`` of the measured base), so tracking the joints also levels
  the base: resolved-rate Newton iterations with backtracking (beta 0.75), warm-started from
  the previous step; qd = J^-1 xd and qdd = J^-1 (xdd - Jdot qd).

The planner also integrates the commanded twist into a *gait pose* (the planned base pose);
:meth:`QuadrupedPlanner.base_goal` reports it for the balance term
(:class:`~planners.balance.BalanceController`).

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
from idyn.errors import InvalidInputError
from idyn.state import Desired, RobotState

from .base_motion import BaseCommand, PlanarPose, arc, clamp, rot_z, wrap_angle, yaw_of
from .gait import Gait, TrotGait
from ._leg_kernel import accelerations_into, per_leg_into
from ._motion_kernel import gait_frame_motion
from .leg_kinematics import LegKinematics
from .spline import ClampedCubicSpline


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
        Timing and step height; default :class:`~planners.gait.TrotGait` (the paper's trot).
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
        self._q_stand_legs = q_stand[self.kin.leg_q].copy()
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
        self._na = model.na
        self.command = BaseCommand()
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the plan; the next :meth:`plan` call starts the gait at that call's time."""
        L = len(self.legs)
        self._t0 = None
        self._t_prev = None
        self._pose = None                 # gait pose (planar), its height and vertical speed
        self._z = self._vz = 0.0
        self._twist = (0.0, 0.0, 0.0)     # planned (vx, vy, wz), heading frame
        self._twist_rate = (0.0, 0.0, 0.0)
        self._linear = np.zeros(3)        # world velocity of the gait pose at the last plan()
        self._stance = None               # stance flags in effect (planned or early touchdown)
        self._scheduled = np.ones(L, dtype=bool)    # the gait's flags at the last step
        self._early = np.zeros(L, dtype=bool)       # touched down before the planned time
        self._probe = np.zeros(L)                   # depth searched below a late foothold (m)
        self._settle = np.full(L, np.nan)           # height a late foothold moves to (m)
        self._feet = np.zeros((L, 3))               # planned world foot points
        self._splines: list[ClampedCubicSpline | None] = [None] * L
        self._q_legs = self._q_stand_legs.copy()
        self._qd_legs = np.zeros_like(self._q_legs)
        self._qdd_legs = np.zeros_like(self._q_legs)
        self.ik_error = np.zeros(L)

    def set_command(self, command: BaseCommand) -> None:
        if not isinstance(command, BaseCommand):
            raise InvalidInputError(f"command must be a BaseCommand, got {type(command).__name__}")
        self.command = command

    @property
    def stance(self) -> dict[str, bool]:
        """Stance flag of every leg at the last planned step: the gait's schedule, plus swing
        feet that touched down early."""
        flags = self._stance if self._stance is not None else np.zeros(len(self.legs), bool)
        return dict(zip(self.legs, map(bool, flags)))

    @property
    def foot_targets(self) -> np.ndarray:
        """(L, 3) planned world foot points at the last planned step (legs in :attr:`legs`)."""
        return self._feet.copy()

    def base_goal(self) -> BaseGoal:
        """The gait pose: where the plan wants the base (level, at the nominal height), and its
        planned velocity."""
        if self._pose is None:
            raise InvalidInputError("base_goal() needs at least one plan() call")
        return BaseGoal._trusted(np.array([self._pose.x, self._pose.y, self._z]),
                                 np.array([0.0, 0.0, self._pose.yaw]), self._linear.copy(),
                                 np.array([0.0, 0.0, self._twist[2]]))

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
        base_p = q[:3]
        base_R = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
        measured = PlanarPose(float(base_p[0]), float(base_p[1]), yaw_of(base_R))
        t = float(state.t)
        if self._t0 is None:
            self._start(t, q, base_p, base_R, measured)
        dt = t - self._t_prev
        if dt < 0:
            raise InvalidInputError(f"time went backwards: {t} after {self._t_prev}; call reset()")
        self._t_prev = t
        tg = t - self._t0
        self._advance_gait_pose(measured, dt)
        pd, pdd = self._plan_feet(tg, dt, touching, q, base_p, base_R)

        # -- foot points relative to the gait pose (level, moving with the planned twist)
        L = len(self.legs)
        x_rel, xd, xdd, V = np.empty((L, 3)), np.empty((L, 3)), np.empty((L, 3)), np.empty(3)
        gait_frame_motion(self._feet, pd, pdd, np.array([self._pose.x, self._pose.y, self._z]), self._pose.yaw,
                          self._twist, self._twist_rate, self._vz, V, x_rel, xd, xdd)
        self._linear = V
        # warm start: the last solution advanced by its rates and accelerations (second order), so
        # the guess is usually within tolerance and at most one Newton step is needed
        q_guess = self._q_legs + dt * (self._qd_legs + 0.5 * dt * self._qdd_legs)
        q_legs, _, J, self.ik_error = self.kin.solve(
            x_rel, q_guess, tol=self.ik_tol, max_iters=self.ik_max_iters)
        J_inv = self.kin.inverse(J)
        qd, qdd = np.empty_like(q_legs), np.empty_like(q_legs)
        per_leg_into(J_inv, xd, qd)
        accelerations_into(J_inv, xdd, self.kin.drift(q_legs, qd), qdd)
        self._q_legs, self._qd_legs, self._qdd_legs = q_legs, qd, qdd

        out_q = np.zeros(self._na)
        out_v = np.zeros(self._na)
        out_a = np.zeros(self._na)
        idx = self.kin.leg_actuated
        out_q[idx], out_v[idx], out_a[idx] = q_legs, qd, qdd
        return Desired(out_q, out_v, out_a)

    __call__ = plan

    # ------------------------------------------------------------------ internals
    def _start(self, t, q, base_p, base_R, measured: PlanarPose) -> None:
        """First call: start the gait now, from the measured feet and base."""
        self._t0 = self._t_prev = t
        self._q_legs = q[self.kin.leg_q].copy()
        self._feet = base_p + self.kin.positions(self._q_legs) @ base_R.T
        self._pose = measured
        self._z = float(np.mean(self._feet[:, 2])) + self._height
        self._stance = np.ones(len(self.legs), dtype=bool)   # every foot starts on the ground

    def _ramp(self, twist: tuple, dt: float) -> tuple[float, float, float]:
        """The planned twist (vx, vy, wz) after ``dt`` s of following the command within the
        acceleration limits (norm-limited in the plane, separately in yaw)."""
        c = self.command
        sx, sy, sw = c.vx - twist[0], c.vy - twist[1], c.wz - twist[2]
        if self.max_acceleration is not None:
            n, cap = math.hypot(sx, sy), self.max_acceleration * dt
            if n > cap:
                sx, sy = sx * (cap / n), sy * (cap / n)
        if self.max_yaw_acceleration is not None:
            cap = self.max_yaw_acceleration * dt
            sw = min(max(sw, -cap), cap)
        return twist[0] + sx, twist[1] + sy, twist[2] + sw

    def _advance_gait_pose(self, measured: PlanarPose, dt: float) -> None:
        """Ramp the planned twist toward the command and integrate it into the gait pose, kept
        near the measured base; the height follows the footholds."""
        if dt <= 0:      # first call: an unlimited ramp takes the command at once
            self._twist = self._ramp(self._twist, 0.0)
            return
        pose, last = self._pose, self._twist
        x, y, yaw = arc(pose.x, pose.y, pose.yaw, *last, dt)    # the twist planned last step
        twist = self._ramp(last, dt)
        self._twist_rate = tuple((new - old) / dt for new, old in zip(twist, last))
        self._twist = twist
        dx, dy = x - measured.x, y - measured.y
        dist = math.hypot(dx, dy)
        if dist > self.max_lead:
            dx, dy = dx * self.max_lead / dist, dy * self.max_lead / dist
        dyaw = clamp(wrap_angle(yaw - measured.yaw), self.max_yaw_lead)
        self._pose = PlanarPose(measured.x + dx, measured.y + dy, measured.yaw + dyaw)
        rest = self._foothold_height() + self._height - self._z
        self._vz = clamp(rest / dt, self.max_climb_rate)
        self._z += self._vz * dt

    def _foothold_height(self) -> float:
        """Mean height of the footholds: stance feet where they are held, swing feet where they
        will land."""
        z = [s.end_height if s is not None else f[2] for s, f in zip(self._splines, self._feet)]
        return float(sum(z) / len(z))       # np.mean's sum, in the same order

    def _plan_feet(self, tg, dt, touching, q, base_p, base_R) -> tuple[np.ndarray, np.ndarray]:
        """World foot targets (into ``self._feet``), velocities and accelerations at gait time
        ``tg``: stance feet hold their footholds, swing feet follow their splines."""
        L = len(self.legs)
        scheduled = self.gait.stance(tg)
        pd = np.zeros((L, 3))
        pdd = np.zeros((L, 3))
        stance = scheduled.copy()
        measured = None

        def measured_foot(i: int) -> np.ndarray:
            """Foot ``i``'s measured world position (all feet computed once, on first need)."""
            nonlocal measured
            if measured is None:
                measured = base_p + self.kin.positions(q[self.kin.leg_q]) @ base_R.T
            return measured[i]

        for i, leg in enumerate(self.legs):
            down = touching is None or bool(touching[i])
            if scheduled[i]:
                spline = self._splines[i]
                if spline is not None:                 # planned touchdown
                    self._feet[i] = spline.end_point
                    self._splines[i] = None
                    self._probe[i] = 0.0
                    self._settle[i] = math.nan
                self._early[i] = False
                if down and self._probe[i] > 0.0:      # a late foot touched: hold it at that height,
                    self._settle[i] = measured_foot(i)[2]  # reached at the probing speed (no jump)
                    self._probe[i] = 0.0
                if down and not math.isnan(self._settle[i]):
                    gap = self._settle[i] - self._feet[i, 2]
                    move = clamp(gap, self.probe_speed * dt)
                    if move == gap:                    # arrives in this step
                        self._settle[i] = math.nan
                    self._feet[i, 2] += move
                    pd[i, 2] = move / dt if dt > 0 else 0.0
                if not down and self._probe[i] < self.probe_depth:   # late: reach down
                    step = min(self.probe_speed * dt, self.probe_depth - self._probe[i])
                    self._feet[i, 2] -= step
                    self._probe[i] += step
                    pd[i, 2] = -self.probe_speed
                continue
            if self._scheduled[i]:                     # liftoff: plan this swing
                self._splines[i] = self._plan_swing(i, leg, tg)
                self._early[i] = False
            spline = self._splines[i]
            if self._early[i]:
                stance[i] = True
                continue
            if spline is None:                         # the gait started mid-swing
                spline = self._splines[i] = self._plan_swing(i, leg, tg)
            late = tg >= spline.t0 + self.touchdown_window * (spline.t1 - spline.t0)
            if touching is not None and down and late:     # early touchdown: stance on contact
                self._feet[i] = measured_foot(i)
                self._splines[i] = None
                self._early[i] = stance[i] = True
                continue
            spline.evaluate_into(tg, self._feet[i], pd[i], pdd[i])
        self._scheduled = scheduled
        self._stance = stance
        return pd, pdd

    def _predict_planned(self, duration: float) -> PlanarPose:
        """The gait pose after ``duration`` s of the planned twist ramping toward the command."""
        pose, twist = self._pose, self._twist
        x, y, yaw = pose.x, pose.y, pose.yaw
        n = max(1, int(math.ceil(duration / 0.01)))
        h = duration / n
        for _ in range(n):
            nxt = self._ramp(twist, h)
            x, y, yaw = arc(x, y, yaw, *(0.5 * (a + b) for a, b in zip(twist, nxt)), h)
            twist = nxt
        return PlanarPose(x, y, yaw)

    def _plan_swing(self, i: int, leg: str, tg: float) -> ClampedCubicSpline:
        """Spline of a swing that starts now (or started before the planner did), in the world
        frame: the foot is at rest at both ends.

        The four control points are SPEC section 5's (start, start + h up, goal + h up + overstep
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
        liftoff, touchdown = self.gait.swing_window(leg, tg)
        mid_stance = self._predict_planned((touchdown - tg) + 0.5 * self.gait.stance_duration)
        start = self._feet[i].copy()
        goal = mid_stance.transform(self._nominal[i])
        goal[2] = start[2]                    # land at the height the foot left (no terrain map)
        up = np.array([0.0, 0.0, self.gait.step_height])
        points = np.array([start, start + up, goal + up + self.overstep * (goal - start), goal])
        times = liftoff + np.array([0.0, *self.swing_timing, 1.0]) * (touchdown - liftoff)
        zero = np.zeros(3)
        return ClampedCubicSpline(times, points, zero, zero)
