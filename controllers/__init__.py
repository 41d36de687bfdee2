"""Inverse-dynamics controllers of Zapolsky & Drumwright, the PID baseline and sensed-force ID.

``controllers.make(name, model, **options)`` builds one of ``controllers.available()``;
every controller honours the contract of :class:`idyn.controllers.Controller` and
reports each step in a :class:`idyn.controllers.ControlInfo` (docs/conventions.md).
"""
from idyn.state import Desired, RobotState
from idyn.status import Status

from .base import (DEFAULT_BUDGET, PLAUSIBILITY_MARGIN, ControlInfo, Controller, ControlOutput, OverBudget, available,
                   make, register)
from .feedback import ErrorFeedback
from . import lcp_noslip, lcp_coulomb, qp_coulomb, qp_noslip, sensed, pid  # noqa: F401  (registration)

__all__ = ["DEFAULT_BUDGET", "PLAUSIBILITY_MARGIN", "ControlInfo", "Controller", "ControlOutput", "Desired",
           "OverBudget", "ErrorFeedback", "RobotState", "Status",
           "available", "make", "register"]
