"""One installed namespace: ``pip install idyn`` puts only ``idyn`` into site-packages, and
every package folder of the repository is installed as an ``idyn`` subpackage."""
import importlib
import importlib.metadata as metadata
import importlib.util
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:          # Python 3.10
    import tomli as tomllib

import idyn

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"idyn": "idyn", "controllers": "idyn.controllers", "planners": "idyn.planners",
           "robots": "idyn.robots", "experiments": "idyn.experiments"}


def test_pyproject_lists_every_package_folder():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    for folder, package in FOLDERS.items():
        if folder != "idyn":
            assert config["package-dir"][package] == folder
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            name = ".".join((package,) + rel.parts)
            assert name in listed, f"{init.parent} is not installed: add {name!r} to pyproject.toml"


def test_installed_distribution_has_only_the_idyn_namespace():
    # the installed wheel (a dist-info with a RECORD), not a source tree's egg-info that a
    # PYTHONPATH pointing at the checkout would put first
    installed = [d for d in metadata.distributions(name="idyn") if d.read_text("RECORD") is not None]
    assert installed, "idyn is not installed (make install)"
    files = installed[0].files
    tops = {f.parts[0] for f in files if not f.parts[0].endswith((".dist-info", ".egg-info")) and f.parts[0] != ".."}
    assert tops == {"idyn"}, tops


@pytest.mark.parametrize("name", ["controllers", "planners", "robots", "experiments"])
def test_subpackages_import_under_idyn(name):
    module = importlib.import_module(f"idyn.{name}")
    assert module.__name__ == f"idyn.{name}"
    # the subpackage is idyn's, not a top-level package of the same name that a user's own
    # folder could shadow
    assert f"{name}" not in sys.modules or sys.modules[name] is not module


def test_a_users_own_folder_does_not_shadow_idyn(tmp_path, monkeypatch):
    """A user's ``robots/`` folder on sys.path is theirs; ``idyn.robots`` stays idyn's."""
    (tmp_path / "robots").mkdir()
    (tmp_path / "robots" / "__init__.py").write_text("MINE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("robots", None)
    mine = importlib.import_module("robots")
    assert getattr(mine, "MINE", False)
    from idyn import robots
    assert hasattr(robots, "quadruped") and not hasattr(robots, "MINE")
    sys.modules.pop("robots", None)
