"""LINKS trots the paper's waypoint course in PyBullet (paper Sec. 7.6, SPEC section 6).

The default suite runs 2 s (acceleration from rest and the first steps toward waypoint 1);
the 30 s runs of the paper are marked slow.
"""
import numpy as np
import pytest

pytest.importorskip("idyn.robots.pybullet")

from idyn.experiments.runner import run_scenario  # noqa: E402
from idyn.experiments.scenario import terrain_scenario  # noqa: E402


def _trot(controller, duration, terrain="rigid-high"):
    return run_scenario(terrain_scenario(terrain, controller=controller, duration=duration))


def test_pid_baseline_trots_forward_without_falling():
    m = _trot("pid", 2.0)
    assert not m["fell"]
    assert m["pos_error"] < 0.05                 # rad, mean over joints and time
    assert m["distance"] > 0.2                   # m: about 0.2 m/s once the ramp is done


@pytest.mark.parametrize("controller", ["qp-coulomb", "lcp-coulomb", "lcp-noslip"])
def test_id_controllers_trot_forward_without_falling(controller):
    """The paper's ID_QP,mu, ID_LCP,mu and ID_LCP,inf in PyBullet (the first 2 s of the slow 30 s
    runs), planning with the experiments' friction limit (0.3; with the terrain's mu = 100 a
    stance foot's forces rely on frictional jamming, Bullet lifts the foot instead and LINKS
    falls at 0.28 s: experiments.references.QuadrupedReference). Their predicted normal forces
    follow PyBullet's (paper Table 5; measured over these 2 s: 1.8, 1.9 and 4.6 % mean error)."""
    m = _trot(controller, 2.0)
    assert not m["fell"]
    assert m["pos_error"] < 0.05
    assert m["distance"] > 0.2
    assert m["force_error_rel"] < 6.0            # %
    assert m["status_counts"].get("implausible", 0) == 0     # the plausibility bound never fires


@pytest.mark.slow
@pytest.mark.parametrize("terrain", ["rigid-high", "rigid-low", "compliant-high", "compliant-low", "rough"])
def test_pid_baseline_runs_30_s_and_reports_a_fall(terrain):
    """Issue 5: the baseline runs without an exception and a fall is detected and reported. The
    PID baseline is not asked to complete: in the sweep of 5d3105d it completed compliant-high
    and fell at 15.47 s on rigid-high, 5.23 s on rigid-low, 2.89 s on compliant-low and 4.38 s
    on rough."""
    m = _trot("pid", 30.0, terrain)
    assert m.get("error") is None, m
    if m["fell"]:
        assert 0.0 < m["fall_time"] < 30.0 and m["steps"] == round(m["fall_time"] / 1e-3) + 1
    else:
        assert m["steps"] == 30000 and m["waypoints_reached"] >= 2


@pytest.mark.slow
@pytest.mark.parametrize("terrain", ["rigid-high", "compliant-high", "rigid-low", "compliant-low", "rough"])
def test_qp_coulomb_trots_30_s(terrain):
    """Issue 5's must-show: 30 s over the waypoints, three of them visited. Measured: all five
    complete 30 s with 4 waypoints. Before Stage I priced the separation of loaded touching
    feet (controllers.dissipation), rigid-low fell at 2.33 s and rough at 0.52 s: sliding stance
    feet were predicted to carry several body weights while lifting off, and the robot hopped."""
    m = _trot("qp-coulomb", 30.0, terrain)
    assert not m["fell"]
    assert m["waypoints_reached"] >= 3
    # normal operation: the plausibility bound never fires and no step runs out of its budget
    assert m["status_counts"].get("implausible", 0) == m["status_counts"].get("over_budget", 0) == 0, \
        m["status_counts"]


@pytest.mark.slow
@pytest.mark.parametrize("controller", ["lcp-coulomb", "lcp-noslip"])
def test_lcp_controllers_complete_rigid_ground(controller):
    """Issue 5: measured at 684685c, both complete 30 s on rigid-high with 4 waypoints
    (lcp-noslip: 0.039 rad joint error, 4.3 % force prediction error in PyBullet)."""
    m = _trot(controller, 30.0, "rigid-high")
    assert not m["fell"]


