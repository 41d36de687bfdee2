"""``idyn bench sim``: one quadruped step of idyn.sim against PyBullet's stepSimulation.

Both backends run the standing LINKS quadruped on rigid ground under the same joint-space PD
hold, in the same process, one BLAS thread (the control-size matrices gain nothing from more,
see :func:`experiments.benchmarks.controllers.single_threaded_blas`). Timed: one
``testbed.step()`` (PyBullet: ``stepSimulation`` plus setting the torques; idyn.sim: detection,
dynamics, contact model and integration). Printed as median and p90 in microseconds per contact
model, with the ratio to PyBullet; written to DIR/bench.json.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

from .controllers import single_threaded_blas

#: (label, terrain, mu, contact model) of the idyn.sim runs
CASES = (("ap-lcp mu=0.5", "rigid", 0.5, "ap-lcp"), ("ap-lcp mu=inf (no-slip)", "rigid", np.inf, "ap-lcp"),
         ("noslip", "rigid", 0.5, "noslip"), ("qp mu=0.5", "rigid", 0.5, "qp"),
         ("compliant mu=0.5", "rigid", 0.5, "compliant"), ("penalty (compliant)", "compliant", 0.5, "penalty"))


def _time_steps(testbed, steps: int, warmup: int = 50) -> np.ndarray:
    """Per-step wall times (s) of ``testbed.step()`` under a PD hold of the initial pose."""
    model = testbed.model
    q_ref = testbed.state().q[model.actuated_q].copy()
    times = np.empty(steps)
    for k in range(warmup + steps):
        s = testbed.state()
        testbed.apply(5.0 * (q_ref - s.q[model.actuated_q]) - 0.02 * s.v[model.actuated_v])
        testbed.contacts()
        t0 = time.perf_counter()
        testbed.step()
        if k >= warmup:
            times[k - warmup] = time.perf_counter() - t0
    return times


def _summary(times: np.ndarray) -> dict:
    return {"median_us": float(np.median(times) * 1e6), "p90_us": float(np.percentile(times, 90) * 1e6),
            "steps": int(times.size)}


def run(out="results/bench", *, counts=None, seeds: int = 1, repeats: int = 2000, robot: str = "links") -> dict:
    """Time ``repeats`` steps per backend (``counts`` and ``seeds`` are ignored)."""
    if single_threaded_blas(__name__, out, repeats=repeats, robot=robot):
        return json.loads((Path(out) / "bench.json").read_text())
    from robots import pybullet as pb_testbeds
    from robots import sim as sim_testbeds

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"benchmark": "sim", "robot": robot, "python": platform.python_version(),
              "machine": platform.machine(), "blas_threads": 1, "pybullet": {}, "idyn": {}}
    with pb_testbeds.QuadrupedTestbed(robot, "rigid", 0.5) as tb:
        report["pybullet"] = _summary(_time_steps(tb, repeats))
    base = report["pybullet"]["median_us"]
    print(f"{'backend':34s} {'median us':>10s} {'p90 us':>10s} {'x PyBullet':>11s}")
    print(f"{'pybullet stepSimulation':34s} {base:10.1f} {report['pybullet']['p90_us']:10.1f} {1.0:11.2f}")
    for label, terrain, mu, model in CASES:
        tb = sim_testbeds.QuadrupedTestbed(robot, terrain, mu, contact_model=model)
        entry = _summary(_time_steps(tb, repeats))
        entry["ratio_to_pybullet"] = entry["median_us"] / base
        report["idyn"][label] = entry
        print(f"{'idyn.sim ' + label:34s} {entry['median_us']:10.1f} {entry['p90_us']:10.1f} "
              f"{entry['ratio_to_pybullet']:11.2f}")
    (out / "bench.json").write_text(json.dumps(report, indent=2))
    return report
