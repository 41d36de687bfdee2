"""Gait timing, swing splines and planar base prediction (paper Sec. 7.2.1, 7.6)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from idyn.errors import InvalidInputError
from idyn.planners import BaseCommand, ClampedCubicSpline, Gait, PlanarPose, TrotGait, predict


# ------------------------------------------------------------------ gait
def test_trot_defaults_are_the_papers():
    g = TrotGait()
    assert (g.period, g.duty_factor, g.step_height) == (0.3, 0.75, 0.015)
    assert g.touchdown == {"LF": 0.25, "RF": 0.75, "LH": 0.75, "RH": 0.25}
    assert g.swing_duration == pytest.approx(0.075)


def test_trot_contact_schedule_over_one_period():
    g = TrotGait()
    times = np.arange(300) * 1e-3                    # one period at 1 kHz
    sched = g.contact_schedule(times)                # columns LF, RF, LH, RH
    assert sched.shape == (300, 4)
    assert (sched.sum(axis=0) == 225).all()          # duty factor 0.75, exactly at 1 ms steps
    assert (sched[:, 0] == sched[:, 3]).all() and (sched[:, 1] == sched[:, 2]).all()  # diagonals
    assert sched.sum(axis=1).min() == 2              # never fewer than two feet down
    # LF/RH swing in [0, 0.075), RF/LH in [0.15, 0.225), all four down otherwise
    swing_lf = ~sched[:, 0]
    assert swing_lf[:75].all() and not swing_lf[75:].any()
    swing_rf = ~sched[:, 1]
    assert swing_rf[150:225].all() and not swing_rf[:150].any() and not swing_rf[225:].any()


def test_swing_windows_and_remaining_time():
    g = TrotGait()
    assert g.swing_window("LF", 0.01) == pytest.approx((0.0, 0.075))
    assert g.swing_window("LF", 0.1) == pytest.approx((0.3, 0.375))     # in stance: next swing
    assert g.swing_window("RF", 0.01) == pytest.approx((0.15, 0.225))
    assert g.remaining("LF", 0.01) == pytest.approx(0.065)
    assert g.remaining("RF", 0.01) == pytest.approx(0.14)
    assert g.in_stance("LF", 0.075) and not g.in_stance("LF", 0.0749)   # touchdown boundary


@settings(max_examples=60, deadline=None)
@given(period=st.floats(0.1, 2.0), duty=st.floats(0.05, 0.95), phase=st.floats(0.0, 0.999),
       t=st.floats(0.0, 50.0))
def test_swing_window_agrees_with_stance_flags(period, duty, phase, t):
    g = Gait(period, duty, {"A": phase}, 0.01)
    lift, touch = g.swing_window("A", t)
    assert touch - lift == pytest.approx(g.swing_duration)
    if g.in_stance("A", t):
        assert lift >= t - 1e-9 and lift - t <= g.stance_duration + 1e-9
    else:
        assert lift - 1e-9 <= t < touch + 1e-9


@pytest.mark.parametrize("kwargs", [dict(period=0.0), dict(duty_factor=1.0),
                                    dict(touchdown={"LF": 1.2}), dict(step_height=-0.01),
                                    dict(touchdown={})])
def test_gait_rejects_bad_parameters(kwargs):
    with pytest.raises(InvalidInputError):
        TrotGait(**kwargs)
    with pytest.raises(InvalidInputError):
        TrotGait().in_stance("XX", 0.0)


# ------------------------------------------------------------------ spline
def _swing_points(rng):
    start = rng.normal(size=3) * 0.1
    goal = start + np.array([rng.uniform(-0.08, 0.08), rng.uniform(-0.03, 0.03), 0.0])
    up = np.array([0.0, 0.0, 0.015])
    return np.array([start, start + up, goal + up + 0.1 * (goal - start), goal])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), t0=st.floats(-5, 5), dur=st.floats(0.02, 1.0))
def test_spline_interpolates_with_clamped_ends(seed, t0, dur):
    rng = np.random.default_rng(seed)
    pts = _swing_points(rng)
    v0, v1 = rng.normal(size=3) * 0.3, rng.normal(size=3) * 0.3
    times = t0 + dur * np.array([0.0, 0.3, 0.65, 1.0])     # uneven intervals
    s = ClampedCubicSpline(times, pts, v0, v1)
    for t, p in zip(times, pts):
        np.testing.assert_allclose(s(t)[0], p, atol=1e-12)
    np.testing.assert_allclose(s(times[0])[1], v0, atol=1e-9)
    np.testing.assert_allclose(s(times[-1])[1], v1, atol=1e-9)
    scale = 1.0 + np.abs(s(times[1])[2]).max()
    np.testing.assert_allclose(s(times[0])[2], 0.0, atol=1e-9 * scale)   # zero end accelerations
    np.testing.assert_allclose(s(times[-1])[2], 0.0, atol=1e-9 * scale)


def test_spline_is_c2_and_its_derivatives_are_consistent():
    rng = np.random.default_rng(1)
    times = np.array([0.0, 0.025, 0.05, 0.075])
    s = ClampedCubicSpline(times, _swing_points(rng), np.zeros(3), [-0.2, 0.05, 0.0])
    knots = s._knots
    for k in knots[1:-1]:                  # value, velocity, acceleration continuous at knots
        left, right = s(k - 1e-10), s(k + 1e-10)
        for a, b in zip(left, right):
            np.testing.assert_allclose(a, b, atol=1e-6 * (1 + np.abs(a).max()))
    h = 1e-6
    for t in np.linspace(0.001, 0.074, 17):
        x, v, a = s(t)
        np.testing.assert_allclose((s(t + h)[0] - s(t - h)[0]) / (2 * h), v, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose((s(t + h)[1] - s(t - h)[1]) / (2 * h), a, rtol=1e-5, atol=1e-4)


def test_spline_extrapolates_at_the_clamped_velocity():
    s = ClampedCubicSpline([0.0, 1.0], [[0.0], [1.0]], [0.5], [2.0])
    x, v, a = s(1.5)
    assert x[0] == pytest.approx(2.0) and v[0] == 2.0 and a[0] == 0.0
    x, v, a = s(-1.0)
    assert x[0] == pytest.approx(-0.5) and v[0] == 0.5


@pytest.mark.parametrize("times,points", [([0.0, 0.0, 1.0], np.zeros((3, 3))),
                                          ([0.0, 1.0], np.zeros((3, 3))),
                                          ([0.0, 1.0], [[0.0, np.nan], [1.0, 1.0]])])
def test_spline_rejects_bad_input(times, points):
    d = np.asarray(points).shape[1]
    with pytest.raises(InvalidInputError):
        ClampedCubicSpline(times, points, np.zeros(d), np.zeros(d))


# ------------------------------------------------------------------ planar prediction
@pytest.mark.parametrize("cmd", [BaseCommand(0.2, 0.0, 0.0), BaseCommand(0.2, 0.05, 0.8),
                                 BaseCommand(0.0, 0.0, -1.5)])
def test_predict_matches_fine_integration(cmd):
    pose = PlanarPose(0.3, -0.1, 0.7)
    n, T = 20000, 0.6
    x, y, yaw = pose.x, pose.y, pose.yaw
    for _ in range(n):                     # midpoint rule on the unicycle with lateral speed
        ym = yaw + 0.5 * cmd.wz * T / n
        x += (cmd.vx * math.cos(ym) - cmd.vy * math.sin(ym)) * T / n
        y += (cmd.vx * math.sin(ym) + cmd.vy * math.cos(ym)) * T / n
        yaw += cmd.wz * T / n
    p = predict(pose, cmd, T)
    assert (p.x, p.y, p.yaw) == pytest.approx((x, y, yaw), abs=1e-9)
