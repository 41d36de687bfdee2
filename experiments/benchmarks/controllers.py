"""``idyn bench controllers``: step time of every controller against the pinocchio floor.

For each robot (LINKS and a second quadruped) standing on its four feet, every controller of
``controllers.available()`` is timed along the same slow random walk of slightly perturbed
states (:func:`trajectory`).  Beside it, the **pinocchio floor** is timed in the same steps: the
pinocchio calls any model-based controller makes every step (:func:`floor_step`).  The table
prints median and p99 step time per controller and the ratio of medians to the floor;
DIR/bench.json holds all of it (p90 too).

:func:`standing_problem` (the standing quadruped with k duplicated contacts per foot) is shared
by :mod:`idyn.experiments.benchmarks.contacts` and the controller conformance tests.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from idyn import controllers
from idyn import robots
from idyn import Contact
from idyn.state import Desired, RobotState

#: robots timed by default: the paper's LINKS and a second point-footed quadruped
ROBOTS = ("links", "a1")


@dataclass
class StandingProblem:
    """A quadruped standing on flat ground: model, state, desired motion and contacts."""

    robot: robots.Quadruped
    state: RobotState
    desired: Desired
    contacts: list

    @property
    def model(self):
        return self.robot.model


def foot_contacts(robot: robots.Quadruped, q, mu: float, per_foot: int = 1, patch: float = 0.0) -> list[Contact]:
    """Ground contacts under the spherical feet; ``per_foot > 1`` duplicates each one (the
    timing experiment of paper Fig. 19 duplicates contacts at the foot-ground interface), or
    with ``patch > 0`` (a diameter, m) spreads ``per_foot`` distinct points evenly on the circle
    of that diameter around the foot's lowest point, as a contact detector reports a patch."""
    feet = list(robot.feet.values())
    lowest = np.asarray(robot.foot_centres(q), dtype=float) - [[0.0, 0.0, f.radius] for f in feet]
    angles = 2.0 * np.pi * np.arange(per_foot) / per_foot
    ring = 0.5 * patch * np.column_stack((np.cos(angles), np.sin(angles), np.zeros(per_foot)))
    if not (patch > 0.0 and per_foot > 1):
        ring[:] = 0.0
    points = (lowest[:, None, :] + ring[None, :, :]).reshape(-1, 3)
    return Contact.batch([f.link for f in feet for _ in range(per_foot)], points,
                         np.tile([0.0, 0.0, 1.0], (len(points), 1)), mu, points[:, 2])


