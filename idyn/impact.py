"""The passive inelastic impact of rigid contacts with the friction pyramid (paper eqs. 52-56).

A contact that closes faster than its gap allows at the start of a step (a swing foot landing, a
fingertip reaching a box) must be stopped by an impulse. Finite actuators cannot deliver one:
their torques act over the step, not over the instant of impact (paper Sec. 3.2: "actuators
attached to the contacted link ... are heavily loaded"). Both the controllers' touchdown
(:mod:`controllers.impact`) and idyn.sim's passive impacts (:mod:`idyn.sim.impact`) therefore
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
``W = J M^-1 J^T`` and whose constant is ``J v`` (:func:`impact_lcp`). A contact whose gap stays
open through the step (``w_N > 0``) takes no impulse; a contact that takes one ends the impact
touching (``w_N = 0``), sticking, or sliding with its friction at the pyramid's edge against the
slide. A negative gap counts as zero: the impact stops the approach, it does not remove overlap
(that is the step's gap stabilisation).

Why this LCP and not the maximal-dissipation program. Both sides used to resolve the impact
with the complementarity-free, maximally dissipative program of Drumwright & Shell (paper Sec.
2.3.4; Stage I of Sec. 6 without the inverse-dynamics rows, eq. 74): minimise the kinetic energy
after the impact subject to ``w_N >= 0`` and the pyramid. Without ``f_N w_N = 0`` that program
buys friction impulse with normal impulse, so a foot that lands while sliding leaves the ground
at about ``mu |v_T|``. Measured on the 30 s trot, LINKS on mu = 0.5 in idyn.sim (``ap-lcp``
model, ``lcp-coulomb`` controller): feet landing at 0.08-0.14 m/s while sliding at 0.3-0.4 m/s
left at 0.14-0.2 m/s; the landing feet chattered (1091 impacts in 11.4 s), each impact turning a
light leg's knee by 4-6 rad/s, until the legs folded and LINKS fell at 11.4 s (balance term off;
25.8 s with it). With this LCP on both sides it trots the 30 s.

Infinite friction. ``mu = inf`` enters the pyramid as :data:`NO_SLIP_MU` = 100, as the paper's
and our simulators simulate it (Sec. 7.5, SPEC section 6). The pyramid keeps the limit's meaning
that an equality ``S v' = T v' = 0`` would lose: a contact that separates unloaded carries no
friction.

Solution. The LCP is equilibrated (impulse rows to unit diagonal, the zero-diagonal lambda rows
by the mean scale; the solutions are unchanged, Lemke's ratio tests compare like with like, as in
idyn.sim's ``ap-lcp``) and solved by our lexicographic Lemke with the regularisation fallback
(:func:`idyn.lcp.lemke_regularized`: ``Q + eps I``, a small compliance, reported in
:attr:`ImpactSolution.regularization`). If no attempt passes the residual check the solution
carries its status and zero impulses; the callers then skip the impact phase and leave the
contact to the step's own model (the time-stepping scheme). No answer is ever NaN.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validation
from .contact import NO_SLIP_MU
from .errors import InvalidInputError, ShapeError
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
        return self.status == LCPStatus.SOLVED.value


def closing(N: np.ndarray, v: np.ndarray, phi: np.ndarray, dt: float, speed_tol: float = IMPACT_SPEED_TOL) -> bool:
    """Does some contact approach faster than its gap allows, by more than ``speed_tol`` (m/s):
    ``N v + max(phi, 0) / dt < -speed_tol``?"""
    return phi.shape[0] > 0 and bool((N @ v + np.maximum(phi, 0.0) / dt < -speed_tol).any())


def impact_lcp(W: np.ndarray, u: np.ndarray, phi: np.ndarray, mu: np.ndarray, dt: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, r)``: the LCP ``w = Q z + r`` of the module docstring over ``z = [f_N; f_S+; f_S-;
    f_T+; f_T-; lambda]`` (6m) for the Delassus matrix ``W`` (3m x 3m) and contact velocity
    ``u = J v`` (3m) of the rows ``J = [N; S; T]``, gaps ``phi`` and coefficients ``mu``."""
    m = phi.shape[0]
    # [N; D] as a signed selection of the rows [N; S; T]: its Delassus block is gathered, not multiplied
    rows = np.concatenate((np.arange(m), np.tile(np.arange(m, 2 * m), 2), np.tile(np.arange(2 * m, 3 * m), 2)))
    sign = np.ones(5 * m)
    sign[2 * m:3 * m] = sign[4 * m:] = -1.0
    Q = np.zeros((6 * m, 6 * m))
    Q[:5 * m, :5 * m] = np.outer(sign, sign) * W[np.ix_(rows, rows)]
    contact = np.tile(np.arange(m), 4)
    edges = np.arange(m, 5 * m)
    Q[edges, 5 * m + contact] = 1.0                    # E lambda in w_F
    Q[5 * m + contact, edges] = -1.0                   # -E^T f_F in w_lambda
    Q[5 * m + np.arange(m), np.arange(m)] = np.where(np.isinf(mu), NO_SLIP_MU, mu)
    r = np.zeros(6 * m)
    r[:5 * m] = sign * u[rows]
    r[:m] += np.maximum(phi, 0.0) / dt
    return Q, r


