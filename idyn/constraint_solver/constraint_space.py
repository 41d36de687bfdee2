"""Constraint-space quantities shared by every constraint kind.

For a group of rows with Jacobian G the constraint-space inertia is Mhat = (G M^-1 G^T)^-1
(eq. 24). The scheme needs Mhat only applied to Gdot v (eqs. 23, 53, 84, 141). Redundant rows
(more rows than the bodies' degrees of freedom, e.g. 900 Winkler elements under one box) make
G M^-1 G^T singular; the paper's claim that redundancy needs no regularization (Sec. 4.3) holds
for Y, not for Mhat, so we use the minimum-norm solution of (G M^-1 G^T) y = Gdot v, which is
exact whenever Gdot v lies in the range of G (it does for rigid-body point constraints).

Each row also reduces to two numbers used by every formulation (eqs. 143-157):

    chi = h (h K + B)                                          (eqs. 187-188, 191)
    rho = -Mhat Gdot v - K phi0 - (h K + B) (phi_dot0 + h Gdot v)

so that, with a = vdot0, the implicit spring-damper law reads lambda = rho - chi G a (bilateral),
lambda >= rho - chi G a (unilateral, contact normal) or lambda = rho - chi G a + beta (tangent).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .constraints import ConstraintRows
from .mass import MassMatrix


def delassus(G, mass: MassMatrix):
    """G M^-1 G^T (= Mhat^-1), sparse when G and M are."""
    if sp.issparse(G):
        return sp.csr_matrix((G @ mass.inverse()) @ G.T)
    return G @ mass.solve(G.T)


def mhat_times(G, mass: MassMatrix, b: np.ndarray) -> np.ndarray:
    """Mhat b = (G M^-1 G^T)^-1 b; the minimum-norm solution when G M^-1 G^T is singular."""
    m = G.shape[0]
    if not np.any(b):
        return np.zeros(m)
    if m > mass.nv:
        # rank <= nv < m: the min-norm y lies in range(G), y = G z with (G M^-1 G^T G) z = b.
        Gd = G.toarray() if sp.issparse(G) else G
        z = np.linalg.lstsq(Gd @ mass.solve(Gd.T @ Gd), b, rcond=None)[0]
        return Gd @ z
    S = delassus(G, mass)
    if sp.issparse(S):
        try:
            return spla.splu(sp.csc_matrix(S)).solve(b)
        except RuntimeError:  # exactly singular: fall through to the dense min-norm solve
            S = S.toarray()
    try:
        return la.cho_solve(la.cho_factor(S), b)
    except la.LinAlgError:
        return np.linalg.lstsq(S, b, rcond=None)[0]


def spring_terms(rows: ConstraintRows, h: float, mass: MassMatrix):
    """(chi, rho) of the module docstring for one group of rows."""
    hk_b = h * rows.K + rows.B
    chi = h * hk_b
    rho = (-mhat_times(rows.G, mass, rows.Gdot_v) - rows.K * rows.phi
           - hk_b * (rows.phi_dot + h * rows.Gdot_v))
    return chi, rho
