"""``idyn reproduce``: the report's structure at the smoke scale, and claims judged from numbers.

The claim functions are pure functions of run rows; feeding them synthetic rows checks that a
verdict follows the numbers (it flips when the numbers flip), not the code path. The end-to-end
test runs the command at the smoke scale (0.2-s runs) and checks what the report promises:
the holds table lists every claim of every section, figures are linked relatively and exist,
claims.csv agrees with the report, and a rerun takes its runs from the cache.
"""
from __future__ import annotations

import csv
import dataclasses
import math
import re

import numpy as np
import pytest

from idyn.experiments.cli import main
from idyn.experiments.reproduce import SECTIONS, Context
from idyn.experiments.reproduce import fig19, flops, id_paper
from idyn.experiments.reproduce.runs import _sweep_kw, scenario_key
from idyn.experiments.scenario import Scenario, terrain_scenario


def _row(controller, terrain, *, fell=False, pos=0.03, rate=100.0, tau=0.5, rel=5.0, **kw):
    return {"controller": controller, "terrain": terrain, "fell": fell, "fall_time": 1.0 if fell else None,
            "pos_error": pos, "vel_error": 1.0, "torque_rate": rate, "torque_mean": tau,
            "force_error_rel": rel, "force_error_abs": 1.0, "mu": kw.pop("mu", math.inf), **kw}


# --- Tables 1-2 -----------------------------------------------------------------------------

def test_table1_correction_reproduces_both_published_totals():
    """One correction (F X^-1 F^T as an (nk x m)(m x nk) product) makes the printed formulas give
    both totals the paper states, at two different nq: the printed rows give neither."""
    for sizes, total in flops.PUBLISHED_TABLE1.items():
        assert sum(flops.table1(*sizes, corrected=True).values()) == total
        assert sum(flops.table1(*sizes).values()) != total
    # the corrected row is the N X^-1 N^T count with n -> n k
    n_rows = flops.table1(18, 16, 8, 1)["N X^-1 N^T"]
    assert flops.table1(18, 16, 4, 2, corrected=True)["F X^-1 F^T"] == n_rows


# --- judges flip with the numbers ----------------------------------------------------------

def test_completion_judge_counts_agreeing_cells():
    rows = [_row("qp-coulomb", "rigid-low"), _row("lcp-noslip", "rigid-low", fell=True)]   # both as the paper
    holds, evidence = id_paper.completion_judge(rows)
    assert holds is True and evidence.startswith("2 of 2")
    rows[1]["fell"] = False                      # the paper's lcp-noslip fell on rigid-low
    holds, evidence = id_paper.completion_judge(rows)
    assert holds is False and evidence.startswith("1 of 2") and "lcp-noslip rigid-low" in evidence


def test_table3_claims_follow_position_errors():
    rows = [_row("qp-coulomb", "rigid-low", pos=0.02), _row("sensed-1", "rigid-low", pos=0.03),
            _row("pid", "rigid-low", pos=0.09)]
    assert id_paper.predictive_matches_sensed(rows)[0] is True
    assert id_paper.pid_worse_on_low_friction(rows)[0] is True
    rows[0]["pos_error"] = 0.05                  # now worse than sensed-1 by more than MATCH
    assert id_paper.predictive_matches_sensed(rows)[0] is False
    rows[2]["pos_error"] = 0.01
    assert id_paper.pid_worse_on_low_friction(rows)[0] is False
    rows[1]["fell"] = True                       # no upright sensed run: cannot decide
    assert id_paper.predictive_matches_sensed(rows)[0] is None


def test_table5_claims_follow_relative_errors():
    rows = [_row("lcp-coulomb", "rigid-high", rel=1.5), _row("qp-coulomb", "rigid-high", rel=20.0),
            _row("lcp-coulomb", "compliant-high", rel=6.0)]
    assert id_paper.lcp_within_2_percent_on_rigid(rows)[0] is True
    assert id_paper.qp_12_to_30_percent(rows)[0] is True
    assert id_paper.lcp_degraded_on_compliant(rows)[0] is True
    rows[0]["force_error_rel"] = 8.0
    assert id_paper.lcp_within_2_percent_on_rigid(rows)[0] is False
    assert id_paper.lcp_degraded_on_compliant(rows)[0] is False


def test_chatter_threshold_and_scorecard_cells():
    threshold = id_paper.chatter_ratio_threshold()
    assert 3.51 < threshold < 6.77            # between the paper's passing and failing pid ratios
    rows = [_row("pid", t, rate=100.0) for t in id_paper.HIGH] + \
           [_row("lcp-coulomb", t, rate=100.0 * (threshold + 1)) for t in id_paper.HIGH]
    assert "chatter" in id_paper.quadruped_cell(rows, "lcp-coulomb", id_paper.HIGH, threshold)
    for r in rows[2:]:
        r["torque_rate"] = 100.0 * (threshold - 1)
    assert id_paper.quadruped_cell(rows, "lcp-coulomb", id_paper.HIGH, threshold) == "PASS"
    rows[2].update(fell=True, fall_time=2.0)
    assert "slip and fall" in id_paper.quadruped_cell(rows, "lcp-coulomb", id_paper.HIGH, threshold)
    manip = [_row("pid", "grasp", mu=1.0, box_dropped=False, box_drop_time=None),
             _row("qp-coulomb", "grasp", mu=1.0, box_dropped=True, box_drop_time=1.5)]
    assert "dropped at 1.50 s" in id_paper.manipulator_cell(manip, "qp-coulomb", 1.0, threshold)


