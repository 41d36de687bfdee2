"""``cached_jit``: numba's ``njit`` with its machine code cached on disk, for idyn's compiled loops.

Every compiled loop of idyn and its controllers (Lemke's path, Algorithm 1's scan, Algorithm 2's
pivoting, the QP adapter's checks, the reduced dynamics of a control step) exists because the
same arithmetic as numpy calls on the small arrays of a control step costs 1-3 us per call in
overhead (measured: ``idyn bench controllers``).  Compilation takes a few seconds per module
the first time, so the machine code is cached on disk (next to the source file, or in
``NUMBA_CACHE_DIR`` / the user cache) and later processes load it.  numba refuses
``cache=True`` outright ("no locator available") when none of those is writable, e.g. a
read-only install run by a user without a home directory; the loops are then compiled in memory
on every process start instead of failing the import.
"""
from __future__ import annotations

import llvmlite.binding as llvm
from numba import njit, types


def cached_jit(fn=None, **opts):
    """``njit`` with the on-disk cache if numba finds a writable place for it, else without."""
    if fn is None:
        return lambda f: cached_jit(f, **opts)
    try:
        return njit(cache=True, **opts)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(**opts)(fn)


def external(symbol: str, address: int, signature):
    """A C function at ``address`` (a LAPACK routine of scipy's ``cython_lapack``, quadprog's
    ``qpgen2_``) callable from compiled loops, cache included: it is registered with LLVM under
    ``symbol`` (one name per routine, stable across processes) and declared by name, so cached
    machine code links to this process's address when it is loaded.  The very routine the
    Python wrapper calls, so the same numbers; pointers are passed as ``array.ctypes``."""
    llvm.add_symbol(symbol, address)
    return types.ExternalFunction(symbol, signature)
