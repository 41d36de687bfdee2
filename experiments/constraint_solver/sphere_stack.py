"""Stack of spheres, paper Sec. 6.5, Fig. 10.

n steel spheres (radius 0.1 m, 7800 kg/m^3), E* = 1e11 (Hertz, eqs. 121-122), B_n = 1, friction
mu = 0.5 with the Coulomb dampers of Sec. 6.4, released at rest in perfect vertical alignment
with 1 mm gaps (the paper: "spaced evenly apart vertically ... at rest"), h = 10 ms, 500
steps, no walls. Three rows per contact (n, r, s), contacts only between neighbours and with
the ground, so G, M^-1 and the reduced Hessian have O(n) non-zeros.

Contacts: a pair is a row as soon as it could touch within the step (speculative rows: gap
below twice the distance it closes at the current speed plus g h^2), and the Hertz law is
linearised by its chord towards a reference depth (:class:`~idyn.constraint_solver.models.
HertzLaw`, :func:`~idyn.constraint_solver.nonlinear.solve_with_chords`), so the total energy
(kinetic + gravity + Hertz) cannot grow from one step to the next. The paper's tangent
linearisation has zero stiffness at zero depth: the spheres sank ~1 mm into each other before
any force appeared and were pushed out again, +206 J in the 10-sphere stack and a blow-up at
100 spheres.

Reported against n: wall-clock time of the 500 steps (the steps only, with median and p90 per
step), whether the stack stands (lateral drift, top height against the undeformed stack and
against Hertz statics, which it reaches to round-off), the largest step-to-step energy change,
the re-solves the chord references needed, and scipy's BDF and Radau on the same model as an
ODE within a budget, on the smallest and the largest stack (the short run: the smallest
only), vertical motion only: in the aligned stack every lateral quantity is exactly zero.
With B_n = 1 the contacts are nearly elastic, so the ODE's spheres are still bouncing after 5 s; the stack settles under the first-order scheme because
implicit Euler damps the contact vibrations it cannot resolve (L-stability, Sec. 3).
"""
from __future__ import annotations

import numpy as np

from idyn.constraint_solver import ConstraintProblem, ConstraintSolver
from idyn.constraint_solver import appendix_a
from idyn.constraint_solver.bodies import WORLD, RigidBodies
from idyn.constraint_solver.geometry import (ContactGeometry, sphere_plane, sphere_sphere,
                                             sphere_sphere_normal_drift)
from idyn.constraint_solver.models import HertzLaw, SpringLaw
from idyn.constraint_solver.nonlinear import solve_with_chords
from idyn.constraint_solver.point_contacts import contact_rows

from .common import (Stopwatch, curves, figure, integrate_with_budget, make_solver, solver_stats,
                     step_times)

RADIUS, DENSITY, E_STAR, B_N, MU, GAP, H, STEPS = 0.1, 7800.0, 1e11, 1.0, 0.5, 1e-3, 0.01, 500
GRAVITY = 9.81
REFERENCE_MARGIN = 0.1       # first chord reference >= (1 + margin) x current depth
SCIPY_BUDGET_S = 120.0       # wall-clock seconds per BDF/Radau run before a timeout


