"""Box on an elastic (Winkler) foundation, paper Sec. 5.5, Tables 1-2.

A 1 m cube of density 8 kg/m^3 (8 kg; the converted text reads "888kg//m3", the
math-rendering triplication of "8") rests at zero velocity on an undeformed foundation of depth
1 m split into 100 or 900 frictionless elements (K = E * area / depth each, B = 1 N s/m);
E = 1e7 or 1e11 N/m^2. A downward force of 5 N or 50 N acts at s/2 [cos 10t, sin 10t, 1]
(cube frame). Every one of the paper's eight cases runs 1 s at h = 0.01 with the constraint
solver, and the same model as the penalty ODE (eqs. 16-18) with:

* scipy's stiff BDF and Radau at rtol 1e-3, atol 1e-6 (MATLAB ode15s' defaults; the paper
  ran ode15s at order 1, scipy's BDF has no order cap), for Table 1's timings;
* DOP853 at rtol 1e-10, atol 1e-12 as the reference (the paper's ode45), for Table 2's
  errors of q = [position, quaternion] after 1 s (ours, and BDF's and Radau's), and for the
  note under Table 2 (the 50 N, 100-element rows at h = 1e-3).

Each scipy run has a wall-clock budget; one that exceeds it is reported as a timeout (the
paper's ode15s ran up to 5550 s, its ode45 up to 17400 s). The explicit reference is limited
by stability at E = 1e11 (the cube's contact modes reach ~1e5 rad/s): about 2-4 million
right-hand-side calls, minutes per row. Where our error is ~1e-11, it is at the reference's
own resolution (rtol 1e-10 on |q| = 1.118) and is an upper bound.

Timings and errors of every case, with the commands that reproduce them: docs/results.md,
"Constraint-solver examples".
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from idyn.constraint_solver import ConstraintProblem, ConstraintRows
from idyn.constraint_solver.bodies import WORLD, RigidBodies
from idyn.constraint_solver.models import winkler
from idyn.errors import InvalidInputError

from .common import (Stopwatch, curves, integrate_with_budget, make_solver, published,
                     solver_stats, step_times, tolist)

SIDE, DENSITY, DEPTH, DAMPING, H, DURATION = 1.0, 8.0, 1.0, 1.0, 0.01, 1.0
FINE_H = 1e-3                      # the step of the note under Table 2
SCIPY_TOLERANCES = {"rtol": 1e-3, "atol": 1e-6}             # MATLAB ode15s' defaults
REFERENCE_TOLERANCES = {"rtol": 1e-10, "atol": 1e-12}
SCIPY_BUDGET_S = 60.0              # wall-clock seconds per BDF/Radau run before a timeout
# The paper's numbers (experiments/data/cs_paper.json), keyed (elements, E, load). Table 1:
# seconds of its constraint-based approach, ode15s and ode45 (MATLAB); Table 2: absolute and
# relative error at h = 0.01; the note under Table 2: absolute error at h = 1e-3.
_PAPER = published()
PAPER_TABLE1 = {(r["elements"], r["E"], r["load"]): tuple(r["s"])
                for r in _PAPER["table1_timings_s"]["rows"]}
PAPER_TABLE2 = {(r["elements"], r["E"], r["load"]): tuple(r["err"])
                for r in _PAPER["table2_accuracy"]["rows"]}
PAPER_FINE_STEP = {(r["elements"], r["E"], r["load"]): r["abs"]
                   for r in _PAPER["table2_accuracy"]["fine_step"]["rows"]}


class Foundation:
    """The cube, its foundation elements (body-frame points on the bottom face) and the load."""

    def __init__(self, elements: int, youngs: float, load: float):
        side = int(round(np.sqrt(elements)))
        if side * side != elements:
            raise ValueError("elements must be a square number")
        mass = DENSITY * SIDE ** 3
        self.bodies = RigidBodies([mass], [[mass * SIDE ** 2 / 6.0] * 3])
        c = (np.arange(side) + 0.5) / side * SIDE - SIDE / 2
        X, Y = np.meshgrid(c, c)
        self.points = np.column_stack([X.ravel(), Y.ravel(), np.full(elements, -SIDE / 2)])
        self.area = SIDE ** 2 / elements
        self.k = youngs * self.area / DEPTH
        self.youngs, self.load = youngs, load
        inertia = self.bodies.inertias[0]
        self._rigid = (mass, inertia, np.linalg.inv(inertia))

    def initial_state(self):
        return self.bodies.state([[0.0, 0.0, SIDE / 2]]), np.zeros(6)

    def load_wrench(self, q, t: float) -> np.ndarray:
        """World force (0, 0, -load) at s/2 [cos 10t, sin 10t, 1] (cube frame) and its torque."""
        b = SIDE / 2 * np.array([np.cos(10 * t), np.sin(10 * t), 1.0])
        r = self.bodies.rotations(q)[0] @ b
        F = np.array([0.0, 0.0, -self.load])
        return np.r_[F, np.cross(r, F)][None, :]

    def heights(self, q) -> np.ndarray:
        return self.bodies.world_points(q, np.zeros(len(self.points), int), self.points)[:, 2]

    def problem(self, q, v, t: float, h: float) -> ConstraintProblem:
        z = self.heights(q)
        act = np.flatnonzero(z <= 0.0)       # touching or compressed elements only
        f = self.bodies.forces(q, v, self.load_wrench(q, t))
        if not act.size:
            return ConstraintProblem(self.bodies.mass, f, v, h)
        k = act.size
        pts = self.points[act]
        G = self.bodies.relative_rows(q, WORLD, np.zeros(3), np.zeros(k, int), pts,
                                      np.tile([0.0, 0.0, 1.0], (k, 1)))
        law = winkler(-z[act], self.youngs, self.area, DEPTH, DAMPING)
        drift = self.bodies.point_drift(q, v, np.zeros(k, int), pts)[:, 2]
        rows = ConstraintRows(G, law.phi, law.K, law.B, Gdot_v=drift)
        return ConstraintProblem(self.bodies.mass, f, v, h, unilateral=rows)

    # ---------------------------------------------------------------- penalty ODE (eqs. 16-18)
    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """d/dt [position, quaternion x y z w, body linear velocity, body angular velocity].

        Written for the one cube (far cheaper than the generic RigidBodies helpers), so
        scipy's integrators are timed on the model, not on Python overhead: only the elements' world heights z = p_z + e_z . R b
        and rates are needed, and the foundation's wrench is vertical.
        """
        quat = y[3:7] / np.linalg.norm(y[3:7])
        lin, ang = y[7:10], y[10:13]
        R = pin.Quaternion(quat).matrix()
        up = R[2]                                   # world z-axis in the cube frame
        z = y[2] + self.points @ up
        zdot = up @ lin + self.points @ pin.skew(up) @ ang      # e_z . R (v + w x b)
        lam = np.where(z < 0.0, np.maximum(0.0, -self.k * z - DAMPING * zdot), 0.0)
        arm = R @ (self.points.T @ lam)             # sum_i lam_i R b_i
        b = SIDE / 2 * np.array([np.cos(10 * t), np.sin(10 * t), 1.0])
        r = R @ b
        force = np.array([0.0, 0.0, lam.sum() - self.load])
        torque = np.array([arm[1] - self.load * r[1], -arm[0] + self.load * r[0], 0.0])
        mass, inertia, inv_inertia = self._rigid
        lin_dot = R.T @ (force / mass + self.bodies.gravity) - pin.skew(ang) @ lin
        ang_dot = inv_inertia @ (R.T @ torque - pin.skew(ang) @ (inertia @ ang))
        x, yq, zq, w = quat
        wx, wy, wz = ang
        qdot = 0.5 * np.array([w * wx + yq * wz - zq * wy, w * wy + zq * wx - x * wz,
                               w * wz + x * wy - yq * wx, -x * wx - yq * wy - zq * wz])
        return np.concatenate([R @ lin, qdot, lin_dot, ang_dot])


def run_scipy(found: Foundation, method: str, budget: float, **tol) -> dict:
    """Integrate the penalty ODE with ``method``; stop (timeout) after ``budget`` seconds."""
    q0, v0 = found.initial_state()
    out = integrate_with_budget(found.rhs, np.r_[q0, v0], DURATION, method, budget, **tol)
    y = out.pop("y_final")
    q = None if y is None else y[:7].copy()
    if q is not None:
        q[3:] /= np.linalg.norm(q[3:])
    out["q_final"] = None if q is None else tolist(q)
    return out


def run_constraint_solver(found: Foundation, options: dict, h: float = H) -> dict:
    solver = make_solver(options)
    q, v = found.initial_state()
    infos, traj, per_step = [], [q[:3].copy()], []
    steps = int(round(DURATION / h))
    with Stopwatch() as total:
        for i in range(steps):
            with Stopwatch() as sw:
                q, sol = solver.step(found.problem(q, v, i * h, h), q, found.bodies.integrate)
            per_step.append(sw.seconds)
            v = sol.v1
            infos.append(sol.info)
            traj.append(q[:3].copy())
    stride = max(1, int(round(H / h)))
    return {"h": h, **step_times(per_step), "cpu_seconds": total.cpu_seconds,
            "q_final": tolist(q), "steps": steps,
            "com_height": tolist(np.array(traj)[::stride, 2]), "solver": solver_stats(infos),
            "max_active_elements": int(max(i.n_variables for i in infos))}


def _error(q, q_ref):
    """Table 2's errors: Euclidean norm of the difference of the generalized coordinates
    (position, unit quaternion) after 1 s, absolute and relative to |q_ref| in percent (the
    project's unit of relative errors; the paper's Table 2 gives the fraction)."""
    q, q_ref = np.asarray(q), np.asarray(q_ref)
    if q[3:] @ q_ref[3:] < 0:            # q and -q are the same orientation
        q = np.r_[q[:3], -q[3:]]
    err = float(np.linalg.norm(q - q_ref))
    return err, 100.0 * err / float(np.linalg.norm(q_ref))


CASES = tuple((e, E, F) for F in (5.0, 50.0) for e in (100, 900) for E in (1e7, 1e11))
"""(elements, E, load) in Table 2's order (load, elements, E); Table 1 has the same eight."""


