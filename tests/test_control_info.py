"""``ControlOutput.info`` is a typed :class:`idyn.controllers.ControlInfo` whose status is the one
:class:`idyn.Status` the LCP and QP solvers report too.

``Controller.compute`` converts a controller's own info dict: ``status`` (a Status or its value),
``pivots``, ``fallback`` and ``error`` become fields, the rest goes to ``details``; a status string
no Status member has is a bug in the controller and raises.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from idyn import controllers
import idyn
from idyn.controllers import ControlInfo, Controller, Desired, RobotState, Status
from idyn.controllers.base import Solution
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn import lcp
from idyn.errors import SolverError
from idyn.qp import QPStatus, solve_qp
from test_controllers import feed_sensor
from test_controllers_noslip import _grasp

NAMES = controllers.available()
#: the fields a controller's info dict fills; they must never be left in ``details``
CONVERTED = ("status", "pivots", "fallback", "error")


def check_info(name, model, m, out):
    """The typed contract of one step's info (m contacts)."""
    info = out.info
    assert isinstance(info, ControlInfo) and type(info.status) is Status
    assert info.controller == name
    assert type(info.pivots) is int and info.pivots >= 0
    assert type(info.solve_time) is float and info.solve_time > 0
    assert type(info.merged_contacts) is int and 0 <= info.merged_contacts < max(m, 1)
    assert info.v_next is None or (info.v_next.shape == (model.nv,) and np.all(np.isfinite(info.v_next)))
    assert info.impact_forces is None or info.impact_forces.shape == (m, 3)
    assert info.error is None or isinstance(info.error, str)
    assert info.fallback is None or isinstance(info.fallback, str)
    assert isinstance(info.details, Mapping) and not set(CONVERTED) & set(info.details)
    # not SOLVED: the torques came from a named fallback, or (lcp-noslip, Sec. 4.5) from its
    # minimal-deviation QP, reported in details["consistency_qp"]
    if info.status is not Status.SOLVED:
        assert info.fallback is not None or info.details.get("consistency_qp") == "solved", info
    if info.status in (Status.FAILED, Status.NON_FINITE):
        assert info.fallback == "no-contact-id"
    assert (info.error is not None) >= (info.status is Status.FAILED)   # FAILED says why


def scenarios():
    """(label, problem builder): standing, duplicated contacts, no contact, a touchdown at 0.3 m/s."""
    def standing():
        p = standing_problem("links", 4, 1.0)
        return p.model, p.state, p.desired, p.contacts

    def duplicated():
        p = standing_problem("links", 8, 0.5)
        return p.model, p.state, p.desired, p.contacts

    def flying():
        p = standing_problem("links", 4, 1.0)
        return p.model, p.state, p.desired, []

    def touchdown():
        p = standing_problem("links", 4, np.inf)
        v = p.state.v.copy()
        v[2] = -0.3                 # the whole robot falling onto its four feet
        return p.model, RobotState(p.state.q, v), p.desired, p.contacts

    return {"standing": standing, "duplicated": duplicated, "flying": flying, "touchdown": touchdown}


SCENARIOS = scenarios()


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("name", NAMES)
def test_every_controller_reports_a_typed_info(name, scenario):
    model, state, desired, contacts = SCENARIOS[scenario]()
    ctrl = controllers.make(name, model)
    feed_sensor(ctrl, model, contacts)
    out = ctrl.compute(state, desired, contacts)
    check_info(name, model, len(contacts), out)
    if ctrl.predicts_contact_forces:
        assert out.info.status is Status.SOLVED and out.info.fallback is None, out.info
        assert out.info.v_next is not None
    if scenario == "duplicated":
        assert out.info.merged_contacts == (4 if ctrl.merge_duplicates else 0)
    if scenario == "touchdown" and ctrl.predicts_contact_forces:
        f = out.info.impact_forces
        assert f is not None and f[:, 0].sum() > 0 and np.all(f[:, 0] <= out.contact_forces[:, 0] + 1e-9)
    else:
        assert out.info.impact_forces is None


