"""The local process pool of run_sweep: a run whose worker process dies becomes an error row and
the other runs of the sweep still finish, in order."""
import multiprocessing
import os

import pytest

from idyn.experiments import runner
from idyn.experiments.scenario import Scenario


def _fake_run_one(item):
    scenario, _ = item
    if scenario.controller == "pid" and scenario.seed == 1:
        os._exit(3)                  # what a segfault in a native library looks like to the pool
    return {"controller": scenario.controller, "seed": scenario.seed, "fell": False}


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                    reason="the patched worker function reaches the workers only by fork")
def test_a_dying_worker_is_an_error_row_not_a_lost_sweep(monkeypatch):
    monkeypatch.setattr(runner, "_run_one", _fake_run_one)
    scenarios = [Scenario(controller=c, seed=s, duration=0.01) for s in (0, 1, 2)
                 for c in ("qp-coulomb", "pid")]
    rows = runner.run_sweep(scenarios, jobs=2, progress=False)
    assert [(r["controller"], r["seed"]) for r in rows] == [(s.controller, s.seed) for s in scenarios]
    dead = [r for r in rows if "error" in r]
    assert len(dead) == 1 and dead[0]["controller"] == "pid" and dead[0]["seed"] == 1
    assert "worker process died" in dead[0]["error"]
