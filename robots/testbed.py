"""The testbed protocol: what a closed loop (:func:`idyn.experiments.loop.run_loop`) asks of a simulated
or real robot. PyBullet (:mod:`idyn.robots.pybullet`), idyn.sim (:mod:`idyn.robots.sim`) and MuJoCo
(:mod:`idyn.robots.mujoco`) implement it; so can a user's simulator or hardware. Conformance is
checked with physics, per clause, by ``tests/test_testbed_conformance.py``.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from idyn.contact import Contact
from idyn.model import RobotModel
from idyn.state import RobotState


@runtime_checkable
class Testbed(Protocol):
    """A torque-controlled robot stepped at a fixed ``dt``, with contacts and sensed forces.

    **One control step** calls, in this order::

        state = testbed.state()              # the state at time t
        contacts = testbed.contacts()        # detected at that state
        testbed.apply(tau)                   # held until the next apply()
        testbed.step()                       # t -> t + dt
        forces = testbed.sensed_contact_forces()   # of that step, aligned with ``contacts``

    **State** (``state()``): a :class:`idyn.state.RobotState` of :attr:`model` in pinocchio's
    conventions (docs/conventions.md): a floating base's q is [x y z, qx qy qz qw, joints] with a
    unit quaternion in x-y-z-w order, its v the linear velocity of the base frame's origin and the
    angular velocity, both in the base frame, then the joint rates; a continuous joint is
    [cos a, sin a] in q. ``t`` is k dt after k steps since :meth:`reset`. ``reset(q, v)`` sets
    the state exactly (``state()`` returns it: ``pin.difference`` 0) and returns it; ``reset()``
    puts the robot at its reference (a quadruped standing, its lowest foot touching the ground).
    ``reset`` also sets t = 0 and the held torque to zero.

    **Torques** (``apply(tau)``): ``model.na`` finite joint torques (N m, or N for a prismatic
    joint) in pinocchio's actuated order (``model.actuated_joint_names``), pure motor torques (no
    joint damping or friction added), held through every step until the next ``apply``; a
    vector of another size or with a non-finite entry raises
    :class:`idyn.errors.InvalidInputError`.

    **Contacts** (``contacts()``): one :class:`idyn.Contact` per contact feature of the testbed
    (a foot or fingertip sphere, a box corner) against the environment (``body_b`` None) or
    another body, in the conventions of docs/conventions.md: ``point`` the closest point on
    body B, ``normal`` the unit normal from B towards A (the direction of the force B exerts on
    A), ``phi`` the signed gap (negative when penetrating), ``mu`` the friction coefficient
    simulated there (no slip as 100), all in the world frame. The rule, the same everywhere:

    * every feature whose gap is at most :attr:`contact_margin` is reported;
    * a feature farther than that is reported only if it closes to within the margin in the
      coming step at its current normal velocity, ``phi + dt min(0, dphi/dt) <= contact_margin``
      (speculative detection: idyn.sim's, so that its contact set is the one it steps with);
      PyBullet and MuJoCo report exactly the features within the margin.

    A fallen robot's body touching the ground is simulated but not reported (it is not a contact
    feature).

    **Sensed forces** (``sensed_contact_forces()``): an (n, 3) array aligned with the list last
    returned by ``contacts()``: row i is the force [normal, s, t] (N) that body B exerted on
    body A during the last step, in contact i's frame (``Contact.frame()``), summed over the
    simulator's contact points between the same two bodies attributed to that contact (the
    impulse over the step divided by dt). Rows of contacts that carried no force are zero; so is
    every row before the first step after :meth:`reset`.

    ``close()`` releases the simulator (idempotent); testbeds are context managers.
    """

    #: the step (s)
    dt: float
    #: the pinocchio model whose (q, v) ``state()`` reports and whose torques ``apply`` takes
    model: RobotModel
    #: (m) features within this signed gap are reported by ``contacts()``
    contact_margin: float

    def reset(self, q=None, v=None) -> RobotState: ...

    def state(self) -> RobotState: ...

    def contacts(self) -> list[Contact]: ...

    def apply(self, tau) -> None: ...

    def step(self) -> None: ...

    def sensed_contact_forces(self) -> np.ndarray: ...

    def close(self) -> None: ...
