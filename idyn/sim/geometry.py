"""Closest features between simple shapes: the contact points of the simulator (paper Fig. 4).

Each ``spheres_*`` function handles k spheres at once (numpy, no per-sphere Python) and returns
:class:`Features` (points (k, 3), normals (k, 3), phi (k,)); the ``sphere_*`` functions are the
one-pair forms returning a :class:`Feature`. In the sign conventions of :class:`idyn.Contact`
(body A is the sphere, the first argument):

* ``normal``: unit direction of the force that B exerts on A (from B towards A),
* ``phi``: signed gap, positive when separated and negative when overlapping (paper eq. 9),
* ``point``: midway between the two surfaces along the normal, so that the material points of A
  and B whose relative velocity the contact Jacobian measures coincide to first order in phi.

The terrain primitives (plane, heightmap, static box) are plain immutable data; a
:class:`Heightmap` is a regular grid with bilinear interpolation whose surface normal comes from
the gradient of the interpolant, and whose friction may vary per grid cell (paper Sec. 7.5).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .. import validation
from ..errors import InvalidInputError
from ._step_kernel import plane_features


class Feature(NamedTuple):
    """The closest features of one shape pair: contact point, normal (B to A) and gap."""

    point: np.ndarray
    normal: np.ndarray
    phi: float


class Features(NamedTuple):
    """The closest features of k shape pairs: points (k, 3), normals (k, 3, B to A), gaps (k,)."""

    points: np.ndarray
    normals: np.ndarray
    phi: np.ndarray

    def one(self) -> Feature:
        """The only pair of a batch of one."""
        return Feature(self.points[0], self.normals[0], float(self.phi[0]))


def _at_midpoint(surface: np.ndarray, normals: np.ndarray, phi: np.ndarray) -> Features:
    """Contact points midway between the surface points of B and A (A is phi further along n)."""
    return Features(surface + (0.5 * phi)[:, None] * normals, normals, phi)


# ---------------------------------------------------------------------- static terrain shapes
@dataclass(frozen=True)
class Plane:
    """The half-space ``normal . x <= offset`` (its surface is ``normal . x = offset``)."""

    normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    offset: float = 0.0
    mu: float = 1.0

    def __post_init__(self):
        n = validation.vector(self.normal, 3, "plane normal")
        norm = np.linalg.norm(n)
        if norm < 1e-12:
            raise InvalidInputError("plane normal must be non-zero")
        object.__setattr__(self, "normal", n / norm)
        object.__setattr__(self, "offset", float(self.offset))
        object.__setattr__(self, "mu", _check_mu(self.mu))

    @classmethod
    def inclined(cls, angle: float, mu: float) -> "Plane":
        """A plane through the origin tilted by ``angle`` about the world y axis.

        The surface descends towards +x; its down-slope direction (cos a, 0, -sin a) is the first
        tangent of :func:`idyn.contact.tangent_frame` for this normal, so an edge of the friction
        pyramid of paper Sec. 5.1 lies exactly along the slope.
        """
        return cls(np.array([np.sin(angle), 0.0, np.cos(angle)]), 0.0, mu)

    def friction_at(self, point) -> float:
        return self.mu

    def frictions_at(self, points: np.ndarray) -> np.ndarray:
        return np.full(points.shape[0], self.mu)


@dataclass(frozen=True)
class Heightmap:
    """Terrain ``z = H(x, y)`` sampled on a regular grid, bilinearly interpolated.

    ``heights[iy, ix]`` is the height at ``(x0 + ix * spacing, y0 + iy * spacing)`` (the layout
    of :func:`idyn.robots.pybullet.terrain.rough_heightmap`). ``mu`` is a scalar or one coefficient per
    grid cell (shape ``(ny - 1, nx - 1)``) or per node (same shape as ``heights``, read at the
    nearest node). Outside the grid the border height continues flat.
    """

    heights: np.ndarray
    spacing: float
    x0: float
    y0: float
    mu: float | np.ndarray = 1.0

    def __post_init__(self):
        h = validation.matrix(self.heights, (None, None), "heightmap heights")
        if min(h.shape) < 2:
            raise InvalidInputError(f"a heightmap needs at least 2 x 2 nodes, got {h.shape}")
        if not (np.isfinite(self.spacing) and self.spacing > 0):
            raise InvalidInputError(f"heightmap spacing must be positive, got {self.spacing}")
        mu = np.asarray(self.mu, dtype=float)
        if mu.ndim not in (0, 2) or (mu.ndim == 2 and mu.shape not in (h.shape, (h.shape[0] - 1, h.shape[1] - 1))):
            raise InvalidInputError(f"heightmap mu must be a scalar or per cell/node, got shape {mu.shape}")
        if np.isnan(mu).any() or (mu < 0).any():
            raise InvalidInputError("heightmap friction coefficients must be >= 0")
        object.__setattr__(self, "heights", h)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "spacing", float(self.spacing))

    @classmethod
    def centred(cls, heights, size: float, mu=1.0) -> "Heightmap":
        """A square grid spanning ``[-size/2, size/2]^2`` (the rough terrain of docs/experiments.md)."""
        h = np.asarray(heights, dtype=float)
        return cls(h, size / (h.shape[1] - 1), -size / 2, -size / 2, mu)

    def _cells(self, x: np.ndarray, y: np.ndarray):
        """Cell indices, fractions in the cell and whether each coordinate is inside the grid."""
        ny, nx = self.heights.shape
        gx, gy = (x - self.x0) / self.spacing, (y - self.y0) / self.spacing
        u, w = np.clip(gx, 0.0, nx - 1.0), np.clip(gy, 0.0, ny - 1.0)
        ix, iy = np.minimum(u.astype(np.intp), nx - 2), np.minimum(w.astype(np.intp), ny - 2)
        return ix, iy, u - ix, w - iy, (gx > 0.0) & (gx < nx - 1.0), (gy > 0.0) & (gy < ny - 1.0)

    def surfaces(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Heights (k,) and upward unit normals (k, 3) ``(-dH/dx, -dH/dy, 1) / norm`` at (x, y)."""
        ix, iy, fx, fy, inx, iny = self._cells(x, y)
        H = self.heights
        h00, h10, h01, h11 = H[iy, ix], H[iy, ix + 1], H[iy + 1, ix], H[iy + 1, ix + 1]
        z = (h00 * (1 - fx) + h10 * fx) * (1 - fy) + (h01 * (1 - fx) + h11 * fx) * fy
        gx = np.where(inx, ((h10 - h00) * (1 - fy) + (h11 - h01) * fy) / self.spacing, 0.0)
        gy = np.where(iny, ((h01 - h00) * (1 - fx) + (h11 - h10) * fx) / self.spacing, 0.0)
        n = np.column_stack((-gx, -gy, np.ones_like(gx)))
        return z, n / np.sqrt(np.einsum("ij,ij->i", n, n))[:, None]

    def surface(self, x: float, y: float) -> tuple[float, np.ndarray]:
        """Height and upward unit normal at one point (see :meth:`surfaces`)."""
        z, n = self.surfaces(np.array([x], dtype=float), np.array([y], dtype=float))
        return float(z[0]), n[0]

    def frictions_at(self, points: np.ndarray) -> np.ndarray:
        """Friction at the (k, 3) points: per cell, or at the nearest node."""
        if self.mu.ndim == 0:
            return np.full(points.shape[0], float(self.mu))
        ix, iy, fx, fy, _, _ = self._cells(points[:, 0], points[:, 1])
        if self.mu.shape == self.heights.shape:  # per node: nearest node
            return self.mu[iy + np.round(fy).astype(np.intp), ix + np.round(fx).astype(np.intp)]
        return self.mu[iy, ix]

    def friction_at(self, point) -> float:
        return float(self.frictions_at(np.reshape(np.asarray(point, dtype=float), (1, 3)))[0])


