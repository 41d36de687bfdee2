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


class QuaternionError(InvalidInputError):
    """A free-flyer quaternion (pinocchio's x y z w order) in a configuration is not of unit
    norm (off by more than :data:`idyn.model.QUATERNION_TOL`): the torques computed from it
    would be wrong, and a w-x-y-z quaternion read as x-y-z-w is one way to get it."""


class UnknownFrameError(IdynError, KeyError):
    """A body or frame name does not exist in the model."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class ModelLoadError(IdynError, OSError):
    """A robot description (URDF) is missing or cannot be parsed."""


class SolverError(IdynError, RuntimeError):
    """A numerical backend failed in a way no fallback could recover from."""
