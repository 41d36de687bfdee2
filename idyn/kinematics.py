"""Point inverse kinematics by resolved-rate Newton iterations with backtracking.

The authors' planner solves each leg's IK this way (docs/planner.md): Newton steps
dq = J^+ (x_goal - x(q)) on the joints that move the point, accepted by a backtracking line
search on the position error with factor beta = 0.75.
"""
from __future__ import annotations

import numpy as np

from .model import RobotModel


def solve_points_ik(model: RobotModel, q0, frames, targets, *, joints_v=None, tol=1e-10,
                    max_iters=50, beta=0.75) -> tuple[np.ndarray, float]:
    """Move the origins of ``frames`` to ``targets`` (world) by changing only ``joints_v``.

    ``joints_v`` are velocity indices allowed to move (default: the actuated ones). Returns the
    configuration and the final maximum position error; it never raises on non-convergence
    (the caller decides whether the error is acceptable).
    """
    targets = np.asarray(targets, dtype=float).reshape(-1, 3)
    cols = model.actuated_v if joints_v is None else np.asarray(joints_v)
    q = np.array(q0, dtype=float)

    def residual(qq):
        return np.concatenate([targets[i] - model.frame_position(qq, f) for i, f in enumerate(frames)])

    r = residual(q)
    err = float(np.abs(r).max())
    for _ in range(max_iters):
        if err < tol:
            break
        J = model.point_jacobians(q, frames, [model.frame_position(q, f) for f in frames])
        J = J.reshape(-1, model.nv)[:, cols]
        step = np.zeros(model.nv)
        step[cols] = np.linalg.lstsq(J, r, rcond=None)[0]
        alpha, improved = 1.0, False
        while alpha > 1e-6:
            q_try = model.integrate(q, step, alpha)
            r_try = residual(q_try)
            if np.linalg.norm(r_try) < np.linalg.norm(r):
                q, r, improved = q_try, r_try, True
                break
            alpha *= beta
        err = float(np.abs(r).max())
        if not improved:
            break
    return q, err
