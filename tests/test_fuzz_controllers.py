"""Fuzzer: random physical states of real robots on every controller (hypothesis).

States are built from LINKS and a1: joint angles within 0.3 rad of the stance, a base tilted by
up to 0.2 rad, velocities of about 1 rad/s (m/s), a desired acceleration of about 2 rad/s^2, and
0-16 contacts under the feet (duplicated, displaced by up to 5 mm, tilted normals, gaps between
-1 and 2 mm, mu in {0, 0.3, 1, inf}).  Every controller must

* raise nothing but an :class:`idyn.errors.IdynError` (none is expected for these inputs),
* return finite torques and contact forces of the right shapes,
* report an honest status: a step that fell back to contact-free inverse dynamics is not
  SOLVED, and its forces are zero; a SOLVED step's predicted velocity is finite.

The default run draws ``FUZZ_EXAMPLES`` = 400 states per robot and controller (20 s here in
all, 12,800 steps); ``IDYN_FUZZ_EXAMPLES=10000`` in the environment gives the long run.
"""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idyn import controllers
from idyn import robots
from idyn import Contact, Status
from idyn.errors import IdynError
from idyn.state import Desired, RobotState

FUZZ_EXAMPLES = int(os.environ.get("IDYN_FUZZ_EXAMPLES", "400"))
NAMES = controllers.available()
MUS = (0.0, 0.3, 1.0, np.inf)


@lru_cache(maxsize=None)
def robot(name: str):
    return robots.quadruped(name)


@lru_cache(maxsize=None)
def controller(robot_name: str, name: str):
    return controllers.make(name, robot(robot_name).model)


def random_state(robot_name: str, seed: int, m: int):
    rob = robot(robot_name)
    model = rob.model
    rng = np.random.default_rng(seed)
    q = rob.q_stand.copy()
    q[model.actuated_q] += rng.uniform(-0.3, 0.3, model.na)
    # the floating base: a quaternion (x, y, z, w) tilted by up to 0.2 rad about a random axis
    axis = rng.standard_normal(3)
    axis /= np.linalg.norm(axis)
    quat = pin.Quaternion(pin.AngleAxis(rng.uniform(0.0, 0.2), axis))
    q[3:7] = quat.coeffs()
    v = rng.normal(0.0, 1.0, model.nv)
    desired = Desired(rob.q_stand[model.actuated_q], np.zeros(model.na), rng.normal(0.0, 2.0, model.na))
    feet = list(rob.feet.values())
    centres = rob.foot_centres(q)
    contacts = []
    for _ in range(m):
        k = int(rng.integers(len(feet)))
        point = centres[k] - np.array([0.0, 0.0, feet[k].radius]) + rng.uniform(-5e-3, 5e-3, 3) * rng.integers(2)
        normal = np.array([0.0, 0.0, 1.0]) + rng.normal(0.0, 0.05, 3)
        contacts.append(Contact(feet[k].link, None, point, normal, MUS[int(rng.integers(len(MUS)))],
                                phi=float(rng.uniform(-1e-3, 2e-3))))
    return RobotState(q, v), desired, contacts


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("robot_name", ["links", "a1"])
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(0, 16))
def test_random_physical_states(robot_name, name, seed, m):
    state, desired, contacts = random_state(robot_name, seed, m)
    ctrl = controller(robot_name, name)
    model = robot(robot_name).model
    try:
        out = ctrl.compute(state, desired, contacts)
    except IdynError:
        return                      # a typed refusal is an honest answer
    assert out.tau.shape == (model.na,) and np.isfinite(out.tau).all()
    assert out.contact_forces.shape == (m, 3) and np.isfinite(out.contact_forces).all()
    info = out.info
    assert isinstance(info.status, Status)
    if info.fallback == "no-contact-id":
        assert not info.status.solved and not out.contact_forces.any()
    if info.status.solved and info.v_next is not None:
        assert np.isfinite(info.v_next).all()
