"""``idyn bench lcp|controllers|contacts|sim|constraint-solver``: timing suites, printed and
written to DIR/bench.json.

Each suite is a module ``experiments.benchmarks.<kind>`` (dashes as underscores) with
``run(counts=..., seeds=..., repeats=..., out=...)``; suites are imported lazily so one suite's
dependencies never slow another.
"""
from __future__ import annotations

import importlib

NAME = "bench"
HELP = ("time the LCP solvers, the controllers, the contact pipeline, the simulator or the "
        "constraint solver (median, p90, JSON)")
KINDS = ("lcp", "controllers", "contacts", "sim", "constraint-solver")
#: --seeds and --repeats when not given; a suite not listed gets ``_DEFAULTS[None]``
_DEFAULTS = {None: {"seeds": 2, "repeats": 15},
             "constraint-solver": {"seeds": 1, "repeats": 3},   # a run takes 0.4-3 s
             "sim": {"seeds": 1, "repeats": 2000}}   # steps: of 15, one preempted step is the p90


def add_arguments(parser) -> None:
    parser.add_argument("kind", choices=KINDS, help="which suite to run")
    parser.add_argument("--contacts", default=None, metavar="N,N,...",
                        help="contact counts (default: the suite's, 4,8,16,32,48,64 for lcp); "
                             "constraint-solver: sphere counts of the stack (default 10,25,50,100)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="random problems per robot state (default 2; ignored by "
                             "constraint-solver, whose models are deterministic)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed repetitions per problem (default 15; sim: steps, default 2000; constraint-solver: runs "
                             "per model, default 3)")


def run(args) -> int:
    from ..cli import CommandError

    try:
        suite = importlib.import_module(f"idyn.experiments.benchmarks.{args.kind.replace('-', '_')}")
    except ModuleNotFoundError as exc:
        raise CommandError(f"the {args.kind} benchmark suite is not available: {exc}") from exc
    defaults = _DEFAULTS.get(args.kind, _DEFAULTS[None])
    seeds = defaults["seeds"] if args.seeds is None else args.seeds
    repeats = defaults["repeats"] if args.repeats is None else args.repeats
    options = {"seeds": seeds, "repeats": repeats, "out": args.out}
    if args.contacts:
        try:
            options["counts"] = tuple(int(c) for c in args.contacts.split(","))
        except ValueError as exc:
            raise CommandError(
                f"--contacts must be comma-separated integers, got {args.contacts!r}") from exc
    if seeds < 1 or repeats < 1:
        raise CommandError("--seeds and --repeats must be at least 1")
    suite.run(**options)
    print(f"wrote {args.out}/bench.json")
    return 0
