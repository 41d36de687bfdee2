"""The solver's input: spring-damper constraint rows on a generic multibody.

A constraint row i is a (virtual) spring-damper with deformation phi_i(q), rate
phi_dot_i = G_i v, stiffness K_i >= 0 and damping B_i >= 0 (paper eqs. 15-25); ``Gdot_v`` is the
velocity-product term Gdot v of eq. 29. Three kinds exist:

* bilateral rows (eq. 23; Sec. 4): lambda = -K phi - B phi_dot - Mhat Gdot v,
* unilateral rows (eqs. 68-71; Sec. 5): lambda = max(0, -K phi - B phi_dot - Mhat Gdot v),
* contacts (Sec. 6): a unilateral normal row n plus tangential rows r (2D) or r and s (3D) with
  Coulomb's law |(lambda_r, lambda_s)| <= mu lambda_n; mu = 0 means frictionless, mu = inf
  means no slip.

Unilateral rows and contact normals describe constraints that are *active* (phi <= 0, the spring
is compressed or touching): a separated spring is at rest length and exerts nothing
(Sec. 5, Fig. 5; Sec. 6 "disjoint bodies do not deform"), so the caller leaves it out.

The multibody is any (M, f): M the generalized inertia (dense, scipy.sparse, or a
:class:`~idyn.constraint_solver.mass.MassMatrix` that caches its factorization), f every
non-constraint generalized force (for a pinocchio model, tau - bias_forces(q, v)).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import validation
from ..errors import InvalidInputError, NonFiniteError, ShapeError
from .mass import MassMatrix


def _jacobian(G, nv: int, name: str):
    if sp.issparse(G):
        if G.format != "csr" or G.dtype != np.float64:
            G = sp.csr_matrix(G, dtype=float)
        if G.shape[1] != nv:
            raise ShapeError(f"{name} must have {nv} columns, got {G.shape}")
        if not np.isfinite(G.data).all():
            raise NonFiniteError(f"{name} contains NaN or infinite values")
        return G
    return validation.matrix(np.atleast_2d(G), (None, nv), name)


def _row_vector(x, m: int, name: str, default: float | None = None) -> np.ndarray:
    if x is None:
        if default is None:
            raise InvalidInputError(f"{name} is required")
        return np.full(m, float(default))
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        a = np.full(m, float(a))
    return validation.vector(a, m, name)


@dataclass(frozen=True)
class ConstraintRows:
    """m spring-damper rows: Jacobian G (m x nv), phi, phi_dot, K, B, Gdot v (all length m).

    ``phi_dot`` defaults to G v0 (set by :meth:`ConstraintProblem.__post_init__`), ``Gdot_v`` to 0.
    """
    G: np.ndarray | sp.csr_matrix
    phi: np.ndarray
    K: np.ndarray
    B: np.ndarray
    phi_dot: np.ndarray | None = None
    Gdot_v: np.ndarray | None = None

    @property
    def m(self) -> int:
        return self.G.shape[0]

    def checked(self, nv: int, v0: np.ndarray, name: str) -> "ConstraintRows":
        G = _jacobian(self.G, nv, f"{name}.G")
        m = G.shape[0]
        K = _row_vector(self.K, m, f"{name}.K")
        B = _row_vector(self.B, m, f"{name}.B")
        if (K < 0).any() or (B < 0).any():
            raise InvalidInputError(f"{name}: stiffness K and damping B must be non-negative")
        phi = _row_vector(self.phi, m, f"{name}.phi")
        phi_dot = G @ v0 if self.phi_dot is None else _row_vector(self.phi_dot, m, f"{name}.phi_dot")
        Gdot_v = _row_vector(self.Gdot_v, m, f"{name}.Gdot_v", default=0.0)
        return ConstraintRows(G, phi, K, B, np.asarray(phi_dot, dtype=float), Gdot_v)

    def take(self, idx: np.ndarray) -> "ConstraintRows":
        """The subset of rows ``idx``."""
        if np.array_equal(idx, np.arange(self.m)):
            return self
        return ConstraintRows(self.G[idx], self.phi[idx], self.K[idx], self.B[idx],
                              None if self.phi_dot is None else self.phi_dot[idx],
                              None if self.Gdot_v is None else self.Gdot_v[idx])


def concat_rows(first: ConstraintRows, second: ConstraintRows | None) -> ConstraintRows:
    """Rows of ``first`` then ``second`` (checked rows: every field is an array)."""
    if second is None:
        return first
    if sp.issparse(first.G) or sp.issparse(second.G):
        G = sp.vstack([sp.csr_matrix(first.G), sp.csr_matrix(second.G)], format="csr")
    else:
        G = np.vstack([first.G, second.G])
    return ConstraintRows(G, *(np.r_[getattr(first, k), getattr(second, k)]
                               for k in ("phi", "K", "B", "phi_dot", "Gdot_v")))


@dataclass(frozen=True)
class ContactRows:
    """m point contacts: normal rows n, tangential rows r (and s in 3D), friction mu (length m).

    For Coulomb friction the paper sets K_r = K_s = 0 (memoryless) and B_r, B_s large
    (Sec. 6.4: 1e6 / h); see :func:`idyn.constraint_solver.models.coulomb_tangent_rows`.
    """
    normal: ConstraintRows
    tangent_r: ConstraintRows
    mu: np.ndarray
    tangent_s: ConstraintRows | None = None

    @property
    def m(self) -> int:
        return self.normal.m

    @property
    def three_d(self) -> bool:
        return self.tangent_s is not None

    def checked(self, nv: int, v0: np.ndarray, name: str) -> "ContactRows":
        n = self.normal.checked(nv, v0, f"{name}.normal")
        r = self.tangent_r.checked(nv, v0, f"{name}.tangent_r")
        s = None if self.tangent_s is None else self.tangent_s.checked(nv, v0, f"{name}.tangent_s")
        mu = np.asarray(self.mu, dtype=float)
        mu = np.full(n.m, float(mu)) if mu.ndim == 0 else mu
        if mu.shape != (n.m,) or np.isnan(mu).any() or (mu < 0).any():
            raise InvalidInputError(f"{name}.mu must be {n.m} non-negative numbers (inf allowed)")
        if r.m != n.m or (s is not None and s.m != n.m):
            raise ShapeError(f"{name}: normal, tangent_r and tangent_s need the same row count")
        return ContactRows(n, r, mu, s)


@dataclass(frozen=True)
class ConstraintProblem:
    """One step's input: M, f, v0, h and the constraints, evaluated at (q0, v0) (Sec. 4.2)."""
    M: MassMatrix | np.ndarray | sp.spmatrix
    f: np.ndarray
    v0: np.ndarray
    h: float
    bilateral: ConstraintRows | None = None
    unilateral: ConstraintRows | None = None
    contacts: ContactRows | None = None

    def __post_init__(self):
        M = self.M if isinstance(self.M, MassMatrix) else MassMatrix(self.M)
        nv = M.nv
        h = float(self.h)
        if not np.isfinite(h) or h <= 0:
            raise InvalidInputError(f"step size h must be positive and finite, got {self.h}")
        v0 = validation.vector(self.v0, nv, "v0")
        object.__setattr__(self, "M", M)
        object.__setattr__(self, "h", h)
        object.__setattr__(self, "v0", v0)
        object.__setattr__(self, "f", validation.vector(self.f, nv, "f"))
        for name in ("bilateral", "unilateral", "contacts"):
            rows = getattr(self, name)
            if rows is not None:
                rows = rows.checked(nv, v0, name)
                object.__setattr__(self, name, rows if rows.m else None)

    @property
    def nv(self) -> int:
        return self.M.nv

    def frictionless(self) -> "ConstraintProblem":
        """The same problem with contact normals as unilateral rows (order [n, u]) and no
        tangential rows: the QP of Sec. 5.3 (eqs. 83-85) plus any bilateral rows."""
        if self.contacts is None:
            return self
        return ConstraintProblem(self.M, self.f, self.v0, self.h, self.bilateral,
                                 concat_rows(self.contacts.normal, self.unilateral))
