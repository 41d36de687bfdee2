"""The sweep runner's Ray executor (the optional ``ray`` extra): on a local Ray instance it gives
the process pool's metrics and traces for the same seeds, reports progress and shuts the instance
down; it joins a cluster named by RAY_ADDRESS (slow); a missing Ray is a one-line CLI error."""
import csv
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from idyn.experiments.cli import main
from idyn.experiments.runner import run_sweep
from idyn.experiments.scenario import terrain_scenario
from idyn.experiments.trace import Trace

#: metrics measured on the wall clock: they differ between any two runs of the same scenario
TIMING = {"realtime_factor", "solve_time_p50_us", "solve_time_p95_us", "solve_time_max_us", "deadline_misses"}


def _scenarios():
    # rough terrain draws its per-cell friction from the seed, so the seed matters to the result
    return [terrain_scenario("rigid-high", controller="pid", duration=0.1, seed=3),
            terrain_scenario("rough", controller="sensed-1", duration=0.1, seed=3)]


def _assert_same_runs(rows_a, rows_b, dir_a, dir_b):
    assert len(rows_a) == len(rows_b)
    for a, b in zip(rows_a, rows_b):
        assert "error" not in a and "error" not in b, (a.get("error"), b.get("error"))
        assert a.keys() == b.keys()
        for key in a.keys() - TIMING:
            same = a[key] == b[key] or (isinstance(a[key], float) and math.isnan(a[key]) and math.isnan(b[key]))
            assert same, (a["controller"], key, a[key], b[key])
    runs = sorted(p.name for p in (dir_a / "runs").iterdir())
    assert runs == sorted(p.name for p in (dir_b / "runs").iterdir()) and len(runs) == len(rows_a)
    for name in runs:
        assert (dir_a / "runs" / name / "metrics.json").is_file()
        ta, tb = Trace.load(dir_a / "runs" / name / "trace.npz"), Trace.load(dir_b / "runs" / name / "trace.npz")
        assert ta.meta == tb.meta and ta.n == tb.n > 0
        for key in ta.arrays.keys() - {"solve_time"}:
            np.testing.assert_array_equal(ta.arrays[key], tb.arrays[key], err_msg=f"{name}: {key}")


def test_local_ray_sweep_equals_process_pool(tmp_path, capsys, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    by_ray = run_sweep(_scenarios(), tmp_path / "ray", jobs=2, executor="ray")
    assert not ray.is_initialized()          # the local instance it started is shut down again
    assert "2/2" in capsys.readouterr().err  # the progress bar reached the end
    by_pool = run_sweep(_scenarios(), tmp_path / "pool", jobs=2, executor="process", progress=False)
    _assert_same_runs(by_ray, by_pool, tmp_path / "ray", tmp_path / "pool")
    assert [r["controller"] for r in by_ray] == ["pid", "sensed-1"]   # rows in the input order


def test_missing_ray_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)   # `import ray` raises ImportError, as without the extra
    argv = ["compare", "--controllers", "pid", "--terrains", "rigid-high", "--duration", "0.01",
            "--executor", "ray", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "pip install 'idyn[ray]'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()   # refused before running anything


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_cli_sweep_joins_the_cluster_at_ray_address(tmp_path):
    """A cluster started with `ray start`, named by RAY_ADDRESS: `idyn compare --executor ray`
    (its own process, as a user runs it) runs there, matches the process pool and leaves the
    cluster running."""
    pytest.importorskip("ray")
    import ray.util

    port = _free_port()
    address = f"{ray.util.get_node_ip_address()}:{port}"
    # Ray reads RAY_AUTH_MODE when it is imported: the head and the CLI get it from the start
    # (token authentication with ~/.ray/auth_token, Ray's default for new clusters). A private
    # RAY_TMPDIR keeps this cluster's files, and its ray_current_cluster, out of /tmp/ray.
    ray_tmp = tempfile.mkdtemp(prefix="idyn-ray-")
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_TMPDIR=ray_tmp)
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"]
    head = subprocess.Popen(ray_cli + ["start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                                       "--include-dashboard=false"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def cluster_up() -> bool:
        return subprocess.run(ray_cli + ["status", f"--address={address}"], env=env,
                              capture_output=True, timeout=60).returncode == 0

    try:
        deadline = time.monotonic() + 90
        while not cluster_up():
            assert time.monotonic() < deadline and head.poll() is None, "ray start did not come up"
            time.sleep(2)
        sweep = subprocess.run([sys.executable, "-m", "idyn.experiments.cli", "compare", "--controllers", "pid,sensed-1",
                                "--terrains", "rigid-high", "--duration", "0.1", "--executor", "ray",
                                "--out", str(tmp_path / "ray")],
                               env=dict(env, RAY_ADDRESS=address), capture_output=True, text=True, timeout=300)
        assert sweep.returncode == 0, sweep.stderr[-2000:]
        assert cluster_up()   # the sweep disconnected; the user's cluster is still there
    finally:
        head.terminate()
        head.wait(timeout=90)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    with open(tmp_path / "ray" / "metrics.csv", newline="") as fh:
        by_ray = list(csv.DictReader(fh))
    scenarios = [terrain_scenario("rigid-high", controller=c, duration=0.1) for c in ("pid", "sensed-1")]
    by_pool = run_sweep(scenarios, tmp_path / "pool", jobs=2, progress=False)
    assert [r["controller"] for r in by_ray] == ["pid", "sensed-1"]
    for row, ref in zip(by_ray, by_pool):
        for key in ("pos_error", "vel_error", "torque_rate", "torque_mean", "distance"):
            assert float(row[key]) == ref[key], (row["controller"], key)
    assert sorted(p.name for p in (tmp_path / "ray" / "runs").iterdir()) == [
        "000_pid_rigid-high", "001_sensed-1_rigid-high"]
