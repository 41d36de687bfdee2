"""Pendulum in absolute coordinates, paper Sec. 4.4, Fig. 4.

A planar bob (x, y, theta), m = 1 kg, I = 1e-3 kg m^2, hangs from a joint 1 m away; the joint
is the bilateral constraint phi = [x, y] + R(theta) u = 0 (eq. 64) with k = 1e15, b = 1.
Start horizontal at rest, 1 s, solved by the linear system of eqs. 59-62 each step, then
v1 (eq. 37) and q1 = q0 + h v1 (eq. 36). Reports the joint deviation |phi| (Fig. 4; O(h^2),
Sec. 4.2) and the energy E = T + m g y (zero at the start).

What holds for the energy (Sec. 4.4 says it is "maintained to precisely zero"). Eqs. 36-37
are semi-implicit ("symplectic") Euler, for which, exactly, step by step,

    E1 - E0 = h lambda^T G0 (v0 + v1) / 2  -  (h / 2) f^T (v1 - v0),

the constraint impulse's work plus a term that telescopes. So the modified energy
E~ = E + (h / 2) f^T v changes only by the constraint work, while E itself carries the
bounded offset -(h / 2) f^T (v - v0) = -(h / 2) m g (v_y - v_y0): first order in h, but it
returns to zero whenever the bob's vertical velocity does and never accumulates.
Measured (docs/results.md, "Constraint-solver examples"): |E - E0| is first order in h,
|E~ - E~0| and |phi| second order; the constraint work is the only secular part, O(h^2) per unit
time. So the energy is kept to O(h) (an oscillating offset) and to O(h^2) in the scheme's
modified form, not "precisely"; at h = 0.1 (10 steps for 1 s) the scheme is stable but keeps
nothing. The first step from rest already shows it: with k h^2 >> m the solve makes v1 the
M-orthogonal projection of h M^-1 f onto the joint's null space, so f^T v1 h = |v1|_M^2 and
E1 - E0 = T1 - h f^T v1 = -T1 (half the potential energy released is lost), whatever h and b.

Stability: eqs. 61-62 keep the joint *spring* L-stable for any k h^2, but G, Gdot v and M are
linearized at q0 (eqs. 36, 53); at h = 0.1 the bob turns ~25 degrees per step, and a run longer
than the paper's 1 s diverges (:func:`coarse_stability`, docs/results.md).
"""
from __future__ import annotations

import numpy as np
from scipy.special import ellipk

from idyn.constraint_solver import ConstraintProblem, ConstraintRows, MassMatrix
from idyn.errors import NonFiniteError

from .common import Stopwatch, curves, figure, make_solver, solver_stats, tolist

MASS, INERTIA, LENGTH, GRAVITY, K, B = 1.0, 1e-3, 1.0, 9.81, 1e15, 1.0
U = np.array([-LENGTH, 0.0])           # bob -> joint, bob frame
# exact period from the horizontal (amplitude pi/2, the bob turning with the rod):
# 4 sqrt((m L^2 + I) / (m g L)) K(sin^2(pi/4))
PERIOD = 4.0 * np.sqrt((MASS * LENGTH ** 2 + INERTIA) / (MASS * GRAVITY * LENGTH)) * ellipk(0.5)
LONG_RUN = 20.0                        # seconds of the long run (8 swings)


