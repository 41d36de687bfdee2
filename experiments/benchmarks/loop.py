"""``idyn bench-loop``: where the time of a closed-loop step goes (issue 5's profile).

Runs one scenario (default: LINKS trotting the waypoint course under ``qp-coulomb`` on rigid
high-friction ground in PyBullet, as ``idyn demo``) ``repeats`` times and reports, per phase of
the step (:data:`idyn.experiments.loop.PHASES`: testbed state and contact query, planner, contact
schedule, controller, balance, simulator, sensed forces, the loop's bookkeeping), the median,
p99 and mean time and its share of the run, plus the whole step and the real-time factor.

Times are CPU time of the process by default (``clock="cpu"``, ``time.process_time``): on a
shared machine other processes' load changes wall time by tens of percent and CPU time much
less. Each reading costs ~0.8 us, so every phase carries about that much clock overhead;
``clock="wall"`` (``time.perf_counter``, ~0.1 us) gives the wall-clock view. The real-time
factor is reported both ways: simulated seconds per wall second and per CPU second of the loop.
"""
from __future__ import annotations

import os
import platform
import time

import numpy as np

from idyn import controllers
from idyn import robots
from idyn.experiments.loop import PHASES, dry_run, run_loop
from idyn.experiments.runner import WARM_UP, _fallen, build_controller, build_reference, build_testbed
from idyn.experiments.scenario import Scenario, terrain_scenario

from .controllers import single_threaded_blas, write_report

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_loop(scenario: Scenario, clock: str = "cpu") -> dict:
    """One run of the quadruped ``scenario`` with its phases timed by ``clock``, built and run
    as :func:`idyn.experiments.runner.run_scenario` does (fall test included); per-phase statistics
    (us). A run that falls ends there."""
    testbed = build_testbed(scenario)
    try:
        robot = robots.quadruped(scenario.quadruped)
        reference = build_reference(scenario, robot)
        controller = build_controller(scenario, testbed.model)
        dry_run(testbed, reference, controller, min(WARM_UP, scenario.duration))
        cpu = time.process_time()
        result = run_loop(testbed, testbed.model, reference, controller, scenario.duration,
                          stop=_fallen(robot.nominal_base_height), clock=CLOCKS[clock])
        cpu = time.process_time() - cpu
    finally:
        testbed.close()
    times = result.phase_times * 1e6
    step = times.sum(axis=1)
    simulated = result.steps * scenario.dt
    phases = {name: {"median_us": float(np.median(col)), "p99_us": float(np.percentile(col, 99)),
                     "mean_us": float(np.mean(col)), "share": float(col.sum() / step.sum())}
              for name, col in zip(PHASES, times.T)}
    return {"steps": result.steps, "phases": phases,
            "step": {"median_us": float(np.median(step)), "p99_us": float(np.percentile(step, 99)),
                     "mean_us": float(np.mean(step))},
            "step_over_simulator": float(np.median(step) / phases["simulator"]["median_us"]),
            "kernels_compiled_in_loop": result.info["kernels_compiled_in_loop"],
            "realtime_factor_wall": simulated / result.wall_time,
            "realtime_factor_cpu": simulated / cpu,
            "load_average": list(os.getloadavg())}


def run(out="results/bench-loop", *, controller: str = "qp-coulomb", terrain: str = "rigid-high",
        duration: float = 5.0, repeats: int = 1, clock: str = "cpu") -> dict:
    """Time ``repeats`` runs of LINKS on the named ``terrain`` (``experiments.scenario.TERRAINS``);
    print the per-phase table; write DIR/bench.json."""
    options = dict(controller=controller, terrain=terrain, duration=duration, repeats=repeats,
                   clock=clock)
    if (child := single_threaded_blas(__name__, out, **options)) is not None:
        return child
    scenario = terrain_scenario(terrain, controller=controller, duration=duration)
    runs = [time_loop(scenario, clock) for _ in range(repeats)]
    report = {"benchmark": "loop", "scenario": scenario.to_dict(), "clock": clock,
              "python": platform.python_version(), "machine": platform.machine(),
              "cpu_count": os.cpu_count(), "blas_threads": 1, "runs": runs}
    for i, r in enumerate(runs):
        print(f"\nrun {i + 1}: {r['steps']} steps of {controller} on {terrain}, "
              f"{clock} clock, load average {r['load_average'][0]:.2f}")
        print(f"  {'phase':12s} {'median us':>10s} {'p99 us':>10s} {'mean us':>10s} {'share':>7s}")
        for name, p in r["phases"].items():
            print(f"  {name:12s} {p['median_us']:10.1f} {p['p99_us']:10.1f} {p['mean_us']:10.1f} "
                  f"{100 * p['share']:6.1f}%")
        s = r["step"]
        print(f"  {'step':12s} {s['median_us']:10.1f} {s['p99_us']:10.1f} {s['mean_us']:10.1f}")
        print(f"  whole step / simulator phase (torque input and one step): {r['step_over_simulator']:.2f}x "
              f"(medians); kernels first met in the loop: {r['kernels_compiled_in_loop']}")
        print(f"  real-time factor {r['realtime_factor_wall']:.2f} (wall), "
              f"{r['realtime_factor_cpu']:.2f} (CPU)")
    return write_report(out, report)
