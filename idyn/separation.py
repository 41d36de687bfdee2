"""Separation of contacts under the complementarity-free contact model (paper Sec. 2.3.4).

The maximal-dissipation relaxation of Sec. 2.3.4 / eqs. 69-72 (Anitescu's; the model of the QP
controllers of Sec. 6 and of idyn.sim's ``qp`` model) has no complementarity between the normal
impulse and the gap. Two consequences, and the rules shared by the QP controllers
(:mod:`controllers.dissipation`) and idyn.sim's ``qp`` model for them:

**Touching contacts that leave under load.** At a sliding contact the optimum trades the
separation speed a normal impulse causes against the friction that impulse buys, and a loaded
contact ends the step lifting off at about ``mu |v_T|`` while carrying several body weights. A
rigid world does not let a touching contact leave while it pushes. The detect-then-price rule
checks a solution the way Sec. 4.5 checks consistency:

1. :func:`separating_loads`: the contacts that touch (gap at most
   :data:`idyn.contact.CONTACT_GAP`), carry normal impulse and end the step further apart than
   that gap;
2. :func:`price_separation`: their separation speed ``N_c v+`` is priced like the kinetic energy
   of a mass ``w`` moving at it, ``w/2 |N_c v+|^2``, added to the quadratic program
   ``1/2 x^T H x + c^T x`` in which ``N_c v+ = P x + N_c v+(0)`` is linear:
   ``H += w P^T P``, ``c += w P^T N_c v+(0)``; the program stays convex (a hard ``N_c v+ = 0``
   can be infeasible: legs that must lift a foot faster than gravity lowers the body);
3. the program is solved again, until no new contact is flagged.

**Contacts at a distance.** As eqs. 69-72 are written, the objective measures a contact's normal
velocity ``N v+`` and the gap enters only the non-penetration bound ``N v+ >= -phi/dt`` (eqs.
35-36, 70, 99). For frictionless contact the optimality conditions are then
``0 <= f_N _|_ N v+ >= 0``: every contact in the set, at whatever gap, is stopped as if it touched.
A simulator detects contacts within a margin (idyn.sim: 0.1 mm, and further ahead for fast
approaches), so under this model a foot is caught where it is detected and the robot rides on feet
that never reach the ground: on the 30 s matched trot (``qp-coulomb`` against idyn.sim's ``qp``, mu
0.5, balance term off) 99 % of the loaded contact-steps were at gaps above 1 um (median 92 um), 64
% of them ended further apart, LINKS had no load on 40 % of the steps and one foot in contact on
average instead of two to four, and fell at 2.5 s (1430 N on a foot 0.94 mm above the ground).
Anitescu's relaxation, where Sec. 2.3.4's model comes from, measures the stabilised normal velocity
instead, the end-of-step gap over the step ``N v+ + phi/dt``: its frictionless optimality
conditions are eq. 35, ``0 <= f_N _|_ N v+ + phi/dt >= 0``, so a contact at a distance is loaded
only to close its gap by the end of the step, and with friction only within the relaxation's
``dt mu |v_T|``. That is the objective's linear term plus :func:`closing_speed` on the normal rows
(the QP controllers' ``gap_rate``; their matched simulator model needs the same term; off, the
relaxation as published), with two choices. A contact touches within
:data:`idyn.contact.CONTACT_GAP` (the notion of :func:`separating_loads`), so the speed is that of
closing the gap beyond it: a loaded contact ends the step touching, and gaps of nanometres, which
decide nothing physical, do not pick the load distribution of an indeterminate stance (a negative
gap counts as touching too: the overlap is removed by the non-penetration row's stabilisation, and
a negative term would reward load along the internal-force directions of a controller whose joint
velocities are prescribed, without bound). And it acts only where the model bounds friction: a
contact without a friction bound (mu = inf, the no-slip rows) can carry any friction unloaded, so
unloading it at a distance leaves the optimum among arbitrarily large internal frictions (measured:
LINKS standing at mu = inf, three feet 15-48 um up, about 1e5 N of friction on the unloaded feet).
Pricing the separation of loaded contacts at any gap instead, on both sides, fell at 3.3 and 4.3 s
(at 1.8 s together with the gap rate, 8.0 % error); pricing their end-of-step gap made LINKS jump
(0.32 s; 0.35 s with the gap rate): each side weighs a price along its own velocity map (joint
velocities prescribed, or torques held), so a price that acts often is not the same model on both
sides, while a linear term enters both sides' optimality conditions alike.

``w`` is given in multiples of the robot's mass (``separation_weight``): 1 by default where the
friction cone makes the relaxation buy friction with normal impulse, 0 under no slip, where it
does not; 0 is the relaxation as published.
"""
from __future__ import annotations

import numpy as np

from .contact import CONTACT_GAP
from .jit import cached_jit

#: a contact carries load if its normal impulse exceeds this fraction of the largest one
LOADED_FRACTION = 1e-9


def separating_loads(phi: np.ndarray, dt: float, normal_impulse: np.ndarray,
                     normal_speed: np.ndarray) -> np.ndarray:
    """Mask of the contacts with gap ``phi`` at most :data:`idyn.contact.CONTACT_GAP` that carry
    ``normal_impulse`` (above :data:`LOADED_FRACTION` of the largest) yet end the step of ``dt``
    with ``phi + dt N v+`` beyond that gap, ``normal_speed`` being ``N v+``: the relaxation's
    complementarity violations."""
    out = np.empty(phi.shape[0], dtype=bool)
    separating_into(phi, float(dt), normal_impulse, normal_speed, out)
    return out


@cached_jit
def separating_into(phi, dt, normal_impulse, normal_speed, out):
    """:func:`separating_loads` into ``out``, for compiled callers too; the largest impulse is NaN
    if any is (then no contact counts as loaded)."""
    m = phi.shape[0]
    largest = normal_impulse[0] if m else 0.0
    for i in range(m):
        if np.isnan(normal_impulse[i]) or normal_impulse[i] > largest:
            largest = normal_impulse[i]
            if np.isnan(largest):
                break
    floor = LOADED_FRACTION * (1e-300 if 1e-300 > largest else largest)
    for i in range(m):
        out[i] = phi[i] <= CONTACT_GAP and normal_impulse[i] > floor and phi[i] + dt * normal_speed[i] > CONTACT_GAP


def price_separation(H: np.ndarray, c: np.ndarray, P: np.ndarray, free_speed: np.ndarray,
                     weight: float) -> tuple[np.ndarray, np.ndarray]:
    """``(H + weight P^T P, c + weight P^T free_speed)``: the objective ``1/2 x^T H x + c^T x``
    plus ``weight/2 |P x + free_speed|^2`` (up to a constant), the price of the separation speeds
    ``N_c v+ = P x + free_speed`` of the flagged contacts (new arrays; H and c are not changed)."""
    return H + weight * (P.T @ P), c + weight * (P.T @ free_speed)


def closing_speed(phi: np.ndarray, dt: float, bounded: np.ndarray) -> np.ndarray:
    """``max(phi - CONTACT_GAP, 0) / dt`` at the contacts whose friction the model bounds
    (``bounded``), 0 at the others: the approach speed at which a contact at gap ``phi`` just
    touches (:data:`idyn.contact.CONTACT_GAP`) by the end of a step of ``dt``. Added to the normal
    rows of the relaxation's linear term it makes the objective measure the end-of-step gap rate
    (see "Contacts at a distance")."""
    return np.where(bounded, np.maximum(phi - CONTACT_GAP, 0.0), 0.0) / dt
