"""The passive inelastic impact of rigid contacts with the friction pyramid (paper eqs. 52-56).

A contact that closes faster than its gap allows at the start of a step (a swing foot landing, a
fingertip reaching a box) must be stopped by an impulse. Finite actuators cannot deliver one:
their torques act over the step, not over the instant of impact (paper Sec. 3.2: "actuators
attached to the contacted link ... are heavily loaded"). Both the controllers' touchdown
(:mod:`idyn.controllers.impact`) and idyn.sim's passive impacts (:mod:`idyn.sim.impact`) therefore
resolve such a contact first as an instantaneous impact in which only the contact impulses act,
restitution zero, and run the step's own model from the post-impact velocity. This module is
that impact, one function for both, so a controller predicts its matched simulator's touchdowns.

Model. The Anitescu-Potra friction-pyramid LCP of paper eqs. 52-56 (the model of ``lcp-coulomb``
and of idyn.sim's ``ap-lcp``) with no force but the contact impulses over the instant (the free
velocity of eq. 64 is ``v`` itself). For m contacts with Jacobian rows ``J = [N; S; T]``,
``D = [S; -S; T; -T]`` the pyramid's four edges (Sec. 5.1) and ``E`` the 4m x m block of
identities::

    v' = v + M^-1 (N^T f_N + D^T f_F)
    0 <= f_N    _|_  w_N = N v' + max(phi, 0) / dt  >= 0        (eqs. 35-36, 54)
    0 <= f_F    _|_  w_F = D v' + E lambda           >= 0        (eq. 55)
    0 <= lambda _|_  w_l = mu f_N - E^T f_F          >= 0        (eq. 56)

an LCP over ``z = [f_N; f_F; lambda]`` whose matrix is built from the Delassus matrix
``W = J M^-1 J^T`` and whose constant is ``J v``: :class:`idyn.friction_pyramid.PyramidLCP` with
every contact edged and no equalities, the builder idyn.sim's ``ap-lcp`` uses too. A contact
whose gap stays open through the step (``w_N > 0``) takes no impulse; a contact that takes one
ends the impact touching (``w_N = 0``), sticking, or sliding with its friction at the pyramid's
edge against the slide. A negative gap counts as zero: the impact stops the approach, it does
not remove overlap (that is the step's gap stabilisation).

Why this LCP and not the maximal-dissipation program of Sec. 2.3.4 (eq. 74): without
``f_N w_N = 0`` that program buys friction impulse with normal impulse, so a foot landing while
sliding leaves the ground at about ``mu |v_T|`` (measurements: docs/design.md, "idyn/impact.py").

Infinite friction. ``mu = inf`` enters the pyramid as :data:`NO_SLIP_MU` = 100, as the paper's
and our simulators simulate it (Sec. 7.5, docs/conventions.md). The pyramid keeps the limit's meaning
that an equality ``S v' = T v' = 0`` would lose: a contact that separates unloaded carries no
friction.

Solution. The LCP is equilibrated (:mod:`idyn.friction_pyramid` says how and why) and solved
by our lexicographic Lemke with the regularisation fallback (:func:`idyn.lcp.lemke_regularized`:
``Q + eps I``, a small compliance, reported in :attr:`ImpactSolution.regularization`). If no
attempt passes the residual check the solution carries its status and zero impulses; the
callers then skip the impact phase and leave the contact to the step's own model (the
time-stepping scheme). No answer is ever NaN.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validation
from .contact import NO_SLIP_MU
from .errors import InvalidInputError, ShapeError
from .friction_pyramid import Layouts, PyramidLCP
from .lcp import LCPStatus, lemke_regularized

#: approach speed (m/s) beyond what the gap allows that makes a contact an impact
IMPACT_SPEED_TOL = 1e-2


@dataclass(frozen=True)
class ImpactSolution:
    """Impulses (m, 3) [normal, s, t] in N s of the impact LCP and how Lemke's method fared."""

    impulses: np.ndarray
    status: str
    pivots: int
    regularization: float

    @property
    def solved(self) -> bool:
        return LCPStatus(self.status).solved        # SOLVED or REGULARIZED


