"""``idyn compare``: a sweep of controllers x terrains (paper Sec. 8), in parallel.

Prints the paper's Tables 3, 4 and 5 with our numbers beside theirs, the Table 6 scorecard and
who completed the course beside the paper's (:mod:`idyn.experiments.completions`),
and writes ``DIR/metrics.csv`` (one row per run), ``DIR/meta.json`` (package versions, git
revision, seeds, machine), ``DIR/tables.txt``, ``DIR/orderings.json`` (the paper's orderings of
Tables 4-6 judged on this sweep, :mod:`idyn.experiments.orderings`), ``DIR/comparison.png`` and each run's trace.
"""
from __future__ import annotations

from ..metrics import ERROR_COLUMNS
from . import (add_backend, add_friction_limit, add_parallel, add_preset, add_seed, backend_of, parse_names,
                terrain_names)

NAME = "compare"
HELP = "run controllers x terrains in parallel and print the paper's tables beside ours"

#: metrics.csv's columns: the error metrics under their names with units (``force_error_rel_pct``, ...)
CSV_KEYS = ("controller", "terrain", "mu", "robot", "seed", "backend", "preset", "fell", "fall_time",
            "waypoints_reached", "distance", ERROR_COLUMNS["pos_error"], ERROR_COLUMNS["vel_error"], "torque_rate",
            "torque_mean", ERROR_COLUMNS["force_error_abs"], ERROR_COLUMNS["force_error_rel"], "realtime_factor",
            "solve_time_p50_us", "solve_time_p95_us", "solve_time_max_us", "deadline_misses", "error")


def add_arguments(parser) -> None:
    from ..scenario import PAPER_CONTROLLERS

    parser.add_argument("--controllers", default="all",
                        help=f"'all' (the paper's seven: {', '.join(PAPER_CONTROLLERS)}) or a comma-separated "
                             "list of controllers.available() (default: all)")
    parser.add_argument("--terrains", default="all",
                        help=f"'all' or a comma-separated subset of {terrain_names()} (default: all)")
    parser.add_argument("--duration", type=float, default=30.0, help="virtual seconds per run (default: %(default)s)")
    add_seed(parser)
    add_parallel(parser)
    add_preset(parser)
    add_backend(parser)
    add_friction_limit(parser)


def run(args) -> int:
    import csv
    import json
    from dataclasses import asdict
    from pathlib import Path

    from idyn import controllers
    from idyn.errors import InvalidInputError

    from ..meta import run_metadata
    from ..metrics import csv_row
    from ..orderings import paper_orderings
    from ..plots import plot_comparison
    from ..report import comparison_tables, paper_data
    from ..runner import run_sweep
    from ..scenario import PAPER_CONTROLLERS, TERRAINS, paper_sweep

    names = parse_names(args.controllers, controllers.available() if args.controllers != "all" else PAPER_CONTROLLERS,
                   "controller")
    terrains = parse_names(args.terrains, tuple(TERRAINS), "terrain")
    scenarios = paper_sweep(names, terrains, duration=args.duration, seed=args.seed, backend=backend_of(args),
                            friction_limit=args.friction_limit, preset=args.preset)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = run_sweep(scenarios, out, jobs=args.jobs, executor=args.executor)
    with open(out / "metrics.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_KEYS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(csv_row(r) for r in rows)
    (out / "meta.json").write_text(json.dumps(run_metadata(scenarios), indent=1))
    (out / "orderings.json").write_text(json.dumps(
        [{**asdict(o), "verdict": o.verdict} for o in paper_orderings(rows)], indent=1))
    tables = comparison_tables(rows, paper_data())
    from ..completions import completion_table
    try:
        table, agree, compared = completion_table(rows, paper_data())
        tables += (f"\n\nCompletion of the {args.duration:g} s course, ours / the paper's (Table 3's '-'; "
                   f"preset {args.preset}, {scenarios[0].backend}): {agree} of {compared} cells agree\n" + table)
    except InvalidInputError:         # no planar cell of the paper's controllers in this sweep
        pass
    (out / "tables.txt").write_text(tables + "\n")
    plot_comparison(rows, paper_data(), out)
    print(tables)
    print(f"\nwrote {out}/metrics.csv, meta.json, orderings.json, tables.txt, comparison.png and runs/")
    return 0
