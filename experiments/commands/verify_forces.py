"""``idyn verify-forces``: every predicting controller against every contact model (paper
Sec. 8.2, Table 5 and its footnote), PyBullet and MuJoCo included.

Runs the trot once per (controller, model) cell, prints the table of mean relative errors of the
predicted summed normal force (matched models marked ``*``) and writes ``DIR/verify_forces.json``
(settings, rows, run metadata) and ``DIR/verify_forces.csv`` (one row per cell). See
:mod:`idyn.experiments.prediction_table` for what makes a pair matched.
"""
from __future__ import annotations

import math

NAME = "verify-forces"
HELP = ("verify contact-force predictions: every controller against every contact model (idyn.sim, "
        "PyBullet and MuJoCo) on the trot, as a table")

#: verify_forces.csv's columns (every error names its unit: N, or percent for relative errors)
CSV_KEYS = ("controller", "backend", "mu", "matched", "preset", "balance", "friction_limit", "trotted_s", "fell", "mean_abs_N",
            "mean_rel_pct", "median_rel_pct", "max_rel_pct", "steps", "wall_s", "error")


def add_arguments(parser) -> None:
    from ..prediction_table import BACKENDS, COULOMB_MU, PREDICTING

    parser.add_argument("--duration", type=float, default=30.0,
                        help="virtual seconds per run; a run stops earlier if the robot falls (default: %(default)s)")
    parser.add_argument("--controllers", default="all",
                        help=f"'all' ({', '.join(PREDICTING)}) or a comma-separated list (default: all)")
    parser.add_argument("--models", default="all",
                        help=f"'all' ({', '.join(BACKENDS)}) or a comma-separated list (default: all)")
    parser.add_argument("--mu", type=float, default=COULOMB_MU,
                        help="ground friction of the Coulomb cells; no-slip controllers and the noslip "
                             "model use mu = inf (default: %(default)s)")
    from . import add_preset
    add_preset(parser, backend=False)
    parser.add_argument("--no-balance", action="store_true",
                        help="leave out the trot's balance term (under --preset idyn a torque added after "
                             "the controller and so not in its prediction; under --preset paper part of "
                             "the desired acceleration)")


def run(args) -> int:
    import csv
    import json
    from pathlib import Path

    from tqdm import tqdm

    from ..cli import CommandError
    from ..meta import run_metadata
    from ..prediction_table import BACKENDS, PREDICTING, format_table, prediction_table
    from ..runner import jsonable
    from . import parse_names

    names = parse_names(args.controllers, PREDICTING, "controller")
    models = parse_names(args.models, BACKENDS, "contact model")
    if not (math.isfinite(args.duration) and args.duration > 0):
        raise CommandError(f"--duration must be a positive number of seconds, got {args.duration}")
    if not (args.mu >= 0 and not math.isnan(args.mu)):
        raise CommandError(f"--mu must be >= 0, got {args.mu}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = int(round(args.duration / 1e-3))
    bar = tqdm(total=len(names) * len(models) * steps, unit="step", mininterval=0.5)
    done = {"label": None, "k": 0}

    def progress(label, k, n):
        if label != done["label"]:          # a new cell: count the previous one's unrun steps
            if done["label"] is not None:
                bar.update(n - done["k"])
            done.update(label=label, k=0)
            bar.set_description(label)
        bar.update(k - done["k"])
        done["k"] = k

    try:
        rows = prediction_table(names, models, args.duration, mu=args.mu, balance=not args.no_balance,
                                progress=progress, preset=args.preset)
    finally:
        bar.close()
    settings = {"duration": args.duration, "mu": args.mu, "balance": not args.no_balance, "preset": args.preset, "controllers": names,
                "models": models}
    (out / "verify_forces.json").write_text(json.dumps(
        {"settings": settings, "rows": [jsonable(r) for r in rows], "meta": run_metadata([])}, indent=1))
    with open(out / "verify_forces.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_KEYS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    print(format_table(rows))
    print(f"\nwrote {out}/verify_forces.json and verify_forces.csv")
    return 0
