"""Matched-model verification of contact-force predictions (paper Sec. 8.2, Table 5).

The trot of SPEC section 6 is run in closed loop on idyn.sim with the simulator using the same
contact model as the controller; the controller's predicted summed normal force is compared
with the simulator's, step by step. :func:`prediction_table` produces every controller against
every model (PyBullet included); the 30 s runs are slow tests, a short run is the default.
"""
import math

import numpy as np
import pytest

import controllers
import robots
from experiments.loop import run_loop
from experiments.metrics import fallen
from experiments.runner import QuadrupedReference
from robots import pybullet as pybullet_testbeds
from robots import sim as sim_testbeds

#: matched pairs of issue 8: controller -> (simulator contact model, ground friction)
MATCHED = {"lcp-coulomb": ("ap-lcp", 0.5), "lcp-noslip": ("noslip", math.inf), "qp-coulomb": ("qp", 0.5)}
PAPER_CONTROLLERS = ("lcp-noslip", "lcp-coulomb", "qp-coulomb", "qp-noslip")
BACKENDS = ("ap-lcp", "noslip", "qp", "compliant", "penalty", "pybullet")


def relative_prediction_error(controller: str, backend: str, mu: float, duration: float) -> dict:
    """Mean |predicted - simulated| / simulated summed normal force over steps with load, up to
    ``duration`` or the first fallen state (SPEC section 6), whichever comes first: the seconds
    trotted are ``trotted_s``."""
    robot = robots.quadruped("links")
    if backend == "pybullet":
        testbed = pybullet_testbeds.QuadrupedTestbed(robot, "rigid", mu)
    elif backend == "penalty":
        testbed = sim_testbeds.QuadrupedTestbed(robot, "compliant", mu)
    else:
        testbed = sim_testbeds.QuadrupedTestbed(robot, "rigid", mu, contact_model=backend)
    try:
        # the paper's verification: controller and simulator share the same contact data
        result = run_loop(testbed, robot.model, QuadrupedReference(robot, contacts="all"),
                          controllers.make(controller, robot.model, dt=testbed.dt), duration,
                          stop=lambda state: bool(fallen(state.q[None], robot.nominal_base_height)[0]))
    finally:
        testbed.close()
    tr = result.trace
    loaded = tr.sensed_normal > 1.0
    err = np.abs(tr.pred_normal[loaded] - tr.sensed_normal[loaded])
    return {"controller": controller, "backend": backend, "mu": mu, "trotted_s": tr.n * testbed.dt,
            "mean_abs_N": float(err.mean()), "mean_rel": float(np.mean(err / tr.sensed_normal[loaded])),
            "steps": int(loaded.sum())}


def prediction_table(duration: float = 30.0) -> list[dict]:
    """Every paper controller against every contact model and PyBullet (Table 5 and footnote)."""
    rows = []
    for c in PAPER_CONTROLLERS:
        for b in BACKENDS:
            mu = math.inf if (b == "noslip" or c.endswith("noslip")) else 0.5
            rows.append(relative_prediction_error(c, b, mu, duration))
    return rows


@pytest.mark.parametrize("controller", ["lcp-coulomb", "qp-coulomb"])
def test_matched_prediction_short_run(controller):
    backend, mu = MATCHED[controller]
    row = relative_prediction_error(controller, backend, mu, 0.3)
    assert row["steps"] > 100
    assert row["mean_rel"] < 0.01


@pytest.mark.slow
@pytest.mark.parametrize("controller", sorted(MATCHED))
def test_matched_models_predict_summed_normal_force_within_one_percent(controller):
    backend, mu = MATCHED[controller]
    row = relative_prediction_error(controller, backend, mu, 30.0)
    print(row)          # the numbers of the table (shown with pytest -rP and on failure)
    assert row["trotted_s"] == pytest.approx(30.0), row
    assert row["mean_rel"] < 0.01, row
