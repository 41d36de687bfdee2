"""``idyn bench lcp|controllers|contacts``: timing suites, printed and written to DIR/bench.json.

Each suite is a module ``experiments.benchmarks.<kind>`` with ``run(counts=..., seeds=...,
repeats=..., out=...)``; suites are imported lazily so one suite's dependencies never slow
another.
"""
from __future__ import annotations

import importlib

NAME = "bench"
HELP = "time the LCP solvers, the controllers, the contact pipeline or the simulator (median, p90, JSON)"
KINDS = ("lcp", "controllers", "contacts", "sim")


def add_arguments(parser) -> None:
    parser.add_argument("kind", choices=KINDS, help="which suite to run")
    parser.add_argument("--contacts", default=None, metavar="N,N,...",
                        help="contact counts (default: the suite's, 4,8,16,32,48,64 for lcp)")
    parser.add_argument("--seeds", type=int, default=2, help="random problems per robot state")
    parser.add_argument("--repeats", type=int, default=15, help="timed repetitions per problem")


def run(args) -> int:
    from ..cli import CommandError

    try:
        suite = importlib.import_module(f"experiments.benchmarks.{args.kind}")
    except ModuleNotFoundError as exc:
        raise CommandError(f"the {args.kind} benchmark suite is not available: {exc}") from exc
    options = {"seeds": args.seeds, "repeats": args.repeats, "out": args.out}
    if args.contacts:
        try:
            options["counts"] = tuple(int(c) for c in args.contacts.split(","))
        except ValueError as exc:
            raise CommandError(
                f"--contacts must be comma-separated integers, got {args.contacts!r}") from exc
    if args.seeds < 1 or args.repeats < 1:
        raise CommandError("--seeds and --repeats must be at least 1")
    suite.run(**options)
    print(f"wrote {args.out}/bench.json")
    return 0
