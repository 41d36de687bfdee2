"""idyn.sim: a pinocchio time-stepping simulator with the contact models of the controllers.

A second, fully open physics backend next to PyBullet, built so that controller contact-force
predictions can be verified against a simulator using the *same* contact model (paper Sec. 8.2,
Table 5): the step is discretized as the controllers discretize it (paper eq. 37).

* :class:`World` with :class:`Sphere` / :class:`Box` shapes on model frames and a static
  environment of :class:`Plane`, :class:`Heightmap` and :class:`StaticBox`;
* contact models :data:`MODELS`: ``ap-lcp``, ``noslip``, ``qp``, ``compliant``, ``penalty``;
* :class:`Simulator` with ``reset``, ``contacts``, ``step(tau)`` and the forces of the last step;
  ``impacts="passive"`` resolves touchdowns as passive impacts first (:mod:`idyn.sim.impact`).
"""
from .contact_models import (MODELS, NO_SLIP_MU, AnitescuPotra, ContactModel, ContactProblem,
                             ContactSolution, MaximalDissipation, NoSlip, Penalty, make)
from .geometry import Feature, Heightmap, Plane, StaticBox
from .impact import IMPACT_MODES, PassiveImpacts
from .simulator import Simulator, StepResult
from .world import Box, ContactSet, Sphere, World

__all__ = [
    "IMPACT_MODES", "MODELS", "NO_SLIP_MU", "AnitescuPotra", "Box", "ContactModel", "ContactProblem",
    "ContactSet", "ContactSolution", "Feature", "Heightmap", "MaximalDissipation", "NoSlip",
    "PassiveImpacts", "Penalty", "Plane", "Simulator", "Sphere", "StaticBox", "StepResult", "World",
    "make",
]
