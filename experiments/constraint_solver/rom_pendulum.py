"""Pendulum with a soft range-of-motion limit, paper Sec. 5.4, Fig. 6.

Minimal coordinates (theta, theta_dot), point bob m = 1 kg on a 1 m massless rod, theta = 0
hanging down, limit theta >= 0 with k = 1e12 N m/rad, b = 0; start at theta = pi/2 at rest.

The limit row is the paper's discretized law (eqs. 75, 84): the spring is evaluated at the end
of the step, lambda1 >= -K phi1, so the row is in the program whenever the step could reach
the limit (``speculative=True``: phi0 <= 2 h |theta_dot| + h^2 g / L, a margin the step cannot
close; farther rows would get lambda1 = 0 anyway). ``speculative=False`` adds the row only
once the limit is violated at t0, which is how this example ran before (docs/results.md).

* Stability: 1 s from pi/2 for every h in the list (large h included): the bob must stay
  bounded and never tunnel through the limit.
* Impact (Fig. 6's h = 1e-5 ... 1e-8): a 1 s run at h = 1e-8 is 1e8 steps, so the impact is
  resolved in a window: the state at theta = 5e-5 rad comes from energy conservation
  (exact for the frictionless pendulum before the limit is touched), then each h runs
  30 us + 20 h; the restitution is theta_dot after / -theta_dot before. The contact lasts
  pi / sqrt(k / m L^2) = 3.1 us. The implicit spring (b = 0) turns by atan(h w) per step and
  shrinks by (1 + h^2 w^2)^(-1/2), w = sqrt(k / m L^2), so a contact resolved from its start
  keeps e = (1 + h^2 w^2)^(-pi / (2 atan(h w))) (:func:`implicit_euler_restitution`).
* Phase: at h = 1e-5 (k h^2 = 100 m L^2) the window start is moved over one step's travel,
  and the full run from pi/2 (the paper's 1 s) is made for both row rules.
"""
from __future__ import annotations

import numpy as np

from idyn.constraint_solver import ConstraintProblem, MassMatrix
from idyn.constraint_solver.models import range_of_motion

from .common import Stopwatch, curves, figure, make_solver, solver_stats

MASS, LENGTH, GRAVITY, K, B = 1.0, 1.0, 9.81, 1e12, 0.0
THETA_WINDOW = 5e-5
PHASES = 8                      # window starts spread over one step's travel (phase scan)
PHASE_H = 1e-5                  # the largest step of Fig. 6


def row_margin(omega: float, h: float) -> float:
    """Distance (rad) the limit can close within one step: 2 h |w| + h^2 g / L."""
    return 2.0 * h * abs(omega) + h * h * GRAVITY / LENGTH


def implicit_euler_restitution(h: float) -> float:
    """e of the undamped implicit-Euler spring over a contact resolved from its first step."""
    x = h * np.sqrt(K / (MASS * LENGTH ** 2))
    return float((1.0 + x * x) ** (-np.pi / (2.0 * np.arctan(x))))


def simulate(theta0: float, omega0: float, h: float, duration: float, options: dict,
             record_every: int = 1, speculative: bool = True) -> dict:
    solver = make_solver(options)
    mass = MassMatrix(np.array([[MASS * LENGTH ** 2]]))
    th, om = np.array([theta0]), np.array([omega0])
    steps = int(round(duration / h))
    ts, ths, oms, infos = [0.0], [theta0], [omega0], []
    with Stopwatch() as sw:
        for i in range(steps):
            f = np.array([-MASS * GRAVITY * LENGTH * np.sin(th[0])])
            margin = row_margin(om[0], h) if speculative else 0.0
            rows = range_of_motion(0, 1, th[0], 0.0, None, K, B, margin)
            sol = solver.solve(ConstraintProblem(mass, f, om, h, unilateral=rows))
            om = sol.v1
            th = th + h * om
            infos.append(sol.info)
            if (i + 1) % record_every == 0:
                ts.append((i + 1) * h)
                ths.append(float(th[0]))
                oms.append(float(om[0]))
    return {"h": h, "steps": steps, "seconds": sw.seconds, "t": ts, "theta": ths, "omega": oms,
            "speculative": speculative,
            "min_theta": float(min(ths)), "max_abs_theta": float(np.max(np.abs(ths))),
            "solver": solver_stats(infos)}


def impact(h: float, options: dict, speculative: bool = True,
           theta_start: float = THETA_WINDOW) -> dict:
    omega_in = -np.sqrt(2 * GRAVITY / LENGTH * np.cos(theta_start))
    run = simulate(theta_start, omega_in, h, 30e-6 + 20 * h, options, speculative=speculative)
    run["omega_in"] = float(omega_in)
    run["restitution"] = float(run["omega"][-1] / -omega_in)
    run["max_penetration_rad"] = float(max(0.0, -run["min_theta"]))
    run["implicit_euler_restitution"] = implicit_euler_restitution(h)
    return run


def phase_scan(h: float, options: dict, speculative: bool) -> list[float]:
    """Restitution for PHASES window starts spread over one step's travel h |theta_dot|."""
    travel = h * np.sqrt(2 * GRAVITY / LENGTH)
    return [impact(h, options, speculative, THETA_WINDOW + j / PHASES * travel)["restitution"]
            for j in range(PHASES)]


