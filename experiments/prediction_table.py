"""Verification of contact-force prediction (paper Sec. 8.2, Table 5 and its footnote).

The trot of docs/experiments.md runs in closed loop (:func:`idyn.experiments.loop.run_loop`) and the
controller's predicted summed normal force is compared with the simulator's, step by step:
every predicting controller against every contact model of idyn.sim and against PyBullet. On the
diagonal of :data:`MATCHED` the simulator uses the controller's own contact model, and the
comparison is the paper's: "the contact models utilized by the simulator match those used in
our reference controllers ... Both simulations and controllers had access to identical data"
(Sec. 7). What "the same model" takes here:

* the controller is given exactly the simulator's contact set (``contacts="all"``: points,
  normals, tangent frames, gaps, mu); against every other model (PyBullet included) it is given
  the feet in planned stance, at most at the locomotion runs' friction cap, as the experiments
  (:func:`contact_selection`, :func:`planning_friction_limit`);
* touchdowns: the controllers resolve a foot closing faster than its gap allows as a passive
  impact before the step (``controllers.impact``); the rigid idyn.sim models do the same with
  ``impacts="passive"`` (:mod:`idyn.sim.impact`). With the time-stepping default instead, the
  step's held torques help stop the foot and the prediction is off at touchdown steps;
* gaps: the simulator stabilises non-penetration with phi / dt (paper eq. 36) also for a
  negative phi; the controllers clamp a negative phi to 0 unless ``penetration_recovery=1``,
  which the matched runs pass.

Every controller runs with its defaults against every model with its defaults, but for the
matched no-slip and qp pairs (below). In particular
``qp-coulomb`` and idyn.sim's ``qp`` model both price the separation of loaded touching contacts
(:mod:`idyn.separation`, weight one robot mass). Each weighs that price along its own velocity
map (the controller's with the joint velocities prescribed, the model's with the torques held),
so on a priced step they differ (most at a swing foot's lift-off: the controller moves the base
to hold the foot, the model moves the light leg). The relaxation as published stays reachable
with weight 0 on both sides, ``relative_prediction_error("qp-coulomb", "qp",
controller_options=PUBLISHED_QP, model_options=PUBLISHED_QP)``.

* no-slip release: ``lcp-noslip``'s default release rule reads its own answers, whose torques
  change with the released set, and idyn.sim's ``noslip`` model cannot share it (under given
  torques a touching contact can be held and loaded, or released and unloaded;
  controllers.lcp_noslip, "The state rule"). The matched cell runs both on the state rule,
  :data:`MATCHED_OPTIONS` (``release="state"``, ``hold="state"``): the held contacts are chosen
  from the start-of-step state on both sides.
* contacts at a distance: as eqs. 69-72 are written, ``qp-coulomb`` and the ``qp`` model stop
  every contact in the set as if it touched, and idyn.sim's set reaches 0.1 mm out, so the robot
  rides on feet that never reach the ground. The matched cell runs both with ``gap_rate``
  (:data:`MATCHED_OPTIONS`; :mod:`idyn.separation`, "Contacts at a distance"): the objective
  measures the end-of-step gap rate, so a contact is loaded only to end the step touching
  (eq. 35).

With these, each controller predicts its matched model's summed normal force closely with its
own torque (the paper's verification condition); the balance term of the trot
(``QuadrupedReference.extra_torque``) is torque added after the controller, which its prediction
does not see. Figures: docs/results.md, "Contact-force prediction on matched models"
(tests/test_sim_verification.py).

Each run stops at the first fallen state (docs/experiments.md); ``trotted_s`` says how long it lasted.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from idyn import robots
from idyn.controllers import make
from idyn.errors import IdynError, InvalidInputError
from idyn.sim import make as make_contact_model

from .loop import run_loop
from .metrics import fallen
from .references import QuadrupedReference
from .presets import controller_options as preset_controller_options, reference_options
from .scenario import LOCOMOTION_FRICTION_LIMIT

#: matched pairs of issue 8: controller -> (idyn.sim contact model, ground friction)
MATCHED = {"lcp-coulomb": ("ap-lcp", 0.5), "lcp-noslip": ("noslip", math.inf), "qp-coulomb": ("qp", 0.5)}
#: the controllers that predict contact forces (paper Table 5)
PREDICTING = ("lcp-noslip", "lcp-coulomb", "qp-coulomb", "qp-noslip")
#: the idyn.sim contact models, PyBullet and MuJoCo, the columns of the table
BACKENDS = ("ap-lcp", "noslip", "qp", "compliant", "penalty", "pybullet", "mujoco")
#: the rigid idyn.sim models, which resolve touchdowns as passive impacts like the controllers
RIGID_MODELS = ("ap-lcp", "noslip", "qp")
#: ground friction of the Coulomb cells (no-slip controllers and models get mu = inf)
COULOMB_MU = 0.5
#: controller options that make its model a rigid idyn.sim model (see the module docstring)
RIGID_CONTROLLER_OPTIONS = {"penetration_recovery": 1.0}
#: (controller options, model options) of a matched pair whose defaults are not one model: both
#: no-slip sides on the state rule, both QP sides with the gap rate (see the module docstring)
MATCHED_OPTIONS = {"lcp-noslip": ({"release": "state"}, {"hold": "state"}),
                   "qp-coulomb": ({"gap_rate": True}, {"gap_rate": True})}
#: the QP controllers' and the ``qp`` model's option for the relaxation as published (no price on
#: the separation of loaded touching contacts): give it as both controller and model options
PUBLISHED_QP = {"separation_weight": 0.0}
#: a step's summed normal force below this (N) is not loaded: no relative error there
LOADED = 1.0


def cell_mu(controller: str, backend: str, mu: float = COULOMB_MU) -> float:
    """Ground friction of a table cell: inf where the controller or the model is no-slip."""
    return math.inf if backend == "noslip" or controller.endswith("noslip") else mu


def stabilisation_options(backend: str) -> dict:
    """The rigid models' gap stabilisation phi / dt for the controller where the simulator uses it;
    the controllers' defaults elsewhere: on the compliant grounds, which the feet sink into by
    about 1 mm at rest, phi / dt would ask for 1 m/s of separation every step (the LCP
    controllers then predict thousands of newtons and the robot falls)."""
    return dict(RIGID_CONTROLLER_OPTIONS) if backend in RIGID_MODELS else {}


def contact_selection(controller: str, backend: str) -> str:
    """What the controller models: on its matched model idyn.sim's own contact set (``"all"``,
    the paper's identical data); against any other model the feet in planned stance
    (``"schedule"``, as the experiments). In PyBullet the candidates are geometric and not its
    solver's contacts (with every candidate the QP controllers keep force on the lifting swing feet
    and LINKS falls within 0.05 s). On idyn.sim's other models the set is the solver's, but a
    controller whose contact model differs from the world's must not be handed the feet the gait
    lifts: Stage I of ``qp-coulomb`` has no normal complementarity (paper Sec. 6), and at lift-off
    it loads the swing foot while predicting it separate, which a complementarity world holds
    down instead: the swings start late and land early and hard (docs/results.md)."""
    return "all" if is_matched(controller, backend) else "schedule"


def planning_friction_limit(controller: str, backend: str) -> float | None:
    """The cap on the friction the controller plans with: none on its matched model, whose
    contact data the controller shares exactly; elsewhere the locomotion runs' cap
    (:data:`idyn.experiments.scenario.LOCOMOTION_FRICTION_LIMIT`, docs/experiments.md). Planning at
    the world's friction, Stage I's maximal dissipation puts most loaded foot-steps on the
    friction pyramid's edge, where the relaxation predicts a sliding loaded foot to lift (N v+ up
    to mu times its slip) while an LCP world slides it on the ground: in a two-foot stance the
    joints then lag the prediction, the error feedback asks for more, and the stance loads grow
    until the robot is launched (figures: docs/results.md)."""
    return None if is_matched(controller, backend) else LOCOMOTION_FRICTION_LIMIT


def is_matched(controller: str, backend: str) -> bool:
    """Whether ``backend`` is the controller's own contact model (:data:`MATCHED`)."""
    return MATCHED.get(controller, (None,))[0] == backend


