"""Metrics of SPEC section 6 on hand-built traces with known answers."""
import numpy as np
import pytest

from idyn.experiments.metrics import fall_index, force_prediction_error, summarize, torque_statistics
from idyn.experiments.trace import Trace


def _trace(steps=100, dt=1e-3):
    tr = Trace.allocate(steps, nq=9, nv=8, na=2, meta={"seed": 3})
    for k in range(steps):
        q = np.zeros(9)
        q[2], q[6] = 0.16, 1.0          # standing height, identity quaternion
        q[7:] = [0.1, -0.1]
        tr.record(t=k * dt, q=q, v=np.zeros(8), q_des=[0.0, 0.0], v_des=[0.5, 0.5],
                  tau=[k * dt * 2.0, -1.0], pred_normal=50.0, sensed_normal=40.0,
                  n_contacts=4, status=tr.status_code("SOLVED"), solve_time=1e-4 * (1 + k % 2), com=[0, 0, 0.16])
    return tr


def test_tracking_torque_force_metrics_match_hand_computation():
    tr = _trace()
    m = summarize(tr, dt=1e-3, actuated_q=[7, 8], actuated_v=[6, 7], nominal_height=0.16, wall_time=0.05)
    assert m["pos_error"] == pytest.approx(0.1)
    assert m["vel_error"] == pytest.approx(0.5)
    # joint 0 ramps at 2 N m/s, joint 1 is constant: mean |dtau/dt| = 1
    assert m["torque_rate"] == pytest.approx(1.0)
    assert m["force_error_abs"] == pytest.approx(10.0)
    assert m["force_error_rel"] == pytest.approx(25.0)
    assert m["fell"] is False and m["fall_time"] is None
    assert m["realtime_factor"] == pytest.approx(2.0)
    assert m["solve_time_p50_us"] == pytest.approx(150.0)
    assert m["status_counts"] == {"SOLVED": 100}


def test_fall_detected_by_height_and_by_tilt():
    tr = _trace()
    tr.arrays["q"][60:, 2] = 0.05                       # base drops below half height
    assert fall_index(tr, 0.16) == 60
    tr = _trace()
    roll = 1.2
    tr.arrays["q"][30:, 3:7] = [np.sin(roll / 2), 0, 0, np.cos(roll / 2)]
    assert fall_index(tr, 0.16) == 30


def test_trace_roundtrip(tmp_path):
    tr = _trace(20)
    back = Trace.load(tr.save(tmp_path / "trace.npz"))
    assert back.n == 20 and back.meta == {"seed": 3} and back.status_names == ["SOLVED"]
    np.testing.assert_array_equal(back.tau, tr.tau)
    assert torque_statistics(back, 1e-3) == torque_statistics(tr, 1e-3)


def test_force_error_ignores_steps_without_prediction():
    tr = _trace(10)
    tr.arrays["pred_normal"][:5] = np.nan
    assert force_prediction_error(tr)[0] == pytest.approx(10.0)