class Stack:
    """n spheres on the ground; contact i is ground-sphere 0 (i = 0) or sphere i-1 - sphere i."""

    def __init__(self, n: int):
        self.mass = DENSITY * 4.0 / 3.0 * np.pi * RADIUS ** 3
        self.n = n
        self.bodies = RigidBodies(np.full(n, self.mass),
                                  np.full((n, 3), 0.4 * self.mass * RADIUS ** 2))
        self.body_a = np.r_[WORLD, np.arange(n - 1)]
        self.body_b = np.arange(n)
        # effective radius: r for sphere-plane, r/2 for two equal spheres
        self.law = HertzLaw.of(E_STAR, np.where(self.body_a == WORLD, RADIUS, RADIUS / 2), B_N)
        self.ideal_top = RADIUS + (n - 1) * 2 * RADIUS
        # at rest contact i carries the weight of the n - i spheres above it (Hertz statics)
        self.static_top = self.ideal_top - float(np.sum(self.law.depth_at(
            (n - np.arange(n)) * self.mass * GRAVITY)))

    def initial_state(self):
        z = RADIUS + GAP + np.arange(self.n) * (2 * RADIUS + GAP)
        return self.bodies.state(np.column_stack([np.zeros((self.n, 2)), z])), \
            np.zeros(6 * self.n)

    def geometry(self, q) -> ContactGeometry:
        c = self.bodies.positions(q)
        r = np.full(self.n - 1, RADIUS)
        ground = sphere_plane(c[:1], np.array([RADIUS]), np.zeros(3), [0.0, 0.0, 1.0])
        pair = sphere_sphere(c[:-1], r, c[1:], r)
        return ContactGeometry(*(np.concatenate([getattr(ground, k), getattr(pair, k)])
                                 for k in ("depth", "normal", "point_a", "point_b")))

    def problem(self, q, v, h: float):
        """(problem, active contacts, their depths, their closing speeds): rows for every
        contact that is touching or could touch within the step (closing at the current
        speed plus g h, twice over). Normal rows carry placeholder phi/K (set by the chord)."""
        b = self.bodies
        f = b.forces(q, v)
        geom = self.geometry(q)
        zeros, every = np.zeros((self.n, 3)), np.arange(self.n)
        vel = b.point_velocity(q, v, every, zeros)                 # centre velocities
        below = np.vstack([np.zeros((1, 3)), vel[:-1]])
        closing = np.sum((below - vel) * geom.normal, axis=1)     # -phi_dot_n
        reach = 2.0 * h * (np.maximum(closing, 0.0) + GRAVITY * h)
        act = np.flatnonzero(geom.depth + reach > 0.0)
        if not act.size:
            return ConstraintProblem(b.mass, f, v, h), act, geom.depth[act], closing[act]
        g = ContactGeometry(*(getattr(geom, k)[act]
                              for k in ("depth", "normal", "point_a", "point_b")))
        drift = b.point_drift(q, v, every, zeros)
        c = b.positions(q)
        pair_drift = sphere_sphere_normal_drift(c[:-1], c[1:], vel[:-1], vel[1:], drift[:-1],
                                                drift[1:])
        normal_drift = np.r_[drift[0, 2], pair_drift][act]
        placeholder = SpringLaw(np.zeros(act.size), np.zeros(act.size), np.zeros(act.size))
        rows = contact_rows(b, q, g, self.body_a[act], self.body_b[act], placeholder,
                            normal_drift, MU, h)
        return ConstraintProblem(b.mass, f, v, h, contacts=rows), act, g.depth, closing[act]

    def energy(self, q, v) -> float:
        """Kinetic + gravitational + Hertz elastic energy (J)."""
        vv = np.asarray(v).reshape(self.n, 6)
        kinetic = 0.5 * self.mass * np.sum(vv[:, :3] ** 2) + 0.5 * np.einsum(
            "ki,kij,kj->", vv[:, 3:], self.bodies.inertias, vv[:, 3:])
        height = self.mass * GRAVITY * np.sum(self.bodies.positions(q)[:, 2])
        return float(kinetic + height + np.sum(self.law.energy(self.geometry(q).depth)))

    # ---------------------------------------------------------------- the same model as an ODE
    def vertical_rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """Centre heights and vertical speeds under gravity, Hertz and the normal damper
        (lambda = max(0, F(d) + B_n d_dot) on overlapping contacts, as the rows model it)."""
        depth, rate, pushing = self._vertical_contacts(y)
        lam = np.where(pushing, self.law.force(depth) + B_N * rate, 0.0)
        acc = (lam - np.r_[lam[1:], 0.0]) / self.mass - GRAVITY
        return np.r_[y[self.n:], acc]

    def _vertical_contacts(self, y):
        z, w = y[:self.n], y[self.n:]
        depth = np.r_[RADIUS - z[0], 2 * RADIUS - np.diff(z)]
        rate = np.r_[-w[0], -np.diff(w)]
        pushing = (depth > 0.0) & (self.law.force(depth) + B_N * rate > 0.0)
        return depth, rate, pushing

    def vertical_jacobian(self, t: float, y: np.ndarray) -> np.ndarray:
        """d rhs / dy of :meth:`vertical_rhs` (banded; scipy's finite differences overflow on
        the columns of separated spheres, whose derivative is exactly zero)."""
        n = self.n
        depth, _, pushing = self._vertical_contacts(y)
        k = np.where(pushing, 1.5 * self.law.c * np.sqrt(np.maximum(depth, 0.0)), 0.0)
        b = np.where(pushing, B_N, 0.0)
        # d lam_i / d x_j for x = z (through depth, stiffness k) or w (through rate, damping b):
        # depth_i, rate_i fall with x_i and rise with x_(i-1)
        D = np.zeros((n, n))
        D[np.arange(n), np.arange(n)] = -1.0
        D[np.arange(1, n), np.arange(n - 1)] = 1.0
        S = np.eye(n) - np.eye(n, k=1)          # acc_i = (lam_i - lam_(i+1)) / m - g
        J = np.zeros((2 * n, 2 * n))
        J[:n, n:] = np.eye(n)
        J[n:, :n] = S @ (k[:, None] * D) / self.mass
        J[n:, n:] = S @ (b[:, None] * D) / self.mass
        return J


