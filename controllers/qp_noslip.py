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

Released contacts (``release=True``, default).  Eqs. 40-41 read literally hold the tangential
velocity of every contact at zero with impulses unbounded by the normal one, which Sec. 6's own
friction constraint (eq. 101, ``mu f_N >= 1^T f_F``) forbids for every finite ``mu``: a contact
without normal impulse transmits no tangential impulse, and no slip is the ``mu -> inf`` limit.
As in :mod:`idyn.controllers.lcp_noslip` ("Separating contacts", "Sliding touchdown"; one
implementation, :func:`idyn.controllers.lcp_noslip.release_rounds`), a contact that slides faster
than ``slide_speed`` (1 cm/s) at the start of the step, or that ends the step unloaded with its
gap opening beyond ``contact_gap`` (1 um), keeps no no-slip rows and gets no friction (a cone row
with ``mu = 0``), and Stage I is solved again until the released set repeats.  Measured without
it (LINKS trot, idyn.sim, rigid ground mu = inf, docs/results.md): Stage I gave a lifting foot 16 N
of tangential force at zero normal force, the simulator (no friction without load) let it slide at
0.28 m/s, and the next step's equalities stopped the slide within 1 ms with 520 N normal and 636 N
tangential force, which threw the robot; the run diverged at 0.18 s.  ``release=False`` is
eqs. 40-41 as written.

Friction of held contacts (``no_slip_mu``, default :data:`idyn.contact.NO_SLIP_MU` = 100).  The
rule above reads Stage I's answer; Stage II then moves the impulses in the nullspace of the Stage
I Hessian, where equal and opposite tangential impulses at two held feet are free: measured, it
put 2329 N of tangential force on a foot with zero normal force (t = 0.215 s, same run).  The
held contacts therefore keep eq. 101 with ``mu = no_slip_mu`` in both stages, the coefficient
the paper's world gives "infinite" friction (and the consistency QP's bound,
:data:`idyn.controllers.consistency.CONSISTENCY_FRICTION`); ``inf`` drops the row.  A small value
(e.g. 1) is a remedy, not the paper's model: docs/results.md has what each completes.

Options (besides those of :mod:`idyn.controllers.qp_coulomb`): ``tangent_dependence_tol`` (1e-3), the
tolerance of Algorithm 1's dependence test (see :mod:`idyn.controllers.lcp_noslip`),
``consistency_tol``, ``release`` (True), ``slide_speed`` (1e-2 m/s; ``inf``: no contact is released
for sliding), ``contact_gap`` (1e-6 m) and ``no_slip_mu`` (100).  ``out.info.details["held"]`` marks the contacts that
kept their no-slip rows, ``["slip_released"]`` counts the others; ``consistency_check=False``
keeps Stage I's answer however it penetrates.
"""
from __future__ import annotations

from idyn.contact import CONTACT_GAP, NO_SLIP_MU
from idyn.errors import InvalidInputError

import numpy as np

from .base import Solution, register
from .dynamics import TANGENT_DEPENDENCE_TOL, pyramid_forces
from .consistency import min_deviation
from .lcp_noslip import SLIDE_SPEED, release_rounds, sliding_contacts
from .qp_coulomb import DissipationController


@register
class QPNoSlip(DissipationController):
    """ID_QP,inf: Stage I with no-slip equalities + Stage II."""

    name = "qp-noslip"
    coulomb = False

    def __init__(self, model, *, tangent_dependence_tol: float = TANGENT_DEPENDENCE_TOL,
                 consistency_tol: float = 1e-6, release: bool = True, slide_speed: float = SLIDE_SPEED,
                 contact_gap: float = CONTACT_GAP, no_slip_mu: float = NO_SLIP_MU, **options):
        super().__init__(model, **options)
        if not 0.0 < tangent_dependence_tol < 1.0:
            raise InvalidInputError(f"tangent_dependence_tol must be in (0, 1), got {tangent_dependence_tol}")
        if not consistency_tol > 0:
            raise InvalidInputError(f"consistency_tol must be positive, got {consistency_tol}")
        self.no_slip_tol, self.consistency_tol = tangent_dependence_tol, consistency_tol
        if not isinstance(release, (bool, np.bool_)):
            raise InvalidInputError(f"release must be True or False, got {release!r}")
        if np.isnan(slide_speed) or not slide_speed > 0:
            raise InvalidInputError(f"slide_speed must be positive (inf: never), got {slide_speed}")
        if not (np.isfinite(contact_gap) and contact_gap >= 0):
            raise InvalidInputError(f"contact_gap must be finite and >= 0, got {contact_gap}")
        self.release, self.slide_speed, self.contact_gap = bool(release), float(slide_speed), float(contact_gap)
        if np.isnan(no_slip_mu) or not no_slip_mu > 0:
            raise InvalidInputError(f"no_slip_mu must be positive (inf: no cone), got {no_slip_mu}")
        self.held_mu = float(no_slip_mu)

    def _contact_model(self, step, contacts) -> tuple:
        """Stage I under the release rule (module docstring, "Released contacts")."""
        if not self.release:
            return self._stage_one_solved(step, contacts)
        details = {}

        def solve(released):
            prob, z, info, keys = self._stage_one_solved(step, contacts, ~released)
            v_next = step.pyramid_outputs(prob.R, z)[1]
            return (prob, z, info, keys), z, step.normal_speeds(v_next), True

        (prob, z, info, keys), _ = release_rounds(step, sliding_contacts(step, self.slide_speed), solve,
                                                  self.consistency_tol, self.contact_gap, self.out_of_time, details)
        info.update(details)
        return prob, z, info, keys

    def _finish(self, step, prob, z, info, outputs=None) -> Solution:
        sol = super()._finish(step, prob, z, info, outputs)
        if not self.consistency_check or step.normal_speeds(sol.v_next).min() >= -self.consistency_tol:
            return sol
        impulses = pyramid_forces(z).T.ravel()                  # [f_N; f_S; f_T] impulses
        impulses, tau, v_next = min_deviation(step, impulses, sol.tau, sol.v_next, info, self.qp_backend)
        return Solution(tau, step.forces_from_impulses(impulses), v_next, info)