def _cases(short: bool, cases):
    if cases is not None:
        unknown = [c for c in cases if tuple(c) not in CASES]
        if unknown:
            raise InvalidInputError(f"unknown elastic-foundation case(s) {unknown}; the paper's are "
                             f"{list(CASES)}")
        return [tuple(c) for c in cases]
    if short:
        return [(100, 1e7, 5.0), (100, 1e7, 50.0), (900, 1e11, 50.0)]
    return list(CASES)


def run(short: bool = False, budget: float | None = None,
        reference_budget: float | None = None, cases=None, scipy_cases=None,
        reference_cases=None, fine_step: bool | None = None, **options) -> dict:
    """Tables 1 and 2. ``budget``: seconds per BDF/Radau run; ``reference_budget``: seconds per
    DOP853 reference run (short: references only where E = 1e7, the explicit reference needs
    minutes at E = 1e11); ``cases``: a subset of ``CASES`` to run instead of all eight;
    ``scipy_cases`` / ``reference_cases``: the subsets of those that also get BDF and Radau /
    the reference (default: all / as ``short`` says); ``fine_step``: the note under Table 2
    (default: not short)."""
    budget = budget if budget is not None else (20.0 if short else SCIPY_BUDGET_S)
    reference_budget = reference_budget if reference_budget is not None else \
        (60.0 if short else 1800.0)
    fine_step = (not short) if fine_step is None else fine_step
    chosen = _cases(short, cases)
    with_scipy = set(chosen) if scipy_cases is None else set(_cases(False, scipy_cases))
    with_ref = ({c for c in chosen if not (short and c[1] > 1e7)} if reference_cases is None
                else set(_cases(False, reference_cases)))
    rows, fine = [], []
    for elements, youngs, load in chosen:
        found = Foundation(elements, youngs, load)
        ours = run_constraint_solver(found, options)
        row = {"elements": elements, "youngs_modulus": youngs, "load": load,
               "constraint_solver": ours}
        for method in ("BDF", "Radau"):
            row[method] = (run_scipy(found, method, budget, **SCIPY_TOLERANCES)
                           if (elements, youngs, load) in with_scipy else None)
        rows.append(row)
        if (elements, youngs, load) not in with_ref:
            continue
        ref = row["reference"] = run_scipy(found, "DOP853", reference_budget,
                                           **REFERENCE_TOLERANCES)
        if not ref["completed"]:
            continue
        row["abs_error"], row["rel_error_pct"] = _error(ours["q_final"], ref["q_final"])
        for method in ("BDF", "Radau"):
            if row[method] is not None and row[method]["completed"]:
                row[method]["abs_error"] = _error(row[method]["q_final"], ref["q_final"])[0]
        if elements == 100 and load == 50.0 and fine_step:
            # the note under Table 2: the same two rows at h = 1e-3
            small = run_constraint_solver(found, options, FINE_H)
            fine.append({"elements": elements, "youngs_modulus": youngs, "load": load,
                         "h": FINE_H, "seconds": small["seconds"],
                         "abs_error": _error(small["q_final"], ref["q_final"])[0]})
    return {"example": "elastic-foundation", "h": H, "duration": DURATION, "cases": rows,
            "fine_step": fine, "scipy_tolerances": SCIPY_TOLERANCES,
            "reference": {"method": "DOP853", **REFERENCE_TOLERANCES},
            "timeout_budget_s": budget, "reference_budget_s": reference_budget}


