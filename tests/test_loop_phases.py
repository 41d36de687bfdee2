"""The closed loop's per-phase timing (experiments.loop.PHASES) and ``idyn bench-loop``."""
import json
import math
import time

import numpy as np
import pytest

from idyn import controllers
from idyn import robots
from idyn.experiments.cli import main
from idyn.experiments.loop import PHASES, run_loop
from idyn.experiments.references import QuadrupedReference

pb = pytest.importorskip("idyn.robots.pybullet")


def test_every_step_is_timed_by_phase_and_the_phases_add_up_to_the_loop():
    quad = robots.quadruped("links")
    with pb.QuadrupedTestbed("links", "rigid", mu=math.inf) as tb:
        res = run_loop(tb, quad.model, QuadrupedReference(quad), controllers.make("pid", quad.model),
                       0.02, clock=time.perf_counter)
    assert res.phase_times.shape == (20, len(PHASES))
    assert np.all(res.phase_times >= 0) and np.all(res.phase_times.sum(axis=0) > 0)
    # the phases cover the whole step: their sum is the loop's wall time up to the clock reads
    assert res.phase_times.sum() == pytest.approx(res.wall_time, rel=0.05)


def test_bench_loop_prints_and_writes_the_profile(tmp_path, capsys):
    assert main(["bench-loop", "--controller", "pid", "--duration", "0.02", "--clock", "wall",
                 "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench.json").read_text())
    run = report["runs"][0]
    assert run["steps"] == 20 and list(run["phases"]) == list(PHASES)
    assert run["realtime_factor_wall"] > 0 and run["step"]["median_us"] > 0
    assert "planner" in capsys.readouterr().out


def test_bench_loop_rejects_an_unknown_terrain(tmp_path):
    assert main(["bench-loop", "--terrain", "ice", "--out", str(tmp_path)]) == 2
