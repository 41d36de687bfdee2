"""The unilateral QP of Sec. 5.3 (eqs. 83-85) by semismooth Newton on its KKT conditions.

For rows that are all unilateral (or frictionless contact normals) the program of Appendix A
in the lifted variables (lambda, a) is

    min  1/2 sum_i w_i lambda_i^2
    s.t. lambda + diag(chi) G a >= rho   (mu1 >= 0),   lambda >= 0   (mu2 >= 0),
         Lambda^-1 a = r0 + G^T lambda                              (eq. 189, r0 = f + G_b^T rho_b)

with Lambda^-1 = M + G_b^T diag(chi_b) G_b. Stationarity in a gives the multiplier of the
dynamics as -y with y = Lambda G^T diag(chi) mu1; stationarity in lambda then reads
w lambda = mu1 + mu2 + G y. Given (a, y), every row is an independent one-variable problem
(s = rho - chi G a, g = G y):

    lambda = max(g / w, s, 0),   mu1 = w s - g if s > max(g / w, 0) else 0,

so the KKT system reduces to 2 nv piecewise-linear equations in (a, y), whatever the number of
rows m:

    F1 = Lambda^-1 a - r0 - G^T lambda(a, y) = 0,   F2 = Lambda^-1 y - G^T diag(chi) mu1(a, y) = 0.

Each Newton step costs O(m nv^2 + nv^3): for 900 Winkler elements under one box (nv = 6) a
12 x 12 solve instead of a 906-variable interior point. A point with F = 0 satisfies every KKT
condition of the (strictly convex in lambda) QP, so its lambda is *the* optimum; the caller
checks the residual and falls back to the conic backends when Newton does not converge.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class NewtonResult:
    lam: np.ndarray
    x: np.ndarray            # the KKT point (a, y)
    converged: bool
    iterations: int
    residual: float          # max |F| relative to the size of the balanced terms


def _rows(G, a, y, chi, rho, w):
    s = rho - chi * (G @ a)
    g = G @ y
    lam = np.maximum(np.maximum(g / w, s), 0.0)
    on_s = s > np.maximum(g / w, 0.0)
    on_g = ~on_s & (g > 0.0)
    mu1 = np.where(on_s, w * s - g, 0.0)
    return lam, mu1, on_s, on_g


def solve(G: np.ndarray, chi: np.ndarray, rho: np.ndarray, w: np.ndarray, inertia: np.ndarray,
          r0: np.ndarray, start: np.ndarray | None = None, tol: float = 1e-9,
          max_iter: int = 50) -> NewtonResult:
    """KKT point of the QP above; ``inertia`` is Lambda^-1 (dense nv x nv), ``start`` an
    optional (a, y) stacked guess (e.g. the previous step's)."""
    nv = inertia.shape[0]
    x = np.zeros(2 * nv)
    if start is not None and start.shape == x.shape:
        x = start.copy()
    else:
        x[:nv] = np.linalg.solve(inertia, r0)

    def residual(x):
        a, y = x[:nv], x[nv:]
        lam, mu1, on_s, on_g = _rows(G, a, y, chi, rho, w)
        f1 = inertia @ a - r0 - G.T @ lam
        f2 = inertia @ y - G.T @ (chi * mu1)
        scale1 = 1.0 + np.abs(r0).max(initial=0.0) + np.abs(G.T @ lam).max(initial=0.0)
        scale2 = 1.0 + np.abs(inertia @ y).max(initial=0.0)
        err = max(np.abs(f1).max(initial=0.0) / scale1, np.abs(f2).max(initial=0.0) / scale2)
        return np.r_[f1, f2], err, lam, on_s, on_g

    F, err, lam, on_s, on_g = residual(x)
    it = 0
    while err > tol and it < max_iter:
        it += 1
        Gs, Gg = G[on_s], G[on_g]
        cs = chi[on_s]
        stiff = Gs.T @ (cs[:, None] * Gs)
        J = np.block([[inertia + stiff, -Gg.T @ (Gg / w[on_g][:, None])],
                      [Gs.T @ ((w[on_s] * cs * cs)[:, None] * Gs), inertia + stiff]])
        try:
            dx = np.linalg.solve(J, -F)
        except np.linalg.LinAlgError:
            break
        norm0, t = float(F @ F), 1.0
        while True:                                   # backtracking on |F|^2
            Fn, errn, lamn, on_sn, on_gn = residual(x + t * dx)
            if float(Fn @ Fn) < norm0 or t < 1e-6:
                break
            t *= 0.5
        x = x + t * dx
        F, err, lam, on_s, on_g = Fn, errn, lamn, on_sn, on_gn
    return NewtonResult(lam, x, err <= tol, it, err)
