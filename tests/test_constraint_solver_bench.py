"""``idyn bench constraint-solver`` runs end to end on a tiny configuration (seconds)."""
import json

from idyn.experiments.benchmarks import constraint_solver as bench
from idyn.experiments.cli import main


def test_bench_constraint_solver_times_ours_and_scipy_on_both_models(tmp_path):
    report = bench.run(tmp_path, counts=(3, 2, 4), repeats=2, elements=16,
                       foundation_cases=((1e7, 5.0),), steps=10, foundation_budget=0.3,
                       stack_budget=0.3)
    saved = json.loads((tmp_path / "bench.json").read_text())
    assert saved == report
    (row,) = saved["foundation"]
    assert (row["elements"], row["youngs_modulus"], row["load"], row["steps"]) == (16, 1e7, 5.0, 100)
    assert [n["n"] for n in saved["sphere_stack"]] == [2, 3, 4]
    rows = [row] + saved["sphere_stack"]
    for r in rows:
        assert len(r["runs"]) == 2
        assert 0 < r["seconds"]["median"] <= r["seconds"]["p90"]
        assert 0 < r["cpu_seconds"]["median"] <= r["cpu_seconds"]["p90"]
        assert 0 < r["step_median_s"] <= r["step_p90_s"] < r["seconds"]["p90"]
        assert r["target_s"] is None                 # the targets are for 900 elements, 100 spheres
        assert all(set(run["status_counts"]) == {"solved"} for run in r["runs"])
    assert all(r["standing"] for r in saved["sphere_stack"])
    # scipy on the foundation and on the smallest and largest stack, same run, timeouts reported
    for r in (row, saved["sphere_stack"][0], saved["sphere_stack"][2]):
        for method in ("BDF", "Radau"):
            s = r[method]
            assert s["budget_s"] == 0.3 and (s["completed"] or s["timeout"])
            assert s["ratio_to_ours"] == s["seconds"] / r["seconds"]["median"]
            assert s["ratio_is_lower_bound"] == s["timeout"]
    assert "BDF" not in saved["sphere_stack"][1]


def test_bench_constraint_solver_targets_and_table():
    assert bench._applies(bench.FOUNDATION_TARGET, {"elements": 900}) == 1.0
    assert bench._applies(bench.STACK_TARGET, {"n": 100, "steps": 500}) == 5.0
    assert bench._applies(bench.STACK_TARGET, {"n": 100, "steps": 20}) is None
    runs = [{"seconds": s, "cpu_seconds": s / 2, "step_median_s": s / 100, "step_p90_s": s / 50}
            for s in (0.8, 1.3, 1.1)]
    row = bench._summary(runs, 1.0)
    assert row["seconds"]["median"] == 1.1 and not row["pass_wall"] and row["pass_cpu"]
    assert bench._verdict(row).strip() == "<= 1 s: wall MISS, cpu PASS"


def test_bench_constraint_solver_rejects_bad_sphere_counts(tmp_path, capsys):
    assert main(["bench", "constraint-solver", "--contacts", "10,0", "--out", str(tmp_path)]) == 2
    assert "sphere counts must be positive integers" in capsys.readouterr().err
