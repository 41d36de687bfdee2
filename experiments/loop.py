"""The closed control loop of the experiments (paper Sec. 7, docs/experiments.md).

One place connects a testbed, a reference (planner), a controller and the trace:

    state, contacts  <- testbed
    active           <- reference.active_contacts(contacts)      (the planner's contact schedule)
    desired          <- reference.desired(state, contacts)       (planner, waypoints, arm motion)
    out              <- controller.compute(state, desired, active)
                        (the shared error feedback of Sec. 7.3 lives in the controller)
    tau              <- out.tau + reference.extra_torque(...)     (the balance term)
                        clipped to the torque limits, if any

The balance term is added as torques for every controller, as the authors' Pacer does (its
stabilization plugin adds -N_q^T c_N to the joint load goal, not to qdd_des, despite the wording
of paper Sec. 7.3). Realising the same base PD instead as a desired acceleration of the stance
legs (foot held: qdd = J^-1 (-(a + alpha x p))), so that the ID controller plans it with its
contact model, fell earlier in PyBullet (docs/design.md). In two-foot stance
a rotation about the support diagonal cannot be produced by the feet, so the stance legs'
commanded motion is inconsistent and the ID's contact forces fight it.
    testbed.apply(tau); testbed.step()
    sensed forces    -> trace, and to sensed-force controllers (observe_contact_forces)

Any object with the testbed methods ``reset()``, ``state()``, ``contacts()``,
``sensed_contact_forces()`` (aligned with the last ``contacts()``), ``apply(tau)``, ``step()`` and an attribute ``dt`` works
(PyBullet, idyn.sim, hardware). The trace is :class:`idyn.experiments.trace.Trace`, saved as a
compressed ``.npz``.

Every step is timed by phase (:data:`PHASES`, :attr:`LoopResult.phase_times`): the profile of
where a run's time goes (``idyn bench-loop`` prints it). The clock is ``time.perf_counter`` (wall,
~0.1 us a reading) unless ``clock`` is given, e.g. ``time.process_time`` (CPU time of the
process, ~0.8 us a reading on Linux: insensitive to other processes on a shared machine).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pinocchio as pin

from idyn import RobotModel
from idyn.errors import InvalidInputError
from idyn.jit import specialisations
from idyn.state import Desired

from .trace import Trace


#: The phases of one closed-loop step, in the order they run (columns of
#: :attr:`LoopResult.phase_times`): the testbed's state and contact query, the planner's desired
#: motion and contact schedule, the controller, the balance term, the simulator (torque input and
#: one step, including the torque sum and clipping), the sensed forces (and their feedback), and
#: the loop's own bookkeeping (trace record, centre of mass, fall test, progress).
PHASES = ("state", "contacts", "planner", "schedule", "controller", "balance", "simulator", "sensed",
          "loop")


class Reference(Protocol):
    """What the loop asks of a planner: desired motion and an optional torque term."""

    def reset(self) -> None: ...

    def desired(self, state, contacts) -> Desired: ...

    def extra_torque(self, state, contacts) -> np.ndarray | None: ...

    def active_contacts(self, contacts) -> list: ...


@dataclass
class LoopResult:
    trace: Trace
    wall_time: float                 #: seconds of real time the loop took
    steps: int
    info: dict = field(default_factory=dict)
    #: (steps, len(PHASES)) seconds spent in each phase of each step (see :data:`PHASES`)
    phase_times: np.ndarray | None = None

    @property
    def realtime_factor(self) -> float:
        return self.trace.t[-1] / self.wall_time if self.steps and self.wall_time > 0 else 0.0


def torque_limits(model: RobotModel, limit) -> np.ndarray | None:
    """``None``/``False``: unlimited (the paper's runs); ``True``/``"model"``: the URDF effort
    limits; a number or an (na,) array: those limits."""
    if limit is None or limit is False:
        return None
    if limit is True or (isinstance(limit, str) and limit == "model"):
        lim = model.effort_limits
    else:
        lim = np.broadcast_to(np.asarray(limit, dtype=float), (model.na,)).copy()
    if not (np.all(np.isfinite(lim)) and np.all(lim > 0)):
        raise InvalidInputError(f"torque limits must be positive and finite, got {lim}")
    return lim


def _center_of_mass(model: RobotModel):
    """``com(q)``: pinocchio's centre of mass on data of its own (the trace copies the answer)."""
    pm = model.pinocchio_model
    data = pm.createData()
    return lambda q: pin.centerOfMass(pm, data, q)


def _normal_total(forces: np.ndarray) -> float:
    """The summed normal force of (m, 3) contact forces [normal, s, t]: the column's floats added
    left to right (cheaper than numpy's sum for a handful of contacts)."""
    return sum(forces[:, 0].tolist())


def run_loop(testbed, model: RobotModel, reference: Reference, controller, duration: float, *,
             limit=None, trace_path=None, meta: dict | None = None, com=None,
             stop=None, progress=None, clock=None) -> LoopResult:
    """Run ``duration`` seconds of closed loop at the testbed's ``dt``; return the trace.

    ``com(q)`` (default: pinocchio's centre of mass, what ``model.center_of_mass`` gives, on the
    loop's own data without re-validating the state the controller has checked) fills the
    trace's centre-of-mass column;
    ``stop(state)`` may end the run early (a fall); ``progress(k, steps)`` is called every
    step if given. With ``trace_path`` the trace is saved there (compressed ``.npz``).
    ``clock`` (default ``time.perf_counter``) times the phases of every step
    (:attr:`LoopResult.phase_times`).

    ``info["kernels_compiled_in_loop"]`` counts the compiled kernels first met inside the loop
    (each a stall; :func:`dry_run` beforehand avoids them).
    """
    dt = float(testbed.dt)
    if not (np.isfinite(duration) and duration > 0):
        raise InvalidInputError(f"duration must be positive, got {duration}")
    steps = int(round(duration / dt))
    lim = torque_limits(model, limit)
    com = com or _center_of_mass(model)
    trace = Trace.allocate(steps, model.nq, model.nv, model.na, meta=meta)
    observe = getattr(controller, "observe_contact_forces", None)
    clock = clock or time.perf_counter
    marks = []      # per step: the clock before each phase of PHASES and after the last

    reference.reset()
    controller.reset()
    state = testbed.reset()
    kernels = specialisations()
    clipped = 0
    codes = {}      # solver status -> its trace code
    t_start = time.perf_counter()
    for k in range(steps):
        t0 = clock()
        state = testbed.state()
        t1 = clock()
        contacts = testbed.contacts()
        t2 = clock()
        desired = reference.desired(state, contacts)
        t3 = clock()
        active = reference.active_contacts(contacts)
        t4 = clock()
        out = controller.compute(state, desired, active)
        t5 = clock()
        tau = out.tau
        extra = reference.extra_torque(state, contacts)
        t6 = clock()
        if extra is not None:
            tau = tau + extra
        if lim is not None:
            clipped += int(np.any(np.abs(tau) > lim))
            tau = np.clip(tau, -lim, lim)
        testbed.apply(tau)
        testbed.step()
        t7 = clock()
        sensed = testbed.sensed_contact_forces()          # aligned with the last contacts()
        if observe is not None:
            observe(contacts, sensed)
        t8 = clock()
        info = out.info
        status = info.status
        code = codes.get(status)
        if code is None:
            code = codes[status] = trace.status_code(status.value)
        trace.record(state.t, state.q, state.v, desired.q, desired.v, tau,
                     _normal_total(out.contact_forces) if active else 0.0,
                     _normal_total(sensed) if contacts else 0.0, len(contacts),
                     code, info.solve_time, com(state.q))
        if progress is not None:
            progress(k + 1, steps)
        done = stop is not None and stop(state)
        marks.append((t0, t1, t2, t3, t4, t5, t6, t7, t8, clock()))
        if done:
            break
    wall = time.perf_counter() - t_start
    info = {"steps_torque_limited": clipped, "kernels_compiled_in_loop": specialisations() - kernels}
    if trace_path is not None:
        trace.save(trace_path)
    return LoopResult(trace, wall, trace.n, info,
                      np.diff(np.array(marks).reshape(-1, len(PHASES) + 1), axis=1))


def dry_run(testbed, reference, controller, duration: float, *, limit=None) -> None:
    """``duration`` seconds of :func:`run_loop`'s body, untimed and unrecorded, from and back to
    the reset state: every compiled kernel the run will use is compiled (first run after an
    install) or loaded from numba's cache now, not inside the loop (wrap it in
    :class:`idyn.jit.preparing` to report it). ``limit``: the torque limits, as for
    :func:`run_loop`."""
    observe = getattr(controller, "observe_contact_forces", None)
    lim = torque_limits(controller.model, limit) if limit is not None else None
    steps = int(round(duration / float(testbed.dt)))
    reference.reset()
    controller.reset()
    testbed.reset()
    for _ in range(steps):
        state = testbed.state()
        contacts = testbed.contacts()
        desired = reference.desired(state, contacts)
        out = controller.compute(state, desired, reference.active_contacts(contacts))
        extra = reference.extra_torque(state, contacts)
        tau = out.tau if extra is None else out.tau + extra
        testbed.apply(tau if lim is None else np.clip(tau, -lim, lim))
        testbed.step()
        sensed = testbed.sensed_contact_forces()
        if observe is not None:
            observe(contacts, sensed)
    reference.reset()
    controller.reset()
    testbed.reset()
