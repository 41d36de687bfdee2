"""Carrying an LCP active set from one control step to the next (paper Sec. 4.6, Alg. 2 line 6).

Algorithm 2 is warm-started with the indices of the contacts that carried force at the previous
call.  Contact lists change between control steps (a foot lifts, another touches down, a
testbed reorders its candidates), so an index is meaningless on its own: it is remembered as
the contact's identity, ``(body_a, body_b, k)`` with ``k`` the rank of the contact among those
between the same two bodies, and mapped back onto the next step's list.  Contacts that no longer
exist are simply not warm-started.
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
