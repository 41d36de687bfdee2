"""idyn: inverse dynamics with rigid contact and Coulomb friction, and an L-stable compliant
constraint solver.

Core math only: no simulator, planner or controller is imported here (docs/conventions.md).
"""
from .contact import (Contact, ContactJacobians, ContactSet, contact_drift, contact_jacobians,
                      friction_pyramid)
from .errors import (IdynError, InvalidInputError, ModelLoadError, NonFiniteError, ShapeError,
                     SolverError, UnknownFrameError)
from .model import RobotModel
from .status import Status

__version__ = "0.1.0"

__all__ = [
    "RobotModel", "Contact", "ContactSet", "ContactJacobians", "contact_jacobians", "contact_drift",
    "friction_pyramid", "IdynError", "InvalidInputError", "ModelLoadError", "NonFiniteError",
    "ShapeError", "SolverError", "Status", "UnknownFrameError",
]
