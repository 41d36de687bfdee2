"""``idyn bench constraint-solver``: issue 7's two performance figures, scipy beside them.

(a) The 1 m cube on the 900-element elastic foundation (paper Sec. 5.5, Table 1), 1 s at
    h = 0.01 (100 steps), E = 1e7 and 1e11, loads 5 and 50 N: target <= 1 s per run (the
    paper's MATLAB: 7.4-26 s).
(b) The stack of spheres (Sec. 6.5, Fig. 10), 500 steps at h = 10 ms, for 10, 25, 50 and 100
    spheres: target <= 5 s at 100 spheres.

Our solver runs through the examples' own functions (:func:`foundation.run_constraint_solver`,
:func:`sphere_stack.simulate`), ``repeats`` times per model, the runs of the different models
taking turns (load on the shared machine falls on all alike). A run's time is the sum of its
steps (building the constraint rows, the solve, the integration; not the diagnostics the
examples record between steps), in wall-clock and in process CPU seconds: the wall clock
includes waiting for a core that another process holds, the CPU time does not (one BLAS
thread, so it is the compute time). Printed and written: median and p90 over the runs of both;
per step, the median over the runs of each run's step median and step p90.

scipy's BDF and Radau (rtol 1e-3, atol 1e-6, as the examples) integrate the same models as
ODEs in the same process, once per model: the penalty ODE of the foundation
(:func:`foundation.run_scipy`) and the stack's vertical ODE with its analytic Jacobian
(:func:`sphere_stack.run_ode`), the latter on the smallest and the largest stack only, as the
example does (at 10 spheres BDF needs ~35 s, Radau ~49 s). Each run has the wall-clock budget
of the example's full run (60 s foundation, 120 s stack); one that exceeds it is reported as a
timeout, and its ratio to ours as a lower bound.

Bench options: ``--contacts`` selects the sphere counts, ``--repeats`` the runs per model
(default :data:`REPEATS`), ``--seeds`` is ignored (the models are deterministic).
"""
from __future__ import annotations

import platform

import numpy as np

from idyn.experiments.constraint_solver import foundation, sphere_stack
from idyn.errors import InvalidInputError

from .controllers import single_threaded_blas, write_report

#: runs per model by default (one foundation run takes ~0.4 s, one 100-sphere stack ~3 s)
REPEATS = 3
ELEMENTS = 900
#: (E [N/m^2], load [N]) of the foundation runs: Table 1's four 900-element rows
FOUNDATION_CASES = ((1e7, 5.0), (1e11, 5.0), (1e7, 50.0), (1e11, 50.0))
SPHERE_COUNTS = (10, 25, 50, 100)
#: issue 7's targets: (configuration, seconds per run)
FOUNDATION_TARGET = ({"elements": 900}, 1.0)
STACK_TARGET = ({"n": 100, "steps": sphere_stack.STEPS}, 5.0)
#: wall-clock seconds per scipy run, as the examples' full runs
FOUNDATION_BUDGET_S, STACK_BUDGET_S = foundation.SCIPY_BUDGET_S, sphere_stack.SCIPY_BUDGET_S
SCIPY_METHODS = ("BDF", "Radau")


def _spread(values) -> dict:
    values = np.asarray(values, dtype=float)
    return {"median": float(np.median(values)), "p90": float(np.percentile(values, 90))}


def _summary(runs: list[dict], target) -> dict:
    """Median/p90 over ``runs`` of wall and CPU seconds, per-step figures, the target verdict
    (``target`` None: this configuration has no target)."""
    out = {"seconds": _spread([r["seconds"] for r in runs]),
           "cpu_seconds": _spread([r["cpu_seconds"] for r in runs]),
           "step_median_s": float(np.median([r["step_median_s"] for r in runs])),
           "step_p90_s": float(np.median([r["step_p90_s"] for r in runs])),
           "target_s": target}
    if target is not None:
        out["pass_wall"] = out["seconds"]["median"] <= target
        out["pass_cpu"] = out["cpu_seconds"]["median"] <= target
    return out


