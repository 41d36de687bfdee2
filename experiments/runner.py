"""Run scenarios: one closed-loop run, or a sweep in parallel (local processes or Ray).

:func:`run_scenario` builds the testbed (PyBullet or idyn.sim), the reference (trot planner and
waypoints, or the arm sinusoid), the controller, runs :func:`idyn.experiments.loop.run_loop` and
returns the metrics of :mod:`idyn.experiments.metrics`; with ``out_dir`` it also writes
``metrics.json``, the trace (``trace.npz``) and, with ``plots=True``, the run's figures.

:func:`run_sweep` executes a list of scenarios with a process pool (``jobs``) or on Ray
(``executor="ray"``, the optional ``ray`` extra: the cluster at ``RAY_ADDRESS`` or a local
instance) and returns one row per run in the input order. Every run is determined by its
scenario, so the same seed gives the same metrics (and trace) on either executor.
"""
from __future__ import annotations

import json
import logging
import math
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from idyn import controllers
from idyn import robots
from idyn.errors import InvalidInputError
from idyn.jit import preparing

from .loop import dry_run, run_loop
from .presets import controller_options, reference_options
from .metrics import ERROR_UNITS, fallen, grasp_lost_index, summarize
from .references import ArmReference, QuadrupedReference
from .scenario import Scenario


def _robot(scenario: Scenario):
    if scenario.robot == "quadruped":
        return robots.quadruped(scenario.quadruped)
    return robots.manipulator()


def build_testbed(scenario: Scenario):
    """The simulated robot of a scenario, on the requested backend."""
    mu = scenario.mu            # the testbeds simulate mu = inf as no slip (robots.terrain.simulated_mu)
    if scenario.backend == "pybullet":
        from idyn.robots import pybullet as backend
    elif scenario.backend == "mujoco":
        from idyn.robots import mujoco as backend
    else:
        from idyn.robots import sim as backend
    extra = {} if scenario.contact_model is None else {"contact_model": scenario.contact_model}
    if scenario.contact_model_options:
        from idyn.sim import make as make_contact_model
        extra["contact_model"] = make_contact_model(scenario.contact_model, **scenario.contact_model_options)
    if scenario.robot == "quadruped":
        return backend.QuadrupedTestbed(scenario.quadruped, terrain=scenario.terrain,
                                        mu=math.inf if math.isnan(mu) else mu,
                                        seed=scenario.seed, dt=scenario.dt, **extra)
    if not hasattr(backend, "ManipulatorTestbed"):
        raise InvalidInputError(f"the {scenario.backend} backend has no manipulator testbed")
    return backend.ManipulatorTestbed(mu_grasp=mu, dt=scenario.dt, **extra)


def build_reference(scenario: Scenario, robot):
    """The scenario's reference, with its preset's options (:func:`idyn.experiments.presets.reference_options`)
    and the scenario's friction limit (:attr:`Scenario.planning_friction_limit`, which an explicit
    ``friction_limit`` sets over the preset's)."""
    if scenario.robot == "quadruped":
        options = {**reference_options(scenario.preset), **scenario.reference_options,
                   "friction_limit": scenario.planning_friction_limit}
        return QuadrupedReference(robot, **options)
    return ArmReference(robot)


def build_controller(scenario: Scenario, model):
    """``controllers.make`` for the scenario: its preset's options
    (:func:`idyn.experiments.presets.controller_options`), overridden by ``controller_options``."""
    options = {**controller_options(scenario.preset, scenario.controller), **scenario.controller_options}
    return controllers.make(scenario.controller, model, dt=scenario.dt, **options)


def _fallen(nominal_height: float):
    """Stop a run at the first fallen state (the criterion of :func:`idyn.experiments.metrics.fallen`)."""
    def stop(state) -> bool:
        return fallen(state.q, nominal_height)
    return stop


def _box_drop_index(trace, manipulator) -> int | None:
    """First step at which the manipulator no longer holds the box (:func:`grasp_lost_index`):
    the box free-flyer's position in the trace against the hand's grasp pose at the arm's
    configuration of the same step."""
    n_arm = manipulator.model.nq          # the arm's coordinates come first, then the box's
    held = np.array([manipulator.box_placement(q).translation for q in trace.q[:, :n_arm]])
    return grasp_lost_index(trace.q[:, n_arm:n_arm + 3], held.reshape(-1, 3), manipulator.box_side)


def waypoints_reached(com_xy: np.ndarray, waypoints, radius: float = 0.025) -> int:
    """How many ``waypoints`` the centre of mass passed within ``radius`` of, in order."""
    k = 0
    for p in com_xy:
        if k < len(waypoints) and np.hypot(*(p - waypoints[k])) <= radius:
            k += 1
    return k


#: seconds of each scenario run untimed before its loop (:func:`idyn.experiments.loop.dry_run`): the
#: stance, swing and touchdown of a gait cycle meet every kernel of the run
WARM_UP = 0.5


