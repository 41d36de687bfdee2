"""Purely bilateral constraints: one linear solve (paper Sec. 4.2, eqs. 51-62).

With Mhat^-1 = G M^-1 G^T (eq. 59) and Y = (I + Mhat^-1 (h^2 K + h B))^-1 (eq. 60):

    phi_dot1 = Y (phi_dot0 - h Mhat^-1 K phi0 + h G M^-1 f)      (eq. 61)
    phi1     = phi0 + h phi_dot1                                  (eq. 62)
    lambda1  = -K phi1 - B phi_dot1 - Mhat Gdot v0                (eq. 53)

Y^-1 = I + S W with S = G M^-1 G^T positive semi-definite and W = diag(h^2 K + h B) >= 0 is
always invertible (S W is similar to W^1/2 S W^1/2, so its eigenvalues are real and
non-negative), even when the rows are redundant and S is singular (Sec. 4.3): forces are then
distributed among the redundant rows without regularization.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .constraint_space import delassus, mhat_times
from .constraints import ConstraintProblem


@dataclass(frozen=True)
class BilateralSolution:
    lam: np.ndarray
    phi1: np.ndarray        # predicted deformation at t0 + h (eq. 62)
    phi_dot1: np.ndarray    # predicted deformation rate at t0 + h (eq. 61)


def solve_bilateral(problem: ConstraintProblem) -> BilateralSolution:
    rows, mass, h = problem.bilateral, problem.M, problem.h
    S = delassus(rows.G, mass)
    W = h * h * rows.K + h * rows.B
    rhs = rows.phi_dot - h * (S @ (rows.K * rows.phi)) + h * (rows.G @ mass.solve(problem.f))
    if sp.issparse(S):
        Y_inv = sp.identity(rows.m, format="csc") + sp.csc_matrix(S @ sp.diags(W))
        phi_dot1 = spla.splu(Y_inv).solve(rhs)
    else:
        phi_dot1 = la.solve(np.eye(rows.m) + S * W[None, :], rhs)
    phi1 = rows.phi + h * phi_dot1
    lam = -rows.K * phi1 - rows.B * phi_dot1 - mhat_times(rows.G, mass, rows.Gdot_v)
    return BilateralSolution(lam, phi1, phi_dot1)