def build_testbed(robot, backend: str, mu: float, model_options: dict | None = None):
    """The trot's testbed for a column of the table: PyBullet and MuJoCo rigid ground, the penalty model on
    compliant ground, the other idyn.sim models on rigid ground (passive impacts for rigid ones),
    built with ``model_options`` (constructor options of the rigid idyn.sim models only)."""
    if model_options and backend not in RIGID_MODELS:
        raise InvalidInputError(f"model options are for the rigid idyn.sim models {RIGID_MODELS}, not {backend!r}")
    if backend == "pybullet":
        from idyn.robots import pybullet as pybullet_testbeds
        return pybullet_testbeds.QuadrupedTestbed(robot, "rigid", mu)
    if backend == "mujoco":
        from idyn.robots import mujoco as mujoco_testbeds
        return mujoco_testbeds.QuadrupedTestbed(robot, "rigid", mu)
    from idyn.robots import sim as sim_testbeds
    if backend == "penalty":
        return sim_testbeds.QuadrupedTestbed(robot, "compliant", mu)
    impacts = "passive" if backend in RIGID_MODELS else "step"
    model = make_contact_model(backend, **model_options) if model_options else backend
    return sim_testbeds.QuadrupedTestbed(robot, "rigid", mu, contact_model=model, impacts=impacts)


