"""``idyn plot``: figures from saved results (a run's trace, or a sweep's metrics.csv)."""
from __future__ import annotations

NAME = "plot"
HELP = "draw figures like the paper's from a saved run (trace.npz) or sweep (metrics.csv)"


def add_arguments(parser) -> None:
    parser.add_argument("source", help="a run directory (with trace.npz) or a sweep directory (with metrics.csv)")


def run(args) -> int:
    import csv
    from pathlib import Path

    import robots

    from ..cli import CommandError
    from ..plots import plot_comparison, plot_run
    from ..report import paper_data
    from ..scenario import Scenario
    from ..trace import Trace

    src = Path(args.source)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if (src / "trace.npz").is_file():
        trace = Trace.load(src / "trace.npz")
        scenario = Scenario(**trace.meta["scenario"])
        robot = robots.quadruped(scenario.quadruped) if scenario.robot == "quadruped" else robots.manipulator()
        paths = plot_run(trace, scenario, out, robot.model)
    elif (src / "metrics.csv").is_file():
        with open(src / "metrics.csv") as fh:
            rows = [_typed(r) for r in csv.DictReader(fh)]
        paths = plot_comparison(rows, paper_data(), out)
    else:
        raise CommandError(f"{src} has neither trace.npz (a run) nor metrics.csv (a sweep)")
    for p in paths:
        print(f"wrote {p}")
    return 0


def _typed(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if v in ("True", "False"):
            out[k] = v == "True"
        else:
            try:
                out[k] = float(v)
            except (TypeError, ValueError):
                out[k] = v
    if not out.get("error"):
        out.pop("error", None)
    return out
