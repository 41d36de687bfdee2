"""``idyn plot``: figures from saved results (a run's trace, several runs overlaid, or a sweep's
metrics.csv)."""
from __future__ import annotations

NAME = "plot"
HELP = ("draw figures like the paper's from saved runs (trace.npz; several are overlaid) or a sweep "
        "(metrics.csv)")


def add_arguments(parser) -> None:
    parser.add_argument("source", nargs="+",
                        help="a run directory (with trace.npz), several run directories (overlaid in "
                             "runs.png, e.g. qp-coulomb with and without Stage II for Fig. 15), or a "
                             "sweep directory (with metrics.csv)")


def run(args) -> int:
    import csv
    from pathlib import Path

    from ..cli import CommandError
    from ..metrics import from_csv_row
    from ..plots import plot_comparison, plot_run, plot_runs
    from ..report import paper_data

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sources = [Path(s) for s in args.source]
    if len(sources) > 1:
        missing = [str(s) for s in sources if not (s / "trace.npz").is_file()]
        if missing:
            raise CommandError(f"to overlay runs every source needs trace.npz; missing in {', '.join(missing)}")
        paths = plot_runs([_load_run(s) for s in sources], out)
    elif (sources[0] / "trace.npz").is_file():
        trace, scenario, model = _load_run(sources[0])
        paths = plot_run(trace, scenario, out, model)
    elif (sources[0] / "metrics.csv").is_file():
        with open(sources[0] / "metrics.csv") as fh:
            rows = [_typed(from_csv_row(r)) for r in csv.DictReader(fh)]
        paths = plot_comparison(rows, paper_data(), out)
    else:
        raise CommandError(f"{sources[0]} has neither trace.npz (a run) nor metrics.csv (a sweep)")
    for p in paths:
        print(f"wrote {p}")
    return 0


def _load_run(directory):
    """(trace, scenario, model) of a saved run."""
    from idyn import robots

    from ..scenario import Scenario
    from ..trace import Trace

    trace = Trace.load(directory / "trace.npz")
    scenario = Scenario(**trace.meta["scenario"])
    robot = robots.quadruped(scenario.quadruped) if scenario.robot == "quadruped" else robots.manipulator()
    return trace, scenario, robot.model


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
