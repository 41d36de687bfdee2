"""Shared LCP test data: classic hard cases and hypothesis strategies over real robot states.

The realistic builders live in :mod:`idyn.experiments.benchmarks.lcp_problems` (the benchmark needs
them too and must not import from tests/); this module adds the strategies and the synthetic
classics the tests use.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from idyn.experiments.benchmarks.lcp_problems import build_problem


@lru_cache(maxsize=256)
def cached_problem(robot: str, state: str, n: int, mu: float, seed: int, jitter: float):
    return build_problem(robot, state, n, mu=mu, seed=seed, jitter=jitter)


#: A realistic contact problem: LINKS or a1, standing or mid-trot, 4-64 duplicated contacts.
contact_problems = st.builds(
    cached_problem,
    robot=st.sampled_from(["links", "a1"]),
    state=st.sampled_from(["standing", "trot"]),
    n=st.integers(4, 64),
    mu=st.sampled_from([0.0, 0.1, 0.5, 1.0, 100.0]),
    seed=st.integers(0, 3),
    jitter=st.sampled_from([0.0, 1e-4, 1e-3, 5e-3]),
)


def murty_matrix(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Murty's (1978) P-matrix on which principal pivoting with the least-index rule makes
    ``2^n - 1`` pivots: upper triangular, ones on the diagonal, twos above; ``q = -1``."""
    M = np.eye(n) + 2.0 * np.triu(np.ones((n, n)), 1)
    return M, -np.ones(n)


def greedy_cycling_example() -> tuple[np.ndarray, np.ndarray]:
    """A 3 x 3 P-matrix on which simple principal pivoting with the most-negative rule cycles
    (Murty 1988, ch. 4)."""
    return np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]]), -np.ones(3)


def degenerate_psd(n: int, rank: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A rank-deficient PSD LCP with duplicated rows and ``q`` in the range (always solvable),
    many exact ratio ties (zeros and repeated values in ``q``)."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((rank, 3))
    rows = B[rng.integers(0, rank, n)]
    M = rows @ rows.T
    q = rows @ rng.standard_normal(3)
    q[rng.random(n) < 0.3] = 0.0
    return M, np.round(q, 1)


# ----------------------------------------------------------------------------- oracles
def lcp_worst(M: np.ndarray, q: np.ndarray, z: np.ndarray, w: np.ndarray | None = None) -> float:
    """Worst violation of ``w = M z + q, z >= 0, w >= 0, z . w = 0`` (paper eq. 115), written here
    from the equations: each relative to the problem's scales (``max|q|`` for ``w``, ``max|z|`` for
    ``z``, ``max|q| + ||M||_inf max|z|`` for the equation), not to any solver's own check."""
    z = np.asarray(z, dtype=float)
    if z.size == 0:
        return 0.0
    exact = M @ z + q
    w = exact if w is None else np.asarray(w, dtype=float)
    zs = max(np.abs(z).max(), 1e-300)
    qs = max(np.abs(q).max(), 1e-300)
    ws = qs + np.abs(M).sum(axis=1).max() * np.abs(z).max()
    parts = [max(0.0, -z.min()) / zs, max(0.0, -w.min()) / ws, np.abs(z * w).sum() / zs / ws,
             np.abs(w - exact).max() / ws]
    return float(np.max(parts))                         # NaN if any part is NaN


def enumerated_lcp(M: np.ndarray, q: np.ndarray, tol: float = 1e-9):
    """An independent LCP oracle for small ``n`` (<= 10): every active set ``a`` in order of size,
    ``M_aa z_a = -q_a`` by least squares, the first ``(z, w)`` with ``lcp_worst <= tol``; None when
    no active set gives a solution (the LCP is infeasible).  For a positive semidefinite ``M``
    every solution has the same ``w`` (the convex QP's gradient is unique), for a positive
    definite one the same ``z``, so a solver's answer can be compared with the oracle's."""
    import itertools

    n = q.size
    for size in range(n + 1):
        for a in itertools.combinations(range(n), size):
            a = list(a)
            z = np.zeros(n)
            if a:
                z[a] = np.linalg.lstsq(M[np.ix_(a, a)], -q[a], rcond=None)[0]
            if lcp_worst(M, q, z) <= tol:
                return z, M @ z + q
    return None
