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
  stance phase;
* **inverse kinematics** is done per leg relative to the *measured* base pose (as in Pacer):
  resolved-rate Newton iterations with backtracking (beta 0.75), warm-started from the previous
  step; qd = J^-1 xd and qdd = J^-1 (xdd - Jdot qd).

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

from .base_motion import BaseCommand, PlanarPose, predict, rot_z, wrap_angle, yaw_of
from .gait import Gait, TrotGait
from .leg_kinematics import LegKinematics, per_leg
from .spline import ClampedCubicSpline


@dataclass(frozen=True)
class BaseGoal:
    """Planned base pose and velocity: ``position`` (world), ``rpy`` (roll, pitch, yaw),
    ``linear`` and ``angular`` velocity (world axes)."""

    position: np.ndarray
    rpy: np.ndarray
    linear: np.ndarray
    angular: np.ndarray


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
    max_lead, max_yaw_lead:
        The gait pose integrates the command but is kept within this distance (m) and heading
        difference (rad) of the measured base, so the balance goal cannot run away from a robot
        that cannot keep up (slipping on mu = 0.1, turning limits).
    ik_tol, ik_max_iters:
        Newton tolerance on each foot's position (m; Pacer used 1e-3) and the iteration cap per
        control step.
    """

    def __init__(self, model: RobotModel, feet: dict, leg_joints: dict, q_stand, *,
                 foot_offsets=None, gait: Gait | None = None, overstep: float = 0.1,
                 max_lead: float = 0.05, max_yaw_lead: float = 0.25,
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
        self.max_lead, self.max_yaw_lead = float(max_lead), float(max_yaw_lead)
        self.ik_tol, self.ik_max_iters = float(ik_tol), int(ik_max_iters)
        self._na = model.na
        self.command = BaseCommand()
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the plan; the next :meth:`plan` call starts the gait at that call's time."""
        self._t0 = None
        self._t_prev = None
        self._pose = None                 # gait pose (planar) and its height
        self._z = 0.0
        self._stance = None
        self._feet = np.zeros((len(self.legs), 3))     # planned world foot points
        self._splines: list[ClampedCubicSpline | None] = [None] * len(self.legs)
        self._xd_prev = np.zeros((len(self.legs), 3))
        self._q_legs = self._q_stand_legs.copy()
        self._qd_legs = np.zeros_like(self._q_legs)
        self._qdd_legs = np.zeros_like(self._q_legs)
        self.ik_error = np.zeros(len(self.legs))

    def set_command(self, command: BaseCommand) -> None:
        if not isinstance(command, BaseCommand):
            raise InvalidInputError(f"command must be a BaseCommand, got {type(command).__name__}")
        self.command = command

    @property
    def stance(self) -> dict[str, bool]:
        """Planned stance flag of every leg at the last planned step."""
        flags = self._stance if self._stance is not None else np.zeros(len(self.legs), bool)
        return dict(zip(self.legs, map(bool, flags)))

    @property
    def foot_targets(self) -> np.ndarray:
        """(L, 3) planned world foot points at the last planned step (legs in :attr:`legs`)."""
        return self._feet.copy()

    def base_goal(self) -> BaseGoal:
        """The gait pose: where the plan wants the base (level, at the nominal height)."""
        if self._pose is None:
            raise InvalidInputError("base_goal() needs at least one plan() call")
        p, c = self._pose, self.command
        heading = rot_z(p.yaw)
        return BaseGoal(np.array([p.x, p.y, self._z]), np.array([0.0, 0.0, p.yaw]),
                        heading @ np.array([c.vx, c.vy, 0.0]), np.array([0.0, 0.0, c.wz]))

    # ------------------------------------------------------------------ planning
    def plan(self, state: RobotState, command: BaseCommand | None = None) -> Desired:
        """Desired actuated q, v, vdot for the measured ``state`` at time ``state.t``."""
        if command is not None:
            self.set_command(command)
        q = self.model.check_q(state.q)
        self.model.check_v(state.v)
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
        self._advance_gait_pose(measured, dt)
        tg = t - self._t0

        stance = self.gait.stance(tg)
        pd = np.zeros((len(self.legs), 3))
        pdd = np.zeros((len(self.legs), 3))
        for i, leg in enumerate(self.legs):
            if stance[i]:
                if self._splines[i] is not None:   # touchdown: hold the spline's end point
                    self._feet[i] = self._splines[i](self._splines[i].t1)[0]
                    self._splines[i] = None
                continue
            spline = self._splines[i]
            if spline is None or self._stance[i]:
                spline = self._splines[i] = self._plan_swing(i, leg, tg, measured)
            self._feet[i], pd[i], pdd[i] = spline(tg)
        self._stance = stance

        # -- relative to the measured base, which moves with the commanded twist
        Rt = base_R.T
        x_rel = (self._feet - base_p) @ base_R                   # R^T (p - b), per row
        heading = rot_z(measured.yaw)
        c = self.command
        twist = np.concatenate((Rt @ heading @ np.array([c.vx, c.vy, 0.0]),
                                Rt @ np.array([0.0, 0.0, c.wz])))   # pinocchio base v (local)
        # warm start: the last solution advanced by its rates and accelerations (second order), so
        # the guess is usually within tolerance and at most one Newton step is needed
        q_guess = self._q_legs + dt * (self._qd_legs + 0.5 * dt * self._qdd_legs)
        q_legs, _, J, self.ik_error = self.kin.solve(
            x_rel, q_guess, tol=self.ik_tol, max_iters=self.ik_max_iters)
        W = _skew(twist[3:])                                      # omega x (.) in base axes
        pd_rel = pd @ base_R                                      # R^T pd
        xd = pd_rel - self.kin.base_velocity(twist)              # R^T pd - J_base twist
        # swing: analytic derivative of R^T (p - b) for a constant body twist
        xdd = pdd @ base_R - (xd + pd_rel) @ W.T
        if dt > 0:   # stance: the acceleration of -J_base twist by differencing (SPEC 5)
            xdd[stance] = (xd[stance] - self._xd_prev[stance]) / dt
        else:
            xdd[stance] = 0.0
        J_inv = self.kin.inverse(J)
        qd = per_leg(J_inv, xd)
        qdd = per_leg(J_inv, xdd - self.kin.drift(q_legs, qd))
        self._q_legs, self._qd_legs, self._qdd_legs, self._xd_prev = q_legs, qd, qdd, xd

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

    def _advance_gait_pose(self, measured: PlanarPose, dt: float) -> None:
        """Integrate the command into the gait pose, kept near the measured base."""
        p = predict(self._pose, self.command, dt)
        dx, dy = p.x - measured.x, p.y - measured.y
        dist = math.hypot(dx, dy)
        if dist > self.max_lead:
            dx, dy = dx * self.max_lead / dist, dy * self.max_lead / dist
        dyaw = float(np.clip(wrap_angle(p.yaw - measured.yaw), -self.max_yaw_lead, self.max_yaw_lead))
        self._pose = PlanarPose(measured.x + dx, measured.y + dy, measured.yaw + dyaw)

    def _plan_swing(self, i: int, leg: str, tg: float, measured: PlanarPose) -> ClampedCubicSpline:
        """Spline of a swing that starts now (or started before the planner did)."""
        liftoff, touchdown = self.gait.swing_window(leg, tg)
        mid_stance = predict(measured, self.command,
                             (touchdown - tg) + 0.5 * self.gait.stance_duration)
        start = self._feet[i].copy()
        goal = mid_stance.transform(self._nominal[i])
        goal[2] = start[2]                    # land at the height the foot left (no terrain map)
        up = np.array([0.0, 0.0, self.gait.step_height])
        points = np.array([start, start + up, goal + up + self.overstep * (goal - start), goal])
        times = np.linspace(liftoff, touchdown, 4)
        zero = np.zeros(3)
        return ClampedCubicSpline(times, points, zero, zero)


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