def test_qp_coulomb_trots_on_its_own_contact_model():
    """The ID controller trots when the world follows its contact model (paper Sec. 8.2's
    matched verification): idyn.sim with the maximal-dissipation ``qp`` model, mu = 0.5, the
    controller given the simulator's contacts. The shared feedback is critically damped by
    default (kv = 2 sqrt(kp) = 63); with SPEC's kv = 10 (damping ratio 0.16) the touchdown
    transients add up and LINKS falls at 1.5 s of this run. The balance term is off: it is
    torque added after the controller, which the controller's prediction does not see (with it
    on, the mean error is about 1 %, from a few touchdown steps; the median is 0.09 %).

    The closed loop is chaotic: a change of the Stage II ridge by one part in a million gives
    another trajectory after a second or so, and about 1 run in 30 such runs is launched off the
    ground and diverges (measured at 6af8375: 1 of 31; at c232d36 the unperturbed run is one of
    them, at 1.97 s). So the property is checked on three runs (the default ridge and +-1e-6
    relative) and must hold on at least two; each run's outcome is printed."""
    from idyn.experiments.loop import run_loop
    from idyn.experiments.references import QuadrupedReference
    from idyn.experiments.metrics import fall_index
    from idyn.errors import SolverError
    from idyn import controllers
    from idyn import robots
    from idyn.robots import sim as sim_testbeds

    robot = robots.quadruped("links")
    outcomes = []
    for scale in (1.0, 1.0 + 1e-6, 1.0 - 1e-6):
        testbed = sim_testbeds.QuadrupedTestbed(robot, "rigid", 0.5, contact_model="qp")
        controller = controllers.make("qp-coulomb", robot.model, dt=testbed.dt, ridge=1e-6 * scale)
        try:
            tr = run_loop(testbed, robot.model, QuadrupedReference(robot, contacts="all", balance=False,
                                                                     friction_limit=None),
                          controller, 2.0).trace
        except SolverError as exc:          # the world diverged after a launch
            outcomes.append((scale, f"diverged: {exc}"))
            continue
        loaded = tr.sensed_normal > 1.0
        rel = np.abs(tr.pred_normal - tr.sensed_normal)[loaded] / tr.sensed_normal[loaded]
        ok = (fall_index(tr, robot.nominal_base_height) is None
              and np.abs(tr.q[:, 7:] - tr.q_des).mean() < 0.03             # rad
              and rel.mean() < 0.01
              and tr.com[-1, 0] - tr.com[0, 0] > 0.1)                       # m: it walks forward
        outcomes.append((scale, "ok" if ok else f"failed: error {rel.mean():.4f}, "
                         f"joint {np.abs(tr.q[:, 7:] - tr.q_des).mean():.4f} rad"))
    print(outcomes)
    assert sum(o == "ok" for _, o in outcomes) >= 2, outcomes


@pytest.mark.slow
def test_id_controllers_track_joints_better_than_pid_on_rigid_ground(tmp_path):
    """Paper Table 3: on rigid ground the ID controllers track the joints better than the PID
    baseline. Compared over the time every run is standing (a fall ends a run). Measured in
    the 30 s sweep of 5d3105d (rigid-high): qp-coulomb 0.0154 rad, lcp-coulomb 0.0157, pid
    0.0297 (pid fell at 15.47 s)."""
    from idyn.experiments.trace import Trace

    traces = {}
    for controller in ("qp-coulomb", "lcp-coulomb", "pid"):
        out = tmp_path / controller
        run_scenario(terrain_scenario("rigid-high", controller=controller, duration=10.0), out)
        traces[controller] = Trace.load(out / "trace.npz")
    n = min(tr.n for tr in traces.values())
    assert n > 2000                                           # 2 s at least in common
    error = {c: np.abs(tr.q[:n, 7:] - tr.q_des[:n]).mean() for c, tr in traces.items()}
    print(error)
    assert error["qp-coulomb"] < error["pid"] and error["lcp-coulomb"] < error["pid"], error
