"""Passive touchdown impacts (:mod:`idyn.impact`, shared by idyn.sim's ``impacts="passive"`` and
the controllers' touchdown): the impact is the inelastic impulse of rigid contact with the
friction pyramid (an LCP with normal complementarity) with the actuators passive; it only acts
on contacts that close faster than their gap allows, never adds energy, never launches a contact
it loads, and leaves the step's contact model to carry the load."""
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idyn.controllers import RobotState
from idyn.experiments.benchmarks.controllers import foot_contacts, standing_problem
from idyn import Contact, contact_jacobians, lcp
from idyn.errors import InvalidInputError, NonFiniteError, ShapeError
from idyn.contact import NO_SLIP_MU
from idyn.impact import inelastic_impact
from idyn.qp import solve_qp
from idyn.sim import Simulator
from idyn.sim.impact import IMPACT_SPEED_TOL, PassiveImpacts

from test_sim import DT, G, HALF, RIGID, box_on_plane, total_energy


def dropped(name, impacts, speed=0.8, mu=0.6, tilt=0.0, spin=0.0):
    """A box tilted by ``tilt`` about x, its lowest corner half a step's travel above the plane,
    falling at ``speed`` (m/s)."""
    sim = box_on_plane(name, 0.0, mu, impacts=impacts)
    q = sim.q.copy()
    q[2] = HALF[1] * np.sin(abs(tilt)) + HALF[2] * np.cos(tilt) + 0.5 * speed * DT
    q[3:7] = pin.Quaternion(pin.utils.rpyToMatrix(tilt, 0.0, 0.0)).coeffs()
    sim.reset(q, np.array([0.3, 0.0, -speed, spin, 0.0, 0.0]))
    return sim


