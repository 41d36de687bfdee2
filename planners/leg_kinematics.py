"""Per-leg kinematics in the base frame, fast enough for a 1 kHz planner (docs/planner.md).

The planner asks, every control step, for the joint angles that put each foot at a point given
in the base frame, and for the joint rates and accelerations that realise the foot's velocity
and acceleration: q by resolved-rate Newton iterations with a backtracking line search
(beta = 0.75, as the authors' planner), qd = J^-1 xd and qdd = J^-1 (xdd - Jdot qd).

:func:`idyn.kinematics.solve_points_ik` is the general solver (any frames, any joint set); this
class is its batched counterpart for legs: one pinocchio pass serves all legs, the workspace is
reused, and the solve warm-starts from the previous step's answer so one Newton iteration per
control step usually suffices. The base is held at the identity, so "world" here *is* the base
frame and the base columns of the foot Jacobians are J_base = [I, -[r]x] in base axes.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from idyn import RobotModel
from idyn.errors import InvalidInputError
from idyn.model import revolute_chart
from idyn.placements import frame_translations

from . import kernels as kernel
from .kernels import foot_jacobians, regular_inverses


class LegKinematics:
    """Foot points of several legs relative to the base, with their Jacobians and drifts.

    Parameters
    ----------
    model:
        A floating-base :class:`idyn.RobotModel`.
    feet:
        Leg label -> frame name of the foot (a URDF link).
    leg_joints:
        Leg label -> velocity indices (pinocchio v) of the leg's actuated joints; every leg must
        have the same number of joints (at least 3, so the foot position is controllable).
    foot_offsets:
        Leg label -> the planned point (e.g. the foot sphere centre) in the foot frame; zero if
        omitted.
    damping:
        Tikhonov damping (m^2) of the per-leg inverses; keeps steps finite at a stretched leg
        and leaves well-conditioned solves exact to about damping / sigma_min^2.
    """

    def __init__(self, model: RobotModel, feet: dict, leg_joints: dict, foot_offsets=None,
                 damping: float = 1e-6):
        if not model.floating_base:
            raise InvalidInputError("leg kinematics need a floating-base model")
        self.legs = tuple(feet)
        if set(leg_joints) != set(self.legs):
            raise InvalidInputError(f"leg_joints legs {sorted(leg_joints)} != feet legs {sorted(feet)}")
        iv = [np.asarray(leg_joints[leg], dtype=int).ravel() for leg in self.legs]
        if len({a.size for a in iv}) != 1 or iv[0].size < 3:
            raise InvalidInputError(
                f"every leg needs the same number (>= 3) of joints, got {[a.size for a in iv]}")
        actuated = list(model.actuated_v)
        for leg, a in zip(self.legs, iv):
            if any(i not in actuated for i in a):
                raise InvalidInputError(f"leg {leg}: joint indices {a} are not all actuated")
        self.leg_v = np.array(iv)                                  # (L, n) pinocchio v indices
        #: position of each leg joint in the actuated (Desired) vectors, shape (L, n)
        self.leg_actuated = np.searchsorted(model.actuated_v, self.leg_v)
        # the Newton iterations work on leg angles: a continuous joint (nq = 2) becomes a revolute
        # one in the kinematics' own model (idyn.model.revolute_chart), the same mechanism
        self._model_q = model
        pm = pin.Model(model.pinocchio_model) if model.flat_actuation else revolute_chart(model.pinocchio_model)
        q_of_v = {pm.joints[j].idx_v: pm.joints[j].idx_q for j in range(1, pm.njoints) if pm.joints[j].nv == 1}
        #: q index of each leg joint's angle in the kinematics' model (the robot's q for a robot
        #: without continuous joints), shape (L, n)
        self.leg_q = np.vectorize(q_of_v.get)(self.leg_v)
        #: the same in the robot's q, or None when some joint is continuous (:meth:`angles`)
        self._robot_leg_q = self.leg_q if model.flat_actuation else None

        offsets = foot_offsets or {}
        self._fids = []
        for leg in self.legs:
            parent = pm.frames[model.frame_id(feet[leg])]
            offset = np.asarray(offsets.get(leg, np.zeros(3)), dtype=float).reshape(3)
            placement = parent.placement * pin.SE3(np.eye(3), offset)
            self._fids.append(pm.addFrame(pin.Frame(f"{leg}_planned_foot", parent.parentJoint,
                                                    model.frame_id(feet[leg]), placement,
                                                    pin.FrameType.OP_FRAME)))
        self._model = pm
        self._data = pm.createData()
        # pinocchio's results, which every pass overwrites in place: the world joint Jacobians and
        # the translations of the planned feet's frames
        self._Jw = self._data.J
        self._points = frame_translations(self._data, self._fids)
        self._damping = float(damping)
        root = pm.joints[pm.getJointId("root_joint")]
        self._base_v = np.arange(root.idx_v, root.idx_v + 6)
        L, n = self.leg_v.shape
        #: an inverse is exact when the leg's smallest singular value exceeds this (m)
        self._min_sigma = 10.0 * np.sqrt(self._damping)
        # the Newton iteration's record (planners.kernels.newton_dtype), with pinocchio's
        # configuration and velocity vectors in it (base at the identity)
        self._ws = np.zeros(1, kernel.newton_dtype(L, n, pm.nq, pm.nv))
        self._w = {name: self._ws[name][0] if self._ws.dtype[name].shape else self._ws[name]
                   for name in self._ws.dtype.names}       # views (scalars as 1-element arrays)
        w = self._w
        w["leg_v"][:], w["leg_q"][:], w["threshold"][...] = self.leg_v, self.leg_q, self._min_sigma
        w["leg_actuated"][:] = self.leg_actuated
        w["pin_q"][:] = pin.neutral(pm)
        self._q, self._v = w["pin_q"], w["pin_v"]
        self._flags = {name: w[name].view(bool) for name in ("active", "ok", "stuck")}
        self._zero_a = np.zeros(pm.nv)
        self._lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        self._x = np.zeros((len(self.legs), 3))
        self._drifts = np.zeros((len(self.legs), 3))
        self._x_shape, self._J_shape = (L, 3), (L, 3, n)
        self._regular = np.empty(L, dtype=bool)      # inverse()'s certainty flags

    # ------------------------------------------------------------------ kinematics
    def angles(self, q) -> np.ndarray:
        """The legs' joint angles (L, n) at the robot's configuration ``q``: ``q[leg_q]``, or
        pinocchio's joint positions when a leg joint is continuous."""
        if self._robot_leg_q is not None:
            return q[self._robot_leg_q]
        return self._model_q.joint_positions(q)[self.leg_actuated]

    def _set(self, q_legs) -> np.ndarray:
        self._q[self.leg_q] = q_legs
        return self._q

    def positions(self, q_legs) -> np.ndarray:
        """(L, 3) foot points in the base frame at leg angles ``q_legs`` (L, n): pinocchio's
        placements of the planned feet's frames."""
        pin.framesForwardKinematics(self._model, self._data, self._set(q_legs))
        return np.array(self._points)

    def jacobians(self, q_legs) -> tuple[np.ndarray, np.ndarray]:
        """Foot points (L, 3) and leg Jacobians (L, 3, n) in base axes.

        One pass of pinocchio's joint Jacobians (world axes, spatial velocity at the origin)
        serves every foot: the velocity of point p is v_O + omega x p. The pass is kept for
        :meth:`base_velocity`.
        """
        self._set(q_legs)
        self._pass()
        x, J = np.empty(self._x_shape), np.empty(self._J_shape)
        foot_jacobians(self._Jw, self.leg_v, self._points, x, J)
        self._x = x
        return x, J

    def base_velocity(self, twist) -> np.ndarray:
        """J_base twist: the velocity (L, 3) each foot point gets from the base twist (pinocchio
        base v) alone, at the configuration of the last :meth:`jacobians` call."""
        spatial = self._Jw[:, self._base_v] @ twist                     # (v_O, omega)
        w = spatial[3:]
        W = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
        return spatial[:3] + self._x @ W.T                               # v_O + omega x p

    def drift(self, q_legs, qd_legs) -> np.ndarray:
        """(L, 3) Jdot qd: the foot accelerations (base frame) at zero joint acceleration."""
        self._set(q_legs)
        self._v[self.leg_v] = qd_legs
        return self.drifts().copy()

    def drifts(self) -> np.ndarray:
        """Jdot qd of every foot, (L, 3) in the base frame, at the configuration and joint rates
        in pinocchio's vectors (where :meth:`solve_begun` leaves the solved angles and rates: the
        planner's per-step drift pass): pinocchio's second-order pass at zero acceleration, then
        each foot's classical acceleration (world axes). A buffer overwritten by the next call."""
        model, data, drifts, frame = self._model, self._data, self._drifts, self._lwa
        pin.forwardKinematics(model, data, self._q, self._v, self._zero_a)
        for leg, f in enumerate(self._fids):
            drifts[leg] = pin.getFrameClassicalAcceleration(model, data, f, frame).linear
        return drifts

    def inverse(self, J) -> np.ndarray:
        """Per-leg inverses, shape (L, n, 3): exact for a well-conditioned square leg, damped
        J^T (J J^T + damping I)^-1 for a leg near a singularity (smallest singular value below
        10 sqrt(damping)) or a redundant one.

        An undamped inverse of a nearly stretched leg (a swing goal at the edge of the
        workspace) once turned a 1 mm target into a 1e12 rad/s^2 desired acceleration in the
        closed loop; damped, the gain is bounded by 1 / (2 sqrt(damping)) (500 rad/m at the
        default 1e-6 m^2).

        Well-conditioned legs, the usual case, are recognised by a determinant bound without an
        SVD and get the plain inverse, both in one compiled call
        (:func:`idyn.planners.kernels.regular_inverses`); the damped one is formed only for the
        others."""
        if J.shape[2] != 3:
            return self._damped(J)
        ok = self._regular if J.shape[0] == self._regular.shape[0] else np.empty(J.shape[0], dtype=bool)
        out = np.empty_like(J)
        if regular_inverses(J, self._min_sigma, ok, out):
            return out
        ok = ok | (np.linalg.svd(J, compute_uv=False)[:, -1] > self._min_sigma)
        if ok.all():
            return np.linalg.inv(J)
        out = self._damped(J)
        if ok.any():
            out[ok] = np.linalg.inv(J[ok])
        return out

    def _damped(self, J) -> np.ndarray:
        """J^T (J J^T + damping I)^-1 per leg."""
        Jt = np.transpose(J, (0, 2, 1))
        return Jt @ np.linalg.inv(J @ Jt + self._damping * np.eye(3))

    # ------------------------------------------------------------------ inverse kinematics
    def solve(self, targets, q_init, *, tol: float = 1e-7, max_iters: int = 20,
              beta: float = 0.75, min_step: float = 1e-4):
        """Resolved-rate Newton IK of every leg at once, with a per-leg backtracking line search.

        Each iteration takes the Newton step dq = J^-1 (x_goal - x(q)) of every unconverged leg
        and shrinks it by ``beta`` until that leg's position error decreases. Returns
        ``(q_legs, x, J, err)`` at the final angles: foot points, Jacobians and the
        per-leg error norms (m). A leg whose target is out of reach stops at the closest point
        the line search finds; the caller reads ``err``.
        """
        targets = np.asarray(targets, dtype=float)
        q_init = np.asarray(q_init, dtype=float)
        if targets.shape != self._x_shape or q_init.shape != self.leg_v.shape:
            raise InvalidInputError(f"solve needs targets {self._x_shape} and q_init {self.leg_v.shape}, "
                                    f"got {targets.shape} and {q_init.shape}")
        kernel.newton_begin(self._ws, q_init)
        self._pass()
        self._newton(targets, tol, max_iters, beta, min_step, None, None)
        w = self._w
        return w["q"].copy(), w["x"].copy(), w["J"].copy(), w["err"].copy()

    @property
    def workspace(self) -> np.ndarray:
        """The Newton iteration's record (:func:`idyn.planners.kernels.newton_dtype`), for compiled
        callers: the planner's step starts the iteration (:func:`~idyn.planners.kernels.newton_begin`)
        and reads the answer from it."""
        return self._ws

    def solve_begun(self, targets, xd, qd, tol: float, max_iters: int) -> np.ndarray:
        """:meth:`solve` (default line search) of an iteration a compiled caller began
        (:func:`idyn.planners.kernels.newton_begin`), for its own (L, 3) ``targets``; then the
        final inverses, the joint rates qd = J^-1 xd into ``qd`` (L, n) and the angles and rates
        into pinocchio's vectors for :meth:`drifts`. Returns the per-leg errors; the angles and
        inverses are in :attr:`workspace`."""
        self._pass()
        self._newton(targets, tol, max_iters, 0.75, 1e-4, xd, qd)
        return self._w["err"]

    def _pass(self) -> None:
        """pinocchio's joint Jacobians and frame placements at the configuration ``self._q``."""
        pin.computeJointJacobians(self._model, self._data, self._q)
        pin.updateFramePlacements(self._model, self._data)

    def _newton(self, targets, tol, max_iters, beta, min_step, xd, qd) -> None:
        """Drive :func:`idyn.planners.kernels.newton_advance` from pinocchio's first pass on:
        further passes, the inverses it cannot certify and the line search happen here,
        everything else in the compiled loop."""
        ws, w = self._ws, self._w
        Jw, points, advance = self._Jw, self._points, kernel.newton_advance
        tol, max_iters = float(tol), int(max_iters)
        while (status := advance(ws, Jw, points, targets, tol, max_iters, xd, qd)) != kernel.DONE:
            if status == kernel.NEED_INVERSE:
                w["J_inv"][:] = self.inverse(w["J"])
                continue
            if status == kernel.NEED_BACKTRACK:
                self._backtrack(targets, beta, min_step)
            self._pass()
        self._x = w["x"]                        # base_velocity() at the returned configuration

    def _backtrack(self, targets, beta, min_step) -> None:
        """The line search of a failed full step: shrink by ``beta`` the step of each leg that got
        worse until its error decreases; legs that never do are stuck. Then either the iteration
        goes on from the shortened step or, when no leg can improve, it stops at the current
        angles. Leaves pinocchio's configuration where the next pass is wanted."""
        w, flags = self._w, self._flags
        q, step, err = w["q"], w["step"], w["err"]
        active, ok, stuck = flags["active"], flags["ok"], flags["stuck"]
        alpha = 1.0
        while not ok.all() and alpha > min_step:      # backtrack the legs that got worse
            alpha *= beta
            trial = q + alpha * step * (~ok)[:, None]
            e_bt = np.linalg.norm(targets - self.positions(trial), axis=1)
            better = ~ok & (e_bt < err)
            step[better] *= alpha
            ok |= better
        stuck |= ~ok
        if not ok[active].any():
            w["stage"][...] = kernel.GATHER_FINISH       # no leg can improve: stop here
        else:
            step[~ok] = 0.0
            q += step
            w["stage"][...] = kernel.GATHER
        self._set(q)

