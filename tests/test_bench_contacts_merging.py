"""``merge_duplicates=False`` hands every duplicated contact to the solver (the paper's timing
experiment, Sec. 8.4.2 and Fig. 19), and ``idyn bench contacts`` times both series."""
from __future__ import annotations

import json

import numpy as np
import pytest

from idyn import controllers
from idyn.experiments.benchmarks import contacts as bench_contacts
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn import Status
from idyn.errors import InvalidInputError
from test_controllers import check_physics, weight

#: the controllers that merge exact duplicates by default
MERGING = ["lcp-coulomb", "qp-coulomb", "qp-coulomb-1stage", "qp-noslip"]
#: relative tolerance between the merged and unmerged solves: Lemke's answer is exact, the QP
#: backends' optima are exact to their precision; a Stage I LCP that needed the Tikhonov
#: regularization ``info.details["regularization"]`` is perturbed by O(that) as well
TOL = {"lcp-coulomb": 1e-9, "qp-coulomb": 1e-5, "qp-coulomb-1stage": 1e-5, "qp-noslip": 1e-5}


def test_the_option_is_validated_and_stored():
    model = standing_problem().model
    assert [n for n in controllers.available() if controllers.make(n, model).merge_duplicates] == MERGING
    for name in controllers.available():
        assert controllers.make(name, model, merge_duplicates=False).merge_duplicates is False
    # lcp-noslip handles dependent contacts itself (Appendix F); pid and sensed predict no forces
    for name in ("lcp-noslip", "pid", "sensed-1"):
        assert controllers.make(name, model, merge_duplicates=True).merge_duplicates is False
    with pytest.raises(InvalidInputError, match="merge_duplicates"):
        controllers.make("qp-coulomb", model, merge_duplicates="no")


@pytest.mark.parametrize("mu", [0.3, 1.0])
@pytest.mark.parametrize("name", MERGING)
def test_unmerged_solve_is_a_solution_of_the_duplicated_problem(name, mu):
    """Three copies of each foot contact: with merging off the solver sees all 12
    (``merged_contacts`` 0), its forces pass the residual checks of every controller (eq. 37 on
    every row, the floating base's unactuated; cone; non-penetration; complementarity for the
    LCP) and, since every model's torque is unique on exact duplicates (controllers.duplicates:
    the LCP's, Stage I's v+ and Stage II's ridge optimum), tau, v+ and each foot's total force
    equal the merged solve's; the split among copies need not be equal."""
    p = standing_problem("links", 12, mu, rng=np.random.default_rng(3), noise=1e-3)
    off = controllers.make(name, p.model, merge_duplicates=False).compute(p.state, p.desired, p.contacts)
    on = controllers.make(name, p.model).compute(p.state, p.desired, p.contacts)
    assert off.info.merged_contacts == 0 and on.info.merged_contacts == 8
    # 12 exact duplicates make Stage I's KKT LCP degenerate: regularised Lemke may solve it
    # (M + eps I), and the step then says REGULARIZED; the tolerance below allows for eps
    assert off.info.status in (Status.SOLVED, Status.REGULARIZED) and off.info.fallback is None
    if off.info.status is Status.REGULARIZED:
        assert off.info.details["regularization"] > 0.0
    check_physics(name, p.model, p.state, p.contacts, off)
    tol = TOL[name] + 10 * max(out.info.details.get("regularization", 0.0) for out in (off, on))
    scale = max(1.0, np.abs(on.tau).max())
    assert np.abs(off.tau - on.tau).max() <= tol * scale
    assert np.abs(off.info.v_next - on.info.v_next).max() <= tol * scale
    per_foot = [out.contact_forces.reshape(4, 3, 3).sum(axis=1) for out in (off, on)]
    assert np.abs(per_foot[0] - per_foot[1]).max() <= tol * weight(p.model)


def test_bench_writes_both_series(tmp_path):
    report = bench_contacts.run(tmp_path, counts=(4, 8), seeds=1, repeats=1)
    assert json.loads((tmp_path / "bench.json").read_text()) == report
    assert (tmp_path / "contacts.png").stat().st_size > 0
    assert list(report["merging_off"]) == controllers.available()
    assert list(report["merging_on"]) == MERGING
    for series in ("merging_off", "merging_on"):
        for name, by_count in report[series].items():
            assert set(by_count) == {"4", "8"}
            for entry in by_count.values():
                assert entry["samples"] == 1 and entry["median_us"] > 0
                assert entry["statuses"] == {"solved": 1}, (series, name, entry)


def test_bench_rejects_counts_that_are_not_multiples_of_four(tmp_path):
    with pytest.raises(InvalidInputError, match="multiples of 4"):
        bench_contacts.run(tmp_path, counts=(4, 6), seeds=1, repeats=1)
