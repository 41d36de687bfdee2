"""The LCP benchmark suite behind ``idyn bench lcp``.

For every ``n`` in :data:`CONTACT_COUNTS` it builds realistic problems
(:mod:`idyn.experiments.benchmarks.lcp_problems`: LINKS and a1, standing and mid-trot, seeded
jitter of duplicated foot contacts) and times each solver on them:

* ``ppm_contact/noslip`` - Algorithm 2 on (N, M, f*, J), including the O(m^2 n) factor set-up;
* ``ppm/noslip``, ``lemke/noslip`` - the dense no-slip LCP ``Q = C^T A^-1 C`` (eq. 44), whose
  construction is *not* timed;
* ``lemke/friction``, ``lemke_regularized/friction`` - the Anitescu-Potra LCP (eq. 64), 6 n
  variables.

Each row reports the median and p90 wall time in microseconds over all problems and repeats,
the median pivot count and the fraction of problems solved (status SOLVED *and* the residual
check of :func:`idyn.lcp.lcp_residuals` on the dense problem).  Run with one BLAS thread, as a
control loop runs (:func:`idyn.experiments.benchmarks.controllers.single_threaded_blas`).
"""
from __future__ import annotations

import platform
import time

import numpy as np

from idyn.lcp import lcp_residuals, lemke, lemke_regularized, ppm, ppm_contact

from .controllers import single_threaded_blas, write_report
from .lcp_problems import build_problem

CONTACT_COUNTS = (4, 8, 16, 32, 48, 64)
ROBOTS = ("links", "a1")
STATES = ("standing", "trot")


def _solvers(problem):
    """(name, dense (M, q) for the residual check, callable) for one problem."""
    Qn, rn = problem.noslip_lcp
    Qf, rf = problem.friction_lcp
    args = problem.noslip_algorithm2()
    return [
        ("ppm_contact/noslip", (Qn, rn), lambda: ppm_contact(**args)),
        ("ppm/noslip", (Qn, rn), lambda: ppm(Qn, rn)),
        ("lemke/noslip", (Qn, rn), lambda: lemke(Qn, rn)),
        ("lemke/friction", (Qf, rf), lambda: lemke(Qf, rf)),
        ("lemke_regularized/friction", (Qf, rf), lambda: lemke_regularized(Qf, rf)),
    ]


def run(out="results/bench", *, counts=CONTACT_COUNTS, seeds: int = 2, repeats: int = 15,
        budget_s: float = 0.3, mu: float = 0.5) -> dict:
    """Run the suite; return the results dict, also written to ``out/bench.json``.

    Each (solver, problem) pair is timed ``repeats`` times or until ``budget_s`` seconds.
    """
    if (child := single_threaded_blas(__name__, out, counts=list(counts), seeds=seeds, repeats=repeats,
                                      budget_s=budget_s, mu=mu)) is not None:
        return child
    rows = []
    for n in counts:
        problems = [build_problem(robot, state, n, mu=mu, seed=seed)
                    for robot in ROBOTS for state in STATES for seed in range(seeds)]
        stats: dict[str, dict] = {}
        for problem in problems:
            for name, (M, q), solve in _solvers(problem):
                entry = stats.setdefault(name, {"times": [], "pivots": [], "solved": 0,
                                                "failures": []})
                start = time.perf_counter()
                for k in range(repeats):
                    t0 = time.perf_counter()
                    res = solve()
                    entry["times"].append(time.perf_counter() - t0)
                    if time.perf_counter() - start > budget_s:
                        break
                entry["pivots"].append(res.pivots)
                if res.solved and lcp_residuals(M, q, res.z).ok():
                    entry["solved"] += 1
                else:
                    entry["failures"].append(f"{problem.robot}/{problem.state}: {res.status.value}")
        for name, entry in stats.items():
            t = np.array(entry["times"]) * 1e6
            row = {"solver": name, "contacts": n, "problems": len(problems),
                   "median_us": float(np.median(t)), "p90_us": float(np.percentile(t, 90)),
                   "pivots_median": float(np.median(entry["pivots"])),
                   "pivots_max": int(np.max(entry["pivots"])),
                   "solved_fraction": entry["solved"] / len(problems),
                   "failures": entry["failures"]}
            rows.append(row)
            print(f"{name:28s} n={n:3d}  median {row['median_us']:9.1f} us  p90 "
                  f"{row['p90_us']:9.1f} us  pivots {row['pivots_median']:6.1f}  solved "
                  f"{row['solved_fraction']:.2f}")
    result = {"suite": "lcp", "mu": mu, "seeds": seeds, "repeats": repeats,
              "blas_threads": 1, "machine": platform.platform(),
              "processor": platform.processor(), "rows": rows}
    return write_report(out, result)
