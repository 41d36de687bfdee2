"""Sphere-plane and sphere-sphere contact geometry for the examples (Secs. 6.4-6.5).

Each function returns penetration depth d (> 0 when overlapping), the contact normal n (unit,
pointing from body A to body B) and the contact point on each body, plus the exact
velocity-product term of the normal rate: with phi_n = -d, phi_dot_n = n . (v_B - v_A) at the
sphere centres, and Gdot_n v = n_dot . (c_dot_B - c_dot_A) + n . (drift_B - drift_A).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ContactGeometry:
    depth: np.ndarray        # (k,) penetration, > 0 when overlapping
    normal: np.ndarray       # (k, 3) from A to B
    point_a: np.ndarray      # (k, 3) world contact point on A's surface
    point_b: np.ndarray      # (k, 3) world contact point on B's surface


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a x b for (k, 3) arrays (np.cross's axis handling per call costs more than the
    arithmetic for the few hundred rows of a contact step)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def sphere_plane(centers, radii, plane_point, plane_normal) -> ContactGeometry:
    """Spheres (B) against a fixed plane (A = world) through ``plane_point``."""
    c = np.atleast_2d(np.asarray(centers, dtype=float))
    n = np.asarray(plane_normal, dtype=float)
    n = np.broadcast_to(n / np.linalg.norm(n), c.shape)
    radii = np.broadcast_to(np.asarray(radii, dtype=float), c.shape[:1])
    height = (c - np.asarray(plane_point, dtype=float)) @ n[0]
    point_b = c - radii[:, None] * n
    return ContactGeometry(radii - height, n.copy(), c - height[:, None] * n, point_b)


def sphere_sphere(centers_a, radii_a, centers_b, radii_b) -> ContactGeometry:
    """Sphere A against sphere B, normal from A's centre to B's."""
    ca, cb = np.atleast_2d(centers_a), np.atleast_2d(centers_b)
    delta = cb - ca
    dist = np.linalg.norm(delta, axis=1)
    n = delta / dist[:, None]
    return ContactGeometry(radii_a + radii_b - dist, n, ca + radii_a[:, None] * n,
                           cb - radii_b[:, None] * n)


def sphere_sphere_normal_drift(centers_a, centers_b, vel_a, vel_b, drift_a, drift_b):
    """Gdot_n v for phi_n = |c_B - c_A| - r_A - r_B: n_dot . dv + n . (drift_B - drift_A)."""
    delta = np.atleast_2d(centers_b) - np.atleast_2d(centers_a)
    dist = np.linalg.norm(delta, axis=1)
    n = delta / dist[:, None]
    dv = vel_b - vel_a
    dv_perp = dv - np.sum(dv * n, axis=1)[:, None] * n
    return np.sum(dv_perp * dv_perp, axis=1) / dist + np.sum(n * (drift_b - drift_a), axis=1)
