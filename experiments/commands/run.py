"""``idyn run``: one scenario (robot, controller, terrain, friction, duration, seed, backend).

Writes ``DIR/metrics.json`` (the metrics of docs/experiments.md), ``DIR/trace.npz`` (the per-step
trace, see :mod:`idyn.experiments.trace`) and ``DIR/run.png``.
"""
from __future__ import annotations

import math

from . import (add_backend, add_contact_model_options, add_controller, add_controller_options, add_friction_limit,
               add_preset, add_seed, backend_of)

NAME = "run"
HELP = "run one scenario and save its metrics, trace and plot"


def add_arguments(parser) -> None:
    parser.add_argument("--robot", choices=("quadruped", "manipulator"), default="quadruped",
                        help="quadruped (the trot on the waypoint course; --quadruped names the model) or "
                             "manipulator (the grasp) (default: %(default)s)")
    add_controller(parser)
    parser.add_argument("--terrain", choices=("rigid", "compliant", "rough"), default="rigid",
                        help="quadruped ground (default: %(default)s)")
    parser.add_argument("--mu", type=float, default=math.inf,
                        help="ground friction (quadruped) or fingertip-box friction (manipulator); "
                             "inf means no slip (simulated as 100); ignored on rough terrain (default: inf)")
    parser.add_argument("--duration", type=float, default=30.0, help="virtual seconds (default: %(default)s)")
    add_seed(parser)
    add_preset(parser)
    add_backend(parser)
    parser.add_argument("--contact-model", default=None,
                        choices=("ap-lcp", "noslip", "qp", "compliant", "penalty"),
                        help="idyn backend only: the simulator's contact model (default: ap-lcp, "
                             "noslip when mu >= 100, penalty on compliant ground)")
    parser.add_argument("--quadruped", default="links",
                        help="links, a1, a public quadruped (idyn.robots.PUBLIC_QUADRUPEDS) or a URDF path (default: %(default)s)")
    parser.add_argument("--torque-limits", action="store_true",
                        help="clip torques to the URDF effort limits (the paper's runs were unlimited)")
    add_friction_limit(parser)
    add_controller_options(parser)
    add_contact_model_options(parser)


def run(args) -> int:
    from idyn import controllers

    from ..report import print_run_summary
    from ..runner import run_scenario
    from ..scenario import Scenario
    from ..cli import CommandError

    if args.controller not in controllers.available():
        raise CommandError(f"unknown controller {args.controller!r}; choose from {', '.join(controllers.available())}")
    mu = math.nan if args.terrain == "rough" and args.robot == "quadruped" else args.mu
    scenario = Scenario(controller=args.controller, robot=args.robot, terrain=args.terrain, mu=mu,
                        duration=args.duration, seed=args.seed, backend=backend_of(args), preset=args.preset,
                        quadruped=args.quadruped, torque_limits=args.torque_limits,
                        contact_model=args.contact_model, friction_limit=args.friction_limit,
                        controller_options=dict(args.controller_options),
                        contact_model_options=dict(args.contact_model_options))
    metrics = run_scenario(scenario, out_dir=args.out, progress=True, plots=True)
    print_run_summary(scenario, metrics)
    print(f"\nwrote {args.out}/metrics.json, trace.npz and run.png")
    return 0
