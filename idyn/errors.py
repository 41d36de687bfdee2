"""Typed exceptions raised at idyn's public boundaries.

Every user mistake (bad shape, non-finite number, unknown frame, missing file) raises a subclass
of :class:`IdynError`, so callers can catch one type. Solver non-convergence is *not* an
exception: solvers report it through a status field and fall back as the papers do.
"""


class IdynError(Exception):
    """Base class of every exception idyn raises on purpose."""


class InvalidInputError(IdynError, ValueError):
    """An argument has the wrong value (for example a negative friction coefficient)."""


class ShapeError(InvalidInputError):
    """An array argument has the wrong shape."""


class NonFiniteError(InvalidInputError):
    """An array argument contains NaN or infinity."""


class UnknownFrameError(IdynError, KeyError):
    """A body or frame name does not exist in the model."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class ModelLoadError(IdynError, OSError):
    """A robot description (URDF) is missing or cannot be parsed."""


class SolverError(IdynError, RuntimeError):
    """A numerical backend failed in a way no fallback could recover from."""
