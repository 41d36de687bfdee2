"""Terrains of the quadruped experiments as data, independent of any simulator (docs/experiments.md).

The facts (friction stand-in for no slip, compliant sink, rough-terrain grid) and the seeded
generators of the rough terrain's heights and per-cell friction live here so that every backend
(PyBullet, idyn.sim) builds the same ground from the same seed.
"""
from __future__ import annotations

import math

import numpy as np

from idyn.contact import NO_SLIP_MU
from idyn.errors import InvalidInputError

TERRAINS = ("rigid", "compliant", "rough")
#: compliant ground: static sink (m) of a robot standing on four contacts (paper Sec. 7.5)
COMPLIANT_SINK = 0.001
COMPLIANT_CONTACTS = 4
#: rough terrain (docs/experiments.md)
ROUGH_SIZE = 3.0
ROUGH_RESOLUTION = 0.02
ROUGH_BUMPS = 1000
ROUGH_MAX_HEIGHT = 0.03
ROUGH_MU_RANGE = (0.1, 1.5)


def simulated_mu(mu) -> float:
    """The Coulomb coefficient given to the simulator (inf -> 100); InvalidInputError if bad."""
    mu = float(mu)
    if math.isnan(mu) or mu < 0:
        raise InvalidInputError(f"friction coefficient must be >= 0 (inf for no slip), got {mu}")
    return NO_SLIP_MU if math.isinf(mu) else mu


def rough_heightmap(seed: int, size: float = ROUGH_SIZE, resolution: float = ROUGH_RESOLUTION,
                    bumps: int = ROUGH_BUMPS, max_height: float = ROUGH_MAX_HEIGHT) -> np.ndarray:
    """Heights (m) at the grid nodes, shape (n, n) indexed [iy, ix], from ``seed``.

    Sum of ``bumps`` isotropic Gaussians with centres uniform over the square, widths
    sigma ~ U(0.02, 0.1) m and amplitudes ~ U(0, 1), then scaled so the maximum is
    ``max_height`` (the minimum stays >= 0).
    """
    rng = np.random.default_rng(seed)
    n = int(round(size / resolution)) + 1
    axis = np.linspace(-size / 2, size / 2, n)
    centres = rng.uniform(-size / 2, size / 2, (bumps, 2))
    sigma = rng.uniform(0.02, 0.1, bumps)
    amp = rng.uniform(0.0, 1.0, bumps)
    h = np.zeros((n, n))
    for (cx, cy), s, a in zip(centres, sigma, amp):
        gx = np.exp(-0.5 * ((axis - cx) / s) ** 2)
        gy = np.exp(-0.5 * ((axis - cy) / s) ** 2)
        h += a * np.outer(gy, gx)
    return h * (max_height / h.max())


def rough_friction(seed: int, nodes: int, mu_range=ROUGH_MU_RANGE) -> np.ndarray:
    """Per-cell Coulomb friction of the rough terrain, U(mu_range), shape (nodes-1, nodes-1).

    An independent stream from the heights, still determined by ``seed``."""
    return np.random.default_rng([int(seed), 1]).uniform(*mu_range, (nodes - 1, nodes - 1))
