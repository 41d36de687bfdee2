"""The PyBullet quadruped's contact batch: PyBullet's closest points checked once, and the same
contacts as the fully validated ContactSet path, bit for bit; the compiled attribution of sensed
forces against the per-point computation."""
import math

import numpy as np
import pytest

from idyn.contact import ContactSet
from idyn.errors import InvalidInputError, NonFiniteError

pb = pytest.importorskip("idyn.robots.pybullet")
from idyn.robots.pybullet.kernels import ANY_LINK  # noqa: E402
from idyn.robots.pybullet.base import attribute_forces  # noqa: E402
from idyn.robots.pybullet.quadruped import _foot_contacts  # noqa: E402


def _raw(point, normal, gap):
    return [*point, *normal, gap]


def _unit_friction(points):
    return np.ones(len(points))


def test_non_finite_or_zero_normal_pybullet_contacts_are_rejected():
    with pytest.raises(NonFiniteError):
        _foot_contacts(["LF"], _raw((0.0, np.nan, 0.0), (0.0, 0.0, 1.0), 0.0), _unit_friction)
    with pytest.raises(NonFiniteError):
        _foot_contacts(["LF"], _raw((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), np.inf), _unit_friction)
    with pytest.raises(InvalidInputError):
        _foot_contacts(["LF"], _raw((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0), _unit_friction)


@pytest.mark.parametrize("terrain", ["rigid", "rough"])
def test_contacts_equal_the_validated_contact_set(terrain):
    """The testbed's compiled framing gives ContactSet's contacts: same bodies, friction and gap,
    points, unit normals and tangents to round-off (1.1e-16 measured; 1e-13 asserted)."""
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
                np.testing.assert_allclose(a.frame(), b.frame(), rtol=0, atol=1e-13)


def _attribute_by_hand(points_b, pairs, points, frames, radius):
    """The attribution of robots.pybullet.base.attribute_forces, one PyBullet point at a time."""
    def matches(body, link, want_body, want_link):
        return body == want_body and (want_link == ANY_LINK or link == want_link)
    world = np.zeros((len(pairs), 3))
    for row in points_b:
        ba, la, bb, lb = (int(x) for x in row[:4])
        force = row[10] * row[7:10] + row[14] * row[11:14] + row[18] * row[15:18]
        near = []
        for i, (pa, pla, pb_, plb) in enumerate(pairs):
            if matches(ba, la, pa, pla) and matches(bb, lb, pb_, plb):
                near.append((math.dist(points[i], row[4:7]), i, 1.0))
            elif matches(bb, lb, pa, pla) and matches(ba, la, pb_, plb):
                near.append((math.dist(points[i], row[4:7]), i, -1.0))
        near = [x for x in near if x[0] <= radius]
        if near:
            _, i, sign = min(near)
            world[i] += sign * force
    return np.einsum("mij,mj->mi", frames, world)


def test_sensed_force_attribution_matches_the_per_point_computation():
    rng = np.random.default_rng(5)
    radius = 0.05
    for _ in range(50):
        m = int(rng.integers(0, 5))
        pairs = np.array([(1, int(rng.integers(-1, 3)), 0, rng.choice([ANY_LINK, -1])) for _ in range(m)],
                         dtype=np.int64).reshape(-1, 4)
        points = rng.uniform(-0.2, 0.2, (m, 3))
        frames = np.array([np.linalg.qr(rng.normal(size=(3, 3)))[0] for _ in range(m)]).reshape(-1, 3, 3)
        rows = []
        for _ in range(int(rng.integers(0, 8))):                # points near contacts, A/B either way
            i = int(rng.integers(0, max(m, 1)))
            a, b = (1, int(rng.integers(-1, 3))), (0, -1)
            if rng.random() < 0.5:
                a, b = b, a
            at = (points[i] if m else np.zeros(3)) + rng.normal(scale=0.03, size=3)
            rows.append((*a, *b, *at, *rng.normal(size=3), rng.uniform(0, 10), *rng.normal(size=3),
                         rng.normal(), *rng.normal(size=3), rng.normal()))
        rows = np.array(rows, dtype=float).reshape(-1, 19)
        got = attribute_forces(rows, points, frames, pairs, radius)
        np.testing.assert_allclose(got, _attribute_by_hand(rows, pairs, points, frames, radius), rtol=1e-13, atol=1e-12)
