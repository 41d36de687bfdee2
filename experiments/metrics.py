"""Metrics of docs/experiments.md computed from a :class:`~idyn.experiments.trace.Trace`.

* ``pos_error``, ``vel_error``: E[|q - q_des|], E[|qd - qd_des|] over actuated joints and time
  (paper Table 3);
* ``torque_rate``, ``torque_mean``: E[|d tau/dt|] (finite differences at the control rate) and
  E[|tau|] over joints and time (Table 4);
* ``force_error_abs``: E[|sum predicted normal force - sum simulator normal force|] in N, and
  ``force_error_rel`` = force_error_abs / E[sum simulator normal force] in percent (Table 5; a
  ratio of means, so flight phases with zero force do not divide by zero);
* ``fell`` and ``fall_time``: base height below half its nominal value or |roll|, |pitch| > 1 rad;
* ``box_dropped`` and ``box_drop_time`` (the manipulator, paper Sec. 8.4.1): the box's centre
  more than one box side from where the hand holds it (:func:`grasp_lost_index`);
* solve-time statistics: p50, p95, max (microseconds) and misses of the 1 kHz deadline.

Units (docs/conventions.md, "Error columns name their unit"): every relative error is in percent,
everywhere.  :data:`ERROR_UNITS` names the unit of each error metric; ``metrics.json`` carries it
as ``"units"``, and a CSV column of an error metric carries it in its name
(:data:`ERROR_COLUMNS`: ``force_error_rel_pct``, ...; :func:`csv_row` / :func:`from_csv_row`).
"""
from __future__ import annotations

import math

import numpy as np

from .trace import Trace

#: the unit of each error metric of :func:`summarize` (the dict keys stay unit-free)
ERROR_UNITS = {"pos_error": "rad", "vel_error": "rad/s", "force_error_abs": "N", "force_error_rel": "%"}
#: the CSV column of each error metric: its key with the unit
ERROR_COLUMNS = {"pos_error": "pos_error_rad", "vel_error": "vel_error_rad_s",
                 "force_error_abs": "force_error_abs_N", "force_error_rel": "force_error_rel_pct"}


def csv_row(row: dict) -> dict:
    """``row`` with its error metrics under their CSV column names (:data:`ERROR_COLUMNS`)."""
    return {ERROR_COLUMNS.get(k, k): v for k, v in row.items()}


def from_csv_row(row: dict) -> dict:
    """The inverse of :func:`csv_row`: a CSV row with the metric keys of :func:`summarize`."""
    keys = {v: k for k, v in ERROR_COLUMNS.items()}
    return {keys.get(k, k): v for k, v in row.items()}


def fallen(q: np.ndarray, nominal_height: float, max_tilt: float = 1.0) -> bool:
    """Has the robot fallen at the floating-base configuration ``q`` (nq,)? docs/experiments.md:
    base height below half its nominal value, or |roll| or |pitch| above ``max_tilt`` (rad).
    On Python floats: the closed loop tests its state every step."""
    z, x, y, qz, w = q[2:7].tolist()
    roll = math.atan2(2 * (w * x + y * qz), 1 - 2 * (x * x + y * y))
    pitch = math.asin(min(max(2 * (w * y - qz * x), -1.0), 1.0))
    return z < 0.5 * nominal_height or abs(roll) > max_tilt or abs(pitch) > max_tilt


def fall_index(trace: Trace, nominal_height: float, max_tilt: float = 1.0) -> int | None:
    """First step at which a floating-base robot has fallen, or None."""
    if trace.q.ndim != 2 or trace.q.shape[1] < 7:
        return None
    return next((i for i, q in enumerate(trace.q) if fallen(q, nominal_height, max_tilt)), None)


