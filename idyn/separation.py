"""Separation of touching contacts under the complementarity-free contact model (paper Sec. 2.3.4).

The maximal-dissipation relaxation of Sec. 2.3.4 / eqs. 69-72 (Anitescu's; the model of the QP
controllers of Sec. 6 and of idyn.sim's ``qp`` model) has no complementarity between the normal
impulse and the gap: at a sliding contact its optimum trades the separation speed a normal
impulse causes against the friction that impulse buys, and a loaded contact ends the step lifting
off at about ``mu |v_T|`` while carrying several body weights. A rigid world does not let a
touching contact leave while it pushes. The detect-then-price rule shared by the QP controllers
(:mod:`controllers.dissipation`) and idyn.sim's ``qp`` model checks a solution the way Sec. 4.5
checks consistency:

1. :func:`separating_loads`: the contacts that touch (gap at most
   :data:`idyn.contact.CONTACT_GAP`), carry normal impulse and end the step further apart than
   that gap;
2. :func:`price_separation`: their separation speed ``N_c v+`` is priced like the kinetic energy
   of a mass ``w`` moving at it, ``w/2 |N_c v+|^2``, added to the quadratic program
   ``1/2 x^T H x + c^T x`` in which ``N_c v+ = P x + N_c v+(0)`` is linear:
   ``H += w P^T P``, ``c += w P^T N_c v+(0)``; the program stays convex (a hard ``N_c v+ = 0``
   can be infeasible: legs that must lift a foot faster than gravity lowers the body);
3. the program is solved again, until no new contact is flagged.

``w`` is given in multiples of the robot's mass (``separation_weight``): 1 by default where the
friction cone makes the relaxation buy friction with normal impulse, 0 under no slip, where it
does not; 0 is the relaxation as published.
"""
from __future__ import annotations

import numpy as np

from .contact import CONTACT_GAP

#: a contact carries load if its normal impulse exceeds this fraction of the largest one
LOADED_FRACTION = 1e-9


def separating_loads(phi: np.ndarray, dt: float, normal_impulse: np.ndarray,
                     normal_speed: np.ndarray) -> np.ndarray:
    """Mask of the contacts with gap ``phi`` at most :data:`idyn.contact.CONTACT_GAP` that carry
    ``normal_impulse`` (above :data:`LOADED_FRACTION` of the largest) yet end the step of ``dt``
    with ``phi + dt N v+`` beyond that gap, ``normal_speed`` being ``N v+``: the relaxation's
    complementarity violations."""
    loaded = normal_impulse > LOADED_FRACTION * max(float(normal_impulse.max()), 1e-300)
    return (phi <= CONTACT_GAP) & loaded & (phi + dt * normal_speed > CONTACT_GAP)


def price_separation(H: np.ndarray, c: np.ndarray, P: np.ndarray, free_speed: np.ndarray,
                     weight: float) -> tuple[np.ndarray, np.ndarray]:
    """``(H + weight P^T P, c + weight P^T free_speed)``: the objective ``1/2 x^T H x + c^T x``
    plus ``weight/2 |P x + free_speed|^2`` (up to a constant), the price of the separation speeds
    ``N_c v+ = P x + free_speed`` of the flagged contacts (new arrays; H and c are not changed)."""
    return H + weight * (P.T @ P), c + weight * (P.T @ free_speed)
