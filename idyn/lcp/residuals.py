"""Residuals of a candidate LCP solution, scaled to the problem.

Every solver in :mod:`idyn.lcp` accepts its answer only through :func:`lcp_residuals`, and the
tests and benchmarks use the same check, so "solved" means one thing everywhere.

For the LCP ``w = M z + q, z >= 0, w >= 0, z . w = 0`` (paper eq. 115) the residuals are made
dimensionless in the problem's own units.  ``q`` carries them (for the contact LCPs a
velocity, ``M z`` the velocity an impulse produces), so:

* ``scale_q = max|q|``, ``scale_z = max|z|`` and ``scale_w = scale_q + ||M||_inf max|z|`` (the
  size of the terms that are summed to form ``w``);
* ``negative_z = max(0, -min z) / scale_z``;
* ``negative_w = max(0, -min w) / scale_q``: a negative ``w`` is measured against the data,
  not against the answer's own terms;
* ``complementarity = sum_i |z_i w_i| / (scale_z scale_q)`` (the absolute value of every
  product, so positive and negative products cannot cancel);
* ``equation = max|w - (M z + q)| / scale_w`` (consistency of the reported ``w``);
* ``roundoff = eps scale_w / scale_q``: the relative rounding error of ``w`` itself.  An answer
  whose terms exceed the data by ``tol / eps`` (``4.5e6`` at the default) cannot be verified
  to ``tol``: its ``w`` is noise.

Why not relative to ``scale_w`` alone (the first version did that): a solver that drifts to
impulses of ``1e12``-``1e33`` (opposite friction-pyramid edges growing together, a nearly
singular basis) produces ``w`` whose negative entries, though large in physical units
(``w_N = -1e3`` m/s), are tiny next to ``||M|| max|z|``; such answers passed as SOLVED and only
the controllers' physical check (:meth:`idyn.controllers.dynamics.Step.complementarity_violation`)
caught them.  When ``q = 0`` the only solution a solver returns is ``z = 0`` (every residual 0).

A solution passes when all five are at most ``tol`` (default ``1e-9``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ShapeError
from ..jit import cached_jit as _jit
from ._lemke_kernel import lcp_scales
from .inputs import check_lcp

#: Relative tolerance of :meth:`LCPResiduals.ok` unless told otherwise.
DEFAULT_TOL = 1e-9
_TINY = np.finfo(float).tiny
_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class LCPResiduals:
    """Dimensionless residuals of ``(z, w)`` for the LCP ``(q, M)``; see the module docstring."""

    negative_z: float
    negative_w: float
    complementarity: float
    equation: float
    roundoff: float = 0.0

    @property
    def worst(self) -> float:
        return max(self.negative_z, self.negative_w, self.complementarity, self.equation, self.roundoff)

    def ok(self, tol: float = DEFAULT_TOL) -> bool:
        return self.worst <= tol


def residuals_from_parts(z: np.ndarray, w: np.ndarray, q_norm: float, m_norm: float,
                         equation_error: float = 0.0) -> LCPResiduals:
    """Residuals when ``w`` is already known to equal ``M z + q`` up to ``equation_error``.

    Solvers that never form ``M`` (:func:`idyn.lcp.ppm_contact`) use this with ``m_norm`` an
    upper bound of ``||M||_inf``.  All NaN (failing every tolerance) when an entry of ``z`` or
    ``w`` or a scale is not finite.
    """
    return LCPResiduals(*residual_values(z, w, float(q_norm), float(m_norm), float(equation_error)))


@_jit
def residual_values(z, w, q_norm, m_norm, equation_error):
    """The five residuals of :class:`LCPResiduals` (module docstring), in its field order."""
    nan = np.nan
    if not (np.isfinite(q_norm) and np.isfinite(m_norm) and np.isfinite(equation_error)):
        return nan, nan, nan, nan, nan
    n = z.shape[0]
    if n == 0:
        return 0.0, 0.0, 0.0, equation_error / max(q_norm, _TINY), 0.0
    zmax, zmin, wmin, products = 0.0, np.inf, np.inf, 0.0
    for i in range(n):
        if not (np.isfinite(z[i]) and np.isfinite(w[i])):
            return nan, nan, nan, nan, nan
        zmax = max(zmax, abs(z[i]))
        zmin = min(zmin, z[i])
        wmin = min(wmin, w[i])
        products += abs(z[i] * w[i])
    scale_z = max(zmax, _TINY)
    terms = m_norm * zmax
    scale_w = max(q_norm + terms, _TINY)
    scale_q = max(q_norm, _TINY)
    return (max(0.0, -zmin) / scale_z, max(0.0, -wmin) / scale_q, products / scale_z / scale_q,
            equation_error / scale_w, _EPS * terms / scale_q)


@_jit
def residuals_pass(z, w, q_norm, m_norm, tol):
    """``residuals_from_parts(z, w, q_norm, m_norm).ok(tol)`` (zero equation error), for
    compiled solvers that check a candidate inside their own loop."""
    a, b, c, d, e = residual_values(z, w, q_norm, m_norm, 0.0)
    return a <= tol and b <= tol and c <= tol and d <= tol and e <= tol


def lcp_residuals(M, q, z, w=None) -> LCPResiduals:
    """Residuals of ``(z, w)`` for the LCP ``(q, M)``; ``w`` defaults to ``M z + q``."""
    M, q = check_lcp(M, q)
    return checked_residuals(M, q, z, w)


@_jit
def exact_pass(M, q, z, w, tol):
    """``residuals_from_parts(z, w, *lcp_scales(M, q)).ok(tol)`` for the validated LCP
    ``(q, M)`` when the caller computed ``w`` as ``M @ z + q`` itself (so the equation residual
    is exactly zero), as one compiled call: the check after every Lemke solve."""
    q_norm, m_norm = lcp_scales(M, q)
    return residuals_pass(z, w, q_norm, m_norm, tol)


def checked_residuals(M: np.ndarray, q: np.ndarray, z, w=None) -> LCPResiduals:
    """:func:`lcp_residuals` for ``(M, q)`` a solver has already validated."""
    z = np.asarray(z, dtype=float)
    w_exact = M @ z + q
    w = w_exact if w is None else np.asarray(w, dtype=float)
    if z.shape != q.shape or w.shape != q.shape:
        raise ShapeError(f"z and w must have shape {q.shape}, got {z.shape} and {w.shape}")
    error = 0.0 if w is w_exact or q.size == 0 else float(np.abs(w - w_exact).max())
    return residuals_from_parts(z, w, *lcp_scales(M, q), error)


def is_lcp_solution(M, q, z, w=None, tol: float = DEFAULT_TOL) -> bool:
    """True when ``(z, w)`` solves the LCP ``(q, M)`` to relative tolerance ``tol``."""
    return lcp_residuals(M, q, z, w).ok(tol)
