"""``idyn bench sim`` runs end to end: every contact model against PyBullet, in one JSON."""
import json

from idyn.experiments.benchmarks import sim


def test_bench_sim_times_every_case_against_pybullet(tmp_path):
    report = sim.run(tmp_path, repeats=3)
    saved = json.loads((tmp_path / "bench.json").read_text())
    assert set(saved["idyn"]) == {label for label, *_ in sim.CASES}
    assert saved["pybullet"]["steps"] == 3 and saved["pybullet"]["median_us"] > 0
    for entry in saved["idyn"].values():
        assert entry["steps"] == 3 and entry["ratio_to_pybullet"] > 0 and entry["p90_ratio_to_pybullet"] > 0
        assert 0 < entry["cpu_median_us"] <= entry["cpu_p90_us"] and entry["cpu_p90_ratio_to_pybullet"] > 0
    assert len(saved["load_average"]) == 2
    assert report["idyn"].keys() == saved["idyn"].keys()
