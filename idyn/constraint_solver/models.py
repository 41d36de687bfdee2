"""Constraint models in the paper's units: range-of-motion limits (Sec. 5.4), Winkler elastic
foundation elements (Sec. 5.5), Hertzian point contact (Sec. 6.4, eqs. 121-123) and the
memoryless Coulomb tangential dampers (Sec. 6.4).

Each law returns a :class:`SpringLaw` (phi, K, B per row) for rows whose Jacobian G is the
derivative of a *length* (or angle): phi_dot = G v is the separation rate, and lambda is a
force (torque) in newtons (newton metres) acting along G^T.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .constraints import ConstraintRows


@dataclass(frozen=True)
class SpringLaw:
    phi: np.ndarray
    K: np.ndarray
    B: np.ndarray


def _positive(x, name: str) -> float:
    x = float(x)
    if not np.isfinite(x) or x <= 0:
        raise InvalidInputError(f"{name} must be positive and finite, got {x}")
    return x


def hertz_force(depth, e_star: float, radius: float) -> np.ndarray:
    """Eq. 121: f = E* sqrt(r d^3) (E* lumps both bodies' moduli and Poisson ratios)."""
    d = np.maximum(np.asarray(depth, dtype=float), 0.0)
    return e_star * np.sqrt(radius * d ** 3)


def hertz(depth, e_star: float, radius: float, damping: float) -> SpringLaw:
    """Hertzian point contact, eqs. 121-123, as a spring on the separation.

    The paper uses the pseudo-deformation phi = d^(3/2) (eq. 123) with the pseudo-stiffness
    K = E* sqrt(r) (eq. 122), so -K phi is the Hertz force of eq. 121 (units N). That
    phi is not power-conjugate to a force in newtons (G^T lambda would be N m^(1/2)), and the
    friction cone of Sec. 6.4 compares lambda_n with tangential forces in newtons (the paper
    reads lambda_n ~ 2.5 N per foot as a force). We therefore keep eqs. 121-122 and express
    the spring on the separation (G = unit-normal Jacobian) with the state-dependent stiffness
    the paper allows (Sec. 4.1): the tangent stiffness K = dF/dd = 1.5 E* sqrt(r d) and
    phi = -F(d)/K = -(2/3) d, so that -K phi = eq. 121 exactly at the evaluated state and the
    implicit step uses the correct linearization F(d1) ~ F(d0) + K (d1 - d0).
    """
    e_star, radius = _positive(e_star, "E*"), _positive(radius, "radius")
    d = np.maximum(np.asarray(depth, dtype=float), 0.0)
    K = 1.5 * e_star * np.sqrt(radius * d)
    return SpringLaw(-(2.0 / 3.0) * d, K, np.full(d.shape, float(damping)))


def winkler(depth, youngs_modulus: float, element_area: float, foundation_depth: float,
            damping: float) -> SpringLaw:
    """Elastic foundation element (Sec. 5.5): K = E * area / depth, phi = -penetration."""
    k = (_positive(youngs_modulus, "E") * _positive(element_area, "element area")
         / _positive(foundation_depth, "foundation depth"))
    d = np.asarray(depth, dtype=float)
    return SpringLaw(-d, np.full(d.shape, k), np.full(d.shape, float(damping)))


def coulomb_tangents(count: int, h: float, damping_scale: float = 1e6) -> SpringLaw:
    """Memoryless Coulomb friction dampers (Sec. 6.4): K_r = K_s = 0, B = 1e6 / h."""
    b = _positive(damping_scale, "damping scale") / _positive(h, "h")
    return SpringLaw(np.zeros(count), np.zeros(count), np.full(count, b))


def range_of_motion(index: int, nv: int, angle: float, lower: float | None,
                    upper: float | None, k: float, b: float) -> ConstraintRows | None:
    """Soft joint limits lower <= q[index] <= upper as unilateral rows (Sec. 5.4).

    phi = angle - lower (G = +e_index) or upper - angle (G = -e_index); only violated or
    touching limits (phi <= 0) are returned, as a separated limit exerts nothing. K in
    N m/rad, B in N m s/rad; lambda is a joint torque.
    """
    rows, phis = [], []
    if lower is not None and angle - lower <= 0:
        rows.append(1.0)
        phis.append(angle - lower)
    if upper is not None and upper - angle <= 0:
        rows.append(-1.0)
        phis.append(upper - angle)
    if not rows:
        return None
    G = np.zeros((len(rows), nv))
    G[np.arange(len(rows)), index] = rows
    return ConstraintRows(G, np.array(phis), np.full(len(rows), float(k)),
                          np.full(len(rows), float(b)))