def standing_problem(name: str = "links", n_contacts: int = 4, mu: float = 1.0, *,
                     rng: np.random.Generator | None = None, noise: float = 0.0,
                     patch: float = 0.0) -> StandingProblem:
    """``n_contacts`` (a multiple of 4) ground contacts under a standing quadruped: each foot's
    contact duplicated, or ``n_contacts / 4`` distinct points per foot on a patch of diameter
    ``patch`` (m, :func:`foot_contacts`).

    ``noise`` perturbs the joint angles and velocities (radians, rad/s) with ``rng``; the desired
    motion is to hold the nominal stance.
    """
    if n_contacts % 4:
        raise ValueError(f"n_contacts must be a multiple of 4, got {n_contacts}")
    robot = robots.quadruped(name)
    model = robot.model
    q = robot.q_stand.copy()
    v = np.zeros(model.nv)
    if noise:
        rng = rng or np.random.default_rng(0)
        q = model.with_joint_positions(q, model.joint_positions(q) + noise * rng.standard_normal(model.na))
        v[model.actuated_v] += noise * rng.standard_normal(model.na)
    na = model.na
    desired = Desired(model.joint_positions(robot.q_stand), np.zeros(na), np.zeros(na))
    return StandingProblem(robot, RobotState(q, v), desired, foot_contacts(robot, q, mu, n_contacts // 4, patch))


def floor_step(problem: StandingProblem):
    """A callable computing the pinocchio floor of ``problem``: the pinocchio calls any
    model-based controller makes every step, ``M(q)`` (``crba``), ``h(q, v)``
    (``nonLinearEffects``), the joint Jacobians (``computeJointJacobians``) and one frame Jacobian
    per contact (``getFrameJacobian``), on a ``Data`` made once, with no Python work around them.
    A controller's step time over this floor is the cost of everything it adds to pinocchio."""
    model, s, contacts = problem.model, problem.state, problem.contacts
    pm = model.pinocchio_model
    data = pm.createData()
    frames = [model.frame_id(c.body_a) for c in contacts]
    q, v = s.q, s.v
    crba, nle, jacobians, frame_jacobian = pin.crba, pin.nonLinearEffects, pin.computeJointJacobians, pin.getFrameJacobian
    aligned = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def step():
        crba(pm, data, q)
        nle(pm, data, q, v)
        jacobians(pm, data, q)
        for f in frames:
            frame_jacobian(pm, data, f, aligned)

    return step


def trajectory(problem: StandingProblem, steps: int, rng: np.random.Generator,
               drift: float = 1e-4) -> list[RobotState]:
    """``steps`` states of a slow random walk (``drift`` rad, rad/s per step on the joints) from
    ``problem.state``: consecutive control steps see nearby, never identical, states, so warm
    starts help exactly as much as in a control loop and no solver answers a repeated question."""
    model, s = problem.model, problem.state
    q, v = s.q.copy(), s.v.copy()
    out = []
    for _ in range(steps):
        q = model.with_joint_positions(q, model.joint_positions(q) + drift * rng.standard_normal(model.na))
        v[model.actuated_v] += drift * rng.standard_normal(model.na)
        out.append(RobotState(q.copy(), v.copy()))
    return out


def summary(times: np.ndarray) -> dict:
    return {"median_us": float(np.median(times) * 1e6), "p90_us": float(np.percentile(times, 90) * 1e6),
            "p99_us": float(np.percentile(times, 99) * 1e6), "samples": int(times.size)}


def time_controllers(problems: list[StandingProblem], names, repeats: int) -> dict:
    """Median, p90 and p99 of the floor and of each controller over ``problems`` x ``repeats`` steps.

    ``names`` lists controller names, or maps a label to ``(name, options)`` of
    :func:`idyn.controllers.make` to time variants of one controller side by side; results are keyed
    by name or label.

    Each problem is run as a ``repeats``-step :func:`trajectory` (after one untimed warm-up
    step), and within each step the floor and every controller are timed one after the other,
    so that load from other processes on the machine falls on all of them alike.  A step of the
    sensed-force controllers includes the call that hands them the measured forces.
    """
    model = problems[0].model
    specs = names if isinstance(names, dict) else {name: (name, {}) for name in names}
    ctrls = {label: controllers.make(name, model, **options) for label, (name, options) in specs.items()}
    times = {name: [] for name in ("floor",) + tuple(ctrls)}
    statuses = {name: {} for name in ctrls}
    pivots = {name: [] for name in ctrls}
    for k, p in enumerate(problems):
        states = trajectory(p, repeats + 1, np.random.default_rng(k))
        floors = [floor_step(StandingProblem(p.robot, st, p.desired, p.contacts)) for st in states]
        w = model.total_mass * np.linalg.norm(model.gravity) / max(len(p.contacts), 1)
        forces = np.tile([w, 0.0, 0.0], (len(p.contacts), 1))
        steps = {}
        for name, ctrl in ctrls.items():
            ctrl.reset()
            if hasattr(ctrl, "observe_contact_forces"):   # sensed ID: the loop hands it forces
                def step(st, ctrl=ctrl):
                    ctrl.observe_contact_forces(p.contacts, forces)
                    return ctrl.compute(st, p.desired, p.contacts)
            else:
                def step(st, ctrl=ctrl):
                    return ctrl.compute(st, p.desired, p.contacts)
            steps[name] = step
        for i, st in enumerate(states):
            t0 = time.perf_counter()
            floors[i]()
            t1 = time.perf_counter()
            if i:
                times["floor"].append(t1 - t0)
            for name, step in steps.items():
                t0 = time.perf_counter()
                out = step(st)
                t1 = time.perf_counter()
                if i:      # the first step is a warm-up (caches, lazy imports)
                    times[name].append(t1 - t0)
                    code = out.info.status.value
                    statuses[name][code] = statuses[name].get(code, 0) + 1
                    pivots[name].append(out.info.pivots)
    result = {"floor": summary(np.array(times["floor"])), "controllers": {}}
    for name in ctrls:
        entry = summary(np.array(times[name]))
        entry["ratio_to_floor"] = entry["median_us"] / result["floor"]["median_us"]
        entry["statuses"] = statuses[name]
        entry["pivots_median"] = float(np.median(pivots[name])) if pivots[name] else 0.0
        entry["pivots_p99"] = float(np.percentile(pivots[name], 99)) if pivots[name] else 0.0
        result["controllers"][name] = entry
    return result


def single_threaded_blas(module: str, out, **kwargs) -> dict | None:
    """The report of ``module.run(out, **kwargs)`` re-run in a child process with one BLAS thread
    (read back from DIR/bench.json), or None if this process already has one thread.

    A control step works on matrices of tens of rows, where multi-threaded BLAS only adds
    synchronisation (on a loaded 2-core machine it multiplied step times by 10-100); the
    environment variable must be set before numpy loads BLAS, hence the child process.
    """
    if os.environ.get("OPENBLAS_NUM_THREADS") == "1":
        return None
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = f"import json, sys; from {module} import run; run(sys.argv[1], **json.loads(sys.argv[2]))"
    subprocess.run([sys.executable, "-c", code, str(out), json.dumps(kwargs)], env=env, check=True)
    return json.loads((Path(out) / "bench.json").read_text())


def write_report(out, report: dict) -> dict:
    """``report`` written to DIR/bench.json (DIR created if missing); returns it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(report, indent=2, default=str))
    return report


def run(out="results/bench", *, counts=None, seeds: int = 2, repeats: int = 15, robots_=ROBOTS) -> dict:
    """Time every controller with 4 contacts (``counts`` ignored: see ``idyn bench contacts``)."""
    if (child := single_threaded_blas(__name__, out, seeds=seeds, repeats=repeats,
                                      robots_=list(robots_))) is not None:
        return child
    names = controllers.available()
    report = {"benchmark": "controllers", "contacts": 4, "seeds": seeds, "repeats": repeats,
              "python": platform.python_version(), "machine": platform.machine(),
              "blas_threads": 1, "robots": {}}
    for robot in robots_:
        rng = np.random.default_rng(1)
        problems = [standing_problem(robot, 4, 1.0, rng=rng, noise=1e-3) for _ in range(seeds)]
        res = time_controllers(problems, names, repeats)
        report["robots"][robot] = res
        f = res["floor"]
        print(f"\n{robot} (4 contacts): pinocchio floor median {f['median_us']:.1f} us, p99 {f['p99_us']:.1f} us")
        print(f"  {'controller':20s} {'median us':>10s} {'p99 us':>10s} {'x floor':>8s}")
        for name, e in res["controllers"].items():
            print(f"  {name:20s} {e['median_us']:10.1f} {e['p99_us']:10.1f} {e['ratio_to_floor']:8.2f}")
    return write_report(out, report)
