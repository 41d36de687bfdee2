"""Short versions of the five constraint-solver examples (full sizes are @slow)."""
import json

import numpy as np
import pytest

from idyn.experiments.cli import main
from idyn.experiments.constraint_solver import foundation, incline, pendulum, rom_pendulum, sphere_stack


def test_pendulum_deviation_is_second_order_and_energy_error_first_order_without_drift():
    """Fig. 4 over the paper's 1 s: |phi| ~ h^2; E - E0 ~ h (the bounded offset of semi-implicit
    Euler, -(h/2) f.(v - v0)); the modified energy E + (h/2) f.v moves only by the constraint
    work, ~ h^2. Explicit Euler (q1 from v0) fails it: its modified energy moves by 0.21 J at
    h = 1e-3, order 1."""
    runs = [pendulum.simulate(h, 1.0, {}) for h in (1e-2, 1e-3)]
    assert all(r["solver"]["methods"] == ["linear"] for r in runs)

    def order(key):
        return np.log10(runs[0][key] / runs[1][key])
    assert 1.8 < order("max_deviation") < 2.2
    assert 0.9 < order("max_energy_error") < 1.1
    assert 1.9 < order("max_modified_energy_error") < 2.2
    assert runs[1]["max_energy_error"] < 1.5e-3 * pendulum.MASS * pendulum.GRAVITY * pendulum.LENGTH


def test_rom_pendulum_is_stable_for_large_steps_and_resolves_impacts_for_small():
    for h in (0.1, 1e-2):
        r = rom_pendulum.simulate(np.pi / 2, 0.0, h, 1.0, {})
        assert r["max_abs_theta"] <= np.pi / 2 + 1e-9
    fine = rom_pendulum.impact(1e-7, {})
    assert 0.5 < fine["restitution"] <= 1.0                # elastic bounce, implicit damping


def test_elastic_foundation_box_settles_without_penetrating_far():
    found = foundation.Foundation(100, 1e7, 50.0)
    r = foundation.run_constraint_solver(found, {})
    z = np.array(r["com_height"])
    assert np.all(np.abs(z - 0.5) < 1e-4)                 # ~10 um deformation under 128 N
    assert r["solver"]["status_counts"] == {"solved": r["steps"]}


@pytest.mark.parametrize("elements, youngs, load", [(100, 1e7, 50.0), (900, 1e11, 5.0)])
def test_foundation_penalty_ode_is_the_constraint_solvers_model(elements, youngs, load):
    """Tables 1-2 compare integrators of one system: scipy's right-hand side must apply exactly
    the Winkler rows the constraint solver sees, lambda = max(0, -K phi - B G v), plus load."""
    found = foundation.Foundation(elements, youngs, load)
    rng = np.random.default_rng(elements)
    tilt = rng.normal(0, 2e-3, 3)
    q = np.r_[rng.normal(0, 1e-3, 2), 0.5 - 1e-5, tilt, 1.0]
    q[3:] /= np.linalg.norm(q[3:])
    v, t = rng.normal(0, 0.05, 6), 0.37
    prob = found.problem(q, v, t, foundation.H)
    rows = prob.unilateral
    assert 0 < rows.m < elements                                   # tilted: some elements lift
    lam = np.maximum(0.0, -rows.K * rows.phi - rows.B * rows.phi_dot)
    vdot = prob.M.solve(prob.f + rows.G.T @ lam)
    y_dot = found.rhs(t, np.r_[q, v])
    np.testing.assert_allclose(y_dot[7:], vdot, rtol=1e-10, atol=1e-9 * np.abs(vdot).max())
    R = found.bodies.rotations(q)[0]
    np.testing.assert_allclose(y_dot[:3], R @ v[:3], rtol=1e-12, atol=1e-15)
    dt = 1e-7                                  # the quaternion rate is pinocchio's integrate
    np.testing.assert_allclose(q[3:] + dt * y_dot[3:7], found.bodies.integrate(q, v, dt)[3:],
                               atol=1e-13)


