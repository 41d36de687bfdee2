"""The error feedback every controller of the paper shares (Sec. 7.3, docs/planner.md).

"We use the same error-feedback in all cases ... The PID error feedback controller is defined in
configuration-space ... [it] accumulate[s] error feedback from configuration-space errors into
the vector of desired acceleration (qdd_des) input into the inverse dynamics controllers."

So the inverse-dynamics controllers receive

    qdd_cmd = qdd_des + kp (q_des - q) + kv (qd_des - qd) + ki * integral (q_des - q) dt

on the actuated joints (``q_des - q`` is pinocchio's ``difference`` of the configurations: the
subtraction for joints with nq = nv, the shortest angle for a continuous joint), with the same
gains for every controller: kp 1e3 and ki 1 as the authors' Pacer gives them, kv = 2 sqrt(kp) =
63.2 (critical damping) instead of Pacer's 10.  An inverse-dynamics controller that predicts its
contact forces well makes the joint error obey ``e'' + kv e' + kp e = 0`` exactly; at kv 10 that
is a damping ratio of 0.16, and the touchdown and liftoff transients of the trot (every 75 ms)
add up faster than they decay (measurements: docs/planner.md).  Pass ``kv=10`` to reproduce
Pacer's gains.
"""
from __future__ import annotations

import numpy as np

from idyn import RobotModel
from idyn.errors import InvalidInputError
from idyn.jit import cached_jit

#: Pacer's gains (docs/planner.md), but critically damped (see the module docstring).
DEFAULT_GAINS = {"kp": 1e3, "kv": 2.0 * 1e3 ** 0.5, "ki": 1.0}


class ErrorFeedback:
    """Configuration-space PID on the actuated joints, producing an acceleration correction.

    Args:
        model: the robot (its ``actuated_q`` / ``actuated_v`` select the joints).
        kp, kv, ki: gains (1/s^2, 1/s, 1/s^3); scalars or one value per actuated joint.
        integral_limit: optional bound on ``|integral of the error|`` per joint (anti-windup);
            None (default) leaves the integral unbounded, as the paper's controller does.
    """

    def __init__(self, model: RobotModel, kp=DEFAULT_GAINS["kp"], kv=DEFAULT_GAINS["kv"],
                 ki=DEFAULT_GAINS["ki"], integral_limit: float | None = None):
        na = model.na
        #: the model whose ``joint_error`` gives q_des - q when some actuated joint has nq != nv
        #: (a continuous joint); None when the error is the subtraction ``q_des - q[iq]``
        self._curved = None if model.flat_actuation else model
        self.iq = np.asarray(model.actuated_q if model.flat_actuation else np.arange(na), dtype=np.intp)
        self._zero = np.zeros(na)
        self.iv = np.asarray(model.actuated_v, dtype=np.intp)
        self.kp, self.kv, self.ki = (self._gain(g, na, n) for g, n in ((kp, "kp"), (kv, "kv"), (ki, "ki")))
        if integral_limit is not None and not integral_limit > 0:
            raise InvalidInputError(f"integral_limit must be positive, got {integral_limit}")
        self.integral_limit = integral_limit
        self.integral = np.zeros(na)

    @staticmethod
    def _gain(g, na: int, name: str) -> np.ndarray:
        arr = np.asarray(g, dtype=float)
        if arr.ndim == 0:
            arr = np.full(na, float(arr))
        if arr.shape != (na,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InvalidInputError(f"{name} must be a non-negative scalar or {na} values, got {g!r}")
        return arr

    def reset(self) -> None:
        self.integral[:] = 0.0

    def correction(self, q, v, q_des, v_des, dt: float) -> np.ndarray:
        """``kp e + kv de + ki int(e)``; advances the integral by ``e dt`` (clipped to
        ``integral_limit``).  Compiled (:func:`_pid`): a dozen numpy calls on 12 joints otherwise."""
        return self._pid(q, v, q_des, v_des, _NO_OFFSET, dt)

    def acceleration(self, q, v, desired, dt: float) -> np.ndarray:
        """The commanded actuated acceleration ``qdd_des + correction`` (Sec. 7.3), one compiled call."""
        return self._pid(q, v, desired.q, desired.v, desired.vdot, dt)

    def _pid(self, q, v, q_des, v_des, offset, dt: float) -> np.ndarray:
        limit = np.inf if self.integral_limit is None else float(self.integral_limit)
        out = np.empty(self.iq.size)
        if self._curved is not None:    # pinocchio's difference on the manifold enters as e - 0
            q_des, q = self._curved.joint_error(q, q_des), self._zero
        _pid(q, v, self.iq, self.iv, q_des, v_des, self.integral, float(dt), self.kp, self.kv, self.ki, limit, offset,
             out)
        return out


#: no acceleration added to the correction (:meth:`ErrorFeedback.correction`)
_NO_OFFSET = np.zeros(0)


@cached_jit
def _pid(q, v, iq, iv, q_des, v_des, integral, dt, kp, kv, ki, limit, offset, out):
    """``out = offset + kp e + kv de + ki int(e)`` (``offset`` empty: the correction alone)."""
    for i in range(iq.shape[0]):
        e = q_des[i] - q[iq[i]]
        de = v_des[i] - v[iv[i]]
        integral[i] = min(max(integral[i] + e * dt, -limit), limit)
        correction = kp[i] * e + kv[i] * de + ki[i] * integral[i]
        out[i] = offset[i] + correction if offset.shape[0] else correction
