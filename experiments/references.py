"""Connect robot descriptions to the planners (the factory the dependency rule asks for).

``planners`` know nothing of ``robots``; these adapters pass a :class:`idyn.robots.Quadruped` or
:class:`idyn.robots.Manipulator` to them as plain models, frame names and indices, and expose the
:class:`idyn.experiments.loop.Reference` interface the closed loop uses.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from idyn.errors import InvalidInputError
from idyn.state import Desired
from idyn.planners import (PAPER_SPEED, ArmSinusoid, BalanceController, QuadrupedPlanner, TrotGait,
                           WaypointFollower)
from idyn.planners.base_motion import base_rotation

from .scenario import LOCOMOTION_FRICTION_LIMIT, check_friction_limit


#: a fingertip counts as touching when its gap is below this (m)
TOUCH_GAP = 1e-4


@lru_cache(maxsize=1)
def _links_height() -> float:
    from idyn import robots
    return robots.quadruped("links").nominal_base_height


def size_relative_to_links(quadruped) -> float:
    """How many times LINKS's size ``quadruped`` is: the ratio of their nominal base heights
    (standing, feet on the ground), the scale of the trot (:class:`QuadrupedReference`)."""
    return quadruped.nominal_base_height / _links_height()


class QuadrupedReference:
    """The waypoint task driving the trot planner, plus the balance term (paper Sec. 7.2-7.6).

    ``planner_options`` go to :class:`idyn.planners.QuadrupedPlanner`; ``balance`` is a
    :class:`idyn.planners.BalanceController` (default gains), ``False`` to switch it off, or a dict of
    its keyword arguments. ``balance_target`` chooses where its output goes: ``"torque"``
    (default) adds it to the controller's torque after the controller (:meth:`extra_torque`);
    ``"acceleration"`` is paper Sec. 7.3's stabilisation, which "accumulates" it "into the vector
    of desired acceleration" the inverse dynamics controller is given (:meth:`desired`), as the
    authors' Pacer does with its stabilisation's ``acceleration`` switch (the same vector added
    to ``qdd_des``; the gains are then in acceleration units). ``contacts`` chooses what the controller models: ``"schedule"``
    (default: touching feet in planned stance, see :meth:`active_contacts`) or ``"all"`` (every
    contact the testbed reports; the matched-model verification of paper Sec. 8.2 gives the
    controller exactly the simulator's contact data).

    ``friction_limit`` caps the Coulomb coefficient of the contacts handed to the controller: a
    friction safety factor, as legged controllers plan with a conservative mu. The default is
    the command line's, :data:`idyn.experiments.scenario.LOCOMOTION_FRICTION_LIMIT` (0.3);
    ``None`` hands the controller the terrain's coefficient, as the paper did (and as the
    matched-model verification must: the controller then shares the simulator's contact data). Why it matters for the paper's Coulomb controllers:
    at high friction their forces can hold a stance foot down only through friction (jamming:
    the tangential force pushes the foot into the ground), so the forward problem has a second
    solution in which the foot lifts off with zero force, and a simulator may return that one.
    Planning with a small mu keeps the ID's forces away from such states (figures:
    docs/design.md). The no-slip controllers model no friction bound, so the cap does not
    change them.
    """

    CONTACT_SELECTIONS = ("schedule", "all")
    #: where the balance term goes: added to the controller's torque, or to the desired joint
    #: acceleration the controller is given (paper Sec. 7.3)
    BALANCE_TARGETS = ("torque", "acceleration")

    def __init__(self, quadruped, *, gait=None, follower: WaypointFollower | None = None,
                 balance=True, contacts: str = "schedule",
                 friction_limit: float | None = LOCOMOTION_FRICTION_LIMIT, scale_to_size: bool = True,
                 balance_target: str = "torque", **planner_options):
        if balance_target not in self.BALANCE_TARGETS:
            raise InvalidInputError(f"balance_target must be one of {self.BALANCE_TARGETS}, got {balance_target!r}")
        self.balance_target = balance_target
        if contacts not in self.CONTACT_SELECTIONS:
            raise InvalidInputError(f"contacts must be one of {self.CONTACT_SELECTIONS}, got {contacts!r}")
        self.contact_selection = contacts
        self.friction_limit = check_friction_limit(friction_limit)
        #: the robot's size relative to LINKS, the paper's quadruped (nominal base heights): the
        #: trot's step height scales with it and its speed with its square root (the Froude
        #: number v^2 / (g l) of LINKS's trot); the period stays the paper's 0.3 s (a longer one,
        #: as full dynamic similarity asks, made go2 fall in PyBullet: docs/planner.md). LINKS
        #: keeps 0.015 m and 0.2 m/s; ``scale_to_size=False`` keeps them for every robot
        self.size = size_relative_to_links(quadruped) if scale_to_size else 1.0
        self.gait = gait or TrotGait(step_height=TrotGait.step_height * self.size)
        feet = {leg: f.link for leg, f in quadruped.feet.items()}
        self.planner = QuadrupedPlanner(quadruped.model, feet, quadruped.leg_joints,
                                        quadruped.q_stand, gait=self.gait,
                                        foot_offsets={leg: f.offset for leg, f in quadruped.feet.items()},
                                        **planner_options)
        self.follower = follower or WaypointFollower(gait_period=self.gait.period,
                                                     speed=PAPER_SPEED * math.sqrt(self.size))
        self.balance = (None if balance is False else
                        BalanceController(quadruped.model, **(balance if isinstance(balance, dict) else {})))
        self._feet = feet
        self._goal = self.planner.goal_rows()   # a live view of the planned base pose
        self._model = quadruped.model
        #: foot link -> index of its leg in the planner's order
        self._leg_index = {feet[leg]: i for i, leg in enumerate(self.planner.legs)}
        self._no_leg = len(self.planner.legs)
        self._stance_flags = self.planner.stance_flags      # a live view of the planned stance
        self._touching = self.planner.touching_flags        # the feet's contact flags the planner reads
        #: (q, v, base quaternion, base rotation) of the state the last desired() validated
        self._pose = (None, None, None, None)
        self._stance = (None, None)             # (contacts, those in planned stance) since the last desired()

    def reset(self) -> None:
        self.planner.reset()
        self.follower.reset()
        self._pose = (None, None, None, None)
        self._stance = (None, None)

    def desired(self, state, contacts):
        q, v = self._model.check_state(state)
        self._stance = (None, None)             # the stance flags change with this step
        touching = self._touching
        touching[:] = 0
        leg_index = self._leg_index
        for c in contacts:
            if c.phi <= TOUCH_GAP and c.body_a in leg_index:
                touching[leg_index[c.body_a]] = 1
        pose = q[:7].tolist()                   # base position and quaternion (x, y, z, w)
        quaternion = pose[3:]
        R = np.empty((3, 3))                    # the rotation pinocchio gives for q[3:7], compiled
        base_rotation(q, R)
        self._pose = (q, v, quaternion, R)
        command = self.follower.twist_at(pose[0], pose[1], math.atan2(R[1, 0], R[0, 0]))
        desired = self.planner.plan_checked(q, float(state.t), R, command, True)
        if self.balance is None or self.balance_target != "acceleration":
            return desired
        # Sec. 7.3: the stabilisation goes into qdd_des (a new Desired: the planner owns its arrays)
        stabilisation = self.balance.torque_checked(q, v, self._in_stance(contacts), self._goal, R)
        return Desired(desired.q, desired.v, desired.vdot + stabilisation)

    def _checked_pose(self, state):
        """``(q, v, R)`` of ``state`` as :meth:`desired` validated it and formed the base rotation
        this step, if ``state`` is still that state (same arrays, same base quaternion), else
        None."""
        q, v, quaternion, R = self._pose
        if state.q is q and state.v is v and q[3:7].tolist() == quaternion:
            return q, v, R
        return None

    def _in_stance(self, contacts) -> list:
        """The contacts of feet in planned stance, in order: formed once per step for the list
        ``contacts`` (the closed loop hands the same list to :meth:`active_contacts` and
        :meth:`extra_torque`)."""
        seen, in_stance = self._stance
        if contacts is not seen:
            stance, leg_index = self._stance_flags.tolist(), self._leg_index
            stance.append(0)                    # the flag of a body that is no foot (index len(legs))
            in_stance = [c for c in contacts if stance[leg_index.get(c.body_a, self._no_leg)]]
            self._stance = (contacts, in_stance)
        return in_stance

    def active_contacts(self, contacts):
        """The contacts the controller models: those of feet in planned stance.

        A foot in its swing phase is about to leave (or is off) the ground. A model without
        normal complementarity (the QP controllers, paper Sec. 6) may put force on such a
        separating contact, and with that force in its prediction it never commands the foot to
        lift: the swing feet stay planted and the robot falls. Selecting
        the contacts by the gait's schedule is what a legged controller does with its planner.
        With ``contacts="all"`` every reported contact is modelled. Coefficients above
        ``friction_limit`` are lowered to it.
        """
        cap = self.friction_limit
        if self.contact_selection == "all":
            active = list(contacts)
        else:
            active = [c for c in self._in_stance(contacts) if c.phi <= TOUCH_GAP]
        return active if cap is None else [c if c.mu <= cap else c.with_friction(cap) for c in active]

    def extra_torque(self, state, contacts):
        if self.balance is None or self.balance_target != "torque":
            return None
        used, checked = self._in_stance(contacts), self._checked_pose(state)
        if checked is None:
            return self.balance.torque(state, used, self._goal)
        q, v, R = checked
        return self.balance.torque_checked(q, v, used, self._goal, R)


class ArmReference:
    """The manipulator's sinusoid with the fingers holding (and closing when not touching)."""

    def __init__(self, manipulator, **options):
        names = manipulator.model.actuated_joint_names
        fingers = [names.index(j) for j in manipulator.finger_joints]
        self.arm = ArmSinusoid(manipulator.q0, fingers, manipulator.finger_close_sign, **options)
        self._tips = [manipulator.fingertips[j].link for j in manipulator.finger_joints]

    def reset(self) -> None:
        self.arm.reset()

    def desired(self, state, contacts):
        bodies = {b for c in contacts if c.phi <= TOUCH_GAP for b in (c.body_a, c.body_b)}
        touching = np.array([tip in bodies for tip in self._tips])
        return self.arm.desired(state.t, touching)

    def extra_torque(self, state, contacts):
        return None

    def active_contacts(self, contacts):
        """Every fingertip and box contact: the grasp has no planned schedule."""
        return list(contacts)