def test_incline_friction_phenomena():
    runs = [incline.simulate(mu, {}, 0.3) for mu in incline.MUS]
    d = [r["final_distance"] for r in runs]
    assert np.all(np.diff(d) < 0) and abs(d[-1]) < 1e-6
    assert runs[0]["max_friction"] == 0.0                         # mu = 0: no friction at all
    assert all(r["max_friction_power"] <= 1e-9 for r in runs)      # friction opposes motion
    assert all(r["max_friction"] > 0.0 for r in runs[1:])
    a = 9.81 * (np.sin(incline.ANGLE) - 0.125 * np.cos(incline.ANGLE))
    assert d[1] == pytest.approx(0.5 * a * 0.01 ** 2 * 30 * 31, rel=1e-3)   # discrete Coulomb


def test_sphere_stack_hessian_is_sparse_and_small_stack_stands():
    sizes = [sphere_stack.hessian_nonzeros(n) for n in (10, 20)]
    assert sizes[1]["hessian_nnz"] <= 2.2 * sizes[0]["hessian_nnz"]          # O(n)
    r = sphere_stack.simulate(2, {}, 60)
    assert r["standing"]


def test_sphere_stack_command_short(tmp_path):
    """The table of Fig. 10 in small: every stack stands, no step adds energy, scipy's BDF and
    Radau ran on the smallest stack in the same run."""
    assert main(["constraint-solver", "sphere-stack", "--short", "--no-plots", "--budget", "20",
                 "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["all_standing"] and data["energy_never_increases"]
    assert [r["n"] for r in data["runs"]] == [2, 5, 10]
    assert all(r["inconsistent_steps"] == 0 and r["solver"]["fallbacks"] == 0
               for r in data["runs"])
    assert abs(data["runs"][0]["final_top_height"]
               - data["runs"][0]["hertz_static_top_height"]) < 1e-9           # Hertz statics
    assert {o["method"] for o in data["ode"]} == {"BDF", "Radau"}
    assert all(o["n"] == 2 and (o["completed"] or o["timeout"]) for o in data["ode"])


@pytest.mark.slow
def test_sphere_stack_full_sizes_stand(tmp_path):
    """10, 25, 50 and 100 spheres, 500 steps of 10 ms: standing, energy never increases."""
    assert main(["constraint-solver", "sphere-stack", "--no-plots", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert [r["n"] for r in data["runs"]] == [10, 25, 50, 100]
    assert data["all_standing"] and data["energy_never_increases"]
    for r in data["runs"]:
        assert r["max_lateral_drift"] < 1e-9 and r["inconsistent_steps"] == 0
        assert abs(r["final_top_height"] - r["hertz_static_top_height"]) < 1e-9   # at rest


def test_cli_writes_results(tmp_path):
    assert main(["constraint-solver", "pendulum", "--short", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["example"] == "pendulum" and (tmp_path / "pendulum.png").exists()


@pytest.mark.slow
def test_pendulum_full_energy_error_does_not_grow_over_eight_swings(tmp_path):
    assert main(["constraint-solver", "pendulum", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    swings = data["long_run"]["max_energy_error_per_swing"]
    assert data["long_run"]["h"] == 1e-3 and len(swings) == 8
    assert max(swings) < 1.02 * swings[0]                       # 1.356e-2 -> 1.363e-2 J
    assert all(1.8 < o < 2.2 for o in data["deviation_orders_in_h"][1:])
    assert all(1.9 < o < 2.2 for o in data["modified_energy_error_orders_in_h"][1:])


@pytest.mark.slow
@pytest.mark.parametrize("example", ["rom-pendulum", "incline"])
def test_full_examples(example, tmp_path):
    assert main(["constraint-solver", example, "--out", str(tmp_path)]) == 0


def test_rom_limit_row_rule_decides_the_dead_impact_of_fig6():
    """Fig. 6 at h = 1e-5 (k h^2 = 100 m L^2): with the limit row in the program whenever the
    step can reach it (eqs. 75, 84 evaluate the spring at t1) the impact is dead for every
    phase of the crossing, e = 0.004-0.010; adding the row only once violated returns the
    step's penetration as rebound, e = 0.11-0.98 over the same phases."""
    paper = rom_pendulum.phase_scan(1e-5, {}, speculative=True)
    late = rom_pendulum.phase_scan(1e-5, {}, speculative=False)
    assert max(paper) < 0.02
    assert min(late) < 0.2 and max(late) > 0.9


@pytest.mark.parametrize("h", [1e-5, 1e-6, 1e-7])
def test_rom_impact_restitution_is_the_implicit_euler_springs(h):
    """Restitution against the closed form of the undamped implicit-Euler spring,
    (1 + h^2 w^2)^(-pi / (2 atan(h w))), w = 1e6 rad/s: the limit acts from its first step."""
    r = rom_pendulum.impact(h, {})
    assert r["restitution"] == pytest.approx(rom_pendulum.implicit_euler_restitution(h),
                                             rel=0.05, abs=1e-3)
    assert r["max_penetration_rad"] < 5e-6                 # |theta_dot| / w = 4.4e-6 rad


def test_range_of_motion_margin_includes_reachable_limits_only():
    from idyn.constraint_solver.models import range_of_motion
    from idyn.errors import InvalidInputError
    assert range_of_motion(0, 1, 1e-3, 0.0, None, 1e6, 0.0) is None
    rows = range_of_motion(0, 2, 1e-3, 0.0, 0.5, 1e6, 0.0, margin=2e-3)
    assert rows.m == 1 and rows.phi[0] == pytest.approx(1e-3) and rows.G[0, 0] == 1.0
    assert range_of_motion(0, 1, 0.4, 0.0, 0.5, 1e6, 0.0, margin=np.inf).m == 2
    with pytest.raises(InvalidInputError):
        range_of_motion(0, 1, 0.1, 0.0, None, 1e6, 0.0, margin=-1.0)


@pytest.mark.parametrize("h", [0.1, 1e-2, 1e-3])
def test_pendulum_first_step_loses_its_kinetic_energy(h):
    """Fig. 4's 'energy maintained precisely': from rest the stiff joint's solve makes v1 the
    M-orthogonal projection of h M^-1 f, so h f.v1 = 2 T1 and E1 - E0 = -T1 exactly
    (= -m h^2 g^2 m / (2 (m + I)) for the horizontal start)."""
    r = pendulum.simulate(h, h, {})
    m, i, g = pendulum.MASS, pendulum.INERTIA, pendulum.GRAVITY
    assert r["first_step_kinetic"] == pytest.approx(0.5 * m * (h * g) ** 2 * m / (m + i),
                                                    rel=1e-6)
    assert r["first_step_energy_change"] == pytest.approx(-r["first_step_kinetic"], rel=1e-6)


def test_pendulum_coarse_steps_diverge_beyond_one_second_whatever_the_stiffness():
    """Bounded over the paper's 1 s at h = 0.1, but |E - E0| passes 100 m g L at 5.9 s
    (k = 1e15) and 2.9 s (k = 1e4): the linearization at q0, not the stiff spring; h = 0.02
    stays bounded over 20 s (max |E - E0| 1.16 J)."""
    stiff = pendulum.coarse_stability(0.1, 20.0, {})
    soft = pendulum.coarse_stability(0.1, 20.0, {}, k=1e4)
    fine = pendulum.coarse_stability(0.02, 20.0, {})
    assert 4.0 < stiff["diverged_at"] < 8.0 and 1.0 < soft["diverged_at"] < 8.0
    assert fine["diverged_at"] is None and fine["max_energy_error"] < 2.0