def reference_depths(stack: Stack, act, depth, closing, force_prev, h: float) -> np.ndarray:
    """First chord references: the depth reached at the current closing speed, the depth that
    carries the contact's previous force or the sphere's weight, and (1 + margin) d0."""
    law = stack.law.take(act)
    lo = np.maximum(depth, 0.0)
    return np.maximum.reduce([depth + h * closing, law.depth_at(force_prev[act]),
                              law.depth_at(np.full(act.size, stack.mass * GRAVITY)),
                              (1.0 + REFERENCE_MARGIN) * lo])


def simulate(n: int, options: dict, steps: int = STEPS) -> dict:
    stack, solver = Stack(n), make_solver(options)
    q, v = stack.initial_state()
    force = np.zeros(n)
    infos, rounds, inconsistent = [], [], 0
    top, energy = [float(stack.bodies.positions(q)[-1, 2])], [stack.energy(q, v)]
    per_step, cpu = [], 0.0      # the steps only, not the diagnostics recorded in between
    for _ in range(steps):
        with Stopwatch() as sw:
            q, v, chord = _step(stack, solver, q, v, force)
        per_step.append(sw.seconds)
        cpu += sw.cpu_seconds
        rounds.append(0 if chord is None else chord.rounds)
        if chord is not None:
            infos.append(chord.solution.info)
            inconsistent += int(not chord.consistent)
        top.append(float(stack.bodies.positions(q)[-1, 2]))
        energy.append(stack.energy(q, v))
    p = stack.bodies.positions(q)
    de = np.diff(energy)
    drift = float(np.max(np.abs(p[:, :2])))
    times = step_times(per_step)
    return {"n": n, "steps": steps, **times, "cpu_seconds": cpu,
            "seconds_per_step": times["seconds"] / steps,
            "top_height": top, "final_top_height": top[-1], "ideal_top_height": stack.ideal_top,
            "hertz_static_top_height": stack.static_top,
            "max_lateral_drift": drift, "max_final_speed": float(np.max(np.abs(v))),
            "energy": energy, "max_energy_increase": float(max(0.0, de.max())),
            "energy_lost": float(energy[0] - energy[-1]),
            "chord_rounds": np.bincount(rounds, minlength=2).tolist(),
            "inconsistent_steps": inconsistent,
            "standing": bool(drift < 1e-6 and abs(top[-1] - stack.ideal_top)
                             < 0.01 * stack.ideal_top),
            "solver": solver_stats(infos)}


def _step(stack: Stack, solver: ConstraintSolver, q, v, force):
    """(q1, v1, ChordStep or None): rows, chord-consistent solve, integration; ``force``
    (every contact's normal force, the next step's reference predictor) is updated in place."""
    prob, act, depth, closing = stack.problem(q, v, H)
    ref = reference_depths(stack, act, depth, closing, force, H)
    force[:] = 0.0
    if not act.size:
        v1 = solver.solve(prob).v1
        return stack.bodies.integrate(q, v1, H), v1, None
    chord = solve_with_chords(solver, prob, stack.law.take(act), depth, ref)
    force[act] = chord.solution.lambda_n
    v1 = chord.solution.v1
    return stack.bodies.integrate(q, v1, H), v1, chord


def run_ode(n: int, method: str, budget: float, steps: int = STEPS) -> dict:
    """scipy ``method`` (rtol 1e-3, atol 1e-6) on :meth:`Stack.vertical_rhs` for steps * h."""
    stack = Stack(n)
    q, _ = stack.initial_state()
    y0 = np.r_[stack.bodies.positions(q)[:, 2], np.zeros(n)]
    out = integrate_with_budget(stack.vertical_rhs, y0, steps * H, method, budget,
                                rtol=1e-3, atol=1e-6, jac=stack.vertical_jacobian)
    y = out.pop("y_final")
    out["n"] = n
    out["final_top_height"] = None if y is None else float(y[n - 1])
    out["max_final_speed"] = None if y is None else float(np.max(np.abs(y[n:])))
    return out


def hessian_nonzeros(n: int) -> dict:
    """nnz of the reduced Hessian (eq. 180) for a settled n-stack: O(n), not (3n)^2."""
    stack = Stack(n)
    q, v = stack.initial_state()
    p = stack.bodies.positions(q)
    p[:, 2] -= GAP * (np.arange(n) + 1) + 1e-5 * (np.arange(n) + 1)     # all in contact
    q = stack.bodies.state(p)
    prob, act, depth, _ = stack.problem(q, v, H)
    chord = stack.law.take(act).chord(depth, 2 * depth)
    rows = appendix_a.layout(prob, 1.0 / H)
    rows.rho[rows.n] = -chord.K * chord.phi
    red = appendix_a.reduced_program(prob, rows, appendix_a.bilateral_inertia(prob, rows))
    return {"n": n, "variables": rows.m, "hessian_nnz": int(red.program.P.nnz),
            "dense_entries": rows.m ** 2}


