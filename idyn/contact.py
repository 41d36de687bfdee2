"""Contacts and the contact matrices of the paper (Sec. 2.3, 4.1, 5.1 and Appendix B).

A :class:`Contact` is a point between body A and body B (``body_b=None`` is the static world).
Sign conventions, fixed once for all of idyn:

* ``normal`` is the unit direction of the force that B exerts on A (for a foot on the ground it
  is the ground normal, pointing up);
* the gap ``phi`` is positive when the bodies are separated, negative when they overlap
  (paper eq. 9);
* a row of N maps v to the normal component of the velocity of A's material point relative to
  B's at the contact point, so N v = d(phi)/dt and a positive normal impulse z gives the
  generalized impulse N^T z (paper Appendix B).

Tangent directions s, t come from the rotation that takes the world z axis onto the normal by the
shortest arc. This frame is deterministic and continuous in the normal everywhere except at
n = -z (no frame field on the sphere can be continuous everywhere), and equals (x, y) on flat
ground, so forces reported as [normal, s, t] read naturally.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import validation
from .errors import InvalidInputError
from .model import RobotModel


def tangent_frame(normal) -> tuple[np.ndarray, np.ndarray]:
    """Unit tangents (s, t) with (s, t, n) right-handed, by the shortest rotation from z to n."""
    n = np.asarray(normal, dtype=float)
    c = n[2]
    if c < -1.0 + 1e-12:  # n = -z: the shortest arc is not unique; rotate about x
        return np.array([1.0, 0.0, 0.0]), np.array([0.0, -1.0, 0.0])
    # Rodrigues rotation taking z to n, applied to x and y (closed form).
    k = 1.0 / (1.0 + c)
    s = np.array([1.0 - k * n[0] * n[0], -k * n[0] * n[1], -n[0]])
    t = np.array([-k * n[0] * n[1], 1.0 - k * n[1] * n[1], -n[1]])
    return s, t


@dataclass(frozen=True)
class Contact:
    """One contact point between ``body_a`` and ``body_b`` (None: the world).

    ``mu`` is the Coulomb coefficient; ``math.inf`` (or anything >= 100 for the no-slip
    controllers' purposes) means no slip. ``phi`` is the signed gap.
    """

    body_a: str
    body_b: str | None
    point: np.ndarray
    normal: np.ndarray
    mu: float
    phi: float = 0.0
    tangents: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        point = validation.vector(self.point, 3, "contact point")
        normal = validation.vector(self.normal, 3, "contact normal")
        norm = np.linalg.norm(normal)
        if norm < 1e-12:
            raise InvalidInputError("contact normal must be non-zero")
        mu = float(self.mu)
        if np.isnan(mu) or mu < 0:
            raise InvalidInputError(f"friction coefficient must be >= 0, got {self.mu}")
        if not np.isfinite(float(self.phi)):
            raise InvalidInputError(f"gap phi must be finite, got {self.phi}")
        if self.body_a == self.body_b:
            raise InvalidInputError("a contact needs two different bodies")
        normal = normal / norm
        object.__setattr__(self, "point", point)
        object.__setattr__(self, "normal", normal)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "phi", float(self.phi))
        object.__setattr__(self, "tangents", tangent_frame(normal))

    def frame(self) -> np.ndarray:
        """3 x 3 matrix with rows n, s, t (world to contact-frame rotation)."""
        s, t = self.tangents
        return np.vstack((self.normal, s, t))


@dataclass(frozen=True)
class ContactJacobians:
    """N, S, T (each m x nv), the gaps phi and the friction coefficients of m contacts."""

    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    phi: np.ndarray
    mu: np.ndarray

    @property
    def m(self) -> int:
        return self.N.shape[0]

    @property
    def D(self) -> np.ndarray:
        """The friction pyramid directions [S; -S; T; -T] (4m x nv, paper Sec. 5.1)."""
        return friction_pyramid(self.S, self.T)

    def stacked(self) -> np.ndarray:
        """[N; S; T] (3m x nv): the full contact Jacobian, normal rows first."""
        return np.vstack((self.N, self.S, self.T))


def friction_pyramid(S: np.ndarray, T: np.ndarray) -> np.ndarray:
    """D = [S; -S; T; -T], the four-edge linearized friction cone of paper Sec. 5.1."""
    return np.vstack((S, -S, T, -T))


def _relative_point_jacobians(model: RobotModel, q, contacts) -> np.ndarray:
    """(m, 3, nv) Jacobians of the velocity of A's point relative to B's at each contact."""
    frames, points, owners = [], [], []
    for i, c in enumerate(contacts):
        frames.append(c.body_a)
        points.append(c.point)
        owners.append((i, 1.0))
        if c.body_b is not None:
            frames.append(c.body_b)
            points.append(c.point)
            owners.append((i, -1.0))
    Jp = model.point_jacobians(q, frames, np.array(points))
    J = np.zeros((len(contacts), 3, model.nv))
    for (i, sign), Jk in zip(owners, Jp):
        J[i] += sign * Jk
    return J


def contact_jacobians(model: RobotModel, q, contacts) -> ContactJacobians:
    """Build N, S, T for ``contacts`` at configuration ``q`` (paper Appendix B)."""
    contacts = list(contacts)
    if not contacts:
        z = np.zeros((0, model.nv))
        return ContactJacobians(z, z.copy(), z.copy(), np.zeros(0), np.zeros(0))
    J = _relative_point_jacobians(model, q, contacts)
    frames = np.array([c.frame() for c in contacts])          # (m, 3, 3): rows n, s, t
    NST = np.einsum("mij,mjk->mik", frames, J)                   # (m, 3, nv)
    return ContactJacobians(
        N=np.ascontiguousarray(NST[:, 0]),
        S=np.ascontiguousarray(NST[:, 1]),
        T=np.ascontiguousarray(NST[:, 2]),
        phi=np.array([c.phi for c in contacts]),
        mu=np.array([c.mu for c in contacts]),
    )


def contact_drift(model: RobotModel, q, v, contacts) -> np.ndarray:
    """(m, 3) array of [Ndot v, Sdot v, Tdot v] per contact (contact frame held fixed).

    These are the velocity-product terms of the acceleration-level constraints (paper eqs.
    33-34); each is the relative classical acceleration of the contact points at vdot = 0.
    """
    out = np.zeros((len(contacts), 3))
    for i, c in enumerate(contacts):
        a = model.point_drift(q, v, c.body_a, c.point)
        if c.body_b is not None:
            a = a - model.point_drift(q, v, c.body_b, c.point)
        out[i] = c.frame() @ a
    return out


def gaps(contacts) -> np.ndarray:
    """The gap vector phi of a list of contacts."""
    return np.array([c.phi for c in contacts], dtype=float)