def table(results: dict) -> str:
    def t(r):
        if r is None:
            return "not run"
        return f">{r['budget_s']:.0f}s" if r["timeout"] else \
            (f"{r['seconds']:.3f}s" if r["completed"] else "failed")

    def ours(c):
        r = c["constraint_solver"]
        return f"{r['seconds']:.3f}s" + (f" ({r['cpu_seconds']:.3f}s)" if "cpu_seconds" in r
                                         else "")

    def e(r):
        return f"{r['abs_error']:.2e}" if r and "abs_error" in r else "n/a     "

    def key(c):
        return c["elements"], c["youngs_modulus"], c["load"]

    lines = ["Table 1: seconds for 1 s at h = 0.01 (scipy rtol 1e-3 atol 1e-6; reference DOP853 "
             "rtol 1e-10 atol 1e-12) | paper: constraint-based, ode15s, ode45",
             "elements  E      load  ours (cpu)         BDF       Radau     DOP853-ref | paper"]
    for c in sorted(results["cases"], key=lambda c: (c["elements"], c["load"],
                                                     c["youngs_modulus"])):
        paper = " ".join(f"{x:g}s" for x in PAPER_TABLE1[key(c)])
        lines.append(f"{c['elements']:8d}  {c['youngs_modulus']:.0e}  {c['load']:4.0f}  "
                     f"{ours(c):17s}  {t(c['BDF']):9s} "
                     f"{t(c['Radau']):9s} {t(c.get('reference')):10s} | {paper}")
    lines += ["Table 2: error of q = [position, quaternion] after 1 s against the reference "
              "| paper: abs, rel (%)",
              "load  elements  E      ours abs   rel (%)    BDF abs    Radau abs | paper"]
    for c in results["cases"]:
        rel = f"{c['rel_error_pct']:.2e}" if "rel_error_pct" in c else "n/a     "
        abs_paper, rel_paper = PAPER_TABLE2[key(c)]
        paper = f"{abs_paper:.3g}, {100 * rel_paper:.3g} %"
        lines.append(f"{c['load']:4.0f}  {c['elements']:8d}  {c['youngs_modulus']:.0e}  "
                     f"{e(c)}   {rel}   {e(c['BDF'])}   {e(c['Radau'])}  | {paper}")
    for f in results["fine_step"]:
        lines.append(f"h = {f['h']:g}: {f['load']:.0f} N, {f['elements']} elements, "
                     f"E = {f['youngs_modulus']:.0e}: abs error {f['abs_error']:.2e} "
                     f"({f['seconds']:.2f}s) | paper {PAPER_FINE_STEP[key(f)]:.3g}")
    return "\n".join(lines)


def plot(results: dict, out_dir: str) -> list[str]:
    series = []
    for c in results["cases"]:
        z = np.array(c["constraint_solver"]["com_height"])
        series.append((np.arange(z.size) * results["h"], (z - 0.5) * 1e6,
                       f"{c['elements']} el, E={c['youngs_modulus']:.0e}, {c['load']:.0f} N"))
    return [curves(f"{out_dir}/elastic_foundation.png", series, xlabel="t [s]",
                   ylabel="centre height - 0.5 m [um]", title="Cube on elastic foundation (h = 0.01 s)")]
