"""The closed loop's per-step forms of the planners give what their public forms give.

The quadruped reference drives the planner, the waypoint follower and the balance term through
compiled per-step entry points (:meth:`QuadrupedPlanner.plan_checked`,
:meth:`WaypointFollower.twist_at`, :meth:`BalanceController.torque`); these tests hold them to
:meth:`QuadrupedPlanner.plan`, :meth:`WaypointFollower.command` and
:meth:`BalanceController.compute` (the same code on the same inputs: equal), and the compiled
scalar helpers to their definitions.
"""
import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings, strategies as st

from idyn import robots
from idyn import Contact
from idyn.errors import InvalidInputError
from idyn.state import RobotState
from idyn.planners import BalanceController, BaseCommand, QuadrupedPlanner, WaypointFollower
from idyn.planners.base_motion import clamp, wrap_angle

FLOATS = st.floats(allow_nan=True, allow_infinity=True)


@settings(max_examples=300, deadline=None)
@given(x=FLOATS, bound=st.floats(min_value=0.0) | st.just(math.nan))
def test_compiled_clamp_and_wrap_are_the_python_expressions(x, bound):
    got, want = clamp(x, bound), float(min(max(x, -bound), bound))
    assert got == want or (math.isnan(got) and math.isnan(want))
    if math.isfinite(x):
        assert wrap_angle(x) == (x + math.pi) % (2.0 * math.pi) - math.pi


def _planner(robot):
    return QuadrupedPlanner(robot.model, {leg: f.link for leg, f in robot.feet.items()},
                            robot.leg_joints, robot.q_stand,
                            foot_offsets={leg: f.offset for leg, f in robot.feet.items()})


def _wobbly_states(robot, steps=400, dt=1e-3, seed=0):
    """Standing states with a drifting, rocking base (so the lead limits, the probing of late
    feet and early touchdowns all occur) and random contact flags."""
    rng = np.random.default_rng(seed)
    m = robot.model
    for k in range(steps):
        q = robot.q_stand.copy()
        q[:3] += [0.02 * math.sin(0.01 * k), 0.01 * math.cos(0.02 * k), 0.005 * math.sin(0.05 * k)]
        rpy = 0.05 * np.sin(np.array([0.03, 0.04, 0.01]) * k)
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(rpy)).coeffs()
        q[m.actuated_q] += 0.02 * rng.normal(size=m.na)
        yield RobotState(q, 0.1 * rng.normal(size=m.nv), k * dt), rng.uniform(size=4) < 0.7


def test_plan_checked_is_plan():
    robot = robots.quadruped("links")
    public, per_step = _planner(robot), _planner(robot)
    command = BaseCommand(0.2, 0.05, 0.4)
    for state, touching in _wobbly_states(robot):
        want = public.plan(state, command, touching)
        per_step.touching_flags[:] = touching
        R = pin.Quaternion(state.q[3:7]).normalized().toRotationMatrix()
        got = per_step.plan_checked(state.q, state.t, R, np.array([0.2, 0.05, 0.4]), True)
        for a, b in ((got.q, want.q), (got.v, want.v), (got.vdot, want.vdot),
                     (per_step.goal_rows(), np.array(list(vars(public.base_goal()).values())))):
            np.testing.assert_array_equal(a, b)
        assert per_step.stance == public.stance
        np.testing.assert_array_equal(per_step.stance_flags, list(public.stance.values()))


def test_plan_checked_refills_its_own_desired_and_plan_returns_copies():
    robot = robots.quadruped("links")
    planner = _planner(robot)
    states = list(_wobbly_states(robot, steps=3))
    first = planner.plan(states[0][0])
    kept = first.q.copy()
    R = pin.Quaternion(states[1][0].q[3:7]).normalized().toRotationMatrix()
    live = planner.plan_checked(states[1][0].q, states[1][0].t, R, np.zeros(3), False)
    again = planner.plan_checked(states[2][0].q, states[2][0].t, R, np.zeros(3), False)
    assert live is again and live.q is not first.q
    np.testing.assert_array_equal(first.q, kept)


