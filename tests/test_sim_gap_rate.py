"""idyn.sim's ``qp`` model with contacts at a distance (``gap_rate``; idyn.separation).

The simulator hands its contact model every pair within its detection margin (0.1 mm). As
eqs. 69-72 are written the model stops each of them as if it touched; with ``gap_rate`` the
objective measures the end-of-step gap rate (the QP controllers' option of the same name), so a
contact at a distance is loaded only to end the step touching (within CONTACT_GAP).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings, strategies as st

from idyn.contact import CONTACT_GAP
from idyn.errors import InvalidInputError
from idyn.sim import Box, Plane, Simulator, World, make
from test_sim import DT, G, HALF, free_box, run
from test_sim_separation import assert_same_step, model_step, qp_coulomb, sliding_stance

GAP = 50e-6


def box_above_plane(gap, mu=0.5, roll=0.0, pitch=0.0, v=None, **options):
    """The box of test_sim tilted by (roll, pitch), its lowest corner ``gap`` above the plane."""
    model = free_box()
    sim = Simulator(model, World(model, [Box("box", HALF)], [Plane.inclined(0.0, mu)]), "qp", DT, **options)
    R = pin.utils.rpyToMatrix(roll, pitch, 0.0)
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * HALF
    q = model.neutral()
    q[2] = gap - (corners @ R.T)[:, 2].min()
    q[3:7] = pin.Quaternion(R).coeffs()
    sim.reset(q, v)
    return sim


def test_a_box_inside_the_detection_margin_is_held_there_as_published_and_lands_with_the_gap_rate():
    published = box_above_plane(GAP, gap_rate=False)
    run(published, 200)
    assert published.contact_set().phi.min() == pytest.approx(GAP, rel=1e-6)   # held 50 um up
    assert published.last.normal_total == pytest.approx(G, rel=1e-9)
    landed = box_above_plane(GAP, gap_rate=True)
    first = run(landed, 1)[0]
    assert abs(first.normal_total) < 1e-9 * G                         # free fall for a step
    run(landed, 200)
    phi = landed.contact_set().phi
    assert phi.min() >= -1e-12 and phi.max() <= CONTACT_GAP          # touching, at rest
    assert np.abs(landed.v).max() < 1e-9                              # m/s
    assert landed.last.normal_total == pytest.approx(G, rel=1e-9)


def conditions(sim, mu, **options):
    """One step's impulses of the ``qp`` model with ``options``: pyramid, non-penetration
    ``N v+ + phi/dt >= 0``; returns the impulses, ``N v+ + phi/dt`` and the QP's zero (N s)."""
    problem = sim.problem(np.zeros(0))
    f = make("qp", **options).solve(problem).impulses
    w = problem.J[:problem.m] @ problem.velocity(f) + problem.phi / DT
    zero = 1e-6 * G * DT * max(1.0, np.abs(f).max(initial=0.0) / (G * DT))   # the QP's precision
    assert f[:, 0].min(initial=0.0) >= -zero and w.min(initial=0.0) >= -1e-7
    assert np.all(np.abs(f[:, 1]) + np.abs(f[:, 2]) <= mu * f[:, 0] + zero)
    return f, w, zero


@settings(max_examples=25, deadline=None)
@given(roll=st.floats(-0.05, 0.05), pitch=st.floats(-0.05, 0.05), gap=st.floats(0.0, 80e-6),
       v=st.lists(st.floats(-0.3, 0.3), min_size=6, max_size=6), mu=st.sampled_from([0.0, 0.3, 1.0]))
def test_a_step_meets_the_model_conditions(roll, pitch, gap, v, mu):
    """Random tilted, moving boxes with corners at different gaps."""
    conditions(box_above_plane(gap, mu, roll, pitch, np.array(v)), mu, gap_rate=True, separation_weight=0.0)


@pytest.mark.parametrize("roll,pitch,gap,vz", [(0.0, 0.0, 5e-6, 0.0), (0.03, -0.02, 0.0, -0.05),
                                               (-0.04, 0.01, 20e-6, -0.2), (0.02, 0.04, 60e-6, 0.0)])
def test_frictionless_steps_are_the_stabilised_contact_lcp(roll, pitch, gap, vz):
    """mu = 0, a tilted box falling onto the plane: ``0 <= f_N _|_ N v+ + max(phi - CONTACT_GAP,
    0)/dt >= 0`` (eq. 35, touching within CONTACT_GAP).
    (Sliding is left out: on some sliding steps quadprog declines the singular program and the
    cvxopt fallback answers to about 1e-4 of the objective, with or without the gap rate.)"""
    sim = box_above_plane(gap, 0.0, roll, pitch, np.array([0, 0, vz, 0, 0, 0.0]))
    f, w, zero = conditions(sim, 0.0, gap_rate=True, separation_weight=0.0)
    touch = w - np.minimum(sim.contact_set().phi, CONTACT_GAP) / DT       # N v+ + max(phi - gap, 0)/dt
    assert touch.min() >= -1e-9 and np.all((f[:, 0] <= zero) | (np.abs(touch) <= 1e-9))


@pytest.mark.parametrize("mu", [0.0, 0.5, 100.0])
def test_without_gaps_nothing_changes(mu):
    """Every contact touching or overlapping: the closing speeds are zero, the program is the
    published one (price on or off)."""
    sim = box_above_plane(0.0, mu, 0.02, -0.01, np.array([0.2, 0.1, -0.05, 0.1, 0.0, 0.3]))
    problem = sim.problem(np.zeros(0))
    problem = problem.restarted(problem.v, phi=np.minimum(problem.phi, 0.0) - np.arange(problem.m) * 1e-7)
    for weight in (None, 0.0):
        options = {} if weight is None else {"separation_weight": weight}
        published = make("qp", gap_rate=False, **options)
        gapped = make("qp", gap_rate=True, **options)
        for cm in (published, gapped):
            cm.bind(sim.model)
        assert_same_step(problem, gapped.solve(problem).impulses, published.solve(problem).impulses)


@pytest.mark.parametrize("lift", [0.0, 20e-6, 60e-6])
def test_controller_prediction_and_sim_model_agree_with_feet_at_a_distance(lift):
    """LINKS's feet sliding (legs moving, base at rest) with the base raised by ``lift``: the
    controller's prediction and the model's step under its torques, both with the gap rate and
    unpriced, are the same program (round-off)."""
    model, sim, state, desired = sliding_stance(0.3, 0.7)
    q = state.q.copy()
    q[2] += lift
    sim.reset(q, state.v)
    state = type(state)(q, state.v)
    options = {"separation_weight": 0.0, "gap_rate": True}
    out = qp_coulomb(model, sim, state, desired, **options)
    sol = model_step(model, sim.problem(out.tau), **options)
    predicted, simulated = out.contact_forces[:, 0].sum(), sol.impulses[:, 0].sum() / DT
    assert abs(predicted - simulated) <= 1e-7 * max(simulated, 1.0), (predicted, simulated)


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_bad_gap_rate_is_rejected(bad):
    with pytest.raises(InvalidInputError, match="gap_rate"):
        make("qp", gap_rate=bad)