def run(short: bool = False, sizes=None, budget: float | None = None, steps: int | None = None,
        ode: bool = True, **options) -> dict:
    """Stacks of ``sizes`` spheres for ``steps`` steps (default 500, 100 when short); scipy's
    BDF and Radau (unless ``ode`` is False) within ``budget`` seconds each."""
    sizes = sizes or ((2, 5, 10) if short else (10, 25, 50, 100))
    steps = steps if steps is not None else (100 if short else STEPS)
    budget = budget if budget is not None else (10.0 if short else SCIPY_BUDGET_S)
    runs = [simulate(n, options, steps) for n in sizes]
    # scipy on the smallest stack and, in the full run, on the largest (the headline size)
    ode_sizes = (min(sizes),) if short else sorted({min(sizes), max(sizes)})
    ode = [run_ode(n, method, budget, steps) for n in ode_sizes
           for method in ("BDF", "Radau")] if ode else []
    return {"example": "sphere-stack", "h": H, "steps": steps, "runs": runs, "ode": ode,
            "ode_budget_s": budget,
            "hessian_sparsity": [hessian_nonzeros(n) for n in sizes],
            "all_standing": all(r["standing"] for r in runs),
            "energy_never_increases": all(r["max_energy_increase"] <= 1e-9 * abs(r["energy"][0])
                                          for r in runs)}


def table(results: dict) -> str:
    lines = [f"{results['steps']} steps of {results['h']} s (one BLAS thread); top z against the "
             "undeformed stack and against Hertz statics:",
             "spheres  time (cpu)         step median/p90  top z [m] (undeformed)  - static  "
             "lateral  standing  max dE [J]  re-solves  status"]
    for r in results["runs"]:
        lines.append(f"{r['n']:7d}  {r['seconds']:6.3f}s ({r['cpu_seconds']:6.3f}s)  "
                     f"{1e3 * r['step_median_s']:5.2f}/"
                     f"{1e3 * r['step_p90_s']:5.2f} ms    {r['final_top_height']:.5f} "
                     f"({r['ideal_top_height']:6.3f})  "
                     f"{r['final_top_height'] - r['hertz_static_top_height']:+.0e}  "
                     f"{r['max_lateral_drift']:.0e}  {str(r['standing']):8s}  "
                     f"{r['max_energy_increase']:.1e}     {sum(r['chord_rounds'][2:]):5d}  "
                     f"{r['solver']['status_counts']}")
    for o in results["ode"]:
        state = f"timeout (> {o['budget_s']:.0f}s)" if o["timeout"] else (
            f"{o['seconds']:.3f}s (cpu {o['cpu_seconds']:.3f}s), "
            f"top z {o['final_top_height']:.5f}, "
            f"max |v| {o['max_final_speed']:.2e} m/s")
        lines.append(f"scipy {o['method']:5s} n={o['n']}: {state} "
                     f"({o['rhs_evaluations']} rhs calls, budget {o['budget_s']:.0f}s)")
    lines.append("reduced Hessian non-zeros: " + ", ".join(
        f"n={s['n']}: {s['hessian_nnz']} of {s['dense_entries']}"
        for s in results["hessian_sparsity"]))
    return "\n".join(lines)


def plot(results: dict, out_dir: str) -> list[str]:
    def draw_time(fig):
        ax = fig.add_subplot(111)
        n = [r["n"] for r in results["runs"]]
        ax.plot(n, [r["seconds"] for r in results["runs"]], "o-", label="constraint solver")
        for method, marker in (("BDF", "s"), ("Radau", "^")):
            done = [o for o in results["ode"] if o["method"] == method and o["completed"]]
            if done:
                ax.plot([o["n"] for o in done], [o["seconds"] for o in done], marker,
                        label=f"scipy {method}")
        ax.set(xlabel="number of spheres", ylabel=f"time for {results['steps']} steps [s]",
               title="Sphere stack: time vs. size (h = 10 ms)")
        ax.legend()

    heights = [(np.arange(len(r["top_height"])) * results["h"], np.array(r["top_height"]) - r["ideal_top_height"],
                f"n={r['n']}") for r in results["runs"]]
    return [figure(f"{out_dir}/sphere_stack_time.png", draw_time),
            curves(f"{out_dir}/sphere_stack_height.png", heights, xlabel="t [s]",
                   ylabel="top sphere height - undeformed ideal [m]", title="Stack stays standing")]
