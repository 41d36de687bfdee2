"""lcp-coulomb's tie-break on the face of Lemke's answer and its stance-consistency option.

Every answer is checked in physical units against the Coulomb LCP of paper eqs. 54-56 rebuilt
here from the contacts and the predicted velocity (not from the controller's own matrices):
``0 <= f_N _|_ N v+ + phi/dt >= 0``, ``0 <= f_F _|_ F v+ + E lambda >= 0``,
``0 <= lambda _|_ mu f_N - E^T f_F >= 0``, plus the shared residuals of
:func:`test_controllers.check_physics` (dynamics of every row, cone, non-penetration).  States:
the recorded LINKS trot of ``tests/data/controller_reference.npz`` (PyBullet, rigid ground,
touchdowns and lift-offs) with its friction scaled, and the standing problems where the ID LCP
is indeterminate (Lemke loads two diagonal feet of four).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import example, HealthCheck, given, settings
from hypothesis import strategies as st

from idyn import controllers
from idyn.controllers import Desired, RobotState
from idyn.controllers.lcp_coulomb import TIE_BREAKS
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn import contact_jacobians
from idyn.errors import InvalidInputError
from test_controllers import check_physics, weight
from test_controllers_reference import DATA, Sequence

TRACE = Sequence.unpack(np.load(DATA), "links_trot") if DATA.is_file() else None
needs_trace = pytest.mark.skipif(TRACE is None, reason=f"{DATA} missing")


def solve(state, desired, contacts, model, **options):
    return controllers.make("lcp-coulomb", model, **options).compute(state, desired, contacts)


def recorded(index: int, mu: float | None = None):
    s = TRACE.steps[index]
    contacts = s["active"] if mu is None else [dataclasses.replace(c, mu=mu) for c in s["active"]]
    return RobotState(s["q"], s["v"], s["t"]), Desired(s["q_des"], s["v_des"], s["vdot_des"]), contacts


def coulomb_lcp_residual(model, state, contacts, out, dt=1e-3) -> float:
    """Worst violation of eqs. 54-56 (pyramid, Anitescu-Potra) by the answer ``out``, relative to
    the step's force and velocity scales; the pyramid components and ``lambda`` come from
    ``info.details["lcp_z"]``, the velocity from ``info.v_next``."""
    m = len(contacts)
    z = out.info.details["lcp_z"]
    jac = contact_jacobians(model, state.q, contacts)
    v = out.info.v_next
    fN, fF, lam = z[:m], z[m:5 * m], z[5 * m:]
    phi = np.maximum(jac.phi, 0.0)      # the controllers' default gap clamp (controllers.dynamics)
    sN, sS, sT = jac.N @ v, jac.S @ v, jac.T @ v
    wN = sN + phi / dt
    wF = np.concatenate((sS, -sS, sT, -sT)) + np.tile(lam, 4)
    wL = np.array([c.mu for c in contacts]) * fN - fF.reshape(4, m).sum(axis=0)
    w = np.concatenate((wN, wF, wL))
    zs, ws = 1e-12 + np.abs(z).max(), 1e-9 + np.abs(w).max()
    return max(-z.min() / zs, -w.min() / ws, np.abs(z * w).max() / (zs * ws))


def impulse_norm(out) -> float:
    m = out.contact_forces.shape[0]
    return float(np.linalg.norm(out.info.details["lcp_z"][:5 * m]))


# --------------------------------------------------------------------------- standing
@pytest.mark.parametrize("robot", ["links", "a1"])
@pytest.mark.parametrize("mu", [0.3, 10.0])
def test_standing_tie_break_spreads_the_weight_lemke_puts_on_two_feet(robot, mu):
    """Four feet sticking: every split of the weight is a solution.  Lemke's vertex carries it on
    two diagonal feet (a third with 1.8 N on a1); the least-impulse answer of its face on all four, without friction
    (LINKS is symmetric: a quarter each), and the least-torque one with less torque than both."""
    p = standing_problem(robot, 4, mu)
    W = weight(p.model)
    lemke = solve(p.state, p.desired, p.contacts, p.model, tie_break="none")
    assert lemke.contact_forces[:, 0].min() < 0.05 * W / 4      # one foot (almost) unloaded
    force = solve(p.state, p.desired, p.contacts, p.model, tie_break="force")
    torque = solve(p.state, p.desired, p.contacts, p.model, tie_break="torque")
    for out in (force, torque):
        check_physics("lcp-coulomb", p.model, p.state, p.contacts, out)
        assert coulomb_lcp_residual(p.model, p.state, p.contacts, out) < 1e-8
        assert out.info.details["tie_break"] == "solved"
        assert np.all(out.contact_forces[:, 0] > 0.2 * W / 4)
        assert out.contact_forces[:, 0].sum() == pytest.approx(W, rel=5e-3)
    assert np.abs(force.contact_forces[:, 1:]).max() < 1e-6 * W
    if robot == "links":
        np.testing.assert_allclose(force.contact_forces[:, 0], W / 4, rtol=1e-6)
    assert impulse_norm(force) < impulse_norm(lemke)
    assert np.linalg.norm(torque.tau) < min(np.linalg.norm(force.tau), np.linalg.norm(lemke.tau))


# --------------------------------------------------------------------------- recorded trot
@needs_trace
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 249), mu=st.sampled_from([None, 0.1, 1.0, 10.0]),
       tie_break=st.sampled_from(["force", "torque"]), consistent=st.booleans())
@example(index=54, mu=None, tie_break="torque", consistent=False)
@example(index=46, mu=1.0, tie_break="torque", consistent=False)    # 2.0e-6
def test_recorded_trot_answers_solve_the_coulomb_lcp(index, mu, tie_break, consistent):
    """Whatever the options, the answer is a solution of the Coulomb LCP of its (possibly moved)
    desired velocity, with the shared physics residuals; the tie-break alone keeps Lemke's LCP
    and never increases its own objective.  The tie-break's QP answer is accepted at idyn.qp's
    feasibility tolerance, 1e-7 (1 + max|x|)(1 + max|a_i|) + |b_i| absolute per row; this
    residual divides by max|z|, about 1e-2 N s here, so the tolerance allows up to ~1e-5 in it
    (measured with DAQP: 1.4e-7 at index 54, mu None; 2.0e-6 at index 46, mu 1; both torque)."""
    model = TRACE.model()
    state, desired, contacts = recorded(index, mu)
    out = solve(state, desired, contacts, model, tie_break=tie_break, consistent_stance=consistent)
    assert out.info.fallback is None
    check_physics("lcp-coulomb", model, state, contacts, out)
    if not contacts:
        return
    assert coulomb_lcp_residual(model, state, contacts, out) < 1e-5
    if consistent:
        return
    lemke = solve(state, desired, contacts, model, tie_break="none")
    if "lemke_z" in out.info.details:                       # the face's own start is Lemke's answer
        np.testing.assert_array_equal(out.info.details["lemke_z"], lemke.info.details["lcp_z"])
    # the same desired motion: the actuated end velocity is the prescribed one for both answers
    a = model.actuated_v
    np.testing.assert_allclose(out.info.v_next[a], lemke.info.v_next[a], atol=1e-12)
    if tie_break == "force":
        assert impulse_norm(out) <= impulse_norm(lemke) * (1 + 1e-9) + 1e-12
    else:
        assert np.linalg.norm(out.tau) <= np.linalg.norm(lemke.tau) * (1 + 1e-6) + 1e-9


@needs_trace
def test_stance_consistency_moves_the_desired_velocity_minimally_and_reduces_sliding():
    """The loaded feet of the recorded trot slide in Lemke's answers because the error feedback
    asks them to move apart (module docstring); moving ``qd_des`` by the least norm that lets
    them stick removes most of that sliding, and the move is small."""
    model = TRACE.model()
    slides = {False: 0, True: 0}
    moves = []
    for index in range(0, 250, 5):
        state, desired, contacts = recorded(index)
        m = len(contacts)
        if m < 2:
            continue
        for consistent in (False, True):
            out = solve(state, desired, contacts, model, consistent_stance=consistent)
            z = out.info.details["lcp_z"]
            slides[consistent] += int(np.count_nonzero((z[5 * m:] > 1e-9) & (z[:m] > 1e-9)))
            if consistent and "qd_change" in out.info.details:
                moves.append(out.info.details["qd_change"])
    assert moves and max(moves) < 0.5                       # rad/s, a fraction of one step's feedback
    assert slides[True] < 0.5 * slides[False]


# --------------------------------------------------------------------------- options
def test_unknown_tie_break_is_a_typed_error():
    p = standing_problem()
    with pytest.raises(InvalidInputError, match="tie_break"):
        controllers.make("lcp-coulomb", p.model, tie_break="smallest")
    assert "none" in TIE_BREAKS


def test_tie_break_none_is_plain_lemke():
    p = standing_problem()
    out = solve(p.state, p.desired, p.contacts, p.model, tie_break="none")
    assert "tie_break" not in out.info.details and out.info.details["solver"] == "lemke"
