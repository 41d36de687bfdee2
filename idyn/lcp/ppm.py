"""Principal Pivoting Method I on a dense LCP matrix (paper Appendix D).

Appendix D: partition the indices by which of ``z_i``, ``w_i`` is allowed to be non-zero;
the other variable of each pair is zero, which fixes the rest by eq. 123:
``z_a = -M_aa^-1 q_a`` and ``w = M_{:,a} z_a + q``.  Find a negative variable, exchange it with
its complement, repeat.  The pivoting strategy (greedy as in Algorithm 2, Murty's least-index
rule once an index set repeats) is :func:`idyn.lcp.principal_pivoting.principal_pivoting`.

Here ``M_aa^-1`` is kept explicitly and updated by bordering when an index enters and by the
inverse partition formula when one leaves: ``O(k^2)`` per pivot, no refactorisation.  The final
answer is re-solved from the original data on the terminal set (one ``k x k`` solve) and
accepted only through :func:`idyn.lcp.lcp_residuals`.

Matrix classes.  For a P-matrix every principal pivot is defined and the method terminates.
For a symmetric positive semidefinite ``M`` an entering index can make ``M_aa`` singular; the
direction ``d`` with ``d_a = -M_aa^-1 M_ai``, ``d_i = 1`` then has ``M d = 0`` and changes the
convex QP objective ``1/2 z'Mz + q'z`` at the rate ``w_i < 0``, so we move along it until a
``z_k`` of the active set reaches zero and exchange ``k`` for ``i`` (a block pivot of order two,
Cottle, Pang & Stone 1992, Sec. 4.2); if nothing blocks, the QP is unbounded below and the LCP
has no solution (``RAY_TERMINATION``).  For other matrices use :func:`idyn.lcp.lemke`.
"""
from __future__ import annotations

import numpy as np

from .inputs import check_indices, check_lcp, check_options, default_max_pivots
from .principal_pivoting import principal_pivoting
from .residuals import DEFAULT_TOL, lcp_residuals
from .result import LCPResult, LCPStatus


class _DenseSystem:
    """Active set and explicit inverse of ``M_aa`` for :func:`principal_pivoting`."""

    def __init__(self, M: np.ndarray, q: np.ndarray):
        self.M, self.q = M, q
        self.symmetric = np.allclose(M, M.T, rtol=1e-12, atol=1e-14 * np.abs(M).max(initial=0.0))
        self.singular_tol = 1e-11 * max(np.abs(M).max(initial=0.0), np.finfo(float).tiny)
        self.active: list[int] = []
        self.inv = np.zeros((0, 0))

    def _schur(self, i: int):
        a = self.active
        u, v = self.M[a, i], self.M[i, a]
        p, pt = self.inv @ u, v @ self.inv
        return p, pt, self.M[i, i] - v @ p

    def add(self, i: int) -> bool:
        p, pt, s = self._schur(i)
        if abs(s) <= self.singular_tol:
            return False
        k = len(self.active)
        inv = np.empty((k + 1, k + 1))
        inv[:k, :k] = self.inv + np.outer(p, pt) / s
        inv[:k, k] = -p / s
        inv[k, :k] = -pt / s
        inv[k, k] = 1.0 / s
        self.inv = inv
        self.active.append(i)
        return True

    def remove(self, position: int) -> None:
        keep = np.r_[0:position, position + 1:len(self.active)]
        f, g, h = self.inv[keep, position], self.inv[position, keep], self.inv[position, position]
        self.inv = self.inv[np.ix_(keep, keep)] - np.outer(f, g) / h
        del self.active[position]

    def solve(self) -> np.ndarray:
        return -(self.inv @ self.q[self.active])

    def residual(self, z_active: np.ndarray) -> np.ndarray:
        return self.M[:, self.active] @ z_active + self.q

    def exchange(self, i: int, z_active: np.ndarray) -> bool | None:
        if not self.symmetric:
            return None
        d = -(self.inv @ self.M[self.active, i])
        falling = np.flatnonzero(d < -1e-12 * max(np.abs(d).max(initial=0.0), 1.0))
        if falling.size == 0:
            return False
        k = int(falling[np.argmin(np.maximum(z_active[falling], 0.0) / -d[falling])])
        self.remove(k)
        return self.add(i) or None


def ppm(M, q, warm_start=None, *, max_pivots: int | None = None,
        tol: float = DEFAULT_TOL) -> LCPResult:
    """Solve ``w = M z + q, 0 <= z ⊥ w >= 0`` by principal pivoting (Appendix D).

    Args:
        M: (n, n) P-matrix or symmetric PSD matrix.
        q: (n,) vector.
        warm_start: indices (or boolean mask) of ``z`` to start basic, e.g. the ``basis`` of
            a previous result; indices that would make ``M_aa`` singular are dropped.
        max_pivots: pivot limit (default :func:`idyn.lcp.inputs.default_max_pivots`, as
            :func:`idyn.lcp.lemke`'s: ``max(100, 50 n, 2^22 / n^2)``).
        tol: relative residual tolerance of the acceptance check.
    """
    check_options(tol, max_pivots)
    M, q = check_lcp(M, q)
    n = q.shape[0]
    warm = check_indices(warm_start, n, "warm_start")
    limit = default_max_pivots(n) if max_pivots is None else int(max_pivots)
    system = _DenseSystem(M, q)
    out = principal_pivoting(system, q, warm, limit)
    active = np.array(sorted(system.active), dtype=np.intp) if out.pivots or warm.size else \
        np.flatnonzero(out.z > 0)
    z = out.z
    if out.status is LCPStatus.SOLVED and active.size:
        # Re-solve on the terminal set from the original data (removes drift of the updates).
        try:
            z_exact = np.zeros(n)
            z_exact[active] = np.maximum(
                np.linalg.solve(M[np.ix_(active, active)], -q[active]), 0.0)
            if lcp_residuals(M, q, z_exact).worst <= lcp_residuals(M, q, z).worst:
                z = z_exact
        except np.linalg.LinAlgError:
            pass
    w = M @ z + q
    status = out.status
    if status is LCPStatus.SOLVED and not lcp_residuals(M, q, z, w).ok(tol):
        status = LCPStatus.NUMERICAL_FAILURE
    return LCPResult(z, w, status, out.pivots, 0.0, active)
