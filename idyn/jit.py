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

Loading a kernel from the cache also takes time (0.1-80 ms per specialisation, measured), paid on
its first call: inside a control loop that is a stall at the first touchdown or fallback.
:func:`load_cached` pays it up front (controllers call it when they are built).
"""
from __future__ import annotations

import llvmlite.binding as llvm
from numba import njit, types


#: every kernel :func:`cached_jit` made, in definition order (for :func:`load_cached`)
_KERNELS: list = []
#: the kernels :func:`load_cached` has loaded already
_LOADED: set = set()


def cached_jit(fn=None, **opts):
    """``njit`` with the on-disk cache if numba finds a writable place for it, else without."""
    if fn is None:
        return lambda f: cached_jit(f, **opts)
    try:
        kernel = njit(cache=True, **opts)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(**opts)(fn)
    _KERNELS.append(kernel)
    return kernel


def load_cached(packages: tuple[str, ...] = ("idyn", "controllers")) -> int:
    """Load now every specialisation the on-disk cache holds for this machine and source of the
    kernels defined so far in ``packages`` (top-level package names), instead of on each one's
    first call; returns how many were loaded.  Each kernel is visited once per process.  Nothing
    is compiled: the cache index only lists specialisations of the current source, and a cache
    that numba lays out differently (another version) loads nothing early."""
    count = 0
    for kernel in _KERNELS:
        if kernel in _LOADED or kernel.py_func.__module__.partition(".")[0] not in packages:
            continue
        _LOADED.add(kernel)
        for signature in _cached_signatures(kernel):
            kernel.compile(signature)
            count += 1
    return count


def _cached_signatures(kernel) -> list:
    """The argument types of ``kernel``'s cached specialisations for this machine and source
    (numba's cache index, keyed ``(types, machine, source hashes)``)."""
    cache, codegen = kernel._cache, kernel.targetctx.codegen()
    try:
        index = cache._cache_file._load_index()
        _, machine, source = cache._index_key((), codegen)
    except AttributeError:   # a numba without this cache layout
        return []
    return [key[0] for key in index if key[1:] == (machine, source)]


def external(symbol: str, address: int, signature):
    """A C function at ``address`` (a LAPACK routine of scipy's ``cython_lapack``, quadprog's
    ``qpgen2_``) callable from compiled loops, cache included: it is registered with LLVM under
    ``symbol`` (one name per routine, stable across processes) and declared by name, so cached
    machine code links to this process's address when it is loaded.  The very routine the
    Python wrapper calls, so the same numbers; pointers are passed as ``array.ctypes``."""
    llvm.add_symbol(symbol, address)
    return types.ExternalFunction(symbol, signature)