def checked_box(half_extents, rotation) -> tuple[np.ndarray, np.ndarray]:
    """Validated (half extents > 0, 3 x 3 rotation) of a box shape."""
    half = validation.vector(half_extents, 3, "box half extents")
    if (half <= 0).any():
        raise InvalidInputError(f"box half extents must be positive, got {half}")
    return half, validation.matrix(rotation, (3, 3), "box rotation")


@dataclass(frozen=True)
class StaticBox:
    """A box fixed in the world: half extents, rotation (3 x 3) and centre."""

    half_extents: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    mu: float = 1.0

    def __post_init__(self):
        half, rotation = checked_box(self.half_extents, self.rotation)
        object.__setattr__(self, "half_extents", half)
        object.__setattr__(self, "rotation", rotation)
        object.__setattr__(self, "translation", validation.vector(self.translation, 3, "box centre"))
        object.__setattr__(self, "mu", _check_mu(self.mu))

    def friction_at(self, point) -> float:
        return self.mu

    def frictions_at(self, points: np.ndarray) -> np.ndarray:
        return np.full(points.shape[0], self.mu)


def _check_mu(mu) -> float:
    mu = float(mu)
    if np.isnan(mu) or mu < 0:
        raise InvalidInputError(f"friction coefficient must be >= 0, got {mu}")
    return mu


