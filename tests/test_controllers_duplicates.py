"""Exactly duplicated contacts are solved once and share the force equally (controllers.duplicates)."""
from __future__ import annotations

import numpy as np
import pytest

from idyn import controllers
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn import Contact, Status

MERGING = ["qp-coulomb", "qp-noslip", "qp-coulomb-1stage", "lcp-coulomb"]


@pytest.mark.parametrize("name", MERGING)
def test_duplicates_give_the_single_contact_answer_split_equally(name):
    one = standing_problem("links", 4, 0.5)
    three = standing_problem("links", 12, 0.5)              # every foot contact three times
    out1 = controllers.make(name, one.model).compute(one.state, one.desired, one.contacts)
    out3 = controllers.make(name, three.model).compute(three.state, three.desired, three.contacts)
    assert out3.info.merged_contacts == 8
    assert np.allclose(out3.tau, out1.tau, atol=1e-9)
    assert np.allclose(out3.contact_forces, np.repeat(out1.contact_forces, 3, axis=0) / 3, atol=1e-9)


def test_near_duplicates_are_different_contacts():
    p = standing_problem("links", 4, 0.5)
    c = p.contacts[0]
    moved = Contact(c.body_a, c.body_b, c.point + [1e-6, 0, 0], c.normal, c.mu, c.phi)
    out = controllers.make("qp-coulomb", p.model).compute(p.state, p.desired, p.contacts + [moved])
    assert out.info.merged_contacts == 0
    assert out.contact_forces.shape == (5, 3)


def test_lcp_noslip_keeps_algorithm_2_on_duplicates():
    p = standing_problem("links", 8, np.inf)
    out = controllers.make("lcp-noslip", p.model).compute(p.state, p.desired, p.contacts)
    assert out.info.merged_contacts == 0
    assert out.info.status is Status.SOLVED
