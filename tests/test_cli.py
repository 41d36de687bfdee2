"""The `idyn` command line end to end, on short runs: files written, tables printed, readable
errors for user mistakes, and reproducible metrics."""
import json
import math

import numpy as np

import pytest

from idyn.experiments.cli import main
from idyn.experiments.runner import run_scenario
from idyn.experiments.scenario import Scenario, terrain_scenario
from idyn.errors import InvalidInputError


def test_run_writes_metrics_trace_and_plot(tmp_path, capsys):
    assert main(["run", "--duration", "0.05", "--out", str(tmp_path)]) == 0
    m = json.loads((tmp_path / "metrics.json").read_text())
    for key in ("fell", "waypoints_reached", "pos_error", "vel_error", "torque_rate", "torque_mean",
                "force_error_abs", "force_error_rel", "realtime_factor", "solve_time_p50_us",
                "solve_time_p95_us"):
        assert key in m
    assert m["steps"] == 50 and m["controller"] == "qp-coulomb"
    assert (tmp_path / "trace.npz").is_file() and (tmp_path / "run.png").stat().st_size > 10_000
    assert m["units"]["force_error_rel"] == "%" and m["units"]["force_error_abs"] == "N"
    assert "tracking error" in capsys.readouterr().out
    assert main(["plot", str(tmp_path), "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "run.png").is_file()


def test_controller_options_reach_the_controller_and_runs_overlay(tmp_path, capsys):
    """Fig. 15 from the CLI: qp-coulomb with and without Stage II, overlaid by ``idyn plot``."""
    from idyn.experiments.trace import Trace

    one, two = tmp_path / "stage1", tmp_path / "stage2"
    assert main(["run", "--duration", "0.03", "--controller-option", "stage2=false", "--out", str(one)]) == 0
    assert main(["run", "--duration", "0.03", "--out", str(two)]) == 0
    assert Trace.load(one / "trace.npz").meta["scenario"]["controller_options"] == {"stage2": False}
    stage1 = Trace.load(one / "trace.npz").tau
    assert not np.allclose(stage1, Trace.load(two / "trace.npz").tau)   # the option took effect
    assert main(["plot", str(one), str(two), "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "runs.png").stat().st_size > 10_000
    assert main(["run", "--controller-option", "nope=1", "--duration", "0.01",
                 "--out", str(tmp_path / "bad")]) == 2
    assert "unexpected keyword argument 'nope'" in capsys.readouterr().err


def test_contact_model_options_reach_the_idyn_sim_model(tmp_path, capsys):
    """The matched qp pair of ``idyn verify-forces`` from ``idyn run``: the gap rate on the
    controller and on idyn.sim's ``qp`` model; options without a named rigid model are refused."""
    from idyn.experiments.runner import build_testbed
    from idyn.experiments.scenario import Scenario
    from idyn.experiments.trace import Trace

    out = tmp_path / "qp"
    assert main(["run", "--backend", "idyn", "--contact-model", "qp", "--mu", "0.5", "--duration", "0.03",
                 "--contact-model-option", "gap_rate=true", "--controller-option", "gap_rate=true",
                 "--out", str(out)]) == 0
    scenario = Trace.load(out / "trace.npz").meta["scenario"]
    assert scenario["contact_model_options"] == {"gap_rate": True}
    testbed = build_testbed(Scenario(**scenario))
    try:
        assert testbed.sim.contact_model.name == "qp" and testbed.sim.contact_model.gap_rate
    finally:
        testbed.close()
    capsys.readouterr()
    for argv, message in ((["--contact-model", "qp", "--contact-model-option", "nope=1"], "unexpected keyword argument 'nope'"),
                          (["--contact-model-option", "gap_rate=true"], "named rigid idyn.sim contact model"),
                          (["--terrain", "compliant", "--contact-model", "penalty", "--contact-model-option", "stiffness=1"],
                           "named rigid idyn.sim contact model")):
        assert main(["run", "--backend", "idyn", *argv, "--duration", "0.01", "--out", str(tmp_path / "bad")]) == 2
        assert message in capsys.readouterr().err


def test_compare_writes_csv_and_prints_paper_tables(tmp_path, capsys):
    assert main(["compare", "--controllers", "qp-coulomb,pid", "--terrains", "rigid-high",
                 "--duration", "0.03", "--jobs", "1", "--out", str(tmp_path)]) == 0
    lines = (tmp_path / "metrics.csv").read_text().splitlines()
    assert lines[0].startswith("controller,terrain,mu,")
    assert len(lines) == 3
    out = capsys.readouterr().out
    assert "Table 3, rigid-high" in out and "0.0486" in out      # the paper's number beside ours
    assert "Table 6" in out and "The paper's orderings on this sweep" in out
    verdicts = json.loads((tmp_path / "orderings.json").read_text())
    assert [v["source"] for v in verdicts] == ["Table 4", "Table 4", "Table 5", "Table 6"]
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["packages"]["pin"] and meta["seeds"] == [0]


def test_every_command_takes_out_defaulting_to_results_command():
    """``--out DIR`` on every subcommand, ``results/<command>`` when not given (README)."""
    import importlib

    from idyn.experiments.cli import COMMANDS, build_parser

    parser = build_parser()
    positional = {"bench": ["lcp"], "plot": ["somewhere"], "constraint-solver": ["pendulum"]}
    names = [importlib.import_module(f"idyn.experiments.commands.{c}").NAME for c in COMMANDS]
    for name in names:
        argv = [name, *positional.get(name, [])]
        assert parser.parse_args(argv).out == f"results/{name}"
        assert parser.parse_args([*argv, "--out", "elsewhere"]).out == "elsewhere"


def test_bench_loop_writes_under_out_not_the_working_directory(tmp_path, monkeypatch, capsys):
    cwd, out = tmp_path / "cwd", tmp_path / "profile"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert main(["bench-loop", "--controller", "pid", "--duration", "0.02", "--out", str(out)]) == 0
    report = json.loads((out / "bench.json").read_text())
    assert report["scenario"]["duration"] == 0.02 and report["runs"][0]["steps"] == 20
    assert list(cwd.iterdir()) == []
    assert f"wrote {out}/bench.json" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["run", "--controller", "nope"], "unknown controller"),
    (["run", "--duration", "-1"], "duration must be positive"),
    (["compare", "--terrains", "lava"], "unknown terrain"),
    (["plot", "/nonexistent"], "neither trace.npz"),
    (["plot", "/nonexistent", "/nowhere"], "every source needs trace.npz"),
    (["bench", "lcp", "--contacts", "4,x"], "comma-separated integers"),
    (["bench-loop", "--repeats", "0"], "--repeats must be at least 1"),
    (["bench-loop", "--controller", "nope"], "unknown controller"),
    (["constraint-solver", "elastic-foundation", "--case", "100,1e9,50"],
     "unknown elastic-foundation case"),
])
def test_user_mistakes_are_one_line_errors(argv, message, tmp_path, capsys):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_malformed_foundation_case_is_an_argparse_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["constraint-solver", "elastic-foundation", "--case", "100,1e11", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "expected ELEMENTS,E,LOAD" in capsys.readouterr().err


def test_friction_limit_option(tmp_path, capsys):
    from idyn.experiments.cli import build_parser
    from idyn.experiments.commands import backend_of
    from idyn.experiments.scenario import LOCOMOTION_FRICTION_LIMIT, PRESET_VALUE

    parser = build_parser()
    for command in ("run", "compare", "demo"):
        args = parser.parse_args([command])
        assert args.friction_limit == PRESET_VALUE and args.preset == "idyn" and backend_of(args) == "pybullet"
        assert Scenario(friction_limit=args.friction_limit).planning_friction_limit == LOCOMOTION_FRICTION_LIMIT
        assert Scenario(friction_limit=args.friction_limit, preset="paper").planning_friction_limit is None
        paper = parser.parse_args([command, "--preset", "paper"])
        assert backend_of(paper) == "idyn"
        assert backend_of(parser.parse_args([command, "--preset", "paper", "--backend", "pybullet"])) == "pybullet"
        assert parser.parse_args([command, "--friction-limit", "none"]).friction_limit is None
        assert parser.parse_args([command, "--friction-limit", "0.5"]).friction_limit == 0.5
    with pytest.raises(SystemExit) as exc:                     # argparse: usage line, exit 2
        main(["run", "--friction-limit", "lots", "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "expected a friction coefficient" in err and "Traceback" not in err
    with pytest.raises(InvalidInputError, match="friction_limit"):
        Scenario(friction_limit=-1.0)


def test_same_seed_same_metrics():
    s = terrain_scenario("rough", controller="qp-coulomb", duration=0.04, seed=5)
    a, b = run_scenario(s), run_scenario(s)
    for key in ("pos_error", "vel_error", "torque_rate", "force_error_abs"):
        assert a[key] == b[key] or (math.isnan(a[key]) and math.isnan(b[key]))


def test_manipulator_scenario_runs():
    m = run_scenario(Scenario(controller="qp-coulomb", robot="manipulator", mu=100.0, duration=0.05))
    assert m["steps"] == 50 and not m["fell"] and math.isfinite(m["pos_error"])