def grasp_lost_index(box_positions: np.ndarray, held_positions: np.ndarray, tolerance: float) -> int | None:
    """First step at which a grasped object has left the hand, or None: its centre
    (``box_positions``, (n, 3)) farther than ``tolerance`` from where the hand holds it
    (``held_positions``, (n, 3); for the manipulator the box side, so a box that slips within the
    fingers is still held, and one the paper calls dropped (Sec. 8.4.1) is not)."""
    dist = np.linalg.norm(np.asarray(box_positions) - np.asarray(held_positions), axis=1)
    idx = np.flatnonzero(~(dist <= tolerance))     # a non-finite pose counts as lost
    return int(idx[0]) if idx.size else None


def tracking_errors(trace: Trace, actuated_q: np.ndarray, actuated_v: np.ndarray, model=None) -> tuple[float, float]:
    """(E|q - q_des|, E|qd - qd_des|) over actuated joints and time; with a ``model`` that has a
    continuous joint, q_des - q is its ``joint_error`` (pinocchio's difference)."""
    if trace.n == 0:
        return float("nan"), float("nan")
    if model is not None and not model.flat_actuation:
        eq = np.abs([model.joint_error(q, d) for q, d in zip(trace.q, trace.q_des)])
    else:
        eq = np.abs(trace.q[:, actuated_q] - trace.q_des)
    ev = np.abs(trace.v[:, actuated_v] - trace.v_des)
    return float(eq.mean()), float(ev.mean())


def torque_statistics(trace: Trace, dt: float) -> tuple[float, float]:
    """(E|d tau/dt|, E|tau|) over joints and time."""
    tau = trace.tau
    if tau.shape[0] < 2:
        return float("nan"), float("nan")
    rate = np.abs(np.diff(tau, axis=0)) / dt
    return float(rate.mean()), float(np.abs(tau).mean())


def force_prediction_error(trace: Trace) -> tuple[float, float]:
    """(absolute error in N, relative error in %) of the summed normal force."""
    pred, sensed = trace.pred_normal, trace.sensed_normal
    ok = np.isfinite(pred) & np.isfinite(sensed)
    if not ok.any():
        return float("nan"), float("nan")
    err = np.abs(pred[ok] - sensed[ok])
    denom = sensed[ok].mean()
    return float(err.mean()), float(100.0 * err.mean() / denom) if denom > 0 else float("nan")


def solve_time_statistics(trace: Trace, deadline: float = 1e-3) -> dict:
    st = trace.solve_time
    st = st[np.isfinite(st)]
    if st.size == 0:
        return {"solve_time_p50_us": float("nan"), "solve_time_p95_us": float("nan"),
                "solve_time_max_us": float("nan"), "deadline_misses": 0}
    return {
        "solve_time_p50_us": float(np.percentile(st, 50) * 1e6),
        "solve_time_p95_us": float(np.percentile(st, 95) * 1e6),
        "solve_time_max_us": float(st.max() * 1e6),
        "deadline_misses": int((st > deadline).sum()),
    }


def summarize(trace: Trace, *, dt: float, actuated_q, actuated_v, nominal_height: float | None,
              wall_time: float | None = None, model=None) -> dict:
    """All scalar metrics of one run, as a JSON-ready dict (``model``: see :func:`tracking_errors`)."""
    pos, vel = tracking_errors(trace, np.asarray(actuated_q), np.asarray(actuated_v), model)
    rate, mean = torque_statistics(trace, dt)
    fabs, frel = force_prediction_error(trace)
    fall = fall_index(trace, nominal_height) if nominal_height else None
    out = {
        "steps": int(trace.n),
        "duration": float(trace.n * dt),
        "fell": fall is not None,
        "fall_time": None if fall is None else float(trace.t[fall]),
        "pos_error": pos, "vel_error": vel,
        "torque_rate": rate, "torque_mean": mean,
        "force_error_abs": fabs, "force_error_rel": frel,
        "realtime_factor": float(trace.n * dt / wall_time) if wall_time else float("nan"),
    }
    out.update(solve_time_statistics(trace, deadline=dt))
    if trace.n:
        counts = np.bincount(trace.status[np.isfinite(trace.status)].astype(int),
                             minlength=len(trace.status_names))
        out["status_counts"] = {name: int(c) for name, c in zip(trace.status_names, counts)}
    return out
