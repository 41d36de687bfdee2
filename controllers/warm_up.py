"""A controller's warm-up: every kind of step it takes in a loop, run once when it is built.

numba compiles (first run after an install) or loads from its disk cache (later processes) a
kernel on its first call with new argument types; inside a 1 kHz loop either is a stall of
milliseconds to seconds.  :func:`warm_up` runs the controller on synthetic states of its own
model so that its loop never meets a kernel for the first time: no contacts; contacts at the
leaf bodies with finite and with infinite friction, all of them or two, one duplicated; closing
velocities (the touchdown impact); many distinct contacts, twice (the warm-started LCP paths);
the contact-free fallback and the controller's own fallback models; for the controllers that
predict contact forces, the general path of :func:`idyn.qp.solve_built` and the LCP paths only
some data reach (:func:`idyn.lcp.regularized.warm_up`).  The argument types, not the values, decide
what numba compiles, so any model and any contact set exercise the same machine code.
"""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from idyn.contact import Contact
from idyn.errors import SolverError
from idyn.lcp.regularized import warm_up as lcp_warm_up
from idyn.qp import warm_up as qp_warm_up
from idyn.state import Desired, RobotState

from .warm_start import MIN_WARM_VARIABLES

#: contacts of the many-contact case: enough pyramid variables (6 per contact in lcp-coulomb's
#: LCP) for the warm-started paths
WARM_CONTACTS = -(-MIN_WARM_VARIABLES // 6) + 1


def leaf_bodies(model, count: int = 4) -> list[str]:
    """Names of up to ``count`` bodies carried by the model's leaf joints (feet, fingertips)."""
    pm = model.pinocchio_model
    parents = set(pm.parents[1:])
    leaves = [j for j in range(1, pm.njoints) if j not in parents]
    names = []
    for joint in leaves[-count:]:
        for frame in pm.frames:
            if frame.parentJoint == joint and frame.type == pin.FrameType.BODY:
                names.append(frame.name)
                break
    return names


def _contacts(model, q, bodies, mu: float) -> list[Contact]:
    pm = model.pinocchio_model
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, q)
    return [Contact(b, None, data.oMf[pm.getFrameId(b)].translation, (0.0, 0.0, 1.0), mu, phi=0.0)
            for b in bodies]


def _patches(model, q, bodies, mu: float, count: int) -> list[Contact]:
    """At least ``count`` distinct contacts: points on a 4 mm ring around each of ``bodies``
    (a contact detector's patch), enough for the warm-started LCP paths
    (:data:`idyn.controllers.warm_start.MIN_WARM_VARIABLES`)."""
    per = max(2, -(-count // len(bodies)))
    angles = 2.0 * np.pi * np.arange(per) / per
    ring = 0.002 * np.column_stack((np.cos(angles), np.sin(angles), np.zeros(per)))
    return [Contact(c.body_a, None, c.point + r, c.normal, mu, phi=0.0)
            for c in _contacts(model, q, bodies, mu) for r in ring]


def warm_up(controller) -> None:
    """Run ``controller`` once through each kind of step (see the module docstring), then
    :meth:`reset` it.  Inputs are valid by construction; ``compute`` never raises on them."""
    model = controller.model
    q = model.neutral()
    rng = np.random.default_rng(0)
    v_rest, v_moving = np.zeros(model.nv), 0.3 * rng.standard_normal(model.nv)
    v_drop = v_rest.copy()
    if model.floating_base:
        v_drop[2] = -0.4      # the base falls onto its contacts: every one closes, the impact path
    else:
        v_drop = -v_moving
    desired = Desired(model.joint_positions(q), np.zeros(model.na), np.zeros(model.na))
    bodies = leaf_bodies(model)
    observe = getattr(controller, "observe_contact_forces", None)
    cases = [((), v_rest)]
    if bodies:
        finite, rigid = _contacts(model, q, bodies, 0.8), _contacts(model, q, bodies, math.inf)
        for contacts in (finite, rigid):
            cases += [(contacts[:2], v_rest), (contacts, v_drop), (contacts, v_moving)]
        cases += [(finite + finite[:1], v_rest), (rigid, v_rest)]
        for mu in (0.8, math.inf):    # many contacts, twice: the second call warm-starts the LCP
            patch = _patches(model, q, bodies, mu, WARM_CONTACTS)
            cases += [(patch, v_drop), (patch, v_drop)]
    for contacts, v in cases:
        state = RobotState(q, v, 0.0)
        if observe is not None:
            observe(list(contacts), np.zeros((len(contacts), 3)))
        controller.compute(state, desired, list(contacts))
    controller._fallback(q, v_rest, desired.vdot, len(bodies))
    if bodies:                       # the controller's own fallback models, which the data decide on
        try:
            controller._warm_fallbacks(RobotState(q, v_rest, 0.0), desired, _contacts(model, q, bodies, 0.8))
        except SolverError:          # the model ran (its kernels are loaded) but found no answer on
            pass                     # this synthetic state, which compute would report as a status
    if controller.predicts_contact_forces:
        # the QP adapter's general path: the contact models reach it only on rare fallbacks
        # (Stage II's ridge-definite QP skips it; lcp-coulomb's and lcp-noslip's QPs take it)
        qp_warm_up()
        lcp_warm_up()      # a warm start's basis check, a regularised answer's residual check
    controller.reset()