def impact_impulses(W, u, phi, mu, dt: float) -> ImpactSolution:
    """The impact of the module docstring in contact space: ``W = J M^-1 J^T`` (3m x 3m) and
    ``u = J v`` (3m) for the rows ``J = [N; S; T]`` of m contacts with gaps ``phi`` (m) and
    friction ``mu`` (m, >= 0, inf allowed). The post-impact velocity is
    ``v + M^-1 J^T impulses.T.ravel()``."""
    phi = validation.vector(phi, None, "phi")
    m = phi.shape[0]
    W = validation.matrix(W, (3 * m, 3 * m), "W")
    u = validation.vector(u, 3 * m, "u")
    mu = np.asarray(mu, dtype=float)
    if mu.shape != (m,):
        raise ShapeError(f"mu must have shape ({m},), got {mu.shape}")
    if np.isnan(mu).any() or (mu < 0).any():
        raise InvalidInputError("friction coefficients must be >= 0 (inf for no slip)")
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0.0):
        raise InvalidInputError(f"dt must be positive and finite, got {dt}")
    Q, r = impact_lcp(W, u, phi, mu, dt)
    scale = _equilibration(Q)
    res = lemke_regularized(scale[:, None] * Q * scale, scale * r)
    impulses = np.zeros((m, 3))
    if res.solved:
        z = scale * res.z
        impulses[:, 0] = z[:m]
        impulses[:, 1] = z[m:2 * m] - z[2 * m:3 * m]
        impulses[:, 2] = z[3 * m:4 * m] - z[4 * m:5 * m]
    return ImpactSolution(impulses, res.status.value, res.pivots, res.regularization)


def inelastic_impact(M, v, J, phi, mu, dt: float) -> tuple[np.ndarray, ImpactSolution]:
    """``(v', solution)``: the impact of the module docstring for the mass matrix ``M``, the
    velocity ``v`` and the contact rows ``J = [N; S; T]`` (3m x nv) of m contacts; ``v' = v`` if
    the LCP is not solved (see :attr:`ImpactSolution.status`)."""
    M = validation.square(M, "M")
    v = validation.vector(v, M.shape[0], "v")
    phi = validation.vector(phi, None, "phi")
    J = validation.matrix(J, (3 * phi.shape[0], M.shape[0]), "J")
    try:
        Minv_JT = np.linalg.solve(M, J.T) if J.shape[0] else np.zeros((M.shape[0], 0))
    except np.linalg.LinAlgError as exc:
        raise InvalidInputError("the mass matrix is singular") from exc
    sol = impact_impulses(J @ Minv_JT, J @ v, phi, mu, dt)
    return v + Minv_JT @ sol.impulses.T.reshape(-1), sol


def _equilibration(Q: np.ndarray) -> np.ndarray:
    """The scales ``s`` of the equilibrated LCP ``(s Q s, s r)``, ``z = s z'``: 1 / sqrt of the
    positive diagonal entries (the impulse rows, to unit diagonal) and sqrt of their mean on the
    zero-diagonal lambda rows (which puts their couplings ``E`` to the impulse rows near one);
    all 1 if no diagonal entry is positive."""
    d = np.diag(Q)
    positive = d > 0.0
    other = math.sqrt(d[positive].mean()) if positive.any() else 1.0
    return np.where(positive, 1.0 / np.sqrt(np.where(positive, d, 1.0)), other)
