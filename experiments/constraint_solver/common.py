"""Shared helpers for the constraint-solver examples: solver construction, timing, plotting."""
from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from idyn.constraint_solver import ConstraintSolver


PUBLISHED_JSON = Path(__file__).resolve().parents[1] / "data" / "cs_paper.json"


@functools.lru_cache(maxsize=1)
def published() -> dict:
    """The constraint-solver paper's published numbers and claims
    (experiments/data/cs_paper.json)."""
    return json.loads(PUBLISHED_JSON.read_text())


def make_solver(options: dict) -> ConstraintSolver:
    return ConstraintSolver(backend=options.get("backend", "clarabel"),
                            formulation=options.get("formulation", "auto"))


class Stopwatch:
    """Wall-clock seconds (``.seconds``) and this process's CPU seconds (``.cpu_seconds``) of a
    ``with`` block. On a shared machine the wall clock includes waiting for a core; the CPU
    time does not (the examples run with one BLAS thread, so it is the compute time)."""

    def __enter__(self):
        self._t0, self._c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        self.cpu_seconds = time.process_time() - self._c0


class _Timeout(Exception):
    pass


def integrate_with_budget(rhs, y0, duration: float, method: str, budget: float, **options) -> dict:
    """scipy's ``solve_ivp(rhs, (0, duration), y0, method)`` stopped after ``budget`` wall-clock
    seconds (reported as a timeout, as the paper reports its slowest MATLAB integrators)."""
    deadline = time.perf_counter() + budget
    calls = [0]

    def timed(t, y):
        calls[0] += 1
        if calls[0] % 256 == 0 and time.perf_counter() > deadline:
            raise _Timeout
        return rhs(t, y)

    with Stopwatch() as sw:
        timeout, message = False, ""
        try:
            sol = solve_ivp(timed, (0.0, duration), y0, method=method, **options)
            ok, y, message = sol.success, sol.y[:, -1], sol.message
        except _Timeout:
            ok, y, timeout = False, None, True
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            ok, y, message = False, None, f"{type(exc).__name__}: {exc}"
    return {"method": method, "seconds": sw.seconds, "cpu_seconds": sw.cpu_seconds,
            "completed": bool(ok and y is not None),
            "timeout": timeout, "message": message, "rhs_evaluations": calls[0],
            "budget_s": budget, "y_final": None if y is None else y}


def step_times(per_step) -> dict:
    """Total wall-clock seconds of a run's steps and the median and p90 of one step."""
    per_step = np.asarray(per_step, dtype=float)
    return {"seconds": float(per_step.sum()), "step_median_s": float(np.median(per_step)),
            "step_p90_s": float(np.percentile(per_step, 90))}


def solver_stats(infos) -> dict:
    """Status counts and worst residuals over a run's SolveInfo list."""
    statuses: dict[str, int] = {}
    worst: dict[str, float] = {}
    for info in infos:
        statuses[info.status] = statuses.get(info.status, 0) + 1
        for key, val in info.residuals.items():
            worst[key] = max(worst.get(key, 0.0), float(val))
    return {"status_counts": statuses, "max_residuals": worst,
            "fallbacks": int(sum(i.fallback for i in infos)),
            "methods": sorted({i.method for i in infos})}


def figure(path: str, draw) -> str:
    """Draw into a fresh matplotlib figure (Agg) and save it as PNG at ``path``."""
    from ..plots import plt, save

    fig = plt.figure(figsize=(7, 4.5))
    draw(fig)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    save(fig, path)
    return path


def curves(path: str, series, **axes) -> str:
    """:func:`figure` of one axes with the ``(x, y, label)`` ``series`` (a legend when labelled)
    and the properties ``axes`` (xlabel, ylabel, title, ...)."""
    def draw(fig):
        ax = fig.add_subplot(111)
        for x, y, label in series:
            ax.plot(x, y, label=label)
        ax.set(**axes)
        if any(label for *_, label in series):
            ax.legend(fontsize=7)
    return figure(path, draw)


def tolist(x):
    return np.asarray(x, dtype=float).tolist()
