"""Closest features between simple shapes: the contact points of the simulator (paper Fig. 4).

Each function returns the contact data of one pair in world coordinates, in the sign
conventions of :class:`idyn.Contact` (body A is the first argument):

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


class Feature(NamedTuple):
    """The closest features of one shape pair: contact point, normal (B to A) and gap."""

    point: np.ndarray
    normal: np.ndarray
    phi: float


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


@dataclass(frozen=True)
class Heightmap:
    """Terrain ``z = H(x, y)`` sampled on a regular grid, bilinearly interpolated.

    ``heights[iy, ix]`` is the height at ``(x0 + ix * spacing, y0 + iy * spacing)`` (the layout
    of :func:`robots.pybullet.terrain.rough_heightmap`). ``mu`` is a scalar or one coefficient per
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
        """A square grid spanning ``[-size/2, size/2]^2`` (the rough terrain of SPEC section 6)."""
        h = np.asarray(heights, dtype=float)
        return cls(h, size / (h.shape[1] - 1), -size / 2, -size / 2, mu)

    def _cell(self, x: float, y: float):
        ny, nx = self.heights.shape
        u = min(max((x - self.x0) / self.spacing, 0.0), nx - 1.0)
        w = min(max((y - self.y0) / self.spacing, 0.0), ny - 1.0)
        ix, iy = min(int(u), nx - 2), min(int(w), ny - 2)
        inside_x = 0.0 < (x - self.x0) / self.spacing < nx - 1.0
        inside_y = 0.0 < (y - self.y0) / self.spacing < ny - 1.0
        return ix, iy, u - ix, w - iy, inside_x, inside_y

    def surface(self, x: float, y: float) -> tuple[float, np.ndarray]:
        """Height and upward unit normal ``(-dH/dx, -dH/dy, 1) / norm`` at ``(x, y)``."""
        ix, iy, fx, fy, inx, iny = self._cell(x, y)
        H = self.heights
        h00, h10, h01, h11 = H[iy, ix], H[iy, ix + 1], H[iy + 1, ix], H[iy + 1, ix + 1]
        z = (h00 * (1 - fx) + h10 * fx) * (1 - fy) + (h01 * (1 - fx) + h11 * fx) * fy
        gx = ((h10 - h00) * (1 - fy) + (h11 - h01) * fy) / self.spacing if inx else 0.0
        gy = ((h01 - h00) * (1 - fx) + (h11 - h10) * fx) / self.spacing if iny else 0.0
        n = np.array([-gx, -gy, 1.0])
        return float(z), n / np.linalg.norm(n)

    def friction_at(self, point) -> float:
        if self.mu.ndim == 0:
            return float(self.mu)
        ix, iy, fx, fy, _, _ = self._cell(point[0], point[1])
        if self.mu.shape == self.heights.shape:  # per node: nearest node
            return float(self.mu[iy + int(round(fy)), ix + int(round(fx))])
        return float(self.mu[iy, ix])


@dataclass(frozen=True)
class StaticBox:
    """A box fixed in the world: half extents, rotation (3 x 3) and centre."""

    half_extents: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    mu: float = 1.0

    def __post_init__(self):
        half = validation.vector(self.half_extents, 3, "box half extents")
        if (half <= 0).any():
            raise InvalidInputError(f"box half extents must be positive, got {half}")
        object.__setattr__(self, "half_extents", half)
        object.__setattr__(self, "rotation", validation.matrix(self.rotation, (3, 3), "box rotation"))
        object.__setattr__(self, "translation", validation.vector(self.translation, 3, "box centre"))
        object.__setattr__(self, "mu", _check_mu(self.mu))

    def friction_at(self, point) -> float:
        return self.mu


def _check_mu(mu) -> float:
    mu = float(mu)
    if np.isnan(mu) or mu < 0:
        raise InvalidInputError(f"friction coefficient must be >= 0, got {mu}")
    return mu


# ---------------------------------------------------------------------- closest features
def sphere_plane(centre: np.ndarray, radius: float, plane: Plane) -> Feature:
    """Sphere (A) against a plane (B)."""
    n = plane.normal
    phi = float(n @ centre - plane.offset - radius)
    return Feature(centre - (radius + 0.5 * phi) * n, n, phi)


def sphere_heightmap(centre: np.ndarray, radius: float, hm: Heightmap, iterations: int = 3) -> Feature:
    """Sphere (A) against a heightmap (B).

    The closest terrain point is found by projecting the centre onto the local tangent plane and
    re-evaluating the surface there (a fixed-point iteration that converges in a few steps for
    bumps much wider than the sphere); the gap is the distance to that tangent plane.
    """
    x, y = centre[0], centre[1]
    for _ in range(iterations):
        z, n = hm.surface(x, y)
        d = n @ (centre - np.array([x, y, z]))
        foot = centre - d * n
        x, y = foot[0], foot[1]
    z, n = hm.surface(x, y)
    phi = float(n @ (centre - np.array([x, y, z])) - radius)
    return Feature(centre - (radius + 0.5 * phi) * n, n, phi)


def sphere_sphere(centre_a: np.ndarray, radius_a: float, centre_b: np.ndarray, radius_b: float) -> Feature:
    """Sphere A against sphere B; coincident centres get the world z axis as normal."""
    d = centre_a - centre_b
    dist = float(np.linalg.norm(d))
    n = d / dist if dist > 1e-12 else np.array([0.0, 0.0, 1.0])
    phi = dist - radius_a - radius_b
    return Feature(centre_b + (radius_b + 0.5 * phi) * n, n, phi)


def sphere_box(centre: np.ndarray, radius: float, rotation: np.ndarray, translation: np.ndarray,
               half_extents: np.ndarray) -> Feature:
    """Sphere (A) against a box (B) given by its rotation, centre and half extents.

    Outside the box the closest box point is the clamped centre; inside, the exit is through the
    nearest face (the normal is that face's outward normal and phi = -(depth + radius)).
    """
    local = rotation.T @ (centre - translation)
    clamped = np.clip(local, -half_extents, half_extents)
    diff = local - clamped
    dist = float(np.linalg.norm(diff))
    if dist > 1e-12:
        n_local = diff / dist
        phi = dist - radius
        surface = clamped
    else:
        slack = half_extents - np.abs(local)
        axis = int(np.argmin(slack))
        n_local = np.zeros(3)
        n_local[axis] = 1.0 if local[axis] >= 0 else -1.0
        phi = -float(slack[axis]) - radius
        surface = local.copy()
        surface[axis] = n_local[axis] * half_extents[axis]
    n = rotation @ n_local
    point = rotation @ surface + translation + 0.5 * phi * n
    return Feature(point, n, float(phi))


#: The eight corners of the unit box, as signs of the half extents.
BOX_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
