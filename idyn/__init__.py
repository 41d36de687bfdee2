"""idyn: inverse dynamics with rigid contact and Coulomb friction, and an L-stable compliant
constraint solver.

Core math only: no simulator, planner or controller is imported here (docs/conventions.md).
The subpackages ``idyn.controllers``, ``idyn.planners``, ``idyn.robots`` and ``idyn.experiments``
are the repository's top-level folders of those names (mapped in pyproject.toml; in a source
checkout the lines below find them beside this folder).
"""
import os as _os

if not _os.path.isdir(_os.path.join(__path__[0], "controllers")):     # a source checkout
    _root = _os.path.dirname(_os.path.abspath(__path__[0]))
    if _os.path.isfile(_os.path.join(_root, "controllers", "__init__.py")):
        __path__.append(_root)
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