def relative_prediction_error(controller: str, backend: str, mu: float | None = None, duration: float = 30.0,
                              *, balance: bool = True, quadruped: str = "links",
                              progress: Callable[[int, int], None] | None = None,
                              controller_options: dict | None = None, model_options: dict | None = None,
                              preset: str = "idyn") -> dict:
    """One cell: mean |predicted - simulated| / simulated summed normal force over the loaded
    steps, up to ``duration`` or the first fallen state, whichever comes first.

    ``mu`` None: :func:`cell_mu`. ``controller_options`` go to the controller (over the rigid
    models' gap stabilisation and the ``preset``'s options, :mod:`idyn.experiments.presets`;
    the preset's reference options replace the balance target and the friction limit), ``model_options`` to the rigid idyn.sim contact model (e.g.
    :data:`PUBLISHED_QP` on both for the published relaxation). Returns ``controller``,
    ``backend``, ``mu``, ``matched``, ``balance``, ``friction_limit`` (:func:`planning_friction_limit`),
    ``controller_options``, ``model_options``,
    ``trotted_s``, ``fell``, the errors of :func:`prediction_errors` (``mean_abs_N``,
    ``mean_rel_pct``, ``median_rel_pct``, ``max_rel_pct``, ``steps``), ``wall_s`` and ``error``
    (None, or why the run stopped early).
    """
    if backend not in BACKENDS:
        raise InvalidInputError(f"unknown contact model {backend!r}; choose from {', '.join(BACKENDS)}")
    if not (np.isfinite(duration) and duration > 0):
        raise InvalidInputError(f"duration must be positive, got {duration}")
    robot = robots.quadruped(quadruped)
    ctrl = make(controller, robot.model, **{**stabilisation_options(backend), **preset_controller_options(preset, controller),
                                            **(controller_options or {})})
    if not ctrl.predicts_contact_forces:
        raise InvalidInputError(f"{controller} predicts no contact forces; choose from {', '.join(PREDICTING)}")
    mu = cell_mu(controller, backend) if mu is None else float(mu)
    testbed = build_testbed(robot, backend, mu, model_options)     # steps at the controllers' dt = 1 ms
    reference = QuadrupedReference(robot, contacts=contact_selection(controller, backend), balance=balance,
                                   **{"friction_limit": planning_friction_limit(controller, backend),
                                      **reference_options(preset)})
    done = [0]

    def count(k, n):
        done[0] = k
        if progress is not None:
            progress(k, n)

    row = {"controller": controller, "backend": backend, "mu": mu, "matched": is_matched(controller, backend),
           "balance": balance, "friction_limit": reference.friction_limit, "preset": preset,
           "controller_options": dict(controller_options or {}),
           "model_options": dict(model_options or {}), "error": None}
    t0 = time.perf_counter()
    try:
        result = run_loop(testbed, robot.model, reference, ctrl, duration, progress=count,
                          stop=lambda state: fallen(state.q, robot.nominal_base_height))
        trace = result.trace
    except IdynError as exc:   # a simulator that diverged behind a lost robot: a result to report
        trace, row["error"] = None, f"{type(exc).__name__}: {exc}"
    finally:
        testbed.close()
    steps = int(round(duration / testbed.dt))
    n = done[0] if trace is None else trace.n
    row.update(trotted_s=n * testbed.dt, fell=n < steps or trace is None, wall_s=time.perf_counter() - t0)
    if trace is None:
        return {**row, **prediction_errors(np.zeros(0), np.zeros(0))}
    return {**row, **prediction_errors(trace.pred_normal, trace.sensed_normal)}