def test_lcp_noslip_reports_its_numerical_failure_as_a_status():
    """The grasp whose no-slip LCP has no solution (tests/test_controllers_noslip.py): the
    controller's own "numerical_failure" string arrives as Status.NUMERICAL_FAILURE."""
    man, mb, q, contacts = _grasp(0.0)
    vdot = np.zeros(mb.na)
    vdot[7:] = 50.0
    out = controllers.make("lcp-noslip", mb, consistent_desired=False).compute(
        RobotState(q, np.zeros(mb.nv)), Desired(man.q0, np.zeros(mb.na), vdot), contacts)
    check_info("lcp-noslip", mb, len(contacts), out)
    assert out.info.status is Status.NUMERICAL_FAILURE and out.info.pivots > 0


# ---------------------------------------------------------------------- one enum
def test_one_status_enum_shared_with_the_solvers():
    assert idyn.Status is Status and lcp.LCPStatus is Status and QPStatus is Status
    res = lcp.lemke(np.eye(2), np.array([-1.0, 1.0]))
    assert res.status is Status.SOLVED and res.status is lcp.LCPStatus.SOLVED and res.solved
    qp = solve_qp(np.eye(1), np.zeros(1), A_in=np.array([[1.0], [-1.0]]), b_in=np.array([1.0, 0.0]))
    assert qp.status is Status.INFEASIBLE and not qp.solved
    # values are the names traces and recorded replays store
    assert {s.value for s in Status} == {"solved", "regularized", "max_pivots", "ray_termination",
                                         "numerical_failure", "infeasible", "failed", "non-finite",
                                         "over_budget", "implausible"}


# ---------------------------------------------------------------------- the conversion
class _Scripted(Controller):
    """A controller whose ``_solve`` returns (or raises) what the test scripts."""

    name = "scripted"
    predicts_contact_forces = False

    def __init__(self, model, answer):
        super().__init__(model, feedback=False)
        self.answer = answer

    def _solve(self, q, v, vdot, contacts):
        if isinstance(self.answer, Exception):
            raise self.answer
        tau, info = self.answer
        return Solution(np.full(self.model.na, tau), np.zeros((len(contacts), 3)), None, dict(info))


def _run(answer):
    p = standing_problem("links", 4, 1.0)
    return p.model, _Scripted(p.model, answer).compute(p.state, p.desired, p.contacts)


@pytest.mark.parametrize("status", list(Status))
def test_every_status_value_and_member_converts(status):
    for raw in (status, status.value):
        model, out = _run((1.0, {"status": raw}))
        assert out.info.status is status and out.info.details == {}
        np.testing.assert_array_equal(out.tau, np.ones(model.na))


def test_known_keys_become_fields_and_the_rest_details():
    extras = {"kept_tangent_rows": (1, 2), "stage2_status": "determinate", "lcp_w": np.arange(3.0)}
    _, out = _run((0.0, {"status": "ray_termination", "pivots": np.int64(7), "fallback": "lemke",
                         "error": "ray", **extras}))
    info = out.info
    assert (info.status, info.pivots, info.fallback, info.error) == (Status.RAY_TERMINATION, 7, "lemke", "ray")
    assert type(info.pivots) is int and list(info.details) == list(extras)
    assert info.details["kept_tangent_rows"] == (1, 2) and info.details["stage2_status"] == "determinate"
    with pytest.raises(AttributeError):
        info.status = Status.SOLVED      # frozen
    with pytest.raises(TypeError):
        info["status"]                   # attributes only, no dict-like access


def test_an_unmapped_status_string_raises():
    with pytest.raises(ValueError, match="'almost'"):
        _run((0.0, {"status": "almost"}))
    with pytest.raises(ValueError, match="'Solved'"):
        _run((0.0, {"status": "Solved"}))


def test_a_raising_model_reports_failed_and_falls_back():
    model, out = _run(SolverError("no pivot"))
    check_info("scripted", model, 4, out)
    assert out.info.status is Status.FAILED and out.info.fallback == "no-contact-id"
    assert out.info.error == "SolverError: no pivot"
    assert out.info.v_next is not None and np.all(np.isfinite(out.tau))


@pytest.mark.parametrize("status", [Status.SOLVED, Status.MAX_PIVOTS])
def test_a_non_finite_answer_falls_back_keeping_the_models_failure(status):
    model, out = _run((np.nan, {"status": status.value, "pivots": 3}))
    check_info("scripted", model, 4, out)
    assert out.info.status is (Status.NON_FINITE if status is Status.SOLVED else status)
    assert out.info.fallback == "no-contact-id" and out.info.pivots == 3 and np.all(np.isfinite(out.tau))