def run_scenario(scenario: Scenario, out_dir=None, *, progress: bool = False, plots: bool = False) -> dict:
    """Run one scenario; return its metrics (and write them, the trace and plots to ``out_dir``)."""
    robot = _robot(scenario)
    with preparing(f"{scenario.controller} on {scenario.terrain_label}") as prep:
        testbed = build_testbed(scenario)
        model = testbed.model   # the model of the testbed's state (the manipulator's includes the box)
        reference = build_reference(scenario, robot)
        controller = build_controller(scenario, model)
        dry_run(testbed, reference, controller, min(WARM_UP, scenario.duration),
                limit=True if scenario.torque_limits else None)
    if progress:
        print(prep.line(), file=sys.stderr, flush=True)
    nominal = robot.nominal_base_height if scenario.robot == "quadruped" else None
    steps = int(round(scenario.duration / scenario.dt))
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=steps, unit="step", desc=f"{scenario.controller} {scenario.terrain_label}",
                   mininterval=0.5, leave=False)
    try:
        result = run_loop(testbed, model, reference, controller, scenario.duration,
                          limit=True if scenario.torque_limits else None,
                          meta={"scenario": scenario.to_dict()},
                          stop=_fallen(nominal) if nominal else None,
                          progress=(lambda k, n: bar.update(1)) if bar else None)
    finally:
        if bar is not None:
            bar.close()
        close = getattr(testbed, "close", None)
        if close is not None:
            close()
    trace = result.trace
    metrics = summarize(trace, dt=scenario.dt, actuated_q=model.actuated_q,
                        actuated_v=model.actuated_v, nominal_height=nominal,
                        wall_time=result.wall_time, model=model)
    if scenario.robot == "quadruped":
        course = np.array(reference.follower.waypoints)[1:]   # the first is the start point
        metrics["waypoints_reached"] = waypoints_reached(trace.com[:, :2], course)
        metrics["distance"] = float(np.sum(np.linalg.norm(np.diff(trace.com[:, :2], axis=0), axis=1)))
    else:
        metrics["waypoints_reached"] = 0
        drop = _box_drop_index(trace, robot)
        metrics["box_dropped"] = drop is not None
        metrics["box_drop_time"] = None if drop is None else float(trace.t[drop])
    if not controller.predicts_contact_forces:   # pid and sensed-force ID predict nothing
        metrics["force_error_abs"] = metrics["force_error_rel"] = float("nan")
    metrics["steps_torque_limited"] = result.info.get("steps_torque_limited", 0)
    metrics["kernels_compiled_in_loop"] = result.info["kernels_compiled_in_loop"]
    metrics.update({"controller": scenario.controller, "terrain": scenario.terrain_label,
                    "mu": scenario.mu, "robot": scenario.robot, "seed": scenario.seed,
                    "backend": scenario.backend, "preset": scenario.preset, "units": dict(ERROR_UNITS)})
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        trace.save(out / "trace.npz")
        (out / "metrics.json").write_text(json.dumps(jsonable(metrics), indent=1))
        if plots:
            from .plots import plot_run
            metrics["figures"] = [str(p) for p in plot_run(trace, scenario, out, model)]
    return metrics


def jsonable(d: dict) -> dict:
    """``d`` with numpy scalars as Python numbers, NaN as None and infinities as "inf" (JSON)."""
    def conv(x):
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (np.floating, float)):
            x = float(x)
            return None if math.isnan(x) else ("inf" if math.isinf(x) else x)
        if isinstance(x, np.integer):
            return int(x)
        return x
    return conv(d)


def _error_row(scenario: Scenario, exc: BaseException) -> dict:
    """The row of a run that crashed: a result to report, not a lost sweep."""
    return {"controller": scenario.controller, "terrain": scenario.terrain_label,
            "mu": scenario.mu, "robot": scenario.robot, "seed": scenario.seed,
            "error": f"{type(exc).__name__}: {exc}"}


def _run_one(args) -> dict:
    scenario, out_dir = args
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        return run_scenario(scenario, out_dir)
    except Exception as exc:
        return _error_row(scenario, exc)


def run_sweep(scenarios: list[Scenario], out_dir=None, *, jobs: int = 1, executor: str = "process",
              progress: bool = True, run_dirs=None) -> list[dict]:
    """Run scenarios in parallel; rows come back in the order of ``scenarios``.

    ``executor="process"`` runs ``jobs`` local processes. ``executor="ray"`` runs one task per
    scenario on the Ray cluster at ``RAY_ADDRESS``, on the caller's own ``ray.init()``, or else on
    a local Ray instance with ``jobs`` CPUs that is shut down afterwards; every run's files come
    back to ``out_dir`` on this machine, wherever the run executed.

    ``run_dirs`` (one directory per scenario) replaces the numbered ``out_dir/runs/NNN_...``
    directories, e.g. for a cache keyed by scenario (``idyn reproduce``).
    """
    if jobs < 1:
        raise InvalidInputError(f"jobs must be >= 1, got {jobs}")
    if run_dirs is not None:
        dirs = [Path(d) for d in run_dirs]
        if len(dirs) != len(scenarios):
            raise InvalidInputError(f"run_dirs has {len(dirs)} entries for {len(scenarios)} scenarios")
    else:
        dirs = [None if out_dir is None else Path(out_dir) / "runs" / f"{i:03d}_{s.controller}_{s.terrain_label}"
                for i, s in enumerate(scenarios)]
    work = list(zip(scenarios, dirs))
    if executor == "ray":
        return _run_ray(work, jobs, progress)
    if executor != "process":
        raise InvalidInputError(f"executor must be 'process' or 'ray', got {executor!r}")
    from tqdm import tqdm
    bar = tqdm(total=len(work), unit="run", disable=not progress)
    rows: list[dict] = []
    if jobs == 1:
        for item in work:
            rows.append(_run_one(item))
            bar.update(1)
    else:
        rows = _run_pool(work, jobs, bar)
    bar.close()
    return rows


