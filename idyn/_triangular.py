"""Solves with a Cholesky factor, shared by the compiled loops of idyn and its controllers.

Algorithm 2's updated factor of ``G_a^T G_a`` (:mod:`idyn.lcp._ppm_kernel`), the no-slip LCP's
``G A^-1 G^T`` and the reduced dynamics' ``A = M_uu`` (:mod:`controllers._noslip_kernel`,
:mod:`controllers._dynamics_kernel`) all solve ``(R^T R) x = b`` by two substitutions.  A lower
factor ``L`` of ``L L^T`` is passed as ``L.T``.  Cached on disk (:mod:`idyn.jit`).
"""
from __future__ import annotations

from .jit import cached_jit


@cached_jit
def gram_solve(R, n, b, x):
    """``x = (R^T R)^-1 b`` for the leading ``n x n`` block of the upper triangular ``R``
    (``R^T y = b``, then ``R x = y``); ``x`` may be ``b``."""
    for p in range(n):
        c = b[p]
        for q in range(p):
            c -= R[q, p] * x[q]
        x[p] = c / R[p, p]
    for p in range(n - 1, -1, -1):
        c = x[p]
        for q in range(p + 1, n):
            c -= R[p, q] * x[q]
        x[p] = c / R[p, p]
