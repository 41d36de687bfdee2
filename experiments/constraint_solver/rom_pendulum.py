"""Pendulum with a soft range-of-motion limit, paper Sec. 5.4, Fig. 6.

Minimal coordinates (theta, theta_dot), point bob m = 1 kg on a 1 m massless rod, theta = 0
hanging down, limit theta >= 0 with k = 1e12 N m/rad, b = 0; start at theta = pi/2 at rest.

* Stability: 1 s from pi/2 for every h in the list (large h included): the bob must stay
  bounded and never tunnel through the limit.
* Impact (Fig. 6's h = 1e-5 ... 1e-8): a 1 s run at h = 1e-8 is 1e8 steps, so the impact is
  resolved in a window: the state at theta = 5e-5 rad comes from energy conservation
  (exact for the frictionless pendulum before the limit is touched), then each h runs
  30 us + 20 h. The contact lasts pi / sqrt(k / m L^2) = 3.1 us, so h >= 1e-5 gives the
  "dead" impact the paper describes and h -> 0 recovers the elastic bounce (restitution -> 1).
"""
from __future__ import annotations

import numpy as np

from idyn.constraint_solver import ConstraintProblem, MassMatrix
from idyn.constraint_solver.models import range_of_motion

from .common import Stopwatch, curves, figure, make_solver, solver_stats

MASS, LENGTH, GRAVITY, K, B = 1.0, 1.0, 9.81, 1e12, 0.0
THETA_WINDOW = 5e-5


def simulate(theta0: float, omega0: float, h: float, duration: float, options: dict,
             record_every: int = 1) -> dict:
    solver = make_solver(options)
    mass = MassMatrix(np.array([[MASS * LENGTH ** 2]]))
    th, om = np.array([theta0]), np.array([omega0])
    steps = int(round(duration / h))
    ts, ths, oms, infos = [0.0], [theta0], [omega0], []
    with Stopwatch() as sw:
        for i in range(steps):
            f = np.array([-MASS * GRAVITY * LENGTH * np.sin(th[0])])
            rows = range_of_motion(0, 1, th[0], 0.0, None, K, B)
            sol = solver.solve(ConstraintProblem(mass, f, om, h, unilateral=rows))
            om = sol.v1
            th = th + h * om
            infos.append(sol.info)
            if (i + 1) % record_every == 0:
                ts.append((i + 1) * h)
                ths.append(float(th[0]))
                oms.append(float(om[0]))
    return {"h": h, "steps": steps, "seconds": sw.seconds, "t": ts, "theta": ths, "omega": oms,
            "min_theta": float(min(ths)), "max_abs_theta": float(np.max(np.abs(ths))),
            "solver": solver_stats(infos)}


def impact(h: float, options: dict) -> dict:
    omega_in = -np.sqrt(2 * GRAVITY / LENGTH * np.cos(THETA_WINDOW))
    run = simulate(THETA_WINDOW, omega_in, h, 30e-6 + 20 * h, options)
    run["omega_in"] = float(omega_in)
    run["restitution"] = float(run["omega"][-1] / -omega_in)
    run["max_penetration_rad"] = float(max(0.0, -run["min_theta"]))
    return run


def run(short: bool = False, **options) -> dict:
    stab_h = (0.1, 1e-2, 1e-3) if short else (0.1, 1e-2, 1e-3, 1e-4)
    imp_h = (1e-5, 1e-6, 1e-7) if short else (1e-5, 1e-6, 1e-7, 1e-8)
    stability = [simulate(np.pi / 2, 0.0, h, 1.0, options, max(1, int(1e-3 / h)))
                 for h in stab_h]
    impacts = [impact(h, options) for h in imp_h]
    return {"example": "rom-pendulum", "k": K, "b": B, "stability": stability,
            "impacts": impacts,
            "stable_for_all_h": all(r["max_abs_theta"] <= np.pi / 2 + 1e-9 for r in stability)}


def table(results: dict) -> str:
    lines = ["stability, 1 s from pi/2:", "h        steps   time     min theta [rad]  max|theta|"]
    for r in results["stability"]:
        lines.append(f"{r['h']:<8.0e} {r['steps']:6d}  {r['seconds']:.3f}s  "
                     f"{r['min_theta']:+.3e}       {r['max_abs_theta']:.4f}")
    lines += ["impact window (limit at theta = 0):",
              "h        steps  restitution  max penetration [rad]"]
    for r in results["impacts"]:
        lines.append(f"{r['h']:<8.0e} {r['steps']:6d}  {r['restitution']:.4f}       "
                     f"{r['max_penetration_rad']:.3e}")
    return "\n".join(lines)


def plot(results: dict, out_dir: str) -> list[str]:
    def draw_impact(fig):
        ax = fig.add_subplot(111)
        for r in results["impacts"]:
            ax.plot(np.array(r["t"]) * 1e6, np.array(r["theta"]) * 1e6, label=f"h={r['h']:g}")
        ax.axhline(0.0, color="k", lw=0.5)
        ax.set(xlabel="t [us] (window start)", ylabel="theta [urad]",
               title="Range-of-motion limit, k=1e12, b=0")
        ax.legend(fontsize=7)

    return [figure(f"{out_dir}/rom_pendulum_impact.png", draw_impact),
            curves(f"{out_dir}/rom_pendulum_stability.png",
                   [(r["t"], r["theta"], f"h={r['h']:g}") for r in results["stability"]],
                   xlabel="t [s]", ylabel="theta [rad]", title="1 s from pi/2: stable for every h")]
