"""Balance by virtual compressive contact forces (paper Sec. 7.3, SPEC section 5).

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
from idyn.contact import jacobians_at
from idyn.errors import InvalidInputError
from idyn.state import RobotState

from ._balance_kernel import pd_wrench, virtual_forces
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
        self._lin, self._ang = self._base_v[:3], self._base_v[3:]
        self._workspace = model.workspace()      # the contact Jacobians' kinematics pass

    def wrench(self, state: RobotState, goal) -> np.ndarray:
        """The PD base wrench, in base axes (dual of pinocchio's base velocity)."""
        return self._wrench(*self.model.check_state(state), _checked(goal))

    def _wrench(self, q: np.ndarray, v: np.ndarray, goal: BaseGoal) -> np.ndarray:
        R = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
        e_r = pin.log3(pin.rpy.rpyToMatrix(goal.rpy).dot(R.T))          # world-axes rotation error
        out = np.empty(6)
        pd_wrench(R, q, v, self._lin, self._ang, goal.position, float(goal.rpy[2]), goal.linear, goal.angular,
                  e_r, self.kp, self.kv, out)
        return out

    def compute(self, state: RobotState, contacts, goal, stance_bodies=None) -> BalanceOutput:
        """Torques for the measured ``state``, the current ``contacts`` (``idyn.Contact``) and a
        base ``goal`` (anything with ``position``, ``rpy``, ``linear``, ``angular``, such as
        :meth:`QuadrupedPlanner.base_goal`). With ``stance_bodies`` only contacts on those
        bodies are used (Pacer uses the planned stance feet)."""
        contacts = contacts if isinstance(contacts, list) else list(contacts)
        used = [i for i, c in enumerate(contacts) if stance_bodies is None or c.body_a in stance_bodies]
        q, v = self.model.check_state(state)
        w = self._wrench(q, v, _checked(goal))
        if not used:
            return BalanceOutput(np.zeros(self.model.na), np.zeros(0), np.array(used, dtype=int), w)
        ws = self._workspace.compute_checked(q, dynamics=False)
        N = jacobians_at(ws, [contacts[i] for i in used]).N
        c_n, tau = np.empty(len(used)), np.empty(self.model.na)
        virtual_forces(N, w, self._base_v, self.model.actuated_v, c_n, tau)
        return BalanceOutput(tau, c_n, np.array(used, dtype=int), w)


def _checked(goal) -> BaseGoal:
    """``goal`` as a validated :class:`BaseGoal` (the planner's own are trusted as they are)."""
    if isinstance(goal, BaseGoal):
        return goal
    return BaseGoal(goal.position, goal.rpy, goal.linear, goal.angular)