def prediction_errors(predicted: np.ndarray, sensed: np.ndarray) -> dict:
    """Errors of the predicted summed normal force against the simulator's over the loaded steps
    (``sensed > LOADED`` N): ``mean_abs_N`` (N), the relative error |predicted - sensed| / sensed
    per step in percent, ``mean_rel_pct``, ``median_rel_pct``, ``max_rel_pct``, and ``steps`` (how
    many loaded steps); NaN errors without loaded steps."""
    predicted, sensed = np.asarray(predicted, dtype=float), np.asarray(sensed, dtype=float)
    loaded = sensed > LOADED
    err = np.abs(predicted[loaded] - sensed[loaded])
    rel = 100.0 * err / sensed[loaded]
    if not err.size:
        return {"mean_abs_N": math.nan, "mean_rel_pct": math.nan, "median_rel_pct": math.nan,
                "max_rel_pct": math.nan, "steps": 0}
    return {"mean_abs_N": float(err.mean()), "mean_rel_pct": float(rel.mean()),
            "median_rel_pct": float(np.median(rel)), "max_rel_pct": float(rel.max()), "steps": int(loaded.sum())}


def prediction_table(controllers=PREDICTING, backends=BACKENDS, duration: float = 30.0, *, mu: float = COULOMB_MU,
                     balance: bool = True, progress: Callable[[str, int, int], None] | None = None,
                     preset: str = "idyn") -> list[dict]:
    """Every controller against every model (Table 5 and its footnote), one row per cell, under
    ``preset`` (:mod:`idyn.experiments.presets`).

    ``progress(label, k, n)`` is called every step of every run."""
    rows = []
    for c in controllers:
        for b in backends:
            label = f"{c} vs {b}"
            options, model_options = matched_options(c, b)
            rows.append(relative_prediction_error(
                c, b, cell_mu(c, b, mu), duration, balance=balance,
                progress=None if progress is None else (lambda k, n, label=label: progress(label, k, n)),
                controller_options=options, model_options=model_options, preset=preset))
    return rows


def matched_options(controller: str, backend: str) -> tuple[dict | None, dict | None]:
    """``(controller options, model options)`` of a cell: :data:`MATCHED_OPTIONS` on its matched
    pair, the defaults (None, None) elsewhere."""
    if not is_matched(controller, backend):
        return None, None
    return MATCHED_OPTIONS.get(controller, (None, None))


def format_table(rows: list[dict]) -> str:
    """Controllers down, models across; each cell ``mean relative error in % (seconds trotted)``,
    ``*`` on the matched pairs, ``!`` where the run stopped on an error."""
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    ctrls = list(dict.fromkeys(r["controller"] for r in rows))
    cell = {(r["controller"], r["backend"]): r for r in rows}
    width = 18
    lines = ["summed normal force: mean relative prediction error (%) (seconds trotted); * matched model",
             "controller".ljust(14) + "".join(b.rjust(width) for b in backends)]
    for c in ctrls:
        text = c.ljust(14)
        for b in backends:
            r = cell.get((c, b))
            if r is None:
                s = "-"
            else:
                rel = "n/a" if math.isnan(r["mean_rel_pct"]) else f"{r['mean_rel_pct']:.3f}%"
                s = f"{rel} ({r['trotted_s']:.2f}s){'*' if r['matched'] else ''}{'!' if r['error'] else ''}"
            text += s.rjust(width)
        lines.append(text)
    return "\n".join(lines)
