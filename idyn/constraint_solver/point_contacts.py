"""Point contacts between :class:`~idyn.constraint_solver.bodies.RigidBodies` (or a body and
the world) as solver rows: G_n, G_r, G_s from the contact frame, phi/K/B from a normal law
(:mod:`~idyn.constraint_solver.models`) and the Coulomb tangential dampers.
"""
from __future__ import annotations

import numpy as np

from .bodies import WORLD, RigidBodies
from .constraints import ConstraintRows, ContactRows
from ..contact import tangent_frames
from .geometry import ContactGeometry
from .models import SpringLaw, coulomb_tangents


def body_frame_points(bodies: RigidBodies, q, body, world_points, rotations=None) -> np.ndarray:
    """World points -> body-frame coordinates (zeros for WORLD)."""
    body = np.asarray(body)
    out = np.zeros((body.shape[0], 3))
    keep = body != WORLD
    R = (bodies.rotations(q) if rotations is None else rotations)[body[keep]]
    rel = world_points[keep] - bodies.positions(q)[body[keep]]
    out[keep] = np.einsum("kji,kj->ki", R, rel)
    return out


def contact_rows(bodies: RigidBodies, q, geom: ContactGeometry, body_a, body_b,
                 normal: SpringLaw, normal_drift, mu, h: float,
                 tangent_damping: float = 1e6) -> ContactRows:
    """3D contact rows for the contacts in ``geom`` (all assumed active, depth >= 0)."""
    k = geom.depth.shape[0]
    body_a = np.broadcast_to(body_a, (k,))
    body_b = np.broadcast_to(body_b, (k,))
    R = bodies.rotations(q)
    pa = body_frame_points(bodies, q, body_a, geom.point_a, R)
    pb = body_frame_points(bodies, q, body_b, geom.point_b, R)
    r, s = tangent_frames(geom.normal)     # (r, s, n) right-handed
    Gn, Gr, Gs = bodies.relative_rows(q, body_a, pa, body_b, pb, np.stack([geom.normal, r, s]),
                                      R)
    tan = coulomb_tangents(k, h, tangent_damping)
    return ContactRows(
        ConstraintRows(Gn, normal.phi, normal.K, normal.B, Gdot_v=normal_drift),
        ConstraintRows(Gr, tan.phi, tan.K, tan.B),
        np.broadcast_to(np.asarray(mu, dtype=float), (k,)).copy(),
        ConstraintRows(Gs, tan.phi, tan.K, tan.B))
