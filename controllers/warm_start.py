"""Carrying an LCP active set from one control step to the next (paper Sec. 4.6, Alg. 2 line 6).

Algorithm 2 is warm-started with the indices of the contacts that carried force at the previous
call.  Contact lists change between control steps (a foot lifts, another touches down, a
testbed reorders its candidates), so an index is meaningless on its own: it is remembered as
the contact's identity, ``(body_a, body_b, k)`` with ``k`` the rank of the contact among those
between the same two bodies, and mapped back onto the next step's list.  Contacts that no longer
exist are simply not warm-started.

:class:`BasisMemory` does the same for a whole LCP basis whose variables belong to contacts
(an impulse, a multiplier of a contact's row): each variable is remembered as its contact's
identity and its block (which kind of variable of that contact it is).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from idyn import Contact


def contact_keys(contacts: Sequence[Contact]) -> list[tuple]:
    """``(body_a, body_b, k)`` for each contact, ``k`` counting contacts between the same bodies."""
    seen: dict = {}
    keys = []
    for c in contacts:
        pair = (c.body_a, c.body_b)
        k = seen.get(pair, 0)
        seen[pair] = k + 1
        keys.append((c.body_a, c.body_b, k))
    return keys


class ActiveSetMemory:
    """The previous step's active contacts, by identity."""

    def __init__(self):
        self._keys: frozenset = frozenset()

    def reset(self) -> None:
        self._keys = frozenset()

    def recall(self, keys: list[tuple]) -> np.ndarray:
        """Indices into ``keys`` (this step's contacts) of the remembered active contacts."""
        return np.array([i for i, k in enumerate(keys) if k in self._keys], dtype=np.intp)

    def store(self, keys: list[tuple], active: np.ndarray) -> None:
        self._keys = frozenset([keys[i] for i in active.tolist()])


_NO_INDICES = np.zeros(0, dtype=np.intp)
#: LCPs with fewer variables start Lemke cold: on small LCPs the compiled cold path costs no more
#: than a warm start's check and bookkeeping, and the path from a failed basis costs more (the
#: measurements behind the threshold: docs/performance.md)
MIN_WARM_VARIABLES = 64


class BasisMemory:
    """The previous step's LCP basis, by contact identity and block.

    A layout describes an LCP's variables: ``contact[j]`` the index of variable ``j``'s contact in
    that step's list, ``block[j]`` its block (e.g. 0 normal impulse, 1-4 pyramid impulses).
    """

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self._keys: list | None = None
        self._contact = self._block = self._basis = _NO_INDICES
        self._layout = None

    def store(self, keys: list[tuple], contact: np.ndarray, block: np.ndarray, basis: np.ndarray) -> None:
        """Remember the variables ``basis`` (indices into this step's layout)."""
        self._keys, self._contact, self._block = keys, contact[basis], block[basis]
        self._basis, self._layout = basis, (contact, block)

    def recall(self, keys: list[tuple], contact: np.ndarray, block: np.ndarray) -> np.ndarray:
        """Indices into this step's layout of the remembered variables whose contact and block
        still exist (sorted)."""
        if self._keys is None or not self._contact.size:
            return _NO_INDICES
        if keys == self._keys and self._layout[0] is contact and self._layout[1] is block:
            return self._basis                      # the same contacts and layout: the same indices
        old_contact, old_block = self._contact, self._block
        if keys != self._keys:                      # contacts came, went or moved in the list
            where = {k: i for i, k in enumerate(keys)}
            new = np.array([where.get(self._keys[c], -1) for c in old_contact.tolist()], dtype=np.intp)
            kept = new >= 0
            old_contact, old_block = new[kept], old_block[kept]
        table = np.full((int(max(block.max(initial=-1), old_block.max(initial=-1))) + 1, len(keys)), -1,
                        dtype=np.intp)
        table[block, contact] = np.arange(block.size)
        found = table[old_block, old_contact]
        return np.sort(found[found >= 0])
