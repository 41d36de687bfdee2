"""Passive touchdown impacts of idyn.sim (``impacts="passive"``, :mod:`idyn.sim.impact`): the
impact is the maximally dissipative inelastic impulse with the actuators passive, it only acts
on contacts that close faster than their gap allows, never adds energy, and leaves the step's
contact model to carry the load."""
import numpy as np
import pinocchio as pin
import pytest

from idyn.errors import InvalidInputError
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
    """Resting and slowly landing boxes never trigger the impact phase: bit-identical steps."""
    a, b = box_on_plane(name, 0.3, 0.2), box_on_plane(name, 0.3, 0.2, impacts="passive")
    for _ in range(200):
        ra, rb = a.step(np.zeros(0)), b.step(np.zeros(0))
        assert rb.impact is None
        np.testing.assert_array_equal(ra.forces, rb.forces)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.v, b.v)


@pytest.mark.parametrize("name", RIGID)
def test_impact_is_the_maximally_dissipative_inelastic_impulse(name):
    """The landing step's impact equals an independent solve (cvxopt) of the program of the
    module docstring on contact-space data built here, stops the approach within the gap
    allowance, and is reported inside the step's forces."""
    sim = dropped(name, "passive", tilt=0.2, spin=3.0)
    problem = sim.problem(np.zeros(0))
    J, M, v, m = problem.J, problem.M, sim.v.copy(), problem.m
    assert m > 0
    # pyramid directions R = [N; S; -S; T; -T] as rows, the program over their impulses x >= 0
    N, S, T = J[:m], J[m:2 * m], J[2 * m:]
    R = np.vstack((N, S, -S, T, -T))
    MiRt = np.linalg.solve(M, R.T)
    cone = np.hstack((np.diag(problem.mu), -np.tile(np.eye(m), 4)))
    gap = N @ v + np.maximum(problem.phi, 0.0) / DT
    A_in = np.vstack((N @ MiRt, cone, np.eye(5 * m)))
    b_in = np.concatenate((-gap, np.zeros(m + 5 * m)))
    ref = solve_qp(R @ MiRt, R @ v, A_in=A_in, b_in=b_in, backend="cvxopt")
    assert ref.solved
    v_ref = v + MiRt @ ref.x
    result = sim.step(np.zeros(0))
    assert result.impact is not None
    v_imp = v + np.linalg.solve(M, J.T @ (result.impact * DT).T.reshape(-1))
    assert 0.5 * v_imp @ M @ v_imp <= 0.5 * v_ref @ M @ v_ref * (1 + 1e-6) + 1e-12
    np.testing.assert_allclose(v_imp, v_ref, atol=1e-4 * np.abs(v).max())
    assert (N @ v_imp + np.maximum(problem.phi, 0.0) / DT >= -1e-7).all()
    # the reported forces are impact plus step
    np.testing.assert_allclose(result.forces - result.impact, result.solution.impulses / DT, atol=1e-12)


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
    from robots import sim as sim_testbeds

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
