"""Every bad input of the issue list gets a typed idyn error (IdynError), never a bare
TypeError or ValueError: a string for q, mu = 'abc' or None, contacts = None or a bare Contact
(and their neighbours: strings for v, the desired motion, a normal or a gap, a number for the
contact list)."""
from __future__ import annotations

import numpy as np
import pytest

from idyn import controllers
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn import Contact
from idyn.errors import IdynError, InvalidInputError
from idyn.state import Desired, RobotState

NAMES = controllers.available()


@pytest.fixture(scope="module")
def problem():
    return standing_problem("links", 4)


def bad_calls(p, ctrl):
    c0, s, d = p.contacts[0], p.state, p.desired
    na = p.model.na
    return {
        "q string": lambda: ctrl.compute(RobotState("abc", s.v), d, p.contacts),
        "v strings": lambda: ctrl.compute(RobotState(s.q, ["a"] * p.model.nv), d, p.contacts),
        "desired string": lambda: ctrl.compute(s, Desired("x", np.zeros(na), np.zeros(na)), p.contacts),
        "mu abc": lambda: ctrl.compute(s, d, [Contact(c0.body_a, None, c0.point, (0, 0, 1), "abc")]),
        "mu None": lambda: ctrl.compute(s, d, [Contact(c0.body_a, None, c0.point, (0, 0, 1), None)]),
        "with_friction None": lambda: c0.with_friction(None),
        "normal string": lambda: Contact(c0.body_a, None, c0.point, "up", 1.0),
        "phi string": lambda: Contact(c0.body_a, None, c0.point, (0, 0, 1), 1.0, phi="x"),
        "contacts None": lambda: ctrl.compute(s, d, None),
        "bare Contact": lambda: ctrl.compute(s, d, c0),
        "contacts int": lambda: ctrl.compute(s, d, 3),
        "contacts strings": lambda: ctrl.compute(s, d, "ab"),
    }


@pytest.mark.parametrize("name", NAMES)
def test_bad_inputs_raise_typed_errors(problem, name):
    ctrl = controllers.make(name, problem.model)
    for label, call in bad_calls(problem, ctrl).items():
        with pytest.raises(IdynError) as err:
            call()
        assert isinstance(err.value, InvalidInputError), label
        assert str(err.value), label
