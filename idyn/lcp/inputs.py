"""Validation of LCP data at the public entry points of :mod:`idyn.lcp`."""
from __future__ import annotations

import math

import numpy as np

from .. import validation
from ..errors import InvalidInputError, ShapeError
from ..jit import cached_jit

#: :func:`default_max_pivots`: the basis-inverse entries a default pivot limit lets a pivoting
#: method update (a pivot updates about ``n^2``): 2^22, the work of Murty's n = 14 problem
#: (2^14 pivots), which needs exponentially many.
PIVOT_WORK = 2 ** 22


def check_lcp(M, q) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(M, q)`` as finite float arrays with ``M`` square and ``q`` of matching length.

    Raises :class:`idyn.errors.ShapeError` or :class:`idyn.errors.NonFiniteError`.
    """
    M = validation.square(M, "M")
    q = validation.vector(q, None, "q")
    if q.shape[0] != M.shape[0]:
        raise ShapeError(f"q has length {q.shape[0]} but M is {M.shape[0]} x {M.shape[1]}")
    return M, q


def check_indices(indices, n: int, name: str) -> np.ndarray:
    """Return ``indices`` as a sorted array of distinct integers in ``[0, n)``."""
    if indices is None:
        return np.empty(0, dtype=np.intp)
    a = np.asarray(indices)
    if a.size == 0:
        return np.empty(0, dtype=np.intp)
    if a.dtype == bool:
        if a.shape != (n,):
            raise ShapeError(f"{name} as a mask must have shape ({n},), got {a.shape}")
        return np.flatnonzero(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":              # signed or unsigned integers
        raise ShapeError(f"{name} must be a 1-D array of integer indices or a boolean mask")
    if a.min() < 0 or a.max() >= n:
        raise ShapeError(f"{name} has indices outside [0, {n})")
    if a.size == 1 or (a[1:] > a[:-1]).all():   # already sorted and distinct (a warm start)
        return a.astype(np.intp, copy=False)
    return np.unique(a).astype(np.intp)


@cached_jit
def default_max_pivots(n):
    """The pivot limit of :func:`idyn.lcp.lemke`, :func:`idyn.lcp.ppm` and
    :func:`idyn.lcp.ppm_contact` when the caller gives none: ``max(100, 50 n, PIVOT_WORK / n^2)``,
    linear in ``n`` for large problems and about the same work for small ones, so that Lemke's
    method solves Murty's problems (``2^n`` pivots) up to ``n = 14`` by default."""
    return max(100, 50 * n, PIVOT_WORK // max(n * n, 1))


def check_options(tol, max_pivots) -> None:
    """InvalidInputError unless ``tol`` is a finite number ``>= 0`` and ``max_pivots`` None or
    an integer ``>= 0``."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(tol) and tol >= 0):
        raise InvalidInputError(f"tol must be a finite number >= 0, got {tol!r}")
    if max_pivots is not None and (isinstance(max_pivots, bool) or not isinstance(max_pivots, (int, np.integer))
                                   or max_pivots < 0):
        raise InvalidInputError(f"max_pivots must be an integer >= 0 or None, got {max_pivots!r}")


def finite_data(*arrays: np.ndarray) -> bool:
    """Whether the float arrays a caller built (an LCP's ``q`` and ``M``, a QP's ``H, c, A, b``)
    may enter a compiled solver: the sum of their squared entries is finite (False for a NaN or
    infinite entry, and for entries near ``1e154`` whose squares overflow, with numpy's overflow
    warning: no answer on such data can be verified).  One BLAS dot product per array, the
    cheapest full check of a step's data."""
    total = 0.0
    for a in arrays:
        flat = a.ravel("K")
        total += flat.dot(flat)
    return math.isfinite(total)
