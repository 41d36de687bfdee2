"""``idyn bench-loop``: the profile of a closed-loop step, phase by phase (median, p99, JSON).

Runs LINKS on the waypoint course (``idyn demo``'s scenario by default) and prints, for every
phase of the step (testbed state, contact query, planner, contact schedule, controller, balance,
simulator, sensed forces, loop bookkeeping), the median, p99 and mean time and its share, the
whole step (also as a multiple of the simulator phase), the kernels first met inside the loop
and the real-time factor; writes DIR/bench.json (:mod:`idyn.experiments.benchmarks.loop`).
"""
from __future__ import annotations

from . import add_controller, terrain_names

NAME = "bench-loop"
HELP = "time each phase of the closed-loop step of a trot (median, p99, share; JSON)"


def add_arguments(parser) -> None:
    add_controller(parser)
    parser.add_argument("--terrain", default="rigid-high",
                        help=f"one of {terrain_names()} (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=5.0, help="virtual seconds per run (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed runs of --duration each, each after the controller's warm-up and an "
                             "untimed 0.5 s dry run (default: %(default)s)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="process CPU time (insensitive to other load) or wall time (default: %(default)s)")


def run(args) -> int:
    from idyn import controllers

    from ..benchmarks import loop
    from ..cli import CommandError
    from ..scenario import TERRAINS

    if args.controller not in controllers.available():
        raise CommandError(f"unknown controller {args.controller!r}; choose from {', '.join(controllers.available())}")
    if args.terrain not in TERRAINS:
        raise CommandError(f"unknown terrain {args.terrain!r}; choose from {', '.join(TERRAINS)}")
    if args.repeats < 1 or not args.duration > 0:
        raise CommandError("--repeats must be at least 1 and --duration positive")
    loop.run(args.out, controller=args.controller, terrain=args.terrain, duration=args.duration,
             repeats=args.repeats, clock=args.clock)
    print(f"wrote {args.out}/bench.json")
    return 0
