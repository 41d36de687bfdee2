"""One unit convention for errors (docs/conventions.md, "Error columns name their unit"): every
relative error is in percent, in every output, and every column that saves or prints an error
names its unit."""
from __future__ import annotations

import math

import numpy as np
import pytest

from idyn.experiments.commands import compare, verify_forces
from idyn.experiments.constraint_solver import foundation
from idyn.experiments.metrics import ERROR_COLUMNS, ERROR_UNITS, csv_row, from_csv_row
from idyn.experiments.prediction_table import LOADED, format_table, prediction_errors

UNIT_SUFFIXES = ("_pct", "_N", "_rad", "_rad_s")


def test_prediction_errors_are_percent_of_the_simulated_force_on_loaded_steps():
    predicted = np.array([11.0, 9.0, 30.0, 0.0])
    sensed = np.array([10.0, 10.0, 20.0, 0.5 * LOADED])          # the last step is not loaded
    e = prediction_errors(predicted, sensed)
    assert e["steps"] == 3
    assert e["mean_abs_N"] == pytest.approx((1 + 1 + 10) / 3)
    assert e["mean_rel_pct"] == pytest.approx((10 + 10 + 50) / 3)   # |p - s| / s, in percent
    assert e["median_rel_pct"] == pytest.approx(10.0) and e["max_rel_pct"] == pytest.approx(50.0)
    empty = prediction_errors(np.zeros(2), np.zeros(2))
    assert empty["steps"] == 0 and math.isnan(empty["mean_rel_pct"])


def test_every_csv_error_column_names_its_unit():
    errors = [k for k in compare.CSV_KEYS if "error" in k and k != "error"]
    assert errors and all(k.endswith(UNIT_SUFFIXES) for k in errors), errors
    assert ERROR_COLUMNS["force_error_rel"] in compare.CSV_KEYS and "force_error_rel" not in compare.CSV_KEYS
    rel = [k for k in verify_forces.CSV_KEYS if "rel" in k or "abs" in k]
    assert rel and all(k.endswith(UNIT_SUFFIXES) for k in rel), rel
    assert set(ERROR_COLUMNS) == set(ERROR_UNITS)
    assert ERROR_UNITS["force_error_rel"] == "%" and ERROR_COLUMNS["force_error_rel"].endswith("_pct")


def test_csv_columns_read_back_as_the_metric_keys():
    row = {"controller": "qp-coulomb", "force_error_rel": 1.5, "pos_error": 0.01, "fell": False}
    saved = csv_row(row)
    assert saved["force_error_rel_pct"] == 1.5 and saved["pos_error_rad"] == 0.01 and "force_error_rel" not in saved
    assert from_csv_row(saved) == row


def test_prediction_table_prints_percent():
    row = {"controller": "lcp-coulomb", "backend": "ap-lcp", "matched": True, "error": None,
           "trotted_s": 1.0, "mean_rel_pct": 1.25}
    text = format_table([row])
    assert "(%)" in text.splitlines()[0] and "1.250%" in text


def test_foundation_relative_error_is_percent_and_its_table_says_so():
    q_ref = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    q = q_ref + np.array([0.0, 0.0, 0.01, 0, 0, 0, 0])
    err, rel = foundation._error(q, q_ref)
    assert err == pytest.approx(0.01) and rel == pytest.approx(100 * 0.01 / np.sqrt(2))
    key = (100, 1e7, 5.0)
    none = {"completed": False, "timeout": False}
    case = {"elements": key[0], "youngs_modulus": key[1], "load": key[2], "abs_error": err, "rel_error_pct": rel,
            "constraint_solver": {"seconds": 1.0}, "BDF": none, "Radau": none}
    text = foundation.table({"cases": [case], "fine_step": []})
    line = next(s for s in text.splitlines() if f"{rel:.2e}" in s)              # the Table 2 row
    assert "rel (%)" in text
    assert f"{100 * foundation.PAPER_TABLE2[key][1]:.3g} %" in line      # the paper's fraction, as percent