def test_reset_keeps_the_command_and_a_failed_step_leaves_the_planner_usable(monkeypatch):
    robot = robots.quadruped("links")
    planner = _planner(robot)
    planner.set_command(BaseCommand(0.1, 0.0, 0.2))
    planner.reset()
    assert planner.command == BaseCommand(0.1, 0.0, 0.2)
    states = list(_wobbly_states(robot, steps=200))
    with monkeypatch.context() as patch:      # the first liftoff's swing cannot be planned
        patch.setattr(QuadrupedPlanner, "_plan_swing", lambda self, i: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            for state, touching in states:
                planner.plan(state, touching=touching)
    reference = _planner(robot)
    reference.set_command(planner.command)
    for state, touching in states[-20:]:      # resumes as a fresh step, not inside the failed one
        d = planner.plan(state, touching=touching)
        assert np.isfinite(d.vdot).all()
        reference.plan(state, touching=touching)
    with pytest.raises(InvalidInputError, match="time went backwards"):
        planner.plan(states[0][0])


def test_twist_at_is_the_command_of_the_state():
    follower, twin = WaypointFollower(), WaypointFollower()
    rng = np.random.default_rng(1)
    for _ in range(300):
        x, y, yaw = rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), rng.uniform(-4, 4)
        q = np.zeros(19)
        q[:2] = x, y
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.0, 0.0, yaw)).coeffs()
        want = follower.command(RobotState(q, np.zeros(18)))
        R = pin.Quaternion(q[3:7]).normalized().toRotationMatrix()
        got = twin.twist_at(x, y, math.atan2(R[1, 0], R[0, 0]))
        assert tuple(got) == (want.vx, want.vy, want.wz)
        assert (twin.index, twin.reached) == (follower.index, follower.reached)


def test_balance_torque_is_compute_for_the_used_contacts():
    robot = robots.quadruped("links")
    bal = BalanceController(robot.model)
    rng = np.random.default_rng(2)
    goal_rows = np.array([[0.0, 0.0, robot.q_stand[2]], [0.0, 0.0, 0.3], [0.05, 0.0, 0.0], [0.0, 0.0, 0.2]])
    goal = type("Goal", (), dict(zip(("position", "rpy", "linear", "angular"), goal_rows)))
    for _ in range(50):
        q = robot.q_stand.copy()
        q[:3] += 0.01 * rng.normal(size=3)
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*(0.1 * rng.normal(size=3)))).coeffs()
        state = RobotState(q, rng.normal(size=robot.model.nv))
        contacts = [Contact(f.link, None, rng.normal(size=3), [0.1, 0.0, 1.0], 1.0)     # some feet with two
                    for f in robot.feet.values() for _ in range(rng.integers(1, 3))]      # points: > 4 contacts
        stance = {c.body_a for c in contacts if rng.uniform() < 0.7}
        want = bal.compute(state, contacts, goal, stance_bodies=stance).tau
        got = bal.torque(state, [c for c in contacts if c.body_a in stance], goal_rows)
        np.testing.assert_array_equal(got, want)
    assert not bal.torque(state, [], goal_rows).any()


def test_reference_schedule_ignores_contacts_of_other_bodies():
    from idyn.experiments.references import QuadrupedReference
    robot = robots.quadruped("links")
    ref = QuadrupedReference(robot, friction_limit=0.3)
    state = RobotState(robot.q_stand.copy(), np.zeros(robot.model.nv), 0.0)
    feet = [Contact(f.link, None, np.zeros(3), [0.0, 0.0, 1.0], 1.0) for f in robot.feet.values()]
    base = Contact("a body that is no foot", None, np.zeros(3), [0.0, 0.0, 1.0], 1.0)
    contacts = feet + [base]
    ref.desired(state, contacts)
    stance = [robot.feet[leg].link for leg, down in ref.planner.stance.items() if down]
    active = ref.active_contacts(contacts)
    assert [c.body_a for c in active] == stance and len(stance) == 2        # the trot starts with a swing pair
    assert all(c.mu == 0.3 for c in active)
    assert ref.extra_torque(state, contacts).shape == (robot.model.na,)