def _run_record(r: dict) -> dict:
    """What bench.json keeps of one run of ours (the examples' trajectories are left out)."""
    keep = ("seconds", "cpu_seconds", "step_median_s", "step_p90_s", "standing")
    return {**{k: r[k] for k in keep if k in r}, "status_counts": r["solver"]["status_counts"],
            "fallbacks": r["solver"]["fallbacks"]}


def _scipy_record(r: dict, ours_s: float) -> dict:
    keep = ("method", "seconds", "cpu_seconds", "completed", "timeout", "budget_s", "message",
            "rhs_evaluations")
    return {**{k: r[k] for k in keep}, "ratio_to_ours": r["seconds"] / ours_s,
            "ratio_is_lower_bound": bool(r["timeout"])}


def _applies(target, config: dict):
    """The target's seconds if ``config`` is its configuration, else None."""
    where, seconds = target
    return seconds if all(config.get(k) == v for k, v in where.items()) else None


def bench_foundation(elements: int, cases, repeats: int, budget: float) -> list[dict]:
    models = [foundation.Foundation(elements, youngs, load) for youngs, load in cases]
    runs = [[] for _ in models]
    for _ in range(repeats):
        for i, found in enumerate(models):
            runs[i].append(foundation.run_constraint_solver(found, {}))
    rows = []
    for found, model_runs in zip(models, runs):
        row = {"elements": elements, "youngs_modulus": found.youngs, "load": found.load,
               "steps": model_runs[0]["steps"], "h": foundation.H,
               **_summary(model_runs, _applies(FOUNDATION_TARGET, {"elements": elements})),
               "runs": [_run_record(r) for r in model_runs]}
        for method in SCIPY_METHODS:
            r = foundation.run_scipy(found, method, budget, **foundation.SCIPY_TOLERANCES)
            row[method] = _scipy_record(r, row["seconds"]["median"])
        rows.append(row)
    return rows


def bench_stack(counts, steps: int, repeats: int, budget: float) -> list[dict]:
    runs = {n: [] for n in counts}
    for _ in range(repeats):
        for n in counts:
            runs[n].append(sphere_stack.simulate(n, {}, steps))
    rows = []
    for n in counts:
        row = {"n": n, "steps": steps, "h": sphere_stack.H,
               **_summary(runs[n], _applies(STACK_TARGET, {"n": n, "steps": steps})),
               "standing": all(r["standing"] for r in runs[n]),
               "runs": [_run_record(r) for r in runs[n]]}
        if n in (min(counts), max(counts)):
            for method in SCIPY_METHODS:
                r = sphere_stack.run_ode(n, method, budget, steps)
                row[method] = _scipy_record(r, row["seconds"]["median"])
        rows.append(row)
    return rows


def _validate(counts, repeats: int, elements: int, steps: int) -> tuple:
    counts = tuple(SPHERE_COUNTS if counts is None else counts)
    if not counts or any(int(n) != n or n < 1 for n in counts):
        raise InvalidInputError(f"sphere counts must be positive integers, got {list(counts)}")
    if repeats < 1 or steps < 1:
        raise InvalidInputError(f"repeats and steps must be at least 1, got {repeats}, {steps}")
    if round(np.sqrt(elements)) ** 2 != elements:
        raise InvalidInputError(f"foundation elements must be a square number, got {elements}")
    return tuple(sorted(set(int(n) for n in counts)))


def run(out="results/bench", *, counts=None, seeds: int = 1, repeats: int = REPEATS,
        elements: int = ELEMENTS, foundation_cases=FOUNDATION_CASES,
        steps: int = sphere_stack.STEPS, foundation_budget: float = FOUNDATION_BUDGET_S,
        stack_budget: float = STACK_BUDGET_S) -> dict:
    """Time (a) and (b) with ``repeats`` runs per model, print the table and write
    ``out/bench.json``. ``counts``: sphere counts; ``seeds`` is ignored (deterministic models)."""
    counts = _validate(counts, repeats, elements, steps)
    kwargs = {"counts": list(counts), "repeats": repeats, "elements": elements,
              "foundation_cases": [list(c) for c in foundation_cases], "steps": steps,
              "foundation_budget": foundation_budget, "stack_budget": stack_budget}
    if (child := single_threaded_blas(__name__, out, **kwargs)) is not None:
        return child
    report = {"benchmark": "constraint-solver", **kwargs, "python": platform.python_version(),
              "machine": platform.machine(), "blas_threads": 1,
              "scipy_tolerances": foundation.SCIPY_TOLERANCES}
    report["foundation"] = bench_foundation(elements, foundation_cases, repeats, foundation_budget)
    print(foundation_table(report))
    report["sphere_stack"] = bench_stack(counts, steps, repeats, stack_budget)
    print(stack_table(report))
    return write_report(out, report)