# ---------------------------------------------------------------------- closest features
def spheres_plane(centres: np.ndarray, radii: np.ndarray, plane: Plane) -> Features:
    """k spheres (A) against a plane (B)."""
    k = radii.shape[0]
    out = Features(np.empty((k, 3)), np.empty((k, 3)), np.empty(k))
    plane_features(centres, radii, plane.normal, plane.offset, *out)
    return out


def spheres_heightmap(centres: np.ndarray, radii: np.ndarray, hm: Heightmap, iterations: int = 3) -> Features:
    """k spheres (A) against a heightmap (B).

    The closest terrain point is found by projecting the centre onto the local tangent plane and
    re-evaluating the surface there (a fixed-point iteration that converges in a few steps for
    bumps much wider than the sphere); the gap is the distance to that tangent plane.
    """
    x, y = centres[:, 0].copy(), centres[:, 1].copy()
    for _ in range(iterations + 1):
        z, n = hm.surfaces(x, y)
        d = np.einsum("ij,ij->i", n, centres - np.column_stack((x, y, z)))
        foot = centres - d[:, None] * n
        x, y = foot[:, 0], foot[:, 1]
    # the last pass evaluated the surface at the final foot point; its d is the distance
    return _at_midpoint(foot, n, d - radii)


def spheres_spheres(centres_a: np.ndarray, radii_a: np.ndarray, centres_b: np.ndarray,
                    radii_b: np.ndarray) -> Features:
    """Spheres A against spheres B pairwise; coincident centres get the world z axis as normal."""
    diff = centres_a - centres_b
    dist = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    apart = dist > 1e-12
    n = np.where(apart[:, None], diff / np.where(apart, dist, 1.0)[:, None], np.array([0.0, 0.0, 1.0]))
    return _at_midpoint(centres_b + radii_b[:, None] * n, n, dist - radii_a - radii_b)


def spheres_box(centres: np.ndarray, radii: np.ndarray, rotation: np.ndarray, translation: np.ndarray,
                half_extents: np.ndarray) -> Features:
    """k spheres (A) against one box (B) given by its rotation, centre and half extents.

    Outside the box the closest box point is the clamped centre; inside, the exit is through the
    nearest face (the normal is that face's outward normal and phi = -(depth + radius)).
    """
    local = (centres - translation) @ rotation
    clamped = np.clip(local, -half_extents, half_extents)
    diff = local - clamped
    dist = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    outside = dist > 1e-12
    n_local = diff / np.where(outside, dist, 1.0)[:, None]
    phi = dist - radii
    surface = clamped
    if not outside.all():
        inside = np.flatnonzero(~outside)
        slack = half_extents - np.abs(local[inside])
        axis = np.argmin(slack, axis=1)
        sign = np.where(local[inside, axis] >= 0.0, 1.0, -1.0)
        n_local[inside] = 0.0
        n_local[inside, axis] = sign
        phi[inside] = -slack[np.arange(inside.size), axis] - radii[inside]
        surface = clamped.copy()
        surface[inside] = local[inside]
        surface[inside, axis] = sign * half_extents[axis]
    return _at_midpoint(surface @ rotation.T + translation, n_local @ rotation.T, phi)


def sphere_plane(centre: np.ndarray, radius: float, plane: Plane) -> Feature:
    """Sphere (A) against a plane (B)."""
    return spheres_plane(np.reshape(centre, (1, 3)), np.array([radius]), plane).one()


def sphere_heightmap(centre: np.ndarray, radius: float, hm: Heightmap, iterations: int = 3) -> Feature:
    """Sphere (A) against a heightmap (B) (see :func:`spheres_heightmap`)."""
    return spheres_heightmap(np.reshape(centre, (1, 3)), np.array([radius]), hm, iterations).one()


def sphere_sphere(centre_a: np.ndarray, radius_a: float, centre_b: np.ndarray, radius_b: float) -> Feature:
    """Sphere A against sphere B (see :func:`spheres_spheres`)."""
    return spheres_spheres(np.reshape(centre_a, (1, 3)), np.array([radius_a]), np.reshape(centre_b, (1, 3)),
                           np.array([radius_b])).one()


def sphere_box(centre: np.ndarray, radius: float, rotation: np.ndarray, translation: np.ndarray,
               half_extents: np.ndarray) -> Feature:
    """Sphere (A) against a box (B) (see :func:`spheres_box`)."""
    return spheres_box(np.reshape(centre, (1, 3)), np.array([radius]), rotation, translation, half_extents).one()


#: The eight corners of the unit box, as signs of the half extents.
BOX_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
