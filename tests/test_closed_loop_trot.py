"""LINKS trots the paper's waypoint course in PyBullet (paper Sec. 7.6, SPEC section 6).

The default suite runs 2 s (acceleration from rest and the first steps toward waypoint 1);
the 30 s runs of the paper are marked slow.
"""
import numpy as np
import pytest

pytest.importorskip("robots.pybullet")

from experiments.runner import run_scenario  # noqa: E402
from experiments.scenario import terrain_scenario  # noqa: E402


def _trot(controller, duration, terrain="rigid-high"):
    return run_scenario(terrain_scenario(terrain, controller=controller, duration=duration))


def test_pid_baseline_trots_forward_without_falling():
    m = _trot("pid", 2.0)
    assert not m["fell"]
    assert m["pos_error"] < 0.05                 # rad, mean over joints and time
    assert m["distance"] > 0.2                   # m: about 0.2 m/s once the ramp is done


@pytest.mark.xfail(strict=True, reason=(
    "qp-coulomb's Stage I (paper eqs. 69-74) minimises the kinetic energy of v+ with the "
    "actuated velocities fixed: moving stance legs are explained by feet that slide (or lift) "
    "under a base at rest, so its torques never push the base; LINKS stays at x ~ 0 and falls "
    "at 0.74 s. No ID controller trots yet: lcp-noslip lasts 0.93 s, qp-noslip 0.07 s"))
def test_qp_coulomb_trots_forward_without_falling():
    m = _trot("qp-coulomb", 2.0)
    assert not m["fell"] and m["distance"] > 0.2


@pytest.mark.slow
@pytest.mark.parametrize("terrain", ["rigid-high", "rigid-low", "compliant-high", "compliant-low", "rough"])
def test_pid_baseline_trots_30_s(terrain):
    m = _trot("pid", 30.0, terrain)
    assert not m["fell"]
    assert m["waypoints_reached"] >= 2