def closing(N: np.ndarray, v: np.ndarray, phi: np.ndarray, dt: float, speed_tol: float = IMPACT_SPEED_TOL) -> bool:
    """Does some contact approach faster than its gap allows, by more than ``speed_tol`` (m/s):
    ``N v + max(phi, 0) / dt < -speed_tol``?"""
    return phi.shape[0] > 0 and bool((N @ v + np.maximum(phi, 0.0) / dt < -speed_tol).any())


def _friction_and_period(mu, m: int, dt) -> tuple[np.ndarray, float]:
    """``(mu, dt)`` checked: m friction coefficients >= 0 (inf allowed), a positive finite period."""
    mu = np.asarray(mu, dtype=float)
    if mu.shape != (m,):
        raise ShapeError(f"mu must have shape ({m},), got {mu.shape}")
    if np.isnan(mu).any() or (mu < 0).any():
        raise InvalidInputError("friction coefficients must be >= 0 (inf for no slip)")
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0.0):
        raise InvalidInputError(f"dt must be positive and finite, got {dt}")
    return mu, dt


def impact_impulses(W: np.ndarray, u: np.ndarray, phi: np.ndarray, mu: np.ndarray, dt: float) -> ImpactSolution:
    """The impact of the module docstring in contact space: ``W = J M^-1 J^T`` (3m x 3m) and
    ``u = J v`` (3m) for the rows ``J = [N; S; T]`` of m contacts with gaps ``phi`` (m) and
    friction ``mu`` (m, >= 0, inf allowed), ``dt > 0``, validated by the caller (a simulator's
    checked step; :func:`inelastic_impact` checks its inputs). The LCP is built on a per-size
    :class:`PyramidLCP` and solved by :func:`idyn.lcp.lemke_regularized` (which raises
    :class:`idyn.errors.NonFiniteError` for a non-finite LCP). The post-impact velocity is
    ``v + M^-1 J^T impulses.T.ravel()``."""
    m = phi.shape[0]
    lcp = _EDGED[(m,)]
    lcp.build(W, u, np.maximum(phi, 0.0) / dt, np.where(np.isinf(mu), NO_SLIP_MU, mu))
    res = lemke_regularized(lcp.Qs, lcp.rs)
    impulses = lcp.impulses(res.z, W, u) if res.solved else np.zeros((m, 3))
    return ImpactSolution(impulses, res.status.value, res.pivots, res.regularization)


def inelastic_impact(M, v, J, phi, mu, dt: float) -> tuple[np.ndarray, ImpactSolution]:
    """``(v', solution)``: the impact of the module docstring for the mass matrix ``M``, the
    velocity ``v`` and the contact rows ``J = [N; S; T]`` (3m x nv) of m contacts; ``v' = v`` if
    the LCP is not solved (see :attr:`ImpactSolution.status`)."""
    M = validation.square(M, "M")
    v = validation.vector(v, M.shape[0], "v")
    phi = validation.vector(phi, None, "phi")
    J = validation.matrix(J, (3 * phi.shape[0], M.shape[0]), "J")
    return checked_impact(M, v, J, phi, *_friction_and_period(mu, phi.shape[0], dt))


def checked_impact(M: np.ndarray, v: np.ndarray, J: np.ndarray, phi: np.ndarray, mu: np.ndarray, dt: float
                   ) -> tuple[np.ndarray, ImpactSolution]:
    """:func:`inelastic_impact` for arguments the caller has validated (a controller's step: its
    checked state, contacts and period). A mass matrix that makes ``W`` or ``J v`` non-finite
    still raises :class:`idyn.errors.NonFiniteError` (from the LCP's check)."""
    try:
        Minv_JT = np.linalg.solve(M, J.T) if J.shape[0] else np.zeros((M.shape[0], 0))
    except np.linalg.LinAlgError as exc:
        raise InvalidInputError("the mass matrix is singular") from exc
    sol = impact_impulses(J @ Minv_JT, J @ v, phi, mu, dt)
    return v + Minv_JT @ sol.impulses.T.reshape(-1), sol


#: the impact LCP's layout for m contacts (key: (m,)), every one edged; work arrays reused by each impact
_EDGED = Layouts(lambda m: PyramidLCP(m, np.arange(m)))
