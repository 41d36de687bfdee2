"""Stack of spheres, paper Sec. 6.5, Fig. 10.

n steel spheres (radius 0.1 m, 7800 kg/m^3), E* = 1e11 (Hertz, eq. 121-122), B_n = 1, friction
mu = 0.5 with the Coulomb dampers of Sec. 6.4, released at rest in perfect vertical alignment
with 1 mm gaps (the paper: "spaced evenly apart vertically ... at rest"), h = 10 ms, 500
steps, no walls. Three rows per contact (n, r, s), contacts only between neighbours and with
the ground, so G, M^-1 and the reduced Hessian have O(n) non-zeros. Reports the time against
n and whether the stack stays standing (heights settle, lateral drift stays at round-off).
"""
from __future__ import annotations

import numpy as np

from idyn.constraint_solver import ConstraintProblem
from idyn.constraint_solver import appendix_a
from idyn.constraint_solver.bodies import WORLD, RigidBodies
from idyn.constraint_solver.geometry import (ContactGeometry, sphere_plane, sphere_sphere,
                                             sphere_sphere_normal_drift)
from idyn.constraint_solver.models import hertz
from idyn.constraint_solver.point_contacts import contact_rows

from .common import Stopwatch, figure, make_solver, solver_stats

RADIUS, DENSITY, E_STAR, B_N, MU, GAP, H, STEPS = 0.1, 7800.0, 1e11, 1.0, 0.5, 1e-3, 0.01, 500


class Stack:
    def __init__(self, n: int):
        m = DENSITY * 4.0 / 3.0 * np.pi * RADIUS ** 3
        self.n = n
        self.bodies = RigidBodies(np.full(n, m), np.full((n, 3), 0.4 * m * RADIUS ** 2))

    def initial_state(self):
        z = RADIUS + GAP + np.arange(self.n) * (2 * RADIUS + GAP)
        return self.bodies.state(np.column_stack([np.zeros((self.n, 2)), z])), \
            np.zeros(6 * self.n)

    def problem(self, q, v, h: float) -> ConstraintProblem:
        b = self.bodies
        c = b.positions(q)
        f = b.forces(q, v)
        ground = sphere_plane(c[:1], np.array([RADIUS]), np.zeros(3), [0.0, 0.0, 1.0])
        pair = sphere_sphere(c[:-1], np.full(self.n - 1, RADIUS), c[1:],
                             np.full(self.n - 1, RADIUS))
        depth = np.r_[ground.depth, pair.depth]
        act = np.flatnonzero(depth >= 0.0)
        if not act.size:
            return ConstraintProblem(b.mass, f, v, h)
        body_a = np.r_[WORLD, np.arange(self.n - 1)][act]
        body_b = np.r_[0, np.arange(1, self.n)][act]
        geom = ContactGeometry(depth[act], np.r_[ground.normal, pair.normal][act],
                               np.r_[ground.point_a, pair.point_a][act],
                               np.r_[ground.point_b, pair.point_b][act])
        zeros = np.zeros((self.n, 3))
        vel = b.point_velocity(q, v, np.arange(self.n), zeros)
        drift = b.point_drift(q, v, np.arange(self.n), zeros)
        pair_drift = sphere_sphere_normal_drift(c[:-1], c[1:], vel[:-1], vel[1:],
                                                drift[:-1], drift[1:])
        normal_drift = np.r_[drift[0, 2], pair_drift][act]
        # effective radius: r for sphere-plane, r/2 for two equal spheres
        r_eff = np.where(body_a == WORLD, RADIUS, RADIUS / 2)
        law = hertz(geom.depth, E_STAR, 1.0, B_N)
        law = type(law)(law.phi, law.K * np.sqrt(r_eff), law.B)
        rows = contact_rows(b, q, geom, body_a, body_b, law, normal_drift, MU, h)
        return ConstraintProblem(b.mass, f, v, h, contacts=rows)


