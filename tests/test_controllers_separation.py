"""Stage I's price on the separation of loaded touching contacts (controllers.dissipation).

Without complementarity, a contact sliding under load is predicted to lift off while it pushes
(about mu |v_T|), carrying several body weights to buy friction; an inverse dynamics controller
then commands that lift.  The QP controllers detect such contacts in Stage I's answer and solve
again with their separation priced.  These tests build the situation from LINKS's standing
state: the legs sweep the feet backward under a base at rest, so the stance feet slide on
mu = 0.1 ground.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from idyn import controllers
from idyn.controllers import RobotState
from idyn.controllers.dissipation import build_stage_one, price_separation, separating_loads, solve_stage_one
from idyn import Contact, contact_jacobians
from idyn.contact import CONTACT_GAP
from idyn.errors import InvalidInputError
from idyn.separation import LOADED_FRACTION
from test_controllers import check_physics
from test_controllers_dissipation_objective import pushing_stance

DT = 1e-3


def sliding_stance(speed: float, heading: float = 0.0, mu: float = 0.1):
    """LINKS on four feet on ``mu`` ground, its legs moving at the velocities that carry the
    base at ``speed`` along ``heading`` with the feet held, but the base at rest: the feet
    slide at ``speed`` the other way."""
    model, state, desired, contacts, jac = pushing_stance(mu=mu, speed=speed)
    v = state.v.copy()
    c, s = np.cos(heading), np.sin(heading)
    v[:2] = (c * v[0], s * v[0])          # the held-feet velocities for a base moving along heading
    rows = np.vstack((jac.N, jac.S, jac.T))
    a = np.asarray(model.actuated_v)
    v[a] = np.linalg.lstsq(rows[:, a], -rows[:, :6] @ v[:6], rcond=None)[0]
    desired = type(desired)(desired.q, v[a], desired.vdot)
    v[:6] = 0.0
    return model, RobotState(state.q, v), desired, contacts, jac


def predict(model, state, desired, contacts, **options):
    ctrl = controllers.make("qp-coulomb", model, feedback=False, **options)
    out = ctrl.compute(state, desired, contacts)
    check_physics("qp-coulomb", model, state, contacts, out)
    return out


def loaded_separation(jac, out) -> float:
    loaded = out.contact_forces[:, 0] > 1e-3
    return float((jac.N @ out.info.v_next)[loaded].max(initial=0.0))


@settings(max_examples=12, deadline=None)
@given(speed=st.floats(0.1, 0.6), heading=st.floats(-np.pi, np.pi))
def test_sliding_feet_are_not_predicted_to_lift_off_under_load(speed, heading):
    model, state, desired, contacts, jac = sliding_stance(speed, heading)
    weight = model.total_mass * 9.81
    published = predict(model, state, desired, contacts, separation_weight=0.0)
    priced = predict(model, state, desired, contacts)
    # the relaxation as published: loaded feet separate, carrying far more than the weight
    assert loaded_separation(jac, published) > 0.02 * speed
    assert published.contact_forces[:, 0].sum() > 1.5 * weight
    # priced: the excess load halves at least, the loaded separation shrinks (measured: to 57 % at
    # 0.05-0.125 m/s, to 20 % at 0.5 m/s; a heavier price comes closer, see below)
    excess = lambda out: out.contact_forces[:, 0].sum() - weight
    assert excess(priced) < 0.5 * excess(published)
    assert loaded_separation(jac, priced) < 0.7 * loaded_separation(jac, published)
    assert priced.info.details["separation_priced"] >= 1


def test_a_heavier_price_comes_closer_to_complementarity():
    model, state, desired, contacts, jac = sliding_stance(0.5)
    seps = [loaded_separation(jac, predict(model, state, desired, contacts, separation_weight=w))
            for w in (0.0, 1.0, 10.0)]
    assert seps[0] > seps[1] > seps[2]


def test_feet_that_hold_are_not_priced():
    """High friction: the feet stick, nothing separates under load, Stage I is solved once."""
    model, state, desired, contacts, jac = pushing_stance(mu=100.0)
    out = predict(model, state, desired, contacts)
    assert out.info.details["separation_priced"] == 0
    np.testing.assert_array_equal(out.tau, predict(model, state, desired, contacts, separation_weight=0.0).tau)


def test_pricing_keeps_the_nullspace_and_stage_two():
    """``P = Y_c^T Y``: the Hessian's nullspace (Stage II's W) holds for the priced Hessian."""
    model, state, desired, contacts, _ = sliding_stance(0.3)
    ctrl = controllers.make("qp-coulomb", model, feedback=False)
    step = ctrl._step(state.q, state.v, ctrl.command(state.q, state.v, desired), contacts)
    prob = build_stage_one(step, coulomb=True)
    W = prob.W.copy()
    assert W.shape[1] > 0
    price_separation(step, prob, np.arange(step.m), 5.0)
    assert np.abs(prob.H @ W).max() < 1e-9 * np.abs(prob.H).max()
    assert np.abs(W.T @ prob.c).max() < 1e-9 * np.abs(prob.c).max()
    assert np.linalg.eigvalsh(prob.H).min() > -1e-9 * np.abs(prob.H).max()


@pytest.mark.parametrize("speed,heading,gaps", [(0.4, 0.0, (0, 0, 0, 0)), (0.6, -2.0, (0, 0, 0, 0)),
                                                (0.4, 0.0, (0, 3, 0, 0))])
def test_separating_loads_reads_the_model_not_the_solver(speed, heading, gaps):
    """A contact is flagged only if it is touching (phi <= CONTACT_GAP), loaded (above
    LOADED_FRACTION of the largest normal impulse) and ends the step apart (phi + dt N v+ >
    CONTACT_GAP), with N v+ of Stage I's answer, here from the published controller's v+
    (Stage II moves z in ker Y, which leaves N v+ alone); the sliding stances flag some feet and
    leave an unloaded one and one 3 um up; no load, no flag."""
    model, state, desired, contacts, _ = sliding_stance(speed, heading)
    contacts = [Contact(c.body_a, c.body_b, c.point, c.normal, c.mu, g * CONTACT_GAP) for c, g in zip(contacts, gaps)]
    jac = contact_jacobians(model, state.q, contacts)
    ctrl = controllers.make("qp-coulomb", model, feedback=False, separation_weight=0.0, impact=False)
    normal_speed = jac.N @ ctrl.compute(state, desired, contacts).info.v_next
    step = ctrl._step(state.q, state.v, ctrl.command(state.q, state.v, desired), contacts)
    prob = build_stage_one(step, coulomb=True)
    z, _ = solve_stage_one(prob, "lemke", "quadprog")
    z_n = z[:len(contacts)]
    touching, loaded = jac.phi <= CONTACT_GAP, z_n > LOADED_FRACTION * z_n.max()
    apart = jac.phi + DT * normal_speed > CONTACT_GAP
    flagged = separating_loads(step, prob, z)
    np.testing.assert_array_equal(flagged, touching & loaded & apart)
    assert flagged.any() and (apart & ~flagged).any()
    assert not separating_loads(step, prob, np.zeros(prob.k)).any()      # no load, no flag


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_separation_weight_is_rejected(bad):
    model = pushing_stance(mu=0.1)[0]
    with pytest.raises(InvalidInputError):
        controllers.make("qp-coulomb", model, separation_weight=bad)
