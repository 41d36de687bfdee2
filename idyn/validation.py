"""Shape and finiteness checks shared by every public entry point.

These run on every control step, so they are cheap: one ``np.asarray`` (no copy when the input
is already a float64 array), a shape comparison and one ``isfinite`` reduction; a float64
vector is tested by one compiled pass instead (about 0.5 instead of 2 us: a control step builds
a RobotState and a Desired, five vectors).
"""
from __future__ import annotations

import numpy as np

from .errors import InvalidInputError, NonFiniteError, ShapeError  # noqa: F401  (re-exported for callers)
from .jit import cached_jit


@cached_jit
def finite(x) -> bool:
    """Whether every entry of the float vector ``x`` is finite (one compiled pass)."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


def vector(x, n: int | None, name: str) -> np.ndarray:
    """Return ``x`` as a finite float64 vector of length ``n`` (any length if ``n`` is None)."""
    if type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 1 and (n is None or x.shape[0] == n) \
            and finite(x):
        return x                                 # what np.asarray returns for it, checked
    a = _floats(x, name)
    if a.ndim != 1 or (n is not None and a.shape[0] != n):
        want = f"({n},)" if n is not None else "a 1-D vector"
        raise ShapeError(f"{name} must have shape {want}, got {a.shape}")
    if not np.isfinite(a).all():
        raise NonFiniteError(f"{name} contains NaN or infinite values")
    return a


def matrix(x, shape: tuple[int | None, int | None], name: str) -> np.ndarray:
    """Return ``x`` as a finite float64 2-D array; ``None`` in ``shape`` accepts any size."""
    a = _floats(x, name)
    if a.ndim != 2 or any(s is not None and s != d for s, d in zip(shape, a.shape)):
        want = "(" + ", ".join("n" if s is None else str(s) for s in shape) + ")"
        raise ShapeError(f"{name} must have shape {want}, got {a.shape}")
    if not np.isfinite(a).all():
        raise NonFiniteError(f"{name} contains NaN or infinite values")
    return a


def scalar(x, name: str) -> float:
    """Return ``x`` as a float (NaN and infinities pass: the caller decides); InvalidInputError
    for a string, None or anything else that is no real number."""
    if isinstance(x, (str, bytes)):
        raise InvalidInputError(f"{name} must be a real number, got {type(x).__name__} {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a real number, got {type(x).__name__} {x!r}") from None


def _floats(x, name: str) -> np.ndarray:
    """``np.asarray(x, dtype=float)``, with InvalidInputError for what is no array of real numbers
    (strings, None, ragged lists)."""
    if isinstance(x, (str, bytes)):
        raise InvalidInputError(f"{name} must be an array of real numbers, got {type(x).__name__} {x!r}")
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be an array of real numbers: {exc}") from None


def square(x, name: str) -> np.ndarray:
    """Return ``x`` as a finite square float64 matrix."""
    a = matrix(x, (None, None), name)
    if a.shape[0] != a.shape[1]:
        raise ShapeError(f"{name} must be square, got {a.shape}")
    return a
