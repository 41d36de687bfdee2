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


@dataclass(frozen=True)
class HertzLaw:
    """Hertzian normal force F(d) = c max(d, 0)^(3/2), c = E* sqrt(r) per contact (eqs. 121-122),
    and its linearisations for the implicit step.

    The paper linearises the law about the current state: pseudo-deformation phi = d^(3/2) with
    constant K = E* sqrt(r) (eqs. 122-123), i.e. the tangent F(d0) + F'(d0) (d1 - d0). Its
    stiffness F'(0) is zero, so a contact that starts a step touching or separated exerts no
    force within the step however far the bodies move into each other: they overlap by up to
    g h^2 + |v| h (about 1 mm at h = 10 ms), and the next step's spring pushes them out,
    adding energy (the sphere stack of Sec. 6.5 blew up at 100 spheres).

    :meth:`chord` linearises instead by the chord of the convex F over [d_lo, d_ref],
    d_lo = max(d0, 0), d_ref > d_lo a *reference depth* the end-of-step depth d1 should not
    exceed: F_lin(d) = F(d_lo) + s (d - d_lo), s = (F(d_ref) - F(d_lo)) / (d_ref - d_lo).
    It reproduces F at the current state (static equilibria stay those of Hertz) and has
    positive stiffness at zero depth (separated contacts are speculative rows that engage
    at touch). Because F is convex (with F = 0 below zero depth), the chord lies above F on
    [d_lo, d_ref] and below it outside, so whenever d1 <= d_ref the step's force does at least
    the work the Hertz energy U (:meth:`energy`) stores when compressing and at most the work
    it releases when separating: the implicit step cannot add energy
    (:func:`~idyn.constraint_solver.nonlinear.solve_with_chords` enforces d1 <= d_ref).
    With d_ref = d_lo the chord is the tangent (the paper's linearisation, for d0 > 0).
    """
    c: np.ndarray
    damping: float

    @classmethod
    def of(cls, e_star: float, radius, damping: float) -> "HertzLaw":
        radius = np.asarray(radius, dtype=float)
        if not (np.all(np.isfinite(radius)) and np.all(radius > 0)):
            raise InvalidInputError("Hertz contact radii must be positive and finite")
        return cls(_positive(e_star, "E*") * np.sqrt(radius), float(damping))

    def take(self, idx) -> "HertzLaw":
        """The law of the contacts ``idx``."""
        return HertzLaw(self.c[idx], self.damping)

    def force(self, depth) -> np.ndarray:
        return self.c * np.maximum(np.asarray(depth, dtype=float), 0.0) ** 1.5

    def energy(self, depth) -> np.ndarray:
        """U(d) = 2/5 c d^(5/2), the elastic energy whose derivative is F."""
        return 0.4 * self.c * np.maximum(np.asarray(depth, dtype=float), 0.0) ** 2.5

    def depth_at(self, force) -> np.ndarray:
        """The depth at which F equals ``force`` (0 for force <= 0)."""
        return (np.maximum(np.asarray(force, dtype=float), 0.0) / self.c) ** (2.0 / 3.0)

    def chord(self, depth, reference) -> SpringLaw:
        """Rows on the separation (phi = -d for a plain spring): -K (phi + h phi_dot1) is the
        chord F_lin at d1 = d0 - h phi_dot1. Damping acts only on overlapping contacts (a
        separated pair has nothing to damp)."""
        d = np.asarray(depth, dtype=float)
        lo = np.maximum(d, 0.0)
        ref = np.maximum(np.asarray(reference, dtype=float), lo)
        f_lo = self.force(lo)
        width = ref - lo
        tangent = width <= 1e-12 * np.maximum(lo, 1e-300)
        safe = np.where(tangent, 1.0, width)
        s = np.where(tangent, 1.5 * self.c * np.sqrt(lo), (self.force(ref) - f_lo) / safe)
        offset = np.divide(f_lo, s, out=np.zeros_like(s), where=s > 0)
        return SpringLaw(lo - d - offset, s, np.where(d > 0, self.damping, 0.0))


def hertz(depth, e_star: float, radius: float, damping: float) -> SpringLaw:
    """Hertzian point contact, eqs. 121-123, linearised about the current depth (the tangent).

    The paper uses the pseudo-deformation phi = d^(3/2) (eq. 123) with the pseudo-stiffness
    K = E* sqrt(r) (eq. 122), so -K phi is the Hertz force of eq. 121 (units N). That
    phi is not power-conjugate to a force in newtons (G^T lambda would be N m^(1/2)), and the
    friction cone of Sec. 6.4 compares lambda_n with tangential forces in newtons (the paper
    reads lambda_n ~ 2.5 N per foot as a force). We therefore keep eqs. 121-122 and express
    the spring on the separation (G = unit-normal Jacobian) with the state-dependent stiffness
    the paper allows (Sec. 4.1): the tangent stiffness K = dF/dd = 1.5 E* sqrt(r d) and
    phi = -F(d)/K = -(2/3) d, so that -K phi = eq. 121 exactly at the evaluated state and the
    implicit step uses the linearization F(d1) ~ F(d0) + K (d1 - d0). Adequate for contacts
    that stay loaded (the incline's feet); contacts that open and close need
    :meth:`HertzLaw.chord`.
    """
    law = HertzLaw.of(e_star, radius, damping)
    return law.chord(depth, depth)


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
                    upper: float | None, k: float, b: float,
                    margin: float = 0.0) -> ConstraintRows | None:
    """Soft joint limits lower <= q[index] <= upper as unilateral rows (Sec. 5.4).

    phi = angle - lower (G = +e_index) or upper - angle (G = -e_index), the signed constraint
    function of Sec. 5.1 (positive when the limit is not reached). A limit is returned when
    phi <= margin; K in N m/rad, B in N m s/rad; lambda is a joint torque.

    margin = 0 keeps only limits already touched at t0. The discretized law (eqs. 75, 84)
    evaluates the spring at t1, lambda1 >= -K phi1 - B phi_dot1, so a limit the step would
    cross belongs in the program even while phi0 > 0 (a *speculative* row). Without damping
    (B = 0) the QP gives such a row lambda1 = 0 unless the predicted phi1 is negative, so a
    margin at least as large as the distance the step can close (e.g. 2 h |theta_dot| +
    h^2 |theta_ddot|) gives the paper's law exactly; with B > 0 the law pushes already while
    phi1 > 0 and phi_dot1 < 0 (lambda1 >= -K phi1 - B phi_dot1), so only margin = inf is the
    paper's law there. With margin = 0 a stiff limit (k h^2 >> inertia) engages one step late
    and returns the penetration of that step as rebound velocity (docs/results.md, Fig. 6).
    """
    if not margin >= 0:
        raise InvalidInputError(f"margin must be >= 0, got {margin}")
    rows, phis = [], []
    if lower is not None and angle - lower <= margin:
        rows.append(1.0)
        phis.append(angle - lower)
    if upper is not None and upper - angle <= margin:
        rows.append(-1.0)
        phis.append(upper - angle)
    if not rows:
        return None
    G = np.zeros((len(rows), nv))
    G[np.arange(len(rows)), index] = rows
    return ConstraintRows(G, np.array(phis), np.full(len(rows), float(k)),
                          np.full(len(rows), float(b)))
