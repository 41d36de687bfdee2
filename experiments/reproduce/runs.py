"""The runs behind ``idyn reproduce``: scales, the sweeps, and a cache keyed by scenario.

Every closed-loop run is stored under ``OUT/runs/<scenario hash>/`` (``metrics.json`` and
``trace.npz``, as :func:`idyn.experiments.runner.run_scenario` writes them). Sections that need
the same scenario share its run, and a rerun of the command into the same directory runs only
what is missing. A run that raised (e.g. the simulation diverged) is a result too, stored as
``error.json``; only a worker process that died is not stored, so a rerun retries it. The hash
covers every field of the scenario, not the code: delete ``OUT/runs`` after changing idyn.
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path


from ..runner import jsonable, run_sweep
from ..presets import controller_options, reference_options
from ..scenario import PAPER_CONTROLLERS, TERRAINS, Scenario, manipulator_sweep, paper_sweep

#: the quadruped terrains of Tables 3-6 (rough is Fig. 16's)
PLANAR = tuple(t for t in TERRAINS if t != "rough")
#: Fig. 16: the paper's controller and its three references on the rough heightmap
ROUGH_CONTROLLERS = ("qp-coulomb", "pid", "sensed-1", "sensed-2")
#: the manipulator rows of Table 6 (its four ID controllers) and pid, the chatter reference
MANIPULATOR_CONTROLLERS = ("qp-coulomb", "qp-noslip", "lcp-coulomb", "lcp-noslip", "pid")

#: what each scale runs: virtual seconds per run, controllers, terrains, Fig. 19's bench
SCALES = {
    "smoke": {"duration": 0.2, "controllers": ("qp-coulomb", "pid"), "terrains": ("rigid-low", "rigid-high"),
              "rough_duration": 0.2, "rough_controllers": ("qp-coulomb", "pid"),
              "manipulator_duration": 0.2, "manipulator_controllers": ("qp-coulomb", "pid"),
              "mus": (100.0,), "bench": {"counts": (4,), "seeds": 1, "repeats": 1}},
    "quick": {"duration": 5.0, "controllers": PAPER_CONTROLLERS, "terrains": PLANAR,
              "rough_duration": 5.0, "rough_controllers": ROUGH_CONTROLLERS,
              "manipulator_duration": 3.0, "manipulator_controllers": MANIPULATOR_CONTROLLERS,
              "mus": (100.0, 1.0), "bench": {"counts": (4, 8, 16, 24, 32, 40, 48), "seeds": 1, "repeats": 5}},
    "full": {"duration": 30.0, "controllers": PAPER_CONTROLLERS, "terrains": PLANAR,
             "rough_duration": 30.0, "rough_controllers": ROUGH_CONTROLLERS,
             "manipulator_duration": 3.0, "manipulator_controllers": MANIPULATOR_CONTROLLERS,
             "mus": (100.0, 1.0), "bench": {"counts": None, "seeds": 2, "repeats": 15}},
}


def scale_name(ctx) -> str:
    return "smoke" if ctx.smoke else "quick" if ctx.quick else "full"


def scale(ctx) -> dict:
    """The entry of :data:`SCALES` for ``ctx``."""
    return SCALES[scale_name(ctx)]


def backends(ctx) -> tuple[str, ...]:
    """The reference backend, then the cross-check backends (one report column each)."""
    return (ctx.backend,) + tuple(b for b in ctx.cross_checks if b != ctx.backend)


def _sweep_kw(ctx) -> dict:
    """The keywords that give ``paper_sweep``/``manipulator_sweep`` the context's preset."""
    return {"preset": ctx.preset}


def scenario_key(scenario: Scenario) -> str:
    """A hash of every field of ``scenario`` and of the options its preset resolves to (so a
    preset whose options change does not reuse old runs): the name of its run's cache directory."""
    resolved = {"controller": controller_options(scenario.preset, scenario.controller),
                "reference": reference_options(scenario.preset)}
    text = json.dumps([scenario.to_dict(), resolved], sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def run_dir(ctx, scenario: Scenario) -> Path:
    return Path(ctx.out) / "runs" / scenario_key(scenario)


def load_row(path: Path) -> dict:
    """A cached run's metrics, with JSON's None and "inf" back as NaN and infinity (the times of
    a fall or a drop stay None: there was none)."""
    row = json.loads((Path(path) / "metrics.json").read_text())
    for key, value in row.items():
        if value is None and key not in ("fall_time", "box_drop_time"):
            row[key] = math.nan
        elif value == "inf":
            row[key] = math.inf
    return row


def run_cached(ctx, scenarios: list[Scenario]) -> list[dict]:
    """One row per scenario (in order), from the cache or run now (``ctx.jobs``, ``ctx.executor``).
    Each row carries its ``run_dir`` (None for a run that raised) and its ``scenario``."""
    dirs = [run_dir(ctx, s) for s in scenarios]
    missing = [i for i, d in enumerate(dirs)
               if not (d / "metrics.json").is_file() and not (d / "error.json").is_file()]
    fresh = {}
    if missing:
        rows = run_sweep([scenarios[i] for i in missing], jobs=ctx.jobs, executor=ctx.executor,
                         progress=False, run_dirs=[dirs[i] for i in missing])
        fresh = dict(zip(missing, rows))
    for i, row in fresh.items():
        if "error" in row and "worker process died" not in row["error"]:
            dirs[i].mkdir(parents=True, exist_ok=True)
            (dirs[i] / "error.json").write_text(json.dumps(jsonable(row), indent=1))
    out = []
    for i, (s, d) in enumerate(zip(scenarios, dirs)):
        if i in fresh and "error" in fresh[i]:
            row = dict(fresh[i], run_dir=None)
        elif (d / "error.json").is_file() and not (d / "metrics.json").is_file():
            row = dict(json.loads((d / "error.json").read_text()), run_dir=None)
        else:
            row = dict(load_row(d), run_dir=d)
        row.update(scenario=s, backend=s.backend)
        out.append(row)
    return out


def planar_rows(ctx, backend: str) -> list[dict]:
    """The controllers x planar terrains grid (Tables 3-6, Figs. 14, 17) on ``backend``."""
    sc = scale(ctx)
    return run_cached(ctx, paper_sweep(sc["controllers"], sc["terrains"], duration=sc["duration"],
                                       backend=backend, **_sweep_kw(ctx)))


def rough_rows(ctx, backend: str) -> list[dict]:
    """Fig. 16: the rough heightmap with per-cell friction."""
    sc = scale(ctx)
    return run_cached(ctx, paper_sweep(sc["rough_controllers"], ("rough",), duration=sc["rough_duration"],
                                       backend=backend, **_sweep_kw(ctx)))


def manipulator_rows(ctx, backend: str) -> list[dict]:
    """Table 6's manipulator rows: the grasp at the high and low fingertip friction."""
    sc = scale(ctx)
    return run_cached(ctx, manipulator_sweep(sc["manipulator_controllers"], sc["mus"],
                                             duration=sc["manipulator_duration"], backend=backend,
                                             **_sweep_kw(ctx)))


def trace_of(row: dict):
    """The saved trace of a cached row, or None (a run that raised)."""
    from ..trace import Trace

    if row.get("run_dir") is None or not (Path(row["run_dir"]) / "trace.npz").is_file():
        return None
    return Trace.load(Path(row["run_dir"]) / "trace.npz")
