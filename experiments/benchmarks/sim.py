"""``idyn bench sim``: one quadruped step of idyn.sim against PyBullet's stepSimulation.

Both backends run the standing LINKS quadruped on rigid ground under the same joint-space PD
hold, in the same process, taking turns in blocks of steps (load hits all alike), one BLAS thread (the
control-size matrices gain nothing from more, see
:func:`idyn.experiments.benchmarks.controllers.single_threaded_blas`). Timed: one
``testbed.step()`` (PyBullet: ``stepSimulation`` plus setting the torques; idyn.sim: detection,
dynamics, contact model and integration). Printed as median and p90 in microseconds per contact
model, with the ratio to PyBullet (of the medians and of the p90s) and the machine's load average
at the start and end (timings on a shared machine are only comparable as ratios); written to
DIR/bench.json.

Wall and CPU time. Each step's thread CPU time is taken with its wall time, and the ratio of the
CPU p90s is printed too. On a loaded machine the wall p90 counts the steps during which the
process lost the processor (a scheduler slice of milliseconds against a step of about a
hundred microseconds), so with few timed steps one such step can dominate the p90. The CPU p90
is the step's own tail.
Run with ``--repeats 2000`` for stable percentiles.
"""
from __future__ import annotations

import os
import platform
import time

import numpy as np

from .controllers import single_threaded_blas, write_report

#: (label, terrain, mu, contact model) of the idyn.sim runs
CASES = (("ap-lcp mu=0.5", "rigid", 0.5, "ap-lcp"), ("ap-lcp mu=inf (no-slip)", "rigid", np.inf, "ap-lcp"),
         ("noslip", "rigid", 0.5, "noslip"), ("qp mu=0.5", "rigid", 0.5, "qp"),
         ("compliant mu=0.5", "rigid", 0.5, "compliant"), ("penalty (compliant)", "compliant", 0.5, "penalty"))


def _time_steps(testbeds: list, steps: int, warmup: int = 50, block: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Per-step wall and thread CPU times (s), each (len(testbeds), steps), of ``testbed.step()``
    under a PD hold of each testbed's initial pose. The testbeds take turns in blocks of ``block`` consecutive steps:
    load on the shared machine hits every backend alike, and within a block each backend runs
    with warm caches as in a real run (turns of single steps evicted PyBullet's caches and
    inflated its step 1.5-1.8x)."""
    holds = []
    for tb in testbeds:
        model = tb.model
        holds.append((tb, model, model.actuated_v, model.joint_positions(tb.state().q)))
    times = np.empty((len(testbeds), warmup + steps))
    cpu = np.empty_like(times)
    for start in range(0, warmup + steps, block):
        for i, (tb, model, av, q_ref) in enumerate(holds):
            for k in range(start, min(start + block, warmup + steps)):
                s = tb.state()
                tb.apply(5.0 * model.joint_error(s.q, q_ref) - 0.02 * s.v[av])
                tb.contacts()
                c0, t0 = time.thread_time(), time.perf_counter()
                tb.step()
                times[i, k], cpu[i, k] = time.perf_counter() - t0, time.thread_time() - c0
    return times[:, warmup:], cpu[:, warmup:]


def _summary(times: np.ndarray, cpu: np.ndarray) -> dict:
    return {"median_us": float(np.median(times) * 1e6), "p90_us": float(np.percentile(times, 90) * 1e6),
            "cpu_median_us": float(np.median(cpu) * 1e6), "cpu_p90_us": float(np.percentile(cpu, 90) * 1e6),
            "steps": int(times.size)}


def run(out="results/bench", *, counts=None, seeds: int = 1, repeats: int = 2000, robot: str = "links") -> dict:
    """Time ``repeats`` steps per backend (``counts`` and ``seeds`` are ignored)."""
    if (child := single_threaded_blas(__name__, out, repeats=repeats, robot=robot)) is not None:
        return child
    from idyn.robots import pybullet as pb_testbeds
    from idyn.robots import sim as sim_testbeds

    report = {"benchmark": "sim", "robot": robot, "python": platform.python_version(),
              "machine": platform.machine(), "blas_threads": 1, "pybullet": {}, "idyn": {}}
    load_before = os.getloadavg()[0]
    with pb_testbeds.QuadrupedTestbed(robot, "rigid", 0.5) as pb:
        sims = [sim_testbeds.QuadrupedTestbed(robot, terrain, mu, contact_model=model)
                for _, terrain, mu, model in CASES]
        times, cpu = _time_steps([pb] + sims, repeats)
    report["load_average"] = [load_before, os.getloadavg()[0]]
    report["pybullet"] = _summary(times[0], cpu[0])
    base, base90, cpu90 = (report["pybullet"][k] for k in ("median_us", "p90_us", "cpu_p90_us"))
    print(f"{'backend':34s} {'median us':>10s} {'p90 us':>10s} {'x PyBullet':>11s} {'p90 x PB':>9s} "
          f"{'CPU p90 x PB':>13s}")
    print(f"{'pybullet stepSimulation':34s} {base:10.1f} {base90:10.1f} {1.0:11.2f} {1.0:9.2f} {1.0:13.2f}")
    for (label, *_), row, row_cpu in zip(CASES, times[1:], cpu[1:]):
        entry = _summary(row, row_cpu)
        entry["ratio_to_pybullet"] = entry["median_us"] / base
        entry["p90_ratio_to_pybullet"] = entry["p90_us"] / base90
        entry["cpu_p90_ratio_to_pybullet"] = entry["cpu_p90_us"] / cpu90
        report["idyn"][label] = entry
        print(f"{'idyn.sim ' + label:34s} {entry['median_us']:10.1f} {entry['p90_us']:10.1f} "
              f"{entry['ratio_to_pybullet']:11.2f} {entry['p90_ratio_to_pybullet']:9.2f} "
              f"{entry['cpu_p90_ratio_to_pybullet']:13.2f}")
    print(f"load average (1 min) {load_before:.2f} at the start, {report['load_average'][1]:.2f} at the end")
    return write_report(out, report)