def from_rest(h: float, options: dict, speculative: bool, duration: float = 1.0) -> dict:
    """The paper's run: ``duration`` s from pi/2 at rest; the first impact's restitution
    (theta_dot 20 steps after the first contact step over theta_dot before it) and the
    largest angle reached after it (the rebound)."""
    r = simulate(np.pi / 2, 0.0, h, duration, options, speculative=speculative)
    th, om = np.array(r["theta"]), np.array(r["omega"])
    near = int(np.argmax(th <= row_margin(om.min(), h)))   # first step the row can act on
    hit = int(np.argmax(th <= 0.0)) if np.any(th <= 0.0) else near
    first = min(near, hit)
    after = min(first + 21, th.size - 1)
    out = {"h": h, "speculative": speculative, "seconds": r["seconds"], "steps": r["steps"],
           "impact_time": float(first * h), "omega_in": float(om[first - 1]),
           "restitution": float(om[after] / -om[first - 1]),
           "rebound_theta": float(th[first:].max()),
           "max_penetration_rad": float(max(0.0, -th.min())),
           "solver": r["solver"]}
    stride = max(1, int(round(1e-3 / h)))
    out["t"], out["theta"] = r["t"][::stride], r["theta"][::stride]
    return out


def run(short: bool = False, smoke: bool = False, **options) -> dict:
    """``short``: fewer step sizes; ``smoke``: the two rules at h = 1e-5 and 1e-6 only."""
    stab_h = (0.1, 1e-2) if smoke else (0.1, 1e-2, 1e-3) if short else (0.1, 1e-2, 1e-3, 1e-4)
    imp_h = (1e-5, 1e-6) if smoke else (1e-5, 1e-6, 1e-7) if short else (1e-5, 1e-6, 1e-7, 1e-8)
    stability = [simulate(np.pi / 2, 0.0, h, 1.0, options, max(1, int(1e-3 / h)))
                 for h in stab_h]
    impacts = [impact(h, options) for h in imp_h]
    late = [impact(h, options, speculative=False) for h in imp_h]
    out = {"example": "rom-pendulum", "k": K, "b": B, "stability": stability,
           "impacts": impacts, "impacts_rows_at_contact": late,
           "stable_for_all_h": all(r["max_abs_theta"] <= np.pi / 2 + 1e-9 for r in stability)}
    if not smoke:
        out["phase_h"] = PHASE_H
        out["phase_scan"] = {"speculative": phase_scan(PHASE_H, options, True),
                             "rows_at_contact": phase_scan(PHASE_H, options, False)}
        out["from_rest"] = [from_rest(PHASE_H, options, s) for s in (True, False)]
    return out


def table(results: dict) -> str:
    lines = ["stability, 1 s from pi/2:", "h        steps   time     min theta [rad]  max|theta|"]
    for r in results["stability"]:
        lines.append(f"{r['h']:<8.0e} {r['steps']:6d}  {r['seconds']:.3f}s  "
                     f"{r['min_theta']:+.3e}       {r['max_abs_theta']:.4f}")
    lines += ["impact window (limit at theta = 0); restitution with the paper's row rule "
              "(speculative), with rows added only once violated, and the implicit-Euler "
              "prediction:",
              "h        steps  e (paper rule)  e (rows at contact)  e (implicit Euler)  "
              "max penetration [rad]"]
    for r, s in zip(results["impacts"], results["impacts_rows_at_contact"]):
        lines.append(f"{r['h']:<8.0e} {r['steps']:6d}  {r['restitution']:.4f}          "
                     f"{s['restitution']:.4f}               {r['implicit_euler_restitution']:.4f}"
                     f"              {r['max_penetration_rad']:.3e}")
    if "phase_scan" in results:
        for key, scan in results["phase_scan"].items():
            lines.append(f"h = {results['phase_h']:g}, {len(scan)} window phases, {key}: e in "
                         f"[{min(scan):.4f}, {max(scan):.4f}]")
        for r in results["from_rest"]:
            rule = "paper rule" if r["speculative"] else "rows at contact"
            lines.append(f"1 s from pi/2 at h = {r['h']:g} ({rule}): impact at "
                         f"{r['impact_time']:.4f} s, e = {r['restitution']:.4f}, rebound to "
                         f"theta = {r['rebound_theta']:.3e} rad ({r['seconds']:.1f}s)")
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

    paths = [figure(f"{out_dir}/rom_pendulum_impact.png", draw_impact),
             curves(f"{out_dir}/rom_pendulum_stability.png",
                    [(r["t"], r["theta"], f"h={r['h']:g}") for r in results["stability"]],
                    xlabel="t [s]", ylabel="theta [rad]",
                    title="1 s from pi/2: stable for every h")]
    if "from_rest" in results:
        paths.append(curves(
            f"{out_dir}/rom_pendulum_from_rest.png",
            [(r["t"], r["theta"], "paper rule (speculative row)" if r["speculative"]
              else "row only once violated") for r in results["from_rest"]],
            xlabel="t [s]", ylabel="theta [rad]",
            title=f"1 s from pi/2 at h = {results['phase_h']:g}, k = 1e12, b = 0"))
    return paths
