"""Short versions of the five constraint-solver examples (full sizes are @slow)."""
import json

import numpy as np
import pytest

from experiments.cli import main
from experiments.constraint_solver import foundation, incline, pendulum, rom_pendulum, sphere_stack


def test_pendulum_deviation_scales_as_h_squared():
    runs = [pendulum.simulate(h, 0.2, {}) for h in (1e-2, 1e-3)]
    order = np.log10(runs[0]["max_deviation"] / runs[1]["max_deviation"])
    assert 1.8 < order < 2.2
    assert all(r["solver"]["methods"] == ["linear"] for r in runs)
    # energy is not kept exactly (the paper's Sec. 4.4 claim): it drifts at first order in h
    drift = np.log10(runs[0]["max_energy_drift"] / runs[1]["max_energy_drift"])
    assert 0.8 < drift < 1.2


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


def test_incline_friction_phenomena():
    d = [incline.simulate(mu, {}, 0.3)["final_distance"] for mu in incline.MUS]
    assert np.all(np.diff(d) < 0) and abs(d[-1]) < 1e-6
    a = 9.81 * (np.sin(incline.ANGLE) - 0.125 * np.cos(incline.ANGLE))
    assert d[1] == pytest.approx(0.5 * a * 0.01 ** 2 * 30 * 31, rel=1e-3)   # discrete Coulomb


def test_sphere_stack_hessian_is_sparse_and_small_stack_stands():
    sizes = [sphere_stack.hessian_nonzeros(n) for n in (10, 20)]
    assert sizes[1]["hessian_nnz"] <= 2.2 * sizes[0]["hessian_nnz"]          # O(n)
    r = sphere_stack.simulate(2, {}, 60)
    assert r["standing"]


def test_cli_writes_results(tmp_path):
    assert main(["constraint-solver", "pendulum", "--short", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["example"] == "pendulum" and (tmp_path / "pendulum.png").exists()


@pytest.mark.slow
@pytest.mark.parametrize("example", ["pendulum", "rom-pendulum", "incline"])
def test_full_examples(example, tmp_path):
    assert main(["constraint-solver", example, "--out", str(tmp_path)]) == 0
