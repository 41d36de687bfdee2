"""ID_QP,inf (paper Sec. 6 with no slip; Table 6: "No-slip (impact model)").

The complementarity-free, maximally dissipative model of :mod:`controllers.qp_coulomb` (no
normal complementarity, eqs. 69-74) with the no-slip constraints of Sec. 4.4, ``S v+ = 0`` and
``T v+ = 0`` (eqs. 40-41), as hard equalities on the tangent rows that Algorithm 1 keeps, then
Stage II (torque smoothing in the nullspace of the Stage I Hessian).  The mathematics is in
:mod:`controllers.dissipation`.

Removing the friction cone alone is not this model: with the actuated velocities prescribed,
minimising the kinetic energy with unbounded tangential impulses picks the momentum-cancelling
base velocity and lets stance feet slide (measured in PyBullet: the base did not move).

Option (besides those of :mod:`controllers.qp_coulomb`): ``tangent_dependence_tol`` (1e-3), the
tolerance of Algorithm 1's dependence test (see :mod:`controllers.lcp_noslip`).
"""
from __future__ import annotations

from idyn.errors import InvalidInputError

from .base import register
from .dynamics import TANGENT_DEPENDENCE_TOL
from .qp_coulomb import DissipationController


@register
class QPNoSlip(DissipationController):
    """ID_QP,inf: Stage I with no-slip equalities + Stage II."""

    name = "qp-noslip"
    coulomb = False

    def __init__(self, model, *, tangent_dependence_tol: float = TANGENT_DEPENDENCE_TOL, **options):
        super().__init__(model, **options)
        if not 0.0 < tangent_dependence_tol < 1.0:
            raise InvalidInputError(f"tangent_dependence_tol must be in (0, 1), got {tangent_dependence_tol}")
        self.no_slip_tol = tangent_dependence_tol
