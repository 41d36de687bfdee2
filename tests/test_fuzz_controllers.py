"""Fuzzer: random physical states of real robots on every controller (hypothesis).

States are built from LINKS, a1, aliengo (continuous knee and hip joints) and the manipulator
(fixed base, its fingertips touching the world): joint angles within 0.3 rad of the reference
posture, a floating base tilted by up to 0.2 rad, velocities of about 1 rad/s (m/s), a desired
acceleration of about 2 rad/s^2, and 0-16 contacts under the feet or fingertips (duplicated,
displaced by up to 5 mm, tilted normals, gaps between -1 and 2 mm, mu in {0, 0.3, 1, inf}).
Every controller must

* raise nothing but an :class:`idyn.errors.IdynError` (none is expected for these inputs),
* return finite torques and contact forces of the right shapes,
* report an honest status: a step that fell back to contact-free inverse dynamics is not
  SOLVED, and its forces are zero; a SOLVED step's predicted velocity is finite, and its
  contact impulses are within the plausibility bound
  (:meth:`idyn.controllers.Controller.impulse_bound`).

The default run draws ``FUZZ_EXAMPLES`` = 400 states per robot and controller on LINKS and a1
(``IDYN_FUZZ_EXAMPLES`` in the environment changes it) and 100 on aliengo and the manipulator.
The slow run (:func:`test_long_run`, ``pytest -m slow -k long_run``) steps ``LONG_STATES`` =
10,000 states per robot through every controller with the real-time budget ``budget=dt`` and
reports per controller the crashes, steps over budget plus :data:`BUDGET_MARGIN`, non-finite
outputs, implausible SOLVED answers and the p50/p99/max step time; all counts must be 0
(numbers of one run: ``docs/safety.md``).  Step time is never checked in the default run.
"""
from __future__ import annotations

import os
import time
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
#: states per robot of the slow run (``IDYN_FUZZ_LONG`` in the environment changes it)
LONG_STATES = int(os.environ.get("IDYN_FUZZ_LONG", "10000"))
#: allowed excess of a step over its budget (s) in the slow run: the longest single stage a
#: controller may start before the budget is spent (compiled solvers cannot be interrupted) plus
#: the contact-free fallback and the machine's noise.  Measured on the 16-contact fuzz states of
#: this shared 2-core machine (docs/safety.md): generous on purpose
BUDGET_MARGIN = 0.1
NAMES = controllers.available()
MUS = (0.0, 0.3, 1.0, np.inf)
ROBOTS = ("links", "a1", "aliengo", "manipulator")


@lru_cache(maxsize=None)
def robot(name: str):
    """``(model, reference q, contact spheres)`` of a robot: a quadruped standing on its feet, or
    the manipulator (fixed base) at its reference posture with its fingertips."""
    if name == "manipulator":
        arm = robots.manipulator()
        return arm.model, arm.q0, tuple(arm.fingertips.values())
    rob = robots.quadruped(name)
    return rob.model, rob.q_stand, tuple(rob.feet.values())


@lru_cache(maxsize=None)
def controller(robot_name: str, name: str, **options):
    return controllers.make(name, robot(robot_name)[0], **options)


def random_state(robot_name: str, seed: int, m: int):
    model, q_ref, spheres = robot(robot_name)
    rng = np.random.default_rng(seed)
    delta = np.zeros(model.nv)
    delta[model.actuated_v] = rng.uniform(-0.3, 0.3, model.na)
    q = model.integrate(q_ref, delta, 1.0)   # revolute: q_ref + delta; continuous: rotated (cos, sin)
    if model.floating_base:
        # the floating base: a quaternion (x, y, z, w) tilted by up to 0.2 rad about a random axis
        axis = rng.standard_normal(3)
        axis /= np.linalg.norm(axis)
        q[3:7] = pin.Quaternion(pin.AngleAxis(rng.uniform(0.0, 0.2), axis)).coeffs()
    v = rng.normal(0.0, 1.0, model.nv)
    desired = Desired(model.joint_positions(q_ref), np.zeros(model.na), rng.normal(0.0, 2.0, model.na))
    centres = [model.frame_placement(q, s.link).act(s.offset) for s in spheres]
    contacts = []
    for _ in range(m):
        k = int(rng.integers(len(spheres)))
        point = centres[k] - np.array([0.0, 0.0, spheres[k].radius]) + rng.uniform(-5e-3, 5e-3, 3) * rng.integers(2)
        normal = np.array([0.0, 0.0, 1.0]) + rng.normal(0.0, 0.05, 3)
        contacts.append(Contact(spheres[k].link, None, point, normal, MUS[int(rng.integers(len(MUS)))],
                                phi=float(rng.uniform(-1e-3, 2e-3))))
    return RobotState(q, v), desired, contacts


