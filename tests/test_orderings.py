"""The paper's orderings (Tables 4-6) judged on sweep rows: each verdict follows the numbers,
the basis falls back from upright runs to every run only when the upright runs cannot decide."""
from idyn.experiments.orderings import UP_TO_FALL, UPRIGHT, orderings_report, paper_orderings


def _row(controller, terrain, *, fell=False, rate=100.0, force=5.0, fall_time=None):
    return {"controller": controller, "terrain": terrain, "fell": fell, "torque_rate": rate,
            "force_error_rel": force, "fall_time": fall_time if fell else None}


def _sweep(overrides=None):
    """Every ID controller on rigid-high and rigid-low, as the paper reports them."""
    rates = {"qp-coulomb": 50.0, "qp-noslip": 250.0, "lcp-coulomb": 680.0, "lcp-noslip": 350.0,
             "sensed-1": 970.0, "sensed-2": 17500.0}
    forces = {"qp-coulomb": 12.5, "qp-noslip": 22.0, "lcp-coulomb": 1.9, "lcp-noslip": 1.2}
    rows = []
    for c, rate in rates.items():
        for terrain in ("rigid-high", "rigid-low"):
            fell = c.endswith("noslip") and terrain == "rigid-low"
            rows.append(_row(c, terrain, fell=fell, rate=rate, force=forces.get(c, float("nan")),
                             fall_time=0.5))
    for (c, terrain), change in (overrides or {}).items():
        next(r for r in rows if r["controller"] == c and r["terrain"] == terrain).update(change)
    return rows


def test_paper_like_sweep_satisfies_every_ordering():
    verdicts = paper_orderings(_sweep())
    assert [o.holds for o in verdicts] == [True, True, True, True]
    assert all(o.basis == UPRIGHT for o in verdicts[:3])
    assert "sensed-2 17500.0" in verdicts[1].evidence


def test_a_violated_ordering_is_reported_with_its_numbers():
    rows = _sweep({("sensed-1", "rigid-high"): {"torque_rate": 10.0},
                   ("sensed-1", "rigid-low"): {"torque_rate": 10.0},
                   ("qp-noslip", "rigid-high"): {"force_error_rel": 1.0}})
    smooth, _, force, _ = paper_orderings(rows)
    assert smooth.holds is False and "sensed-1 10.0" in smooth.evidence
    assert force.holds is False and "qp-noslip 1.00 %" in force.evidence
    report = orderings_report(rows)
    assert report.count("DOES NOT HOLD") == 2


def test_falls_everywhere_switch_to_the_runs_up_to_the_fall():
    rows = [dict(r, fell=True, fall_time=1.0) if r["controller"] != "qp-coulomb" else r
            for r in _sweep()]
    smooth, rough, _, noslip = paper_orderings(rows)
    # qp-coulomb alone is upright: nothing to compare it with, so every run up to its fall
    assert smooth.basis == UP_TO_FALL and smooth.holds is True
    assert rough.basis == UP_TO_FALL and rough.holds is True
    assert noslip.holds is True and "high-friction" in noslip.evidence


def test_no_slip_completing_low_friction_breaks_the_table6_ordering():
    rows = _sweep({("lcp-noslip", "rigid-low"): {"fell": False, "fall_time": None}})
    assert paper_orderings(rows)[3].holds is False


def test_missing_controllers_leave_claims_undecided():
    rows = [_row("pid", "rigid-high"), _row("qp-coulomb", "rigid-high")]
    assert [o.holds for o in paper_orderings(rows)] == [None, None, None, None]
    rows.append({"controller": "sensed-2", "terrain": "rigid-high", "error": "boom"})
    assert paper_orderings(rows)[1].holds is None
