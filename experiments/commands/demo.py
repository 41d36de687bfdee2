"""``idyn demo``: LINKS trotting the waypoint course in PyBullet under an ID controller.

Headless. Prints tracking error, distance covered, falls and the real-time factor, and writes
the centre-of-mass path and joint tracking plot, the metrics and the trace to ``--out``.

Status (README Results): ``qp-coulomb`` (the default, the paper's ID_QP,mu, planning with the
locomotion friction limit 0.3; ``--friction-limit none``, the paper's literal setting, falls at
0.28 s) completes 30 s on rigid-high, compliant-high and compliant-low in the sweep, and 10 s on
rigid-high in 3 of 3 runs with the swing knots moved by 1e-6 of the swing (fall times are
chaotic). It falls on rigid-low and rough. The demo reports a fall; it does not hide one.
"""
from __future__ import annotations

from . import add_friction_limit

NAME = "demo"
HELP = ("LINKS trotting the waypoint course in PyBullet under an ID controller (headless; "
        "qp-coulomb by default)")


def add_arguments(parser) -> None:
    parser.add_argument("--controller", default="qp-coulomb", help="controller name (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=10.0, help="virtual seconds (default: %(default)s)")
    parser.add_argument("--terrain", default="rigid-high",
                        help="rigid-low, rigid-high, compliant-low, compliant-high or rough (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    add_friction_limit(parser)


def run(args) -> int:
    from ..report import print_run_summary
    from ..runner import run_scenario
    from ..scenario import terrain_scenario

    scenario = terrain_scenario(args.terrain, controller=args.controller, duration=args.duration,
                                seed=args.seed, friction_limit=args.friction_limit)
    result = run_scenario(scenario, out_dir=args.out, progress=True, plots=True)
    print_run_summary(scenario, result)
    return 0
