"""Balance by virtual compressive contact forces (paper Sec. 7.3, docs/planner.md).

The paper stabilises the base "applying only virtual compressive forces along the contact
normal" (Sugihara & Nakamura 2003). As in the authors' Pacer (stabilization plugin):

1. a PD law on the base pose error gives a base wrench w (x, y, z, roll, pitch, yaw);
2. the wrench is mapped through the base columns of the contact normal Jacobian, c_N = N_b w:
   each contact gets the normal force whose virtual work matches the wrench's;
3. negative (pulling) normal forces are clipped to zero and tangential forces are zero;
4. the joints produce those forces against the ground: tau = -N_q^T c_N.

Because c_N = max(0, N_b w) the generalized base force N_b^T c_N never opposes w (its power along
w is sum max(0, (N_b w)_i)^2 >= 0): the term only pushes the base toward the goal. On flat
ground vertical normals cannot produce horizontal forces or yaw moments, so x, y and yaw act
only through tilted contacts; Pacer's trot used roll/pitch damping alone.

Gains act in the goal's heading frame: x forward, y left, z up; roll, pitch, yaw about those
axes. The output torque is added to the controller's torque by the closed loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from idyn import RobotModel, validation
from idyn.errors import InvalidInputError
from idyn.state import RobotState

from .kernels import balance_dtype, balance_torque, relative_rotation
from .quadruped_planner import BaseGoal


@dataclass(frozen=True)
class BalanceOutput:
    """Joint torques (na), the virtual normal forces (one per used contact, N), the indices of
    the contacts used and the base wrench w in base axes (pinocchio's base velocity dual)."""

    tau: np.ndarray
    normal_forces: np.ndarray
    contacts_used: np.ndarray
    wrench: np.ndarray


class BalanceController:
    """Base PD on (x, y, z, roll, pitch, yaw) through virtual compressive normal forces.

    Parameters
    ----------
    model:
        Floating-base :class:`idyn.RobotModel`.
    kp, kv:
        Six gains each, for (x, y, z, roll, pitch, yaw) (N/m, N s/m, N m/rad, N m s/rad). The
        defaults hold height and keep the base level; Pacer's trot used kp = 0 and
        kv = (0, 0, 0, 10, 10, 0).
    """

    def __init__(self, model: RobotModel, kp=(0.0, 0.0, 100.0, 100.0, 100.0, 0.0),
                 kv=(0.0, 0.0, 10.0, 10.0, 10.0, 0.0)):
        if not model.floating_base:
            raise InvalidInputError("balance needs a floating-base model")
        self.model = model
        self.kp = validation.vector(kp, 6, "kp")
        self.kv = validation.vector(kv, 6, "kv")
        if (self.kp < 0).any() or (self.kv < 0).any():
            raise InvalidInputError("balance gains must be >= 0")
        pm = model.pinocchio_model
        root = pm.joints[pm.getJointId("root_joint")]
        self._base_v = np.arange(root.idx_v, root.idx_v + 6)
        self._data = pm.createData()              # the contact rows' kinematics pass
        self._J = self._data.J                    # pinocchio's joint Jacobians (a live view)
        self._joints = {}                         # body name -> index of the joint carrying it
        self._relative = np.empty((3, 3))         # R_goal R^T, the rotation error's matrix
        self._grow(4)

    def _grow(self, m: int) -> None:
        """A workspace record (planners.kernels.balance_dtype) with room for ``m``
        contacts, and views of its fields."""
        model = self.model
        self._ws = np.zeros(1, balance_dtype(model.pinocchio_model.njoints, model.nv, model.na, m))
        self._w = w = {name: self._ws[name][0] for name in self._ws.dtype.names}
        w["lin"][:], w["ang"][:] = self._base_v[:3], self._base_v[3:]
        w["base_v"][:], w["actuated_v"][:] = self._base_v, model.actuated_v
        # a writable copy of the model's (read-only) support masks: numba types a read-only
        # array argument by its slow Python path (~3 us a call)
        w["support"][:] = model.support

    def _joint(self, body) -> int:
        """Index of the joint that carries ``body`` (None: the world), cached by name."""
        joint = self._joints.get(body)
        if joint is None:
            joint = self._joints[body] = int(self.model.body_joints([body])[0])
        return joint

    def wrench(self, state: RobotState, goal) -> np.ndarray:
        """The PD base wrench, in base axes (dual of pinocchio's base velocity)."""
        q, v = self.model.check_state(state)
        return self._step(q, v, [], _goal_rows(goal))[0].copy()

    def compute(self, state: RobotState, contacts, goal, stance_bodies=None) -> BalanceOutput:
        """Torques for the measured ``state``, the current ``contacts`` (``idyn.Contact``) and a
        base ``goal`` (anything with ``position``, ``rpy``, ``linear``, ``angular``, such as
        :meth:`QuadrupedPlanner.base_goal`). With ``stance_bodies`` only contacts on those
        bodies are used (Pacer uses the planned stance feet)."""
        contacts = contacts if isinstance(contacts, list) else list(contacts)
        used = [i for i, c in enumerate(contacts) if stance_bodies is None or c.body_a in stance_bodies]
        q, v = self.model.check_state(state)
        w, c_n, tau = self._step(q, v, [contacts[i] for i in used], _goal_rows(goal))
        return BalanceOutput(tau.copy(), c_n.copy(), np.array(used, dtype=int), w.copy())

    def torque(self, state: RobotState, contacts: list, goal_rows: np.ndarray, R=None) -> np.ndarray:
        """The joint torques of :meth:`compute` with every contact of the list ``contacts`` used,
        for the goal as (4, 3) rows position, rpy, linear, angular (e.g.
        :meth:`QuadrupedPlanner.goal_rows`, finite by construction): the closed loop's per-step
        form. ``R``: the base rotation of ``state.q``, if the caller formed it this step (else it is
        formed here). The torques are a live view of the controller's
        workspace, overwritten by the next call."""
        q, v = self.model.check_state(state)
        return self._step(q, v, contacts, goal_rows, R)[2]

    def torque_checked(self, q: np.ndarray, v: np.ndarray, contacts: list, goal_rows: np.ndarray,
                       R: np.ndarray) -> np.ndarray:
        """:meth:`torque` for a ``q``, ``v`` the caller validated this step
        (:meth:`idyn.RobotModel.check_state`) and their base rotation ``R``."""
        return self._step(q, v, contacts, goal_rows, R)[2]

    def _step(self, q: np.ndarray, v: np.ndarray, contacts: list, goal: np.ndarray, R=None):
        """(wrench, normal forces, torques) for validated ``q``, ``v``, the used ``contacts`` and
        the goal rows, in one compiled call after pinocchio's passes: the base rotation (unless
        given), the rotation error log3(R_goal R^T) (world axes) and, with contacts, the joint
        Jacobians that give their rows of N. The arrays are views of the workspace, overwritten
        by the next step."""
        m = len(contacts)
        if R is None:
            R = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
        relative_rotation(pin.rpy.rpyToMatrix(goal[1]), R, self._relative)
        e_r = pin.log3(self._relative)
        if m > self._w["c_n"].shape[0]:
            self._grow(m)
        w, joints = self._w, self._joints
        frames, points, ja, jb = w["frames"], w["points"], w["ja"], w["jb"]
        two_bodies = False
        for k, c in enumerate(contacts):        # the contacts' data into the work arrays
            frames[k], points[k] = c._frame, c.point
            a, b = c.body_a, c.body_b
            ja[k] = joints[a] if a in joints else self._joint(a)
            jb[k] = joints[b] if b in joints else self._joint(b)
            two_bodies = two_bodies or b is not None
        if m:
            pin.computeJointJacobians(self.model.pinocchio_model, self._data, q)
        balance_torque(self._ws, m, two_bodies, R, q, v, goal, e_r, self.kp, self.kv, self._J)
        return w["wrench"], w["c_n"][:m], w["tau"]


def _goal_rows(goal) -> np.ndarray:
    """A goal (anything with ``position``, ``rpy``, ``linear``, ``angular``) as validated (4, 3)
    rows."""
    if not isinstance(goal, BaseGoal):
        goal = BaseGoal(goal.position, goal.rpy, goal.linear, goal.angular)
    return np.array([goal.position, goal.rpy, goal.linear, goal.angular])
