"""``idyn demo``: LINKS trotting the waypoint course in PyBullet under an ID controller.

Headless. Prints tracking error, distance covered, falls and the real-time factor, and writes
the centre-of-mass path and joint tracking plot, the metrics and the trace to ``--out``.

The default controller is ``qp-coulomb`` (the paper's ID_QP,mu), planning with the locomotion
friction limit 0.3 (``--friction-limit none`` is the paper's literal setting; ``--preset paper``
runs the published models in idyn.sim, docs/paper_differences.md); how each controller
fares on each terrain is in the README's Results and docs/results.md. Fall times are chaotic: a
round-off-level change can move them by seconds. The demo reports a fall; it does not hide one.
"""
from __future__ import annotations

from . import add_backend, add_controller, add_friction_limit, add_preset, add_seed, backend_of, terrain_names

NAME = "demo"
HELP = ("LINKS trotting the waypoint course in PyBullet (or --backend idyn, mujoco; idyn under "
        "--preset paper) under an ID controller (headless; qp-coulomb by default)")


def add_arguments(parser) -> None:
    add_controller(parser)
    parser.add_argument("--duration", type=float, default=10.0, help="virtual seconds (default: %(default)s)")
    parser.add_argument("--terrain", default="rigid-high",
                        help=f"one of {terrain_names()} (default: %(default)s)")
    add_seed(parser)
    add_friction_limit(parser)
    add_preset(parser)
    add_backend(parser)


def run(args) -> int:
    from ..report import print_run_summary
    from ..runner import run_scenario
    from ..scenario import terrain_scenario

    scenario = terrain_scenario(args.terrain, controller=args.controller, duration=args.duration,
                                seed=args.seed, friction_limit=args.friction_limit, backend=backend_of(args),
                                preset=args.preset)
    result = run_scenario(scenario, out_dir=args.out, progress=True, plots=True)
    print_run_summary(scenario, result)
    return 0
