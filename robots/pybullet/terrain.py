"""Terrains of the quadruped experiments (paper Sec. 7.5, docs/experiments.md).

* ``rigid``: a plane, restitution 0, Coulomb friction mu (mu = inf is simulated as 100).
* ``compliant``: the same plane with a spring-damper contact (PyBullet ``contactStiffness`` and
  ``contactDamping``, which Bullet integrates implicitly through ERP/CFM) tuned so the standing
  robot sinks 1 mm: the per-contact stiffness is k = W / (4 * 1 mm) for the robot's weight W
  (LINKS: 1.18e4 N/m, the authors' "about 1.2e4 N/m per foot"), so every robot sinks the paper's 1 mm;
  the damping is critical for a quarter of the robot's mass on one spring,
  c = 2 sqrt(k W / (4 g)) (LINKS: 238 N s/m): no bounce, settling in about 20 ms.
* ``rough``: a rigid heightfield of 1000 Gaussian bumps on a 3 x 3 m grid at 0.02 m resolution,
  scaled to a 0.03 m maximum, with friction drawn per grid cell from U(0.1, 1.5); both seeded.

Per-cell friction. A PyBullet body carries one friction coefficient, and the friction of a contact
is the *product* of the two bodies' coefficients. Tiling a 150 x 150 cell terrain into one body
per cell would be 22,500 bodies, and coarser tiles would not be per cell. Instead the terrain's
own coefficient is 1 and, before every step, the testbed sets the friction of each foot link to
the coefficient of the cell under that foot (:meth:`Terrain.friction_at` at the foot's closest
terrain point). Every foot contact thus gets exactly its cell's mu, and ``contacts()`` reports the
same value to the controller. (Bullet also clamps a combined friction at 10, so mu = 100 acts as
10 in the simulator: for these robots that is no-slip in practice.)
"""
from __future__ import annotations

import numpy as np
import pybullet as pb

from idyn.errors import InvalidInputError, NonFiniteError

from ..terrain import (COMPLIANT_CONTACTS, COMPLIANT_SINK, ROUGH_RESOLUTION, ROUGH_SIZE,  # noqa: F401
                       TERRAINS, rough_friction, rough_heightmap, simulated_mu)
from .base import GRAVITY

class Terrain:
    """A terrain body in one PyBullet client and its friction field."""

    def __init__(self, client: int, kind: str, mu, seed: int = 0, load: float = 47.0882):
        if kind not in TERRAINS:
            raise InvalidInputError(f"unknown terrain {kind!r}; known: {list(TERRAINS)}")
        self.client = client
        self.kind = kind
        self.seed = int(seed)
        self.heights: np.ndarray | None = None
        self.cell_mu: np.ndarray | None = None
        if kind == "rough":
            self.mu = None
            self.body = self._heightfield()
            surface_mu = 1.0
        else:
            self.mu = simulated_mu(mu)
            shape = pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=client)
            self.body = pb.createMultiBody(0.0, shape, physicsClientId=client)
            surface_mu = self.mu
            self._uniform_mu = np.empty(0)
        pb.changeDynamics(self.body, -1, lateralFriction=surface_mu, restitution=0.0,
                          spinningFriction=0.0, rollingFriction=0.0, physicsClientId=client)
        #: highest terrain point (m); the planes are at z = 0 (every contact query reads it)
        self.max_height = 0.0 if self.heights is None else float(self.heights.max())
        self.stiffness = self.damping = None
        if kind == "compliant":
            # ``load``: the weight (N) the ground carries at rest, shared by four contacts
            self.stiffness = load / (COMPLIANT_CONTACTS * COMPLIANT_SINK)
            self.damping = 2.0 * np.sqrt(self.stiffness * load / (COMPLIANT_CONTACTS * GRAVITY))
            pb.changeDynamics(self.body, -1, contactStiffness=self.stiffness,
                              contactDamping=self.damping, physicsClientId=client)


    @property
    def per_cell_friction(self) -> bool:
        return self.cell_mu is not None

    def _heightfield(self) -> int:
        self.heights = rough_heightmap(self.seed)
        n = self.heights.shape[0]
        self.cell_mu = rough_friction(self.seed, n)
        # PyBullet centres a heightfield on its origin, vertically at the middle of its range
        shape = pb.createCollisionShape(
            pb.GEOM_HEIGHTFIELD, meshScale=[ROUGH_RESOLUTION, ROUGH_RESOLUTION, 1.0],
            heightfieldData=self.heights.ravel().tolist(), numHeightfieldRows=n,
            numHeightfieldColumns=n, physicsClientId=self.client)
        z = 0.5 * (self.heights.min() + self.heights.max())
        return pb.createMultiBody(0.0, shape, basePosition=[0.0, 0.0, z], physicsClientId=self.client)

    def friction_at(self, point) -> float:
        """Coulomb coefficient of the terrain at a world point (per cell on rough terrain)."""
        if self.cell_mu is None:
            return self.mu
        n = self.cell_mu.shape[0]
        ix = int(np.clip((point[0] + ROUGH_SIZE / 2) // ROUGH_RESOLUTION, 0, n - 1))
        iy = int(np.clip((point[1] + ROUGH_SIZE / 2) // ROUGH_RESOLUTION, 0, n - 1))
        return float(self.cell_mu[iy, ix])

    def frictions(self, points: np.ndarray) -> np.ndarray:
        """:meth:`friction_at` of each of the (m, 3) world ``points`` (per step: every foot; read-only on the planes)."""
        if self.cell_mu is None:
            m = points.shape[0]
            if self._uniform_mu.shape[0] < m:     # one read-only array for every step (np.full: ~1 us)
                self._uniform_mu = np.full(m, self.mu)
                self._uniform_mu.setflags(write=False)
            return self._uniform_mu[:m]
        if not np.isfinite(points).all():
            raise NonFiniteError("PyBullet reported a non-finite contact point")
        cells = np.clip((points[:, :2] + ROUGH_SIZE / 2) // ROUGH_RESOLUTION, 0, self.cell_mu.shape[0] - 1)
        ix, iy = cells.astype(np.intp).T
        return self.cell_mu[iy, ix]

    def height_at(self, x: float, y: float) -> float:
        """Terrain height at (x, y) by a vertical ray through any bodies above it."""
        top = self.max_height + 1.0
        while True:
            hit = pb.rayTest([x, y, top], [x, y, -1.0], physicsClientId=self.client)[0]
            if hit[0] < 0:
                raise InvalidInputError(f"({x}, {y}) is outside the terrain")
            if hit[0] == self.body:
                return float(hit[3][2])
            top = hit[3][2] - 1e-9  # a robot link is above: continue below it