def _rot(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def joint_rows(q, v, k: float = K) -> ConstraintRows:
    """phi = [x, y] + R(theta) u (eq. 64), G = [I, R'(theta) u], Gdot v = -R(theta) u thd^2."""
    R = _rot(q[2])
    dR_u = np.array([[0.0, -1.0], [1.0, 0.0]]) @ R @ U
    G = np.column_stack([np.eye(2), dR_u])
    return ConstraintRows(G, q[:2] + R @ U, np.full(2, k), np.full(2, B),
                          Gdot_v=-(R @ U) * v[2] ** 2)


def energy(q, v) -> float:
    return 0.5 * (MASS * (v[0] ** 2 + v[1] ** 2) + INERTIA * v[2] ** 2) + MASS * GRAVITY * q[1]


def simulate(h: float, duration: float, options: dict) -> dict:
    """``duration`` s from the horizontal at step ``h``: per step |phi|, E - E0, E~ - E~0."""
    solver = make_solver(options)
    mass = MassMatrix(np.diag([MASS, MASS, INERTIA]))
    f = np.array([0.0, -MASS * GRAVITY, 0.0])
    q, v = np.array([LENGTH, 0.0, 0.0]), np.zeros(3)
    steps = int(round(duration / h))
    dev, en, fv, infos = [0.0], [energy(q, v)], [0.0], []
    first_kinetic = None
    with Stopwatch() as sw:
        for _ in range(steps):
            sol = solver.solve(ConstraintProblem(mass, f, v, h, bilateral=joint_rows(q, v)))
            v = sol.v1
            if first_kinetic is None:
                first_kinetic = float(0.5 * v @ (mass.matrix @ v))
            q = q + h * v                                  # eq. 36 (N = I)
            infos.append(sol.info)
            dev.append(float(np.linalg.norm(joint_rows(q, v).phi)))
            en.append(energy(q, v))
            fv.append(float(f @ v))
    e = np.array(en) - en[0]
    modified = e + 0.5 * h * np.array(fv)                  # E~ - E~0 (v0 = 0)
    return {"h": h, "duration": duration, "steps": steps, "seconds": sw.seconds,
            "deviation": dev, "max_deviation": max(dev), "energy_error": tolist(e),
            "modified_energy_error": tolist(modified),
            "max_energy_error": float(np.max(np.abs(e))),
            "max_modified_energy_error": float(np.max(np.abs(modified))),
            "first_step_energy_change": float(e[1]) if steps else 0.0,
            "first_step_kinetic": first_kinetic or 0.0,
            "solver": solver_stats(infos)}


def coarse_stability(h: float, duration: float, options: dict, k: float = K) -> dict:
    """``duration`` s from the horizontal at step ``h``: the first time |E - E0| exceeds
    100 m g L (or the state stops being finite), None if it never does, and max |E - E0|
    before it. ``k``: the joint stiffness (the paper's 1e15 by default)."""
    solver = make_solver(options)
    mass = MassMatrix(np.diag([MASS, MASS, INERTIA]))
    f = np.array([0.0, -MASS * GRAVITY, 0.0])
    q, v = np.array([LENGTH, 0.0, 0.0]), np.zeros(3)
    e0, worst, diverged = energy(q, v), 0.0, None
    with np.errstate(all="ignore"):
        for i in range(int(round(duration / h))):
            try:
                sol = solver.solve(ConstraintProblem(mass, f, v, h,
                                                     bilateral=joint_rows(q, v, k)))
            except NonFiniteError:
                diverged = i * h
                break
            v = sol.v1
            q = q + h * v
            e = abs(energy(q, v) - e0)
            if not e <= 100.0 * MASS * GRAVITY * LENGTH:
                diverged = (i + 1) * h
                break
            worst = max(worst, e)
    return {"h": h, "k": k, "duration": duration, "diverged_at": diverged,
            "max_energy_error": worst}


def per_swing_energy_error(r: dict) -> list[float]:
    """max |E - E0| within each full period (PERIOD) of a run, first swing to last."""
    e = np.abs(np.array(r["energy_error"]))
    per = int(round(PERIOD / r["h"]))
    return [float(e[i:i + per + 1].max()) for i in range(0, e.size - per, per)]


def _orders(runs, key):
    hs = np.log10([r["h"] for r in runs])
    return tolist(np.diff(np.log10([r[key] for r in runs])) / np.diff(hs))


def run(short: bool = False, smoke: bool = False, **options) -> dict:
    """``short``: h down to 1e-3 and the long run at 1e-2; ``smoke``: h = 0.1, 1e-2, 2 s."""
    steps = (0.1, 1e-2) if smoke else (0.1, 1e-2, 1e-3) if short else (0.1, 1e-2, 1e-3, 1e-4)
    runs = [simulate(h, 1.0, options) for h in steps]
    long_run = simulate(1e-2 if short or smoke else 1e-3, 2.0 if smoke else LONG_RUN, options)
    coarse = [coarse_stability(h, LONG_RUN, options) for h in ((0.1,) if smoke else (0.1, 0.05))]
    coarse.append(coarse_stability(0.1, LONG_RUN, options, k=1e4))     # a soft joint, same h
    swings = per_swing_energy_error(long_run)
    for r in runs + [long_run]:            # keep the JSON small: traces every 1 ms at most
        stride = max(1, int(round(1e-3 / r["h"])))
        for key in ("deviation", "energy_error", "modified_energy_error"):
            r[key] = r[key][::stride]
        r["trace_every"] = stride * r["h"]
    return {"example": "pendulum", "k": K, "b": B, "runs": runs, "coarse_stability": coarse,
            "deviation_orders_in_h": _orders(runs, "max_deviation"),
            "energy_error_orders_in_h": _orders(runs, "max_energy_error"),
            "modified_energy_error_orders_in_h": _orders(runs, "max_modified_energy_error"),
            "long_run": {"h": long_run["h"], "period": PERIOD,
                         "max_energy_error_per_swing": swings,
                         "max_modified_energy_error": long_run["max_modified_energy_error"],
                         "duration": long_run["duration"],
                         "trace_every": long_run["trace_every"],
                         "energy_error": long_run["energy_error"]}}


def table(results: dict) -> str:
    def fmt(key):
        return ", ".join(f"{o:.2f}" for o in results[key])

    lines = ["h        steps   time     max|phi| [m]  max|E-E0| [J]  max|E~-E~0| [J]"]
    for r in results["runs"]:
        lines.append(f"{r['h']:<8.0e} {r['steps']:6d}  {r['seconds']:.3f}s  "
                     f"{r['max_deviation']:.3e}     {r['max_energy_error']:.3e}      "
                     f"{r['max_modified_energy_error']:.3e}")
    lr = results["long_run"]
    swings = ", ".join(f"{x:.3e}" for x in lr["max_energy_error_per_swing"])
    lines += [f"observed orders in h: |phi| {fmt('deviation_orders_in_h')}; "
              f"|E-E0| {fmt('energy_error_orders_in_h')}; "
              f"|E~-E~0| {fmt('modified_energy_error_orders_in_h')}",
              "E = T + m g y (E0 = 0); E~ = E + (h/2) f^T v, the modified energy of "
              "semi-implicit Euler (eqs. 36-37)",
              f"{lr['duration']:.0f} s at h={lr['h']:g}, max|E-E0| per swing "
              f"(period {lr['period']:.3f} s): {swings} J"]
    lines += [f"first step at h={r['h']:g}: E1 - E0 = {r['first_step_energy_change']:+.4e} J, "
              f"T1 = {r['first_step_kinetic']:.4e} J" for r in results["runs"]]
    for c in results["coarse_stability"]:
        state = ("bounded" if c["diverged_at"] is None
                 else f"|E-E0| > 100 m g L at t = {c['diverged_at']:.2f} s")
        lines.append(f"{c['duration']:.0f} s at h={c['h']:g}, k={c['k']:g}: {state}, "
                     "max|E-E0| before "
                     f"{c['max_energy_error']:.3g} J")
    return "\n".join(lines)


def plot(results: dict, out_dir: str) -> list[str]:
    def draw(fig):
        ax1, ax2, ax3 = fig.add_subplot(131), fig.add_subplot(132), fig.add_subplot(133)
        for r in results["runs"]:
            t = np.arange(len(r["deviation"])) * r["trace_every"]
            ax1.semilogy(t, np.maximum(r["deviation"], 1e-30), label=f"h={r['h']:g}")
            ax2.plot(t, r["energy_error"], label=f"h={r['h']:g}")
            ax3.plot(t, r["modified_energy_error"], label=f"h={r['h']:g}")
        ax1.set(xlabel="t [s]", ylabel="joint deviation |phi| [m]", title="k=1e15, b=1")
        ax2.set(xlabel="t [s]", ylabel="E - E0 [J]", title="energy", ylim=(-0.2, 0.2))
        ax3.set(xlabel="t [s]", ylabel="E~ - E~0 [J]", title="E + (h/2) f.v",
                ylim=(-0.03, 0.03))
        ax1.legend(fontsize=7)

    lr = results["long_run"]
    return [figure(f"{out_dir}/pendulum.png", draw),
            curves(f"{out_dir}/pendulum_long.png",
                   [(np.arange(len(lr["energy_error"])) * lr["trace_every"], lr["energy_error"], None)],
                   xlabel="t [s]", ylabel="E - E0 [J]", title=f"{lr['duration']:.0f} s at h={lr['h']:g}")]
