"""Matched-model verification of contact-force predictions (paper Sec. 8.2, Table 5, issue 8).

The trot runs in closed loop on idyn.sim with the simulator using the controller's own contact
model (:mod:`idyn.experiments.prediction_table`: the same contact set, passive touchdown impacts on
both sides, the same gap stabilisation); the controller's predicted summed normal force is
compared with the simulator's, step by step. The 30 s runs are slow tests, short runs the
default; ``idyn verify-forces`` prints the whole table.
"""
import pytest

from idyn.experiments.prediction_table import (BACKENDS, MATCHED, PREDICTING, contact_selection, matched_options,
                                          planning_friction_limit, relative_prediction_error)
from idyn.experiments.scenario import LOCOMOTION_FRICTION_LIMIT


SHORT = 0.3   # s of the trot: start, liftoff, the first two touchdowns


def short_matched_run(controller):
    """The balance term off: it is torque added after the controller, which its prediction does
    not see."""
    backend, mu = MATCHED[controller]
    options, model_options = matched_options(controller, backend)
    row = relative_prediction_error(controller, backend, mu, SHORT, balance=False, controller_options=options,
                                    model_options=model_options)
    assert row["error"] is None and not row["fell"], row
    assert row["steps"] > 0.5 * SHORT / 1e-3        # loaded steps (the qp model lets feet hop)
    return row


def test_lcp_coulomb_predicts_its_model_to_round_off():
    """Same contact set, same pyramid LCP, same touchdown impact, same gap stabilisation: every
    step's predicted summed normal force equals the simulator's to round-off."""
    assert short_matched_run("lcp-coulomb")["max_rel_pct"] < 1e-7


def test_qp_coulomb_predicts_its_model_within_one_percent():
    """Stage I with prescribed joint velocities is not the forward maximal-dissipation program
    with given torques (their optimality conditions differ where the prescribed motion moves the
    feet in ways no impulse can: the projection of controllers.dissipation), so only close."""
    assert short_matched_run("qp-coulomb")["mean_rel_pct"] < 1.0


def test_lcp_noslip_predicts_its_model_to_round_off():
    """Both sides on the state rule (held contacts chosen from the start-of-step state): the
    simulator given the controller's torques finds its answer, up to Algorithm 1's dependence
    tolerance (with the default release rules: 1.69 % over these 0.3 s, 2.28 % over 30 s)."""
    assert short_matched_run("lcp-noslip")["max_rel_pct"] < 1e-4


#: the 30 s matched runs that do not meet issue 8's 1 %, as measured. The balance term is torque
#: the closed loop adds after the controller (experiments.loop), which no prediction sees; with it
#: off the controller's torque is all that acts, as in the paper's verification, whose
#: stabilisation fed the desired accelerations (Sec. 7.3).
ABOVE_ONE_PERCENT = {
    ("qp-coulomb", True): "1.22 % mean relative error (median 0.62 %) over the 30 s with the balance torque, "
                          "0.59 % without it (measured at cf80eaf): the balance torque moves the robot in ways "
                          "Stage I did not plan, and the qp model's answer to it differs from the controller's",
}


@pytest.mark.slow
@pytest.mark.parametrize("controller,balance", [
    pytest.param(c, b, marks=[pytest.mark.xfail(strict=True, reason=ABOVE_ONE_PERCENT[c, b])]
                 if (c, b) in ABOVE_ONE_PERCENT else [])
    for c in sorted(MATCHED) for b in (False, True)])
def test_matched_models_predict_summed_normal_force_within_one_percent(controller, balance):
    """Issue 8: the 30 s trot completes and the prediction is within 1 % on average, with the
    controller's torque alone (balance off: the paper's verification condition) and with the
    trot's balance torque added after the controller."""
    backend, mu = MATCHED[controller]
    options, model_options = matched_options(controller, backend)
    row = relative_prediction_error(controller, backend, mu, 30.0, balance=balance, controller_options=options,
                                    model_options=model_options)
    print(row)          # the numbers of the table (shown with pytest -rP and on failure)
    assert row["trotted_s"] == pytest.approx(30.0), row
    assert row["mean_rel_pct"] < 1.0, row


def test_verify_forces_command_prints_and_writes_the_table(tmp_path, capsys):
    """``idyn verify-forces``: the table on stdout, JSON and CSV in --out, one row per cell."""
    import csv
    import json

    from idyn.experiments.cli import main

    out = tmp_path / "vf"
    assert main(["verify-forces", "--duration", "0.02", "--controllers", "lcp-coulomb",
                 "--models", "ap-lcp,pybullet", "--no-balance", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "lcp-coulomb" in printed and "ap-lcp" in printed and "pybullet" in printed
    rows = list(csv.DictReader(open(out / "verify_forces.csv")))
    assert {"mean_abs_N", "mean_rel_pct", "median_rel_pct", "max_rel_pct"} <= set(rows[0])   # units named
    assert [(r["controller"], r["backend"]) for r in rows] == [("lcp-coulomb", "ap-lcp"), ("lcp-coulomb", "pybullet")]
    doc = json.loads((out / "verify_forces.json").read_text())
    assert doc["settings"]["balance"] is False and len(doc["rows"]) == 2
    matched = doc["rows"][0]
    assert matched["matched"] and matched["trotted_s"] == pytest.approx(0.02) and matched["max_rel_pct"] < 1e-7
    # PyBullet's controller plans with the locomotion runs' friction cap; the matched model's shares its mu
    assert matched["friction_limit"] is None and doc["rows"][1]["friction_limit"] == 0.3


def test_only_the_matched_model_shares_its_contact_data():
    """The matched cells give the controller the simulator's own contacts and mu; every other cell
    (PyBullet and idyn.sim's other models) the feet in planned stance at the locomotion runs'
    friction cap, without which qp-coulomb fell within 0.5 s on ap-lcp, noslip, compliant and
    penalty (experiments.prediction_table.contact_selection, planning_friction_limit)."""
    for controller in PREDICTING:
        for backend in BACKENDS:
            own = MATCHED.get(controller, (None,))[0] == backend
            assert contact_selection(controller, backend) == ("all" if own else "schedule")
            assert planning_friction_limit(controller, backend) == (None if own else LOCOMOTION_FRICTION_LIMIT)


@pytest.mark.parametrize("argv,message", [
    (["--models", "bullet"], "unknown contact model bullet"),
    (["--controllers", "pid"], "unknown controller pid"),
    (["--duration", "0"], "--duration must be a positive"),
])
def test_verify_forces_command_rejects_bad_input_in_one_line(tmp_path, capsys, argv, message):
    from idyn.experiments.cli import main

    assert main(["verify-forces", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
