"""Shared LCP test data: classic hard cases and hypothesis strategies over real robot states.

The realistic builders live in :mod:`experiments.benchmarks.lcp_problems` (the benchmark needs
them too and must not import from tests/); this module adds the strategies and the synthetic
classics the tests use.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from experiments.benchmarks.lcp_problems import build_problem


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