def _run_pool(work, jobs: int, bar) -> list[dict]:
    """``_run_one`` over ``work`` on ``jobs`` local processes, rows in order.

    A worker that dies (a segfault in a native library, the OOM killer) breaks the whole pool
    and every run still pending in it; those runs are retried one by one, each in a pool of its
    own, so the one that kills its worker becomes an error row and the others still run.
    """
    rows: list[dict | None] = [None] * len(work)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_run_one, item): i for i, item in enumerate(work)}
        for future in as_completed(futures):
            try:
                rows[futures[future]] = future.result()
                bar.update(1)
            except BrokenProcessPool:
                pass
    for i, row in enumerate(rows):
        if row is None:
            rows[i] = _run_isolated(work[i])
            bar.update(1)
    return rows


def _run_isolated(item) -> dict:
    with ProcessPoolExecutor(max_workers=1) as pool:
        try:
            return pool.submit(_run_one, item).result()
        except BrokenProcessPool as exc:
            return _error_row(item[0], RuntimeError(f"the worker process died during the run ({exc})"))


def _run_returning_files(scenario: Scenario, keep_files: bool) -> tuple[dict, dict[str, bytes]]:
    """One run on a Ray worker: its row and the files it wrote (the worker's disk may not be ours)."""
    if not keep_files:
        return _run_one((scenario, None)), {}
    with tempfile.TemporaryDirectory(prefix="idyn-run-") as tmp:
        row = _run_one((scenario, tmp))
        return row, {f.name: f.read_bytes() for f in Path(tmp).iterdir()}


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise InvalidInputError(f"the ray executor needs the optional Ray extra: pip install 'idyn[ray]' "
                                f"({exc})") from None
    return ray


def _connect_ray(ray, jobs: int) -> bool:
    """Join the cluster at RAY_ADDRESS (``auto``: the one ``ray start`` last started on this
    machine) or else start a new local instance of ``jobs`` CPUs without a dashboard; return
    whether this call connected (and so must shut down), False if the caller had already called
    ``ray.init``."""
    if ray.is_initialized():
        return False
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    address = os.environ.get("RAY_ADDRESS")
    try:
        if address:
            ray.init(address=address, **quiet)
        else:   # "local": plain ray.init() would follow /tmp/ray/ray_current_cluster, stale or not
            ray.init(address="local", num_cpus=jobs, include_dashboard=False, **quiet)
    except ConnectionError as exc:
        raise InvalidInputError(f"cannot reach the Ray cluster at RAY_ADDRESS={address!r}: {exc} (check the "
                                "address, and RAY_AUTH_MODE=token if the cluster uses token authentication)"
                                ) from None
    return True


def _run_ray(work, jobs: int, progress: bool) -> list[dict]:
    """:func:`run_sweep` on Ray: one single-CPU task per scenario, rows and files collected as
    tasks finish (so the object store holds only unfinished runs' results)."""
    ray = _import_ray()
    connected_here = _connect_ray(ray, jobs)
    from tqdm import tqdm
    # num_cpus=1: Ray starts such workers with OMP_NUM_THREADS=1, so their BLAS is single-threaded
    # as the CLI makes it here (a runtime_env for it would cost seconds of worker start-up)
    task = ray.remote(num_cpus=1)(_run_returning_files)
    index: dict = {}
    rows: list[dict | None] = [None] * len(work)
    try:
        index = {task.remote(scenario, out is not None): i for i, (scenario, out) in enumerate(work)}
        with tqdm(total=len(work), unit="run", disable=not progress) as bar:
            while index:
                done, _ = ray.wait(list(index), num_returns=1)
                i = index.pop(done[0])
                scenario, out = work[i]
                try:
                    rows[i], files = ray.get(done[0])
                except ray.exceptions.RayError as exc:   # the worker died, e.g. a simulator crash
                    rows[i], files = _error_row(scenario, exc), {}
                if out is not None and files:
                    out.mkdir(parents=True, exist_ok=True)
                    for name, data in files.items():
                        (out / name).write_bytes(data)
                bar.update(1)
    finally:
        for ref in index:   # interrupted: do not leave runs occupying the cluster
            ray.cancel(ref, force=True)
        if connected_here:
            ray.shutdown()
    return rows
