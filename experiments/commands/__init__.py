"""The ``idyn`` subcommands (one module each, listed in :data:`idyn.experiments.cli.COMMANDS`)."""
from __future__ import annotations

import argparse

from idyn.errors import InvalidInputError


def add_friction_limit(parser) -> None:
    """The ``--friction-limit`` option of the locomotion commands (Scenario.friction_limit)."""
    from ..scenario import LOCOMOTION_FRICTION_LIMIT, PRESET_VALUE

    parser.add_argument("--friction-limit", type=_friction_limit, default=PRESET_VALUE,
                        metavar="MU|none",
                        help="quadruped: the controllers plan with min(terrain mu, this); 'none' gives "
                             f"them the terrain's mu as the paper did (default: the preset's, "
                             f"{LOCOMOTION_FRICTION_LIMIT} under --preset idyn, none under --preset paper; why: README)")


def add_preset(parser, backend: bool = True) -> None:
    """``--preset paper|idyn`` (Scenario.preset, :mod:`idyn.experiments.presets`); ``backend``:
    whether the command has ``--backend`` (whose default the preset sets)."""
    from ..reproduce import PRESETS

    where = "; backend idyn unless --backend names one" if backend else ""
    parser.add_argument("--preset", choices=PRESETS, default="idyn",
                        help="paper: the published models and protocol (the options of "
                             f"docs/paper_differences.md{where}); idyn: idyn's defaults "
                             "(default: %(default)s). Options given explicitly override the preset's")


def add_backend(parser) -> None:
    """``--backend``: the physics; by default the preset's (idyn under --preset paper, else pybullet)."""
    parser.add_argument("--backend", choices=("pybullet", "idyn", "mujoco"), default=None,
                        help="physics: PyBullet, idyn.sim (the paper's world: Anitescu-Potra LCP on rigid "
                             "ground, penalty on compliant) or MuJoCo (the 'mujoco' extra) (default: idyn "
                             "under --preset paper, else pybullet)")


def backend_of(args) -> str:
    """The backend a command runs: ``--backend``, or its preset's."""
    from ..presets import default_backend

    return args.backend if args.backend is not None else default_backend(args.preset)


def add_controller(parser) -> None:
    """The ``--controller`` option of the single-run commands (run, demo, bench-loop)."""
    parser.add_argument("--controller", default="qp-coulomb",
                        help="a name of controllers.available(), listed in the README (default: %(default)s)")


def add_parallel(parser) -> None:
    """``--jobs`` and ``--executor``: how a command runs its scenarios in parallel
    (:func:`idyn.experiments.runner.run_sweep`)."""
    parser.add_argument("--jobs", type=int, default=2,
                        help="parallel runs: local processes, or the CPUs of a local Ray instance "
                             "(default: %(default)s)")
    parser.add_argument("--executor", choices=("process", "ray"), default="process",
                        help="local process pool, or Ray (needs the 'ray' extra): the cluster at RAY_ADDRESS, "
                             "else a local instance (default: %(default)s)")


def add_seed(parser) -> None:
    """The ``--seed`` option of the quadruped commands (Scenario.seed: the rough terrain's heights
    and per-cell friction)."""
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the rough terrain's heights and friction (default: %(default)s)")


def terrain_names() -> str:
    """The named terrains of ``experiments.scenario.TERRAINS``, for a help text."""
    from ..scenario import TERRAINS

    return ", ".join(TERRAINS)


def _friction_limit(text: str) -> float | None | str:
    from ..scenario import PRESET_VALUE, check_friction_limit

    if text.strip().lower() == "none":
        return None
    if text.strip().lower() == PRESET_VALUE:     # the default: the preset's
        return PRESET_VALUE
    try:
        return check_friction_limit(float(text))
    except (ValueError, InvalidInputError):
        raise argparse.ArgumentTypeError(f"expected a friction coefficient >= 0 or 'none', got {text!r}") from None


def add_controller_options(parser) -> None:
    """``--controller-option KEY=VALUE`` (repeatable): keyword options of ``controllers.make``."""
    parser.add_argument("--controller-option", dest="controller_options", action="append",
                        type=_key_value, default=[], metavar="KEY=VALUE",
                        help="an option of the controller, e.g. stage2=false (qp-coulomb's Stage I "
                             "alone, Fig. 15) or kv=10; VALUE is a number, true/false, or text "
                             "(repeatable)")


def add_contact_model_options(parser) -> None:
    """``--contact-model-option KEY=VALUE`` (repeatable): keyword options of ``idyn.sim.make``."""
    parser.add_argument("--contact-model-option", dest="contact_model_options", action="append",
                        type=_key_value, default=[], metavar="KEY=VALUE",
                        help="idyn backend, with --contact-model (not penalty): an option of the contact "
                             "model, e.g. gap_rate=true (qp; with the controller option of the same name "
                             "the matched qp pair of `idyn verify-forces`) or hold=state (noslip); "
                             "VALUE as for --controller-option (repeatable)")


def _key_value(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    low = value.strip().lower()
    if low in ("true", "false"):
        return key, low == "true"
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, value.strip()


def parse_names(text: str, allowed, what: str) -> list[str]:
    """The names of a comma-separated list (or all of ``allowed`` for ``all``); a CommandError
    naming the unknown ones."""
    from ..cli import CommandError

    if text == "all":
        return list(allowed)
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise CommandError(f"unknown {what} {', '.join(bad) or repr(text)}; choose from {', '.join(allowed)}")
    return names
