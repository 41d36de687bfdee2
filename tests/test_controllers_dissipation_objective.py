"""Stage I's objective (paper Sec. 6.2): the contact impulses' work, or eq. 98's kinetic energy.

With the actuated velocities prescribed, the kinetic energy of eq. 95 also counts the energy the
actuators inject, and minimising it cancels the robot's momentum through the contacts: stance
feet slide under a base the legs push forward. The contact-work objective (the default) is the
forward model's maximal dissipation, so feet that can stick do stick and the frictionless QP is
the contact LCP, as the paper states for its Stage I.
"""
from __future__ import annotations

import numpy as np
import pytest

from idyn import controllers
from idyn import robots
from idyn.controllers import Desired, RobotState
from idyn.experiments.benchmarks.controllers import foot_contacts
from idyn import contact_jacobians


def pushing_stance(mu: float, speed: float = 0.2):
    """LINKS on four feet, its legs moving the base forward at ``speed`` with the feet held."""
    robot = robots.quadruped("links")
    model = robot.model
    q = robot.q_stand.copy()
    contacts = foot_contacts(robot, q, mu, 1)
    jac = contact_jacobians(model, q, contacts)
    u, a = np.setdiff1d(np.arange(model.nv), model.actuated_v), np.asarray(model.actuated_v)
    v = np.zeros(model.nv)
    v[u[0]] = speed                                       # base forward, in the base frame
    rows = np.vstack((jac.N, jac.S, jac.T))
    v[a] = np.linalg.lstsq(rows[:, a], -rows[:, u] @ v[u], rcond=None)[0]   # feet held
    assert np.abs(rows @ v).max() < 1e-9
    desired = Desired(q[model.actuated_q], v[a], np.zeros(model.na))
    return model, RobotState(q, v), desired, contacts, jac


def foot_slip(jac, v_next) -> float:
    return float(np.abs(np.concatenate((jac.S @ v_next, jac.T @ v_next))).max())


def test_contact_work_objective_keeps_pushing_feet_stuck():
    model, state, desired, contacts, jac = pushing_stance(mu=100.0)
    ctrl = controllers.make("qp-coulomb", model, feedback=False)
    out = ctrl.compute(state, desired, contacts)
    v_next = out.info.v_next
    assert foot_slip(jac, v_next) < 1e-6
    assert v_next[0] == pytest.approx(state.v[0], abs=1e-3)          # the base keeps moving
    np.testing.assert_allclose(out.contact_forces[:, 0].sum(), 47.0882, rtol=0.01)


def test_literal_kinetic_energy_objective_lets_pushing_feet_slide():
    model, state, desired, contacts, jac = pushing_stance(mu=100.0)
    ctrl = controllers.make("qp-coulomb", model, feedback=False, objective="kinetic-energy")
    v_next = ctrl.compute(state, desired, contacts).info.v_next
    assert foot_slip(jac, v_next) > 0.05                              # m/s: the feet slide
    assert abs(v_next[0]) < 0.7 * state.v[0]          # the base loses momentum (0.2 -> 0.12 m/s)


@pytest.mark.parametrize("seed", range(5))
def test_frictionless_stage_one_is_the_contact_lcp(seed):
    """mu = 0: the Stage I optimum satisfies the normal complementarity conditions.

    The base velocity is perturbed at random (the legs keep their feet-holding velocities).
    """
    model, state, desired, contacts, jac = pushing_stance(mu=0.0)
    rng = np.random.default_rng(seed)
    v = state.v.copy()
    base = np.setdiff1d(np.arange(model.nv), model.actuated_v)
    v[base] += 0.3 * rng.standard_normal(base.size)
    state = RobotState(state.q, v)
    out = controllers.make("qp-coulomb", model, feedback=False).compute(state, desired, contacts)
    z = out.contact_forces[:, 0] * 1e-3                              # impulses over dt = 1 ms
    w = jac.N @ out.info.v_next + jac.phi / 1e-3
    assert z.min() >= -1e-9 and w.min() >= -1e-7
    assert abs(z @ w) < 1e-7


def test_unknown_objective_is_rejected():
    from idyn.errors import InvalidInputError
    model = robots.quadruped("links").model
    with pytest.raises(InvalidInputError):
        controllers.make("qp-coulomb", model, objective="energy")