def simulate(n: int, options: dict, steps: int = STEPS) -> dict:
    stack, solver = Stack(n), make_solver(options)
    q, v = stack.initial_state()
    z0 = stack.bodies.positions(q)[:, 2].copy()
    infos, top = [], [float(z0[-1])]
    with Stopwatch() as sw:
        for _ in range(steps):
            q, sol = solver.step(stack.problem(q, v, H), q, stack.bodies.integrate)
            v = sol.v1
            infos.append(sol.info)
            top.append(float(stack.bodies.positions(q)[-1, 2]))
    p = stack.bodies.positions(q)
    ideal_top = RADIUS + (n - 1) * 2 * RADIUS
    return {"n": n, "steps": steps, "seconds": sw.seconds,
            "seconds_per_step": sw.seconds / steps, "top_height": top,
            "final_top_height": top[-1], "ideal_top_height": ideal_top,
            "max_lateral_drift": float(np.max(np.abs(p[:, :2]))),
            "max_final_speed": float(np.max(np.abs(v))),
            "standing": bool(np.max(np.abs(p[:, :2])) < 1e-6 and
                             abs(top[-1] - ideal_top) < 0.01 * ideal_top),
            "solver": solver_stats(infos)}


def hessian_nonzeros(n: int) -> dict:
    """nnz of the reduced Hessian (eq. 180) for a settled n-stack: O(n), not (3n)^2."""
    stack = Stack(n)
    q, v = stack.initial_state()
    p = stack.bodies.positions(q)
    p[:, 2] -= GAP * (np.arange(n) + 1) + 1e-5 * (np.arange(n) + 1)     # all in contact
    q = stack.bodies.state(p)
    prob = stack.problem(q, v, H)
    rows = appendix_a.layout(prob, 1.0 / H)
    red = appendix_a.reduced_program(prob, rows, appendix_a.bilateral_inertia(prob, rows))
    return {"n": n, "variables": rows.m, "hessian_nnz": int(red.program.P.nnz),
            "dense_entries": rows.m ** 2}


def run(short: bool = False, sizes=None, **options) -> dict:
    sizes = sizes or ((2, 5, 10) if short else (1, 2, 5, 10, 20, 50, 100))
    steps = 100 if short else STEPS
    runs = [simulate(n, options, steps) for n in sizes]
    return {"example": "sphere-stack", "h": H, "steps": steps, "runs": runs,
            "hessian_sparsity": [hessian_nonzeros(n) for n in sizes],
            "all_standing": all(r["standing"] for r in runs)}


def table(results: dict) -> str:
    lines = [f"{results['steps']} steps of {results['h']} s:",
             "spheres  time      per step   top z [m] (ideal)    lateral drift  standing  status"]
    for r in results["runs"]:
        lines.append(f"{r['n']:7d}  {r['seconds']:7.3f}s  {1e3 * r['seconds_per_step']:6.2f}ms  "
                     f"{r['final_top_height']:.5f} ({r['ideal_top_height']:.3f})  "
                     f"{r['max_lateral_drift']:.1e}        {r['standing']}     "
                     f"{r['solver']['status_counts']}")
    lines.append("reduced Hessian non-zeros: " + ", ".join(
        f"n={s['n']}: {s['hessian_nnz']} of {s['dense_entries']}"
        for s in results["hessian_sparsity"]))
    return "\n".join(lines)


def plot(results: dict, out_dir: str) -> list[str]:
    def draw_time(fig):
        ax = fig.add_subplot(111)
        n = [r["n"] for r in results["runs"]]
        ax.plot(n, [r["seconds"] for r in results["runs"]], "o-")
        ax.set(xlabel="number of spheres", ylabel=f"time for {results['steps']} steps [s]",
               title="Sphere stack: time vs. size (h = 10 ms)")

    def draw_top(fig):
        ax = fig.add_subplot(111)
        for r in results["runs"]:
            ax.plot(np.arange(len(r["top_height"])) * results["h"],
                    np.array(r["top_height"]) / r["ideal_top_height"], label=f"n={r['n']}")
        ax.set(xlabel="t [s]", ylabel="top sphere height / ideal", title="Stack stays standing")
        ax.legend(fontsize=7)
    return [figure(f"{out_dir}/sphere_stack_time.png", draw_time),
            figure(f"{out_dir}/sphere_stack_height.png", draw_top)]
