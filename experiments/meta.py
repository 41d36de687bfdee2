"""Metadata saved beside every sweep: what ran, on what, from which revision."""
from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ("idyn", "numpy", "scipy", "pin", "quadprog", "cvxopt", "pybullet", "numba", "clarabel")


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _git_revision() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def run_metadata(scenarios) -> dict:
    return {
        "packages": {p: _version(p) for p in PACKAGES},
        "git_revision": _git_revision(),
        "python": platform.python_version(),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpus": __import__("os").cpu_count()},
        "scenarios": [s.to_dict() for s in scenarios],
        "seeds": sorted({s.seed for s in scenarios}),
    }