# ------------------------------------------------------------------------------ the table
#: headers of the columns every row shares: ours (seconds per run, ms per step), target, scipy
_OURS = "  wall med    p90   cpu med    p90  step ms med    p90"
_TARGET, _SCIPY = f"{'target':28s}", f"{'BDF':38s}  Radau"


def _ours(row: dict) -> str:
    s, c = row["seconds"], row["cpu_seconds"]
    return (f"  {s['median']:8.3f} {s['p90']:6.3f}  {c['median']:8.3f} {c['p90']:6.3f}  "
            f"{1e3 * row['step_median_s']:11.2f} {1e3 * row['step_p90_s']:6.2f}")


def _verdict(row: dict) -> str:
    if row["target_s"] is None:
        return f"{'n/a':28s}"
    text = (f"<= {row['target_s']:g} s: wall {'PASS' if row['pass_wall'] else 'MISS'}, "
            f"cpu {'PASS' if row['pass_cpu'] else 'MISS'}")
    return f"{text:28s}"


def _scipy(r: dict | None) -> str:
    if r is None:
        return "not run"
    if r["timeout"]:
        return f"timeout > {r['budget_s']:g} s (x > {r['ratio_to_ours']:.3g})"
    if not r["completed"]:
        return "failed"
    return f"{r['seconds']:.2f} s (cpu {r['cpu_seconds']:.2f}) x {r['ratio_to_ours']:.3g}"


def _scipy_pair(row: dict) -> str:
    return f"{_scipy(row.get('BDF')):38s}  {_scipy(row.get('Radau'))}"


def foundation_table(report: dict) -> str:
    rows = report["foundation"]
    lines = [f"(a) cube on the {report['elements']}-element elastic foundation, 1 s at h = "
             f"{foundation.H:g} ({rows[0]['steps']} steps): ours over {report['repeats']} runs; "
             f"scipy once per model, budget {report['foundation_budget']:g} s, x = its wall "
             "time / our median",
             f"E      load {_OURS}  {_TARGET}  {'statuses':12s}  {_SCIPY}"]
    for row in rows:
        counts: dict[str, int] = {}
        for r in row["runs"]:
            for status, k in r["status_counts"].items():
                counts[status] = counts.get(status, 0) + k
        statuses = ", ".join(f"{k} {v}" for k, v in counts.items())
        lines.append(f"{row['youngs_modulus']:.0e}  {row['load']:2.0f} N{_ours(row)}  "
                     f"{_verdict(row)}  {statuses:12s}  {_scipy_pair(row)}")
    return "\n".join(lines)


def stack_table(report: dict) -> str:
    rows = report["sphere_stack"]
    lines = [f"(b) sphere stack, {report['steps']} steps at h = {sphere_stack.H:g} s: ours over "
             f"{report['repeats']} runs; scipy (vertical ODE) once on the smallest and largest "
             f"stack, budget {report['stack_budget']:g} s",
             f"spheres{_OURS}  {_TARGET}  standing  {_SCIPY}"]
    for row in rows:
        lines.append(f"{row['n']:7d}{_ours(row)}  {_verdict(row)}  {str(row['standing']):8s}  "
                     f"{_scipy_pair(row)}")
    lines.append("seconds per run (the steps), wall clock and process CPU, on a shared 2-core "
                 "machine: wall includes waiting for a core, CPU does not")
    return "\n".join(lines)
