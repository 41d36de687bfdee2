"""ID_QP,inf (paper Sec. 6 with no slip; Table 6: "No-slip (impact model)").

The complementarity-free, maximally dissipative model of :mod:`idyn.controllers.qp_coulomb` (no
normal complementarity, eqs. 69-74) with the no-slip constraints of Sec. 4.4, ``S v+ = 0`` and
``T v+ = 0`` (eqs. 40-41), as hard equalities on the tangent rows that Algorithm 1 keeps, then
Stage II (torque smoothing in the nullspace of the Stage I Hessian).  The mathematics is in
:mod:`idyn.controllers.dissipation`.

Removing the friction cone alone is not this model: with the actuated velocities prescribed,
minimising the kinetic energy with unbounded tangential impulses picks the momentum-cancelling
base velocity and lets stance feet slide (measured in PyBullet: the base did not move).

Unlike Stage I with Coulomb friction, which is always feasible (the paper's Sec. 6.2 argument),
the no-slip equalities together with ``N v+ >= -phi/dt`` and ``f_N >= 0`` can be inconsistent
with the desired accelerations (tilted normals, legs splaying).  As for ID_LCP,inf (Sec. 4.5),
an answer that violates non-penetration by more than ``consistency_tol`` (1e-6 m/s) is replaced
by the minimal-deviation QP of eqs. 46-51 (:func:`idyn.controllers.consistency.min_deviation`;
``out.info.details["consistency_qp"]``, ``["desired_deviation"]``).

Options (besides those of :mod:`idyn.controllers.qp_coulomb`): ``tangent_dependence_tol`` (1e-3), the
tolerance of Algorithm 1's dependence test (see :mod:`idyn.controllers.lcp_noslip`), and
``consistency_tol``; ``consistency_check=False`` keeps Stage I's answer however it penetrates.
"""
from __future__ import annotations

from idyn.errors import InvalidInputError

import numpy as np

from .base import Solution, register
from .dynamics import TANGENT_DEPENDENCE_TOL, pyramid_forces
from .consistency import min_deviation
from .qp_coulomb import DissipationController


@register
class QPNoSlip(DissipationController):
    """ID_QP,inf: Stage I with no-slip equalities + Stage II."""

    name = "qp-noslip"
    coulomb = False

    def __init__(self, model, *, tangent_dependence_tol: float = TANGENT_DEPENDENCE_TOL,
                 consistency_tol: float = 1e-6, **options):
        super().__init__(model, **options)
        if not 0.0 < tangent_dependence_tol < 1.0:
            raise InvalidInputError(f"tangent_dependence_tol must be in (0, 1), got {tangent_dependence_tol}")
        if not consistency_tol > 0:
            raise InvalidInputError(f"consistency_tol must be positive, got {consistency_tol}")
        self.no_slip_tol, self.consistency_tol = tangent_dependence_tol, consistency_tol

    def _finish(self, step, prob, z, info, outputs=None) -> Solution:
        sol = super()._finish(step, prob, z, info, outputs)
        if not self.consistency_check or step.normal_speeds(sol.v_next).min() >= -self.consistency_tol:
            return sol
        impulses = pyramid_forces(z).T.ravel()                  # [f_N; f_S; f_T] impulses
        impulses, tau, v_next = min_deviation(step, impulses, sol.tau, sol.v_next, info, self.qp_backend)
        return Solution(tau, step.forces_from_impulses(impulses), v_next, info)