def impulse_ratio(ctrl, out) -> float:
    """A step's contact impulses over the controller's plausibility bound of that step (0 when
    it predicted none)."""
    step = ctrl._last_step
    if step is None or not out.contact_forces.size or out.info.fallback == "no-contact-id":
        return 0.0
    return float(np.linalg.norm(out.contact_forces, axis=1).sum()) * ctrl.dt / ctrl.impulse_bound(step)


def check_step(ctrl, model, m, out) -> None:
    """The default run's checks of one output (module docstring)."""
    assert out.tau.shape == (model.na,) and np.isfinite(out.tau).all()
    assert out.contact_forces.shape == (m, 3) and np.isfinite(out.contact_forces).all()
    info = out.info
    assert isinstance(info.status, Status)
    if info.fallback == "no-contact-id":
        assert not info.status.solved and not out.contact_forces.any()
    if info.status is Status.IMPLAUSIBLE:
        assert info.details["impulse_ratio"] > 1.0
    if info.status.solved:
        if info.v_next is not None:
            assert np.isfinite(info.v_next).all()
        assert impulse_ratio(ctrl, out) <= 1.0


def _fuzz(robot_name, name, seed, m):
    state, desired, contacts = random_state(robot_name, seed, m)
    ctrl = controller(robot_name, name)
    try:
        out = ctrl.compute(state, desired, contacts)
    except IdynError:
        return                      # a typed refusal is an honest answer
    check_step(ctrl, robot(robot_name)[0], m, out)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("robot_name", ["links", "a1"])
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(0, 16))
def test_random_physical_states(robot_name, name, seed, m):
    _fuzz(robot_name, name, seed, m)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("robot_name", ["aliengo", "manipulator"])
@settings(max_examples=max(FUZZ_EXAMPLES // 4, 1), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), m=st.integers(0, 16))
def test_random_states_of_other_robots(robot_name, name, seed, m):
    _fuzz(robot_name, name, seed, m)


def long_run(robot_name: str, states: int, seed: int = 0) -> dict:
    """Every controller with ``budget=dt`` on ``states`` random states of ``robot_name``: per
    controller the counts of the module docstring and the step times (s)."""
    model = robot(robot_name)[0]
    rng = np.random.default_rng(seed)
    draws = [(int(rng.integers(2 ** 32)), int(rng.integers(17))) for _ in range(states)]
    report = {}
    for name in NAMES:
        ctrl = controllers.make(name, model, budget=1e-3)
        counts = dict(crashes=0, refused=0, over_budget=0, non_finite=0, implausible_solved=0, fell_back=0)
        times = []
        for seed_i, m in draws:
            state, desired, contacts = random_state(robot_name, seed_i, m)
            t0 = time.perf_counter()
            try:
                out = ctrl.compute(state, desired, contacts)
            except IdynError:
                counts["refused"] += 1
                continue
            except Exception:  # noqa: BLE001 -- counted: the run must report, not stop
                counts["crashes"] += 1
                continue
            elapsed = time.perf_counter() - t0
            times.append(elapsed)
            counts["over_budget"] += elapsed > ctrl.budget + BUDGET_MARGIN
            counts["non_finite"] += not (np.isfinite(out.tau).all() and np.isfinite(out.contact_forces).all())
            counts["implausible_solved"] += out.info.status.solved and impulse_ratio(ctrl, out) > 1.0
            counts["fell_back"] += out.info.fallback == "no-contact-id"
        t = np.array(times) if times else np.zeros(1)
        report[name] = {**counts, "p50_ms": 1e3 * np.median(t), "p99_ms": 1e3 * np.quantile(t, 0.99),
                        "max_ms": 1e3 * t.max()}
    return report


@pytest.mark.slow
@pytest.mark.parametrize("robot_name", ROBOTS)
def test_long_run(robot_name):
    report = long_run(robot_name, LONG_STATES)
    for name, r in report.items():
        print(f"{robot_name:12s} {name:18s} " + " ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    for name, r in report.items():
        assert r["crashes"] == r["over_budget"] == r["non_finite"] == r["implausible_solved"] == 0, (name, r)
