"""Generic robot descriptions read from URDF: which links are feet, and how big they are.

Nothing here is specific to one robot: a foot is a *leaf* link that carries a sphere collision
geometry, or a named frame (a link or joint of the URDF) with a given radius, for feet whose
collision is a mesh. Legs are labelled LF, RF, LH, RH from the feet's positions in the body
frame (forward, left, up) that :func:`body_axes` finds from the geometry at the neutral
configuration, so any point-footed quadruped URDF works the same way.
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


def leaves(urdf_path) -> list[str]:
    """Links of a URDF that are no joint's parent, in file order."""
    root = _urdf_root(urdf_path)
    parents = {j.find("parent").get("link") for j in root.findall("joint")}
    return [link.get("name") for link in root.findall("link") if link.get("name") not in parents]


def body_axes(feet: np.ndarray, hips: np.ndarray) -> np.ndarray:
    """The body frame's axes (rows: forward, left, up) in base-link coordinates, from the feet's
    and the hips' (each leg's first joint) positions (k, 3) in the base link's frame at the
    neutral configuration: up is the base-link axis nearest to the mean hip-to-foot direction,
    reversed; forward the positive base-link axis nearest to the longer side of the feet's
    rectangle (legs are longer apart front to back than side to side); left = up x forward.

    Axes are snapped to the base link's, since URDF bases are drawn along them (z-up x-forward
    for most robots, y-up z-forward for PyBullet's laikago)."""
    down = np.mean(feet - hips, axis=0)
    k = int(np.argmax(np.abs(down)))
    up = np.zeros(3)
    up[k] = -np.sign(down[k])
    spread = feet - feet.mean(axis=0)
    extent = np.abs(spread).max(axis=0)
    extent[k] = -1.0
    forward = np.zeros(3)
    forward[int(np.argmax(extent))] = 1.0
    return np.array([forward, np.cross(up, forward), up])


def order_legs(names_positions: dict[str, np.ndarray], axes: np.ndarray | None = None) -> dict[str, str]:
    """Map leg labels LF, RF, LH, RH to foot names from their base-frame positions: the signs of
    their forward and left coordinates (``axes``, rows forward, left, up; default the base
    link's x, y, z) about the feet's centroid."""
    axes = np.eye(3) if axes is None else np.asarray(axes, dtype=float)
    centre = np.mean(list(names_positions.values()), axis=0)
    out = {}
    for name, p in names_positions.items():
        fwd, left, _ = axes @ (np.asarray(p) - centre)
        label = ("L" if left > 0 else "R") + ("F" if fwd > 0 else "H")
        if label in out:
            raise ModelLoadError(f"two feet map to leg {label}: {out[label]} and {name} "
                                 f"(feet at {names_positions} in the base frame)")
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
