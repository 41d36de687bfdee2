"""Separation of contacts under the complementarity-free contact model (paper Sec. 2.3.4).

The maximal-dissipation relaxation of eqs. 69-72 (the model of the QP controllers of Sec. 6 and
of idyn.sim's ``qp`` model) has no complementarity between the normal impulse and the gap. The
rules both sides share (measurements and rejected alternatives: docs/dissipation.md,
"idyn.separation"):

**Touching contacts that leave under load** are checked as Sec. 4.5 checks consistency:

1. :func:`separating_loads`: the contacts that touch (gap at most
   :data:`idyn.contact.CONTACT_GAP`), carry normal impulse and end the step further apart;
2. :func:`price_separation`: their separation speed ``N_c v+ = P x + N_c v+(0)`` is priced as
   ``w/2 |N_c v+|^2``, ``H += w P^T P``, ``c += w P^T N_c v+(0)`` (convex, always feasible);
3. the program is solved again, until no new contact is flagged.

**Contacts at a distance.** As written, eqs. 69-72 stop every contact in the set at whatever gap
(frictionless optimality ``0 <= f_N _|_ N v+ >= 0``). Anitescu's stabilised relaxation measures
the end-of-step gap rate ``N v+ + phi/dt`` instead (eq. 35): :func:`closing_speed` added to the
objective's normal rows, beyond :data:`idyn.contact.CONTACT_GAP` and only at contacts whose
friction the model bounds (the QP controllers' ``gap_rate``).

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