@pytest.mark.parametrize("name", RIGID)
def test_passive_impacts_change_nothing_without_an_impact(name):
    """Resting and slowly landing boxes never trigger the impact phase: the same steps, within
    the envelope of round-off (measured by restarting the passive run from q perturbed by 1e-15
    relative: after 200 steps forces moved by at most 1.2e-7 of the largest (qp; 1e-11 for the
    LCP models), q by 3e-14 and v by 3e-13; asserted 1e-6, 1e-12 and 1e-11)."""
    a, b = box_on_plane(name, 0.3, 0.2), box_on_plane(name, 0.3, 0.2, impacts="passive")
    for _ in range(200):
        ra, rb = a.step(np.zeros(0)), b.step(np.zeros(0))
        assert rb.impact is None
        np.testing.assert_allclose(rb.forces, ra.forces, rtol=0, atol=1e-6 * max(np.abs(ra.forces).max(initial=0.0), G))
    np.testing.assert_allclose(b.q, a.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(b.v, a.v, rtol=0, atol=1e-11)


def impact_residuals(M, J, v, v_after, phi, mu, impulses):
    """Largest violations of the impact of :mod:`idyn.impact`, from generalized data: the
    dynamics ``M (v' - v) = J^T f`` (N s), non-penetration ``w_N = N v' + max(phi, 0)/dt >= 0``
    and ``f_N >= 0``, normal complementarity ``f_N w_N = 0`` (N m/s... as N s x m/s), the pyramid
    ``|f_S| + |f_T| <= mu f_N`` (mu = inf as 100), and the pyramid's maximal dissipation at a
    sliding contact (tangential velocity ``u_T`` after the impact): friction at the pyramid's
    limit, against the slide (``f_S u_S <= 0``, ``f_T u_T <= 0``), and only along the fastest
    tangential direction (``|f_S| (max(|u_S|, |u_T|) - |u_S|) = 0``, likewise T)."""
    m = phi.size
    fN, fs, ft = impulses.T
    u = J @ v_after
    wN, us, ut = u[:m] + np.maximum(phi, 0.0) / DT, u[m:2 * m], u[2 * m:]
    mu = np.where(np.isinf(mu), NO_SLIP_MU, mu)
    slide = np.maximum(np.abs(us), np.abs(ut))
    sliding = slide > 1e-9
    return {"dynamics": np.abs(M @ (v_after - v) - J.T @ impulses.T.reshape(-1)).max(),
            "normal": max(-fN.min(), -wN.min(), 0.0),
            "complementarity": np.abs(fN * wN).max(),
            "pyramid": max(0.0, (np.abs(fs) + np.abs(ft) - mu * fN).max()),
            "sliding at the limit": np.where(sliding, np.abs(mu * fN - np.abs(fs) - np.abs(ft)), 0.0).max(),
            "against the slide": max(0.0, (fs * us).max(), (ft * ut).max()),
            "fastest direction": max((np.abs(fs) * (slide - np.abs(us))).max(),
                                     (np.abs(ft) * (slide - np.abs(ut))).max())}


def assert_impact(M, J, v, v_after, phi, mu, impulses, tol=1e-9):
    """The residuals of :func:`impact_residuals` below ``tol`` relative to the data's scale, and
    no kinetic energy gained."""
    res = impact_residuals(M, J, v, v_after, phi, mu, impulses)
    scale = 1.0 + np.abs(impulses).max() + np.abs(J @ v).max() + np.abs(phi).max() / DT
    assert all(r <= tol * scale ** 2 for r in res.values()), res
    assert v_after @ M @ v_after <= v @ M @ v * (1 + 1e-12) + 1e-15


@pytest.mark.parametrize("name", RIGID)
def test_impact_is_the_inelastic_pyramid_impulse(name):
    """A tilted, spinning box landing at 0.8 m/s: the landing step's impact satisfies the impact
    LCP's conditions on the generalized data (dynamics, non-penetration, normal complementarity,
    pyramid, maximal dissipation of a remaining slide), stops the approach, is the impact
    phase's answer, and is reported inside the step's forces."""
    sim = dropped(name, "passive", tilt=0.2, spin=3.0)
    problem = sim.problem(np.zeros(0))
    M, J, v, phi, mu, m = problem.M, problem.J, sim.v.copy(), problem.phi, problem.mu, problem.m
    assert m > 0 and (J[:m] @ v + np.maximum(phi, 0.0) / DT).min() < -IMPACT_SPEED_TOL
    after, impulses = PassiveImpacts().resolve(problem)
    assert_impact(M, J, v, after.v, phi, mu, impulses)
    assert impulses[:, 0].sum() > 0.0
    result = sim.step(np.zeros(0))
    np.testing.assert_array_equal(result.impact, impulses / DT)
    # the reported forces are impact plus step
    np.testing.assert_allclose(result.forces - result.impact, result.solution.impulses / DT, atol=1e-12)


def relaxed_impact(M, J, v, phi, mu, backend):
    """The impact used before: the complementarity-free maximal-dissipation program of paper
    Sec. 2.3.4 (min 1/2 v'^T M v' with N v' >= -max(phi, 0)/dt, the pyramid, z >= 0 over
    R = [N; S; -S; T; -T]), solved by ``backend``; returns v'."""
    m = phi.size
    N, S, T = J[:m], J[m:2 * m], J[2 * m:]
    R = np.vstack((N, S, -S, T, -T))
    MiRt = np.linalg.solve(M, R.T)
    cone = np.hstack((np.diag(mu), -np.tile(np.eye(m), 4)))
    normal = N @ v + np.maximum(phi, 0.0) / DT
    qp = solve_qp(R @ MiRt, R @ v, A_in=np.vstack((N @ MiRt, cone, np.eye(5 * m))),
                  b_in=np.concatenate((-normal, np.zeros(m + 5 * m))), backend=backend)
    assert qp.solved
    return v + MiRt @ qp.x


def test_a_sliding_foot_is_not_launched_by_its_impact():
    """LINKS landing on all four feet at 0.1 m/s while sliding at 0.35 m/s on mu = 0.5 (the
    trot's touchdowns): the impact loads the feet and leaves them touching (w_N = 0). The
    complementarity-free maximal-dissipation program used before, solved on the same data by
    two independent QP solvers (cvxopt, quadprog), buys its friction impulse with normal impulse
    and launches the loaded feet at about mu |v_T|, which made the trot's landing feet chatter
    until LINKS fell (:mod:`idyn.impact`)."""
    from idyn.robots import sim as sim_testbeds

    tb = sim_testbeds.QuadrupedTestbed("links", "rigid", 0.5, contact_model="ap-lcp", impacts="passive")
    q = tb.sim.q.copy()
    q[2] += 5e-5                                   # every foot 50 um up: all four land this step
    v = np.zeros(tb.model.nv)
    v[0], v[2] = 0.35, -0.1                        # the whole robot sliding forward and landing
    tb.reset(q, v)
    problem = tb.sim.problem(np.zeros(tb.na))
    M, J, phi, mu, m = problem.M, problem.J, problem.phi, problem.mu, problem.m
    assert m == 4
    after, impulses = PassiveImpacts().resolve(problem)
    assert_impact(M, J, v, after.v, phi, mu, impulses)
    w_n = J[:m] @ after.v + np.maximum(phi, 0.0) / DT
    loaded = impulses[:, 0] > 1e-6
    assert loaded.sum() >= 2 and np.abs(w_n[loaded]).max() < 1e-9
    for backend in ("cvxopt", "quadprog"):
        launched = J[:m] @ relaxed_impact(M, J, v, phi, mu, backend) + np.maximum(phi, 0.0) / DT
        assert launched[loaded].max() > 0.05, (backend, launched)


@st.composite
def links_landings(draw):
    """A real LINKS state near the ground: joints perturbed, the feet from 1 mm up to 0.5 mm
    deep, the base and joints moving (landing at up to 1 m/s), 1-3 contacts per foot (exact
    duplicates: degenerate LCPs), a friction coefficient per foot from 0 to inf."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 31)))
    p = standing_problem("links")
    model = p.model
    q = p.state.q.copy()
    q[model.actuated_q] += rng.normal(0.0, draw(st.sampled_from([0.0, 0.02, 0.2])), model.na)
    v = rng.normal(0.0, draw(st.sampled_from([0.0, 0.1, 1.0])), model.nv)
    v[2] -= draw(st.floats(0.0, 1.0))
    mus = draw(st.lists(st.sampled_from([0.0, 0.1, 0.5, 1.0, 100.0, np.inf]), min_size=4, max_size=4))
    per = draw(st.integers(1, 3))
    contacts = foot_contacts(p.robot, q, 1.0, per)
    q[2] += float(-min(c.phi for c in contacts) + draw(st.floats(-5e-4, 1e-3)))
    contacts = [Contact(c.body_a, None, c.point, c.normal, mus[k // per], c.phi)
                for k, c in enumerate(foot_contacts(p.robot, q, 1.0, per))]
    return model, q, v, contacts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(links_landings())
def test_impacts_of_random_links_landings_satisfy_the_lcp(landing):
    """On real LINKS states (pinocchio's M and contact Jacobians), :func:`idyn.impact.inelastic_impact`
    is solved and its answer passes every residual of the impact LCP; contacts whose gap stays open
    through the impact take no impulse, to the precision Lemke's answer is accepted with.

    That precision is relative to the LCP's data (:mod:`idyn.lcp.residuals`, 1e-9 of max|r| on
    the equilibrated LCP), whose constant holds max(phi, 0) / dt: 1 m/s for a foot 1 mm up, while
    the impulses of a light landing are 1e-6 N s. So an open contact's impulse is checked in
    the LCP's own units, the velocity it causes there, W_ii |f_i| <= 1e-8 max|r|. (Hypothesis
    found a landing where a foot whose gap stays open kept 7.8e-11 N s of friction, 4e-5 of the
    largest impulse, 1.9e-6 N s; the earlier bound, 1e-12 (1 + max|f|), failed on it at 14c598c
    with the same numbers, and this one passes.)"""
    model, q, v, contacts = landing
    M, jac = model.mass_matrix(q), contact_jacobians(model, q, contacts)
    J = jac.stacked()
    v_after, sol = inelastic_impact(M, v, J, jac.phi, jac.mu, DT)
    assert sol.solved, sol.status
    assert_impact(M, J, v, v_after, jac.phi, jac.mu, sol.impulses)
    m = jac.m
    open_gap = J[:m] @ v_after + np.maximum(jac.phi, 0.0) / DT > 1e-6
    W_diag = np.einsum("ij,ji->i", J, np.linalg.solve(M, J.T)).reshape(3, m).T        # (m, 3) [n, s, t]
    r_max = np.abs(np.r_[J[:m] @ v + np.maximum(jac.phi, 0.0) / DT, J[m:] @ v]).max()
    caused = W_diag[open_gap] * np.abs(sol.impulses[open_gap])
    assert caused.max(initial=0.0) <= 1e-8 * r_max, (sol.impulses[open_gap], caused, r_max)


def test_impact_input_is_validated():
    M, J = np.eye(3), np.eye(3)
    with pytest.raises(ShapeError):
        inelastic_impact(M, np.zeros(3), J, np.zeros(2), np.ones(2), DT)
    with pytest.raises(NonFiniteError):
        inelastic_impact(M, np.array([0.0, np.nan, 0.0]), J, np.zeros(1), np.ones(1), DT)
    with pytest.raises(InvalidInputError, match="friction"):
        inelastic_impact(M, np.zeros(3), J, np.zeros(1), -np.ones(1), DT)
    with pytest.raises(InvalidInputError, match="dt"):
        inelastic_impact(M, np.zeros(3), J, np.zeros(1), np.ones(1), 0.0)


def test_an_unsolved_impact_reports_its_status_and_leaves_the_step_to_the_model(monkeypatch):
    """If Lemke's method and its regularisation all fail, the impact carries zero impulses and its
    status, the simulator steps without the impact phase (the time-stepping scheme), and so does
    the controller; nothing is NaN."""
    from idyn import controllers
    import idyn.impact

    failed = lcp.lemke_regularized(np.array([[-1.0]]), np.array([-1.0]))   # a secondary ray
    assert not failed.solved
    monkeypatch.setattr(idyn.impact, "lemke_regularized", lambda Q, r: failed)
    sim = dropped("ap-lcp", "passive", tilt=0.2, spin=3.0)
    reference = dropped("ap-lcp", "step", tilt=0.2, spin=3.0).step(np.zeros(0))
    result = sim.step(np.zeros(0))
    assert result.impact is None and sim._impacts.last.status == failed.status.value
    np.testing.assert_array_equal(result.forces, reference.forces)
    p = standing_problem("links", 4, 0.5)
    v = p.state.v.copy()
    v[2] = -0.3
    ctrl = controllers.make("lcp-coulomb", p.model)
    out = ctrl.compute(RobotState(p.state.q, v), p.desired, p.contacts)
    assert ctrl.dynamics.last_impact_status == failed.status.value and out.info.impact_forces is None
    assert np.all(np.isfinite(out.tau)) and np.all(np.isfinite(out.contact_forces))


@pytest.mark.parametrize("name", RIGID)
def test_fast_landing_never_gains_energy(name):
    """A tilted, spinning box landing at 0.8 m/s: the impact and every later step dissipate."""
    sim = dropped(name, "passive", tilt=0.1, spin=2.0)
    energy, impacts = total_energy(sim), 0
    for _ in range(200):
        impacts += sim.step(np.zeros(0)).impact is not None
        e = total_energy(sim)
        assert e <= energy + 1e-12
        energy = e
    assert impacts >= 1
    assert sim.last.normal_total == pytest.approx(G, rel=1e-6)


def test_the_impact_takes_no_actuator_impulse():
    """The time-stepping scheme lets held torques help stop a landing body; the passive impact
    does not: on the quadruped dropped at 0.5 m/s with 2 N m on every joint, the step mode has no
    impact phase and other forces, and the passive impact equals the one under zero torque."""
    from idyn.robots import sim as sim_testbeds

    def landing(mode, tau):
        tb = sim_testbeds.QuadrupedTestbed("links", "rigid", 0.5, impacts=mode)
        q, v = tb.sim.q.copy(), np.zeros(tb.model.nv)
        q[2] += 2e-4
        v[2] = -0.5
        tb.reset(q, v)
        return tb.sim.step(np.full(tb.na, tau))

    step, passive, passive_idle = landing("step", 2.0), landing("passive", 2.0), landing("passive", 0.0)
    assert step.impact is None and passive.impact is not None
    assert not np.allclose(step.forces, passive.forces, atol=1e-3)
    np.testing.assert_allclose(passive.impact, passive_idle.impact, atol=1e-9)


def test_bad_impact_options_raise():
    sim = box_on_plane("ap-lcp")
    with pytest.raises(InvalidInputError, match="impacts"):
        Simulator(sim.model, sim.world, "ap-lcp", DT, impacts="event")
    with pytest.raises(InvalidInputError, match="tolerance"):
        PassiveImpacts(-1.0)
    assert IMPACT_SPEED_TOL == pytest.approx(1e-2)