def test_path_deviation_is_distance_to_the_polyline():
    waypoints = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0))
    com = np.array([[0.5, 0.1], [1.2, 0.5], [0.5, -0.3]])
    assert id_paper.path_deviation(com, waypoints) == pytest.approx((0.1 + 0.2 + 0.3) / 3)


def test_fig19_claims_follow_step_times():
    def report(noslip_us, qp_us, lcp_us):
        def series(t):
            return {str(n): {"median_us": t} for n in (4, 8, 16, 24, 32, 40, 48)}
        return {"merging_off": {"lcp-noslip": series(noslip_us), "qp-coulomb": series(qp_us),
                                "qp-noslip": series(qp_us), "lcp-coulomb": series(lcp_us)}}
    fast, slow = report(500, 800, 2000), report(1500, 1200, 500)
    assert fig19.noslip_fast_with_many_contacts(fast)[0] is True
    assert fig19.noslip_fast_with_many_contacts(slow)[0] is False
    assert fig19.qp_1khz_to_30(fast)[0] is True and fig19.qp_1khz_to_30(slow)[0] is False
    assert fig19.lcp_coulomb_slow_beyond_4(fast)[0] is True
    assert fig19.lcp_coulomb_slow_beyond_4(slow)[0] is False


# --- the run cache and the preset ------------------------------------------------------------

def test_scenario_key_covers_every_field():
    base = terrain_scenario("rigid-low", controller="pid", duration=1.0, backend="idyn")
    assert scenario_key(base) == scenario_key(terrain_scenario("rigid-low", controller="pid", duration=1.0,
                                                                backend="idyn"))
    assert scenario_key(base) != scenario_key(dataclasses.replace(base, duration=2.0))
    assert scenario_key(base) != scenario_key(dataclasses.replace(base, controller_options={"kv": 10}))


def test_the_preset_reaches_the_sweeps(tmp_path):
    for preset in ("paper", "idyn"):
        assert _sweep_kw(Context(out=tmp_path, preset=preset)) == {"preset": preset}


# --- end to end --------------------------------------------------------------------------------

def test_smoke_report_end_to_end(tmp_path):
    out = tmp_path / "rep"
    args = ["reproduce", "--smoke", "--preset", "idyn", "--jobs", "1", "--out", str(out)]
    assert main(args) == 0
    text = (out / "report.md").read_text()
    assert text.index("## Claims:") < text.index("## Sections")
    for key in SECTIONS:     # every section has its anchor (a key that gives several: "key-...")
        assert f'<a id="{key}"></a>' in text or re.search(rf'<a id="{re.escape(key)}-[^"]+"></a>', text), key
    assert "the section raised" not in text
    assert "the section raised" not in text
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert not link.startswith("/") and (out / link).is_file()
    with open(out / "claims.csv") as fh:
        claims = list(csv.DictReader(fh))
    top = text[text.index("## Claims:"):text.index("## Sections")]
    m = re.search(r"(\d+) hold, (\d+) do not hold, (\d+) undecided \(of (\d+)\)", top)
    assert int(m.group(4)) == len(claims) == sum(map(int, m.groups()[:3]))
    assert sum(c["verdict"] == "holds" for c in claims) == int(m.group(1))
    # the rerun takes every run from the cache: no metrics.json is rewritten
    stamps = {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*/metrics.json")}
    assert stamps
    assert main(args[:-2] + ["--out", str(out), "--only", "id-completion,id-table-6"]) == 0
    assert stamps == {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*/metrics.json")}


def test_unknown_section_is_a_command_error(tmp_path, capsys):
    assert main(["reproduce", "--smoke", "--preset", "idyn", "--only", "table-99", "--out", str(tmp_path)]) == 2
    assert "table-99" in capsys.readouterr().err


def test_chatter_and_stability_claims_follow_the_numbers():
    threshold = id_paper.chatter_ratio_threshold()
    rows = [_row("pid", "rigid-high", rate=100.0), _row("lcp-coulomb", "rigid-high", rate=100 * (threshold + 1)),
            _row("qp-coulomb", "rigid-high", rate=100.0)]
    judge = id_paper._chatter_judge(id_paper.PREDICTIVE, ("lcp-coulomb",))
    assert judge(rows)[0] is True
    rows[2]["torque_rate"] = 100 * (threshold + 1)      # qp-coulomb chatters as well
    assert judge(rows)[0] is False
    stab = [_row("qp-coulomb", "rigid-low"), _row("lcp-noslip", "rigid-low", fell=True)]
    assert id_paper.coulomb_more_stable(stab)[0] is True
    stab[1]["fell"] = False
    assert id_paper.coulomb_more_stable(stab)[0] is False
