"""The principal pivoting loop of :func:`idyn.lcp.ppm` (and, compiled with Algorithm 2's
system inlined, of :func:`idyn.lcp.ppm_contact`: :mod:`idyn.lcp._ppm_kernel`).

Both solve an LCP ``w = Q z + r`` by principal pivoting (paper Appendix D and Algorithm 2): the
state is the set ``a`` of indices whose ``z`` is basic (the paper's non-basic set of ``w``,
written B-bar in Algorithm 2); the other ``z`` are zero.  Each iteration solves
``Q_aa z_a = -r_a`` (Alg. 2 lines 11-12), evaluates ``w`` (lines 13-14), then

* moves the most negative ``w_i`` into ``a`` (lines 16, 31-32), and in the same iteration the
  most negative ``z_j`` (from the solve *before* the insertion) out of ``a`` (lines 33-37);
* if no ``w`` is negative, moves the most negative ``z_j`` out (lines 18-23);
* stops when neither is negative (lines 24-29).

Safeguards the paper leaves implicit:

* Cycling.  The greedy ("most negative") rule can cycle even on a P-matrix (Murty 1988,
  ch. 4).  The loop remembers every set ``a`` it has visited; on the first repetition it
  switches to Murty's least-index rule (toggle the smallest infeasible index, one per
  iteration), which is finite for every P-matrix.
* Singular ``Q_aa``.  The :class:`PivotingSystem` refuses an insertion that would make
  ``Q_aa`` singular.  For the contact problems that index is linearly dependent on ``a``, and
  Appendix F shows its ``w`` is then exactly zero, so it is skipped until ``a`` loses an index.
  A system may instead offer an ``exchange`` (block pivot of order two) for general PSD data.
* Termination is checked with relative tolerances, and the caller checks the residuals.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .result import LCPStatus

_TINY = np.finfo(float).tiny


class PivotingSystem(Protocol):
    """Access to ``Q`` that the loop needs; the active set ``a`` lives in the system."""

    active: list[int]

    def add(self, i: int) -> bool:
        """Append ``i`` to ``a`` unless ``Q_aa`` would become singular; return success."""

    def remove(self, position: int) -> None:
        """Remove ``a[position]``."""

    def solve(self) -> np.ndarray:
        """Return ``z_a`` solving ``Q_aa z_a = -r_a``."""

    def residual(self, z_active: np.ndarray) -> np.ndarray:
        """Return ``w = Q_{:,a} z_a + r`` for all indices."""

    def exchange(self, i: int, z_active: np.ndarray) -> bool | None:
        """Block pivot bringing ``i`` in when ``add(i)`` failed: True done, False impossible
        (unbounded direction, no solution), None not supported."""


@dataclass
class PivotingOutcome:
    z: np.ndarray
    w: np.ndarray
    status: LCPStatus
    pivots: int


#: relative tolerance of the sign tests on ``w`` and ``z``
REL_TOL = 1e-11


def principal_pivoting(system: PivotingSystem, r: np.ndarray, warm: np.ndarray, max_pivots: int,
                       rel_tol: float = REL_TOL, cycle_guard: bool = True) -> PivotingOutcome:
    """Run the principal pivoting loop (module docstring) from ``warm`` (may be empty).

    ``cycle_guard=False`` keeps the greedy rule forever (only to demonstrate cycling in tests).
    """
    n = r.shape[0]
    w_tol = rel_tol * max(float(np.abs(r).max(initial=0.0)), _TINY)
    i0 = int(np.argmin(r)) if n else 0
    if n == 0 or r[i0] >= -w_tol:  # Alg. 2 lines 3-5: the trivial solution
        return PivotingOutcome(np.zeros(n), r.copy(), LCPStatus.SOLVED, 0)
    for i in warm:  # Alg. 2 line 6 (dependent warm indices are dropped)
        system.add(int(i))
    pivots = 0
    if not system.active:  # Alg. 2 lines 7-8
        system.add(i0)
        pivots = 1
    least_index = False
    seen = {frozenset(system.active)}
    blocked = np.zeros(n, dtype=bool)
    while True:
        active = system.active
        z_a = system.solve()
        w = system.residual(z_a)
        w[active] = 0.0
        z_tol = rel_tol * max(float(np.abs(z_a).max(initial=0.0)), _TINY)
        w_cand = (w < -w_tol) & ~blocked
        w_cand[active] = False
        z_neg = np.flatnonzero(z_a < -z_tol)
        if not w_cand.any() and z_neg.size == 0:
            status = LCPStatus.SOLVED
            break
        if pivots >= max_pivots:
            status = LCPStatus.MAX_PIVOTS
            break
        before = list(active)
        j = before[int(z_neg[np.argmin(z_a[z_neg])])] if z_neg.size else -1
        if least_index:  # Murty's rule: the smallest infeasible index, one toggle
            adds = np.flatnonzero(w_cand)
            first_add = int(adds[0]) if adds.size else n
            first_remove = min((before[p] for p in z_neg), default=n)
            to_add, to_remove = (first_add, -1) if first_add < first_remove else (-1, first_remove)
        elif w_cand.any():  # Alg. 2 lines 16, 31-37
            to_add, to_remove = int(np.argmin(np.where(w_cand, w, np.inf))), j
        else:  # Alg. 2 lines 17-23
            to_add, to_remove = -1, j
        if to_add >= 0:
            entered = _enter(system, to_add, z_a, blocked)
            if entered is False:
                status = LCPStatus.RAY_TERMINATION
                break
            if entered is None:
                continue
            pivots += 1
        if to_remove >= 0 and to_remove in system.active:
            system.remove(system.active.index(to_remove))
            blocked[:] = False
            pivots += 1
        key = frozenset(system.active)
        if key in seen and cycle_guard:
            least_index = True
        seen.add(key)
    z = np.zeros(n)
    z[system.active] = np.maximum(z_a, 0.0)
    return PivotingOutcome(z, w, status, pivots)


def _enter(system: PivotingSystem, i: int, z_a: np.ndarray, blocked: np.ndarray) -> bool | None:
    """Bring ``i`` into the active set; True on success, None if skipped, False if unbounded."""
    if system.add(i):
        return True
    done = system.exchange(i, z_a)
    if done is None:
        blocked[i] = True  # Appendix F: a dependent index has w_i = 0; skip it
        return None
    return done
