"""The manipulator's "box dropped" metric (paper Sec. 8.4.1: which controllers drop the box).

A manipulator cannot fall, so the quadruped's fall criterion never fires for it; whether the box
is still in the hand is what the grasping experiment reports."""
import math

import numpy as np
import pytest

from idyn.experiments.metrics import grasp_lost_index
from idyn.experiments.runner import run_scenario
from idyn.experiments.scenario import Scenario


def test_grasp_lost_index_is_the_first_step_beyond_the_tolerance():
    held = np.zeros((5, 3))
    box = np.array([[0, 0, 0], [0.01, 0, 0], [0, 0.03, 0.04], [0, 0, 0.06], [0, 0, 0]], float)
    assert grasp_lost_index(box, held, 0.05) == 3          # |(0, .03, .04)| = 0.05 is still held
    assert grasp_lost_index(box[:3], held[:3], 0.05) is None
    box[1, 0] = np.nan                                     # a non-finite pose is not "held"
    assert grasp_lost_index(box, held, 0.05) == 1


@pytest.mark.parametrize("mu, dropped", [(0.0, True), (100.0, False)])
def test_a_frictionless_grasp_drops_the_box_and_a_sticky_one_holds_it(mu, dropped):
    """With mu = 0 nothing holds the box against gravity: it must be reported dropped early
    (about 0.1 s); ``sensed-1`` holds it at mu = 100, as in the paper, for the short run."""
    controller = "pid" if mu == 0 else "sensed-1"
    m = run_scenario(Scenario(controller=controller, robot="manipulator", mu=mu, duration=0.3))
    assert m["box_dropped"] is dropped, m
    if dropped:
        assert 0.0 < m["box_drop_time"] < 0.3
    else:
        assert m["box_drop_time"] is None and not math.isnan(m["pos_error"])
