"""Exactly duplicated contacts: solve once, share the impulse equally (paper Sec. 8.4.2).

Contact generators report the same point more than once (mesh-mesh collision, several
candidate features at one vertex), and the paper's timing experiment (Fig. 19) duplicates foot
contacts on purpose.  Two contacts with the same bodies, point, normal, friction and gap have
identical rows in ``N``, ``S``, ``T``: exactly dependent columns of every contact problem.

For the models whose contact forces are not unique for such a pair, splitting the merged
contact's impulse equally is an exact solution of the duplicated problem:

* Stage I (eqs. 69-101): the objective and non-penetration depend on the impulses only through
  ``R^T z``, which is unchanged; the cone ``mu f_N >= 1^T f_F`` and ``z >= 0`` are linear and
  homogeneous, so ``z / k`` satisfies them for each of ``k`` copies.
* Stage II and the one-stage variant (eq. 112 plus a ridge): for a fixed sum ``x_1 + ... + x_k``
  the ridge ``sum |x_i|^2`` is smallest at the equal split, so the unique optimum is that split.
* The Anitescu-Potra LCP (eq. 64): with ``(f_N, f_F, lambda)`` a solution of the merged LCP,
  ``(f_N / k, f_F / k, lambda)`` per copy gives the same ``w_N`` and ``w_F`` (same velocity),
  ``w_lambda / k >= 0`` and products scaled by ``1 / k``: complementarity holds.

Near-duplicates (a jittered point) are different contacts and are not merged.  ``lcp-noslip``
does not merge: Algorithm 2 handles dependent contacts itself (Appendix F) in
``O(m^3 + n m^2)``.  The paper's controllers did not merge either, so its Fig. 19 times the
duplicated problems themselves: the controller option ``merge_duplicates=False``
(:class:`idyn.controllers.Controller`) hands every copy to the solver, as ``idyn bench contacts``
does for its paper series.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from idyn import Contact


def contact_identity(c: Contact) -> tuple:
    """Everything that defines a contact's rows in the contact problems."""
    return (c.body_a, c.body_b, c.point.tobytes(), c.normal.tobytes(), c.mu, c.phi)


def merge_duplicates(contacts: Sequence[Contact]) -> tuple[list[Contact], np.ndarray, np.ndarray]:
    """``(unique, owner, copies)``: ``unique[owner[i]]`` is contact ``i``; ``copies[j]`` counts
    the contacts merged into ``unique[j]``."""
    m = len(contacts)
    if len({c.point.tobytes() for c in contacts}) == m:      # duplicates share their point
        return (contacts if type(contacts) is list else list(contacts),) + _unmerged(m)
    index: dict = {}
    unique: list[Contact] = []
    owner = np.empty(m, dtype=np.intp)
    for i, c in enumerate(contacts):
        key = contact_identity(c)
        j = index.get(key)
        if j is None:
            j = index[key] = len(unique)
            unique.append(c)
        owner[i] = j
    return unique, owner, np.bincount(owner, minlength=len(unique))


@lru_cache(maxsize=64)
def _unmerged(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, copies)`` when nothing is merged (read-only, made once per size)."""
    owner, copies = np.arange(m), np.ones(m, dtype=np.intp)
    owner.setflags(write=False)
    copies.setflags(write=False)
    return owner, copies


def split_forces(forces: np.ndarray, owner: np.ndarray, copies: np.ndarray) -> np.ndarray:
    """Each contact's equal share of its merged contact's (unique, 3) forces."""
    return forces[owner] / copies[owner, None]
