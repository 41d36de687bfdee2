"""The PyBullet quadruped's contact batch: PyBullet's closest points checked once, and the same
contacts as the fully validated ContactSet path, bit for bit."""
import math

import numpy as np
import pytest

from idyn.contact import ContactSet
from idyn.errors import InvalidInputError, NonFiniteError

pb = pytest.importorskip("robots.pybullet")
from robots.pybullet.quadruped import _foot_contacts  # noqa: E402


def _raw(point, normal, gap):
    cp = [0] * 9
    cp[6], cp[7], cp[8] = tuple(point), tuple(normal), gap
    return tuple(cp)


def test_non_finite_or_zero_normal_pybullet_contacts_are_rejected():
    with pytest.raises(NonFiniteError):
        _foot_contacts(["LF"], [_raw((0.0, np.nan, 0.0), (0.0, 0.0, 1.0), 0.0)], lambda p: 1.0)
    with pytest.raises(InvalidInputError):
        _foot_contacts(["LF"], [_raw((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)], lambda p: 1.0)


@pytest.mark.parametrize("terrain", ["rigid", "rough"])
def test_contacts_equal_the_validated_contact_set_bit_for_bit(terrain):
    with pb.QuadrupedTestbed("links", terrain, mu=math.inf if terrain == "rigid" else math.nan) as tb:
        rng = np.random.default_rng(0)
        for _ in range(20):                               # a few perturbed standing steps
            tb.apply(rng.normal(scale=0.5, size=tb.na))
            tb.step()
            got = tb.contacts()
            q = tb.state().q
            found = [(f.link, tb._closest(i, q, 0.01)) for i, f in enumerate(tb._feet)]
            found = [(link, cp) for link, cp in found if cp is not None]
            want = ContactSet([link for link, _ in found], [None] * len(found),
                              [cp.point_on_b for _, cp in found], [cp.normal for _, cp in found],
                              [tb.terrain.friction_at(cp.point_on_b) for _, cp in found],
                              [cp.distance for _, cp in found]).contacts()
            assert len(got) == len(want) > 0
            for a, b in zip(got, want):
                assert a.body_a == b.body_a and a.body_b is None and a.mu == b.mu and a.phi == b.phi
                np.testing.assert_array_equal(a.point, b.point)
                np.testing.assert_array_equal(a.frame(), b.frame())
