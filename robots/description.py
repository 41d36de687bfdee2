"""Generic robot descriptions read from URDF: which links are feet, and how big they are.

Nothing here is specific to one robot: a foot is a *leaf* link that carries a sphere collision
geometry. Legs are labelled LF, RF, LH, RH from the sign of the foot's position in the base
frame at the neutral configuration, so any point-footed quadruped URDF works the same way.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from idyn.errors import ModelLoadError


@dataclass(frozen=True)
class SphereFoot:
    link: str          #: URDF link (and pinocchio frame) name
    radius: float      #: sphere radius (m)
    offset: np.ndarray  #: sphere centre in the link frame


def _urdf_root(urdf_path):
    try:
        return ET.parse(str(urdf_path)).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ModelLoadError(f"cannot read URDF {urdf_path}: {exc}") from exc


def collisions(urdf_path, shape: str):
    """Yield (link name, shape element, origin xyz, origin rpy) of every ``<collision>`` whose
    geometry is ``shape`` (``"sphere"``, ``"box"``, ...), in file order."""
    for link in _urdf_root(urdf_path).findall("link"):
        for col in link.findall("collision"):
            geom = col.find(f"geometry/{shape}")
            if geom is None:
                continue
            origin = col.find("origin")
            xyz, rpy = (np.zeros(3), np.zeros(3)) if origin is None else (
                np.array([float(x) for x in origin.get("xyz", "0 0 0").split()]),
                np.array([float(x) for x in origin.get("rpy", "0 0 0").split()]))
            yield link.get("name"), geom, xyz, rpy


def sphere_leaves(urdf_path) -> list[SphereFoot]:
    """Leaf links of a URDF that carry a sphere collision geometry (the first one per link)."""
    parents = {j.find("parent").get("link") for j in _urdf_root(urdf_path).findall("joint")}
    feet: dict[str, SphereFoot] = {}
    for name, sphere, xyz, _ in collisions(urdf_path, "sphere"):
        if name not in parents and name not in feet:
            feet[name] = SphereFoot(name, float(sphere.get("radius")), xyz)
    return list(feet.values())


def order_legs(names_positions: dict[str, np.ndarray]) -> dict[str, str]:
    """Map leg labels LF, RF, LH, RH to foot names from their base-frame positions."""
    out = {}
    for name, p in names_positions.items():
        label = ("L" if p[1] > 0 else "R") + ("F" if p[0] > 0 else "H")
        if label in out:
            raise ModelLoadError(f"two feet map to leg {label}: {out[label]} and {name}")
        out[label] = name
    missing = {"LF", "RF", "LH", "RH"} - set(out)
    if missing:
        raise ModelLoadError(f"cannot find feet for legs {sorted(missing)}")
    return {k: out[k] for k in ("LF", "RF", "LH", "RH")}


def package_asset(name: str) -> Path:
    """Path of a file shipped in robots/assets (works from an installed wheel)."""
    path = Path(__file__).resolve().parent / "assets" / name
    if not path.is_file():
        raise ModelLoadError(f"robot asset {name!r} is not installed at {path}")
    return path
