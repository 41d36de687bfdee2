"""ID_QP,inf (paper Sec. 6 with infinite friction): the two-stage maximal-dissipation
controller of :mod:`controllers.qp_coulomb` with the friction cone removed for every contact.

With unbounded tangential impulses, maximal dissipation stops the contact points whenever the
desired motion allows it (standing, stance feet), which is the paper's no-slip QP model; it is
not a hard ``S v+ = T v+ = 0`` constraint (that is :mod:`controllers.lcp_noslip`).
"""
from __future__ import annotations

from .base import register
from .qp_coulomb import DissipationController


@register
class QPNoSlip(DissipationController):
    """ID_QP,inf: Stage I + Stage II without friction limits."""

    name = "qp-noslip"
    coulomb = False
