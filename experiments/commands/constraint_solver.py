"""``idyn constraint-solver EXAMPLE``: the five examples of the constraint-solver paper.

Writes DIR/results.json (every number, solver statuses and residuals, timings of our solver
and of scipy's integrators measured in the same run) and PNG plots to --out, and prints the
example's table.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os

from idyn.experiments.constraint_solver import EXAMPLES

NAME = "constraint-solver"
HELP = ("run an example of the L-stable constraint solver paper: "
        + ", ".join(EXAMPLES))

_MODULES = {"pendulum": "pendulum", "rom-pendulum": "rom_pendulum",
            "elastic-foundation": "foundation", "incline": "incline",
            "sphere-stack": "sphere_stack"}


def add_arguments(parser) -> None:
    parser.add_argument("example", choices=EXAMPLES, metavar="EXAMPLE",
                        help="one of: " + ", ".join(EXAMPLES))
    parser.add_argument("--short", action="store_true",
                        help="smaller sizes / fewer step sizes (seconds instead of minutes)")
    parser.add_argument("--backend", choices=("clarabel", "cvxopt"), default="clarabel",
                        help="conic backend (default: %(default)s)")
    parser.add_argument("--formulation", choices=("auto", "reduced", "lifted"), default="auto",
                        help="program form (default: %(default)s)")
    parser.add_argument("--budget", type=float, default=None,
                        help="elastic-foundation, sphere-stack: wall-clock seconds allowed per "
                             "scipy integrator run before it is reported as a timeout (default 60 and "
                             "120, 20 and 10 with --short)")
    parser.add_argument("--reference-budget", type=float, default=None,
                        help="elastic-foundation: wall-clock seconds allowed for each DOP853 "
                             "reference run (default 1800, 60 with --short)")
    parser.add_argument("--case", action="append", type=_case, default=None,
                        metavar="ELEMENTS,E,LOAD",
                        help="elastic-foundation: run only this case, e.g. 100,1e11,50 "
                             "(repeatable; default: all eight of Tables 1-2)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def _case(text: str) -> tuple:
    try:
        elements, youngs, load = text.split(",")
        return int(elements), float(youngs), float(load)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected ELEMENTS,E,LOAD such as 100,1e11,50, got {text!r}") from None


def run(args) -> int:
    mod = importlib.import_module(f"idyn.experiments.constraint_solver.{_MODULES[args.example]}")
    options = {"backend": args.backend, "formulation": args.formulation}
    if args.example in ("elastic-foundation", "sphere-stack"):
        options["budget"] = args.budget
    if args.example == "elastic-foundation":
        options["reference_budget"] = args.reference_budget
        options["cases"] = args.case
    results = mod.run(short=args.short, **options)
    results["options"] = {"short": args.short, **options}
    os.makedirs(args.out, exist_ok=True)
    if not args.no_plots:
        results["plots"] = mod.plot(results, args.out)
    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    print(mod.table(results))
    print(f"results: {os.path.join(args.out, 'results.json')}")
    return 0
