"""The ``idyn`` subcommands (one module each, listed in :data:`experiments.cli.COMMANDS`)."""
from __future__ import annotations

import argparse

from idyn.errors import InvalidInputError


def add_friction_limit(parser) -> None:
    """The ``--friction-limit`` option of the locomotion commands (Scenario.friction_limit)."""
    from ..scenario import LOCOMOTION_FRICTION_LIMIT

    parser.add_argument("--friction-limit", type=_friction_limit, default=LOCOMOTION_FRICTION_LIMIT,
                        metavar="MU|none",
                        help="quadruped: the controllers plan with min(terrain mu, this); 'none' gives "
                             "them the terrain's mu as the paper did (default: %(default)s; why: README)")


def _friction_limit(text: str) -> float | None:
    from ..scenario import check_friction_limit

    if text.strip().lower() == "none":
        return None
    try:
        return check_friction_limit(float(text))
    except (ValueError, InvalidInputError):
        raise argparse.ArgumentTypeError(f"expected a friction coefficient >= 0 or 'none', got {text!r}") from None
