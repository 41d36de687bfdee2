"""Figures like the paper's (Figs. 14-18), drawn from saved traces and metrics. Headless (Agg).

* :func:`plot_run` - one run: centre-of-mass path over the waypoints (Fig. 17), joint position
  error over time (Fig. 14/16/18) and |d tau/dt| over time (Fig. 15);
* :func:`plot_runs` - several runs overlaid (e.g. ``qp-coulomb`` with and without Stage II,
  Fig. 15, or controllers side by side as Figs. 14, 16 and 18): joint error, torque rate and, for
  the quadruped, centre-of-mass paths;
* :func:`plot_comparison` - a sweep: mean position error per controller and terrain, and the
  torque smoothness, with the paper's values beside ours.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from idyn.planners import PAPER_WAYPOINTS  # noqa: E402


def _joint_error(trace, model) -> np.ndarray:
    """E|q - q_des| over the actuated joints, per step."""
    if not model.flat_actuation:           # a continuous joint: pinocchio's difference
        return np.abs([model.joint_error(q, d) for q, d in zip(trace.q, trace.q_des)]).mean(axis=1)
    return np.abs(trace.q[:, model.actuated_q] - trace.q_des).mean(axis=1)


def _torque_rate(trace, dt: float) -> np.ndarray:
    """|d tau/dt| per step and joint (finite differences at the control rate)."""
    return np.abs(np.diff(trace.tau, axis=0)) / dt


def _waypoint_axes(ax, title: str) -> None:
    """The paper's waypoints and the x-y axes of a centre-of-mass path figure (Fig. 17)."""
    wp = np.asarray(PAPER_WAYPOINTS)
    ax.plot(wp[:, 0], wp[:, 1], "r*", ms=10, label="waypoints")
    ax.set(xlabel="x (m)", ylabel="y (m)", title=title)
    ax.set_aspect("equal")


def plot_run(trace, scenario, out_dir, model) -> list[Path]:
    """Write ``run.png`` for one run; returns the paths written."""
    out = Path(out_dir)
    t = trace.t
    rate = _torque_rate(trace, scenario.dt)
    quadruped = scenario.robot == "quadruped"
    fig, axes = plt.subplots(1, 3 if quadruped else 2, figsize=(15 if quadruped else 10, 4))
    axes = np.atleast_1d(axes)
    k = 0
    if quadruped:
        ax = axes[0]
        ax.plot(trace.com[:, 0], trace.com[:, 1], lw=1, label="centre of mass")
        _waypoint_axes(ax, "centre-of-mass path (Fig. 17)")
        ax.legend(loc="best", fontsize=8)
        k = 1
    ax = axes[k]
    ax.plot(t, _joint_error(trace, model), lw=0.8)
    ax.set(xlabel="time (s)", ylabel="E|q - q_des| (rad)", title="joint position error (Fig. 14)")
    ax = axes[k + 1]
    ax.semilogy(t[1:], rate.max(axis=1) + 1e-12, lw=0.6, label="max over joints")
    ax.semilogy(t[1:], rate.mean(axis=1) + 1e-12, lw=0.6, label="mean over joints")
    ax.set(xlabel="time (s)", ylabel="|d tau / dt| (N m / s)", title="torque rate (Fig. 15)")
    ax.legend(loc="best", fontsize=8)
    fig.suptitle(f"{scenario.controller} on {scenario.terrain_label}, {scenario.robot}")
    return [save(fig, out / "run.png")]


def save(fig, path) -> Path:
    """``fig`` laid out, written to ``path`` (PNG) and closed."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def run_label(scenario) -> str:
    """The controller, its options and the terrain: how a run is named in overlaid figures."""
    opts = ", ".join(f"{k}={v}" for k, v in scenario.controller_options.items())
    return f"{scenario.controller}{f' ({opts})' if opts else ''} on {scenario.terrain_label}"


def plot_runs(runs, out_dir) -> list[Path]:
    """Write ``runs.png``: the runs ``[(trace, scenario, model), ...]`` overlaid."""
    quadruped = all(s.robot == "quadruped" for _, s, _ in runs)
    fig, axes = plt.subplots(1, 3 if quadruped else 2, figsize=(16 if quadruped else 11, 4.5))
    for trace, scenario, model in runs:
        label = run_label(scenario)
        axes[0].plot(trace.t, _joint_error(trace, model), lw=0.7, label=label)
        axes[1].semilogy(trace.t[1:], _torque_rate(trace, scenario.dt).max(axis=1) + 1e-12, lw=0.5,
                         label=label)
        if quadruped:
            axes[2].plot(trace.com[:, 0], trace.com[:, 1], lw=1, label=label)
    axes[0].set(xlabel="time (s)", ylabel="E|q - q_des| (rad)", title="joint position error (Figs. 14, 16, 18)")
    axes[1].set(xlabel="time (s)", ylabel="max over joints |d tau/dt| (N m/s)",
                title="torque rate (Fig. 15)")
    if quadruped:
        _waypoint_axes(axes[2], "centre-of-mass paths (Fig. 17)")
    for ax in axes:
        ax.legend(loc="best", fontsize=7)
    return [save(fig, Path(out_dir) / "runs.png")]


def plot_comparison(rows: list[dict], paper: dict, out_dir) -> list[Path]:
    """Bar charts of tracking error and torque smoothness per controller (ours vs the paper)."""
    out = Path(out_dir)
    ok = [r for r in rows if "error" not in r and r.get("robot", "quadruped") == "quadruped"]
    if not ok:
        return []
    controllers = list(dict.fromkeys(r["controller"] for r in ok))
    terrains = list(dict.fromkeys(r["terrain"] for r in ok))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    width = 0.8 / max(len(terrains), 1)
    x = np.arange(len(controllers))
    for j, terr in enumerate(terrains):
        vals = [next((r["pos_error"] for r in ok if r["controller"] == c and r["terrain"] == terr), np.nan)
                for c in controllers]
        axes[0].bar(x + j * width, vals, width, label=terr)
        ref = paper["table3_tracking"]["data"].get(terr, {})
        axes[0].plot(x + j * width, [ref.get(c)[0] if ref.get(c) else np.nan for c in controllers],
                     "k_", ms=12)
    axes[0].set_xticks(x + 0.4 - width / 2, controllers, rotation=30)
    axes[0].set_ylabel("E|q - q_des| (rad); black ticks: paper")
    axes[0].set_title("tracking error (Table 3)")
    axes[0].legend(fontsize=7)
    rate = {c: np.nanmean([r["torque_rate"] for r in ok if r["controller"] == c]) for c in controllers}
    axes[1].bar(x - 0.2, [rate[c] for c in controllers], 0.4, label="ours")
    t4 = paper["table4_smoothness"]["data"]
    axes[1].bar(x + 0.2, [t4.get(c, [np.nan])[0] for c in controllers], 0.4, label="paper")
    axes[1].set_yscale("log")
    axes[1].set_xticks(x, controllers, rotation=30)
    axes[1].set_ylabel("E|d tau/dt| (N m/s)")
    axes[1].set_title("torque smoothness (Table 4)")
    axes[1].legend(fontsize=8)
    return [save(fig, out / "comparison.png")]
