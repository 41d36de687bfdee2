"""Compiled kernels: ``cached_jit`` (numba's ``njit`` cached on disk) and start-up accounting.

idyn's per-step arithmetic runs in numba kernels because the same work as numpy calls on the small
arrays of a control step is dominated by per-call overhead.  A kernel is compiled on its first
call with new argument types and its machine code is cached on disk (next to the source, or in
``NUMBA_CACHE_DIR``); later processes load it from there.  Compiling costs seconds and loading
milliseconds, and either would stall a control loop, so every component that owns kernels runs
them once before its loop (``Controller.warm_up``, the experiments' dry run) and the loop checks
that nothing new was compiled while it ran (:func:`specialisations`).

Only numba's public API is used: ``njit``, ``Dispatcher.signatures`` and ``Dispatcher.stats``.
"""
from __future__ import annotations

import time

from numba import njit

#: every kernel :func:`cached_jit` made, in definition order
_KERNELS: list = []


def cached_jit(fn=None, **opts):
    """``njit`` with the on-disk cache if numba finds a writable place for it, else without
    (numba refuses ``cache=True`` when no cache directory is writable, e.g. a read-only install
    without a home directory; the kernels are then compiled in memory in every process)."""
    if fn is None:
        return lambda f: cached_jit(f, **opts)
    try:
        kernel = njit(cache=True, **opts)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        kernel = njit(**opts)(fn)
    _KERNELS.append(kernel)
    return kernel


def specialisations() -> int:
    """How many (kernel, argument types) machine codes this process holds, compiled or loaded.
    A count that grows inside a control loop means a step stalled on numba."""
    return sum(len(kernel.signatures) for kernel in _KERNELS)


def _cache_misses() -> int:
    """Specialisations compiled in this process (not found in the on-disk cache)."""
    return sum(sum(kernel.stats.cache_misses.values()) for kernel in _KERNELS)


class preparing:
    """Context manager counting the kernels compiled (cache misses) or loaded from the on-disk
    cache while its block runs, and the wall time, e.g. around building a controller and a dry
    run of its loop::

        with preparing("qp-coulomb") as prep:
            ...
        print(prep.line())
    """

    def __init__(self, label: str):
        self.label = label
        self.compiled = self.loaded = 0
        self.seconds = 0.0

    def __enter__(self) -> "preparing":
        self._start = (specialisations(), _cache_misses(), time.perf_counter())
        return self

    def __exit__(self, *exc) -> None:
        n0, m0, t0 = self._start
        self.seconds = time.perf_counter() - t0
        self.compiled = _cache_misses() - m0
        self.loaded = max(specialisations() - n0 - self.compiled, 0)

    def line(self) -> str:
        """The one line a command prints before its loop."""
        if self.compiled:
            return (f"idyn: compiled {self.compiled} kernels for {self.label} in {self.seconds:.1f} s "
                    f"(first run after an install; cached on disk for later runs)")
        return f"idyn: {self.label} ready in {self.seconds:.2f} s ({self.loaded} kernels loaded from cache)"


def external(symbol: str, address: int, signature):
    """A C function at ``address`` (a LAPACK routine exported by scipy's public
    ``scipy.linalg.cython_lapack``) callable from kernels, on-disk cache included: registered with
    LLVM under ``symbol`` (one stable name per routine) so that cached machine code links to this
    process's address when it is loaded."""
    import llvmlite.binding as llvm
    from numba import types
    llvm.add_symbol(symbol, address)
    return types.ExternalFunction(symbol, signature)
