"""The ``idyn`` command line: one sub-command per module in :mod:`idyn.experiments.commands`.

Each command module exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args)``.
User mistakes raise :class:`idyn.errors.IdynError` or :class:`CommandError`; they are printed as
one readable line with exit status 2, never as a traceback.
"""
from __future__ import annotations

import os

# One BLAS thread: the problems here are small, and a multi-threaded BLAS competing with the
# simulator for two cores makes a millisecond solve take tens of milliseconds. Must be set
# before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import sys  # noqa: E402

from idyn.errors import IdynError  # noqa: E402

#: Command modules, in the order ``idyn --help`` lists them.
COMMANDS = (
    "demo",
    "run",
    "compare",
    "bench",
    "bench_loop",
    "plot",
    "constraint_solver",
    "verify_forces",
    "reproduce",
)


class CommandError(IdynError):
    """A command-line argument is inconsistent or refers to something that does not exist."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="idyn",
        description="Inverse dynamics with rigid contact and friction: demos, experiments, benchmarks.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        mod = importlib.import_module(f"idyn.experiments.commands.{name}")
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        p.add_argument("--out", default=f"results/{mod.NAME}", metavar="DIR",
                       help="directory the command writes its results to, created if missing "
                            "(default: %(default)s, under the current directory)")
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except IdynError as exc:
        print(f"idyn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
