"""Closest features of idyn.sim.geometry against analytic distances (paper Fig. 4)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idyn.contact import tangent_frame
from idyn.errors import InvalidInputError
from idyn.sim.geometry import (Heightmap, Plane, StaticBox, sphere_box, sphere_heightmap, sphere_plane,
                               sphere_sphere)

coord = st.floats(-0.5, 0.5)
point3 = st.tuples(coord, coord, coord).map(np.array)

#: lengths (m) and unit vectors of two detection paths: measured equal over 600 random LINKS
#: poses; asserted to 1e-12 (round-off of a few dozen flops on coordinates of order 1)
ROUND = 1e-12


@settings(deadline=None)     # the first example may compile the plane kernel (idyn.sim._step_kernel)
@given(point3, st.floats(0.005, 0.1))
def test_sphere_plane_gap_is_height_minus_radius(c, r):
    f = sphere_plane(c, r, Plane())
    assert f.phi == pytest.approx(c[2] - r)
    np.testing.assert_allclose(f.normal, [0, 0, 1])
    # the point is midway between the sphere's lowest point and the plane
    assert f.point[2] == pytest.approx(0.5 * (c[2] - r))


@given(point3, point3, st.floats(0.01, 0.1), st.floats(0.01, 0.1))
def test_sphere_sphere_gap_and_normal(a, b, ra, rb):
    f = sphere_sphere(a, ra, b, rb)
    d = np.linalg.norm(a - b)
    assert f.phi == pytest.approx(d - ra - rb)
    if d > 1e-9:
        np.testing.assert_allclose(f.normal, (a - b) / d, atol=1e-12)


@settings(max_examples=200)
@given(point3, st.floats(0.005, 0.05), st.floats(-np.pi, np.pi))
def test_sphere_box_gap_matches_signed_distance(c, r, yaw):
    half = np.array([0.2, 0.1, 0.15])
    R = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    p = np.array([0.05, -0.02, 0.1])
    f = sphere_box(c, r, R, p, half)
    local = R.T @ (c - p)
    outside = np.linalg.norm(np.maximum(np.abs(local) - half, 0.0))
    inside = min(0.0, np.max(np.abs(local) - half))
    assert f.phi == pytest.approx(outside + inside - r, abs=1e-12)
    assert np.linalg.norm(f.normal) == pytest.approx(1.0)
    # moving the sphere along the normal by d changes the gap by d (first order)
    moved = sphere_box(c + 1e-6 * f.normal, r, R, p, half)
    assert moved.phi - f.phi == pytest.approx(1e-6, rel=1e-3)


def test_heightmap_of_a_tilted_plane_is_that_plane():
    slope = 0.2
    xs = np.linspace(-1, 1, 21)
    H = slope * np.tile(xs, (21, 1))          # heights[iy, ix] = slope * x
    hm = Heightmap.centred(H, 2.0)
    n = np.array([-slope, 0.0, 1.0]) / np.hypot(slope, 1.0)
    plane = Plane(n, 0.0)
    for c in ([0.1, 0.3, 0.2], [-0.4, 0.0, 0.05], [0.55, -0.7, 0.01]):
        c = np.array(c)
        a, b = sphere_heightmap(c, 0.01, hm), sphere_plane(c, 0.01, plane)
        assert a.phi == pytest.approx(b.phi, abs=1e-12)
        np.testing.assert_allclose(a.normal, b.normal, atol=1e-12)


def test_heightmap_per_cell_friction_and_bilinear_height():
    H = np.array([[0.0, 1.0], [2.0, 3.0]]) * 0.01
    mu = np.array([[0.3]])
    hm = Heightmap(H, 1.0, 0.0, 0.0, mu)
    z, _ = hm.surface(0.5, 0.5)
    assert z == pytest.approx(0.015)
    assert hm.friction_at([0.2, 0.7, 0.0]) == 0.3


def test_inclined_plane_slope_is_first_tangent():
    """The pyramid edge s lies down the slope, so sliding is along an edge (tests rely on it)."""
    angle = 0.4
    plane = Plane.inclined(angle, 0.5)
    s, _ = tangent_frame(plane.normal)
    np.testing.assert_allclose(s, [np.cos(angle), 0.0, -np.sin(angle)], atol=1e-12)


def test_bad_terrain_input_is_rejected():
    with pytest.raises(InvalidInputError):
        Plane(np.zeros(3))
    with pytest.raises(InvalidInputError):
        Plane(mu=-1.0)
    with pytest.raises(InvalidInputError):
        Heightmap(np.zeros((1, 5)), 0.1, 0.0, 0.0)
    with pytest.raises(InvalidInputError):
        StaticBox(np.array([0.1, -0.1, 0.1]))


def test_detection_does_not_reuse_a_pass_without_frame_placements():
    """A controller's pinocchio pass skips the frame placements (Workspace.compute_checked with
    placements=False): handed to World.detect at that same q it must not be read as placed, or the
    contacts would come from the previous configuration's frames."""
    from idyn.robots import sim as sim_testbeds

    tb = sim_testbeds.QuadrupedTestbed("links", "rigid", 0.5)
    world, model = tb.sim.world, tb.model
    q0, q1 = tb.quadruped.q_stand.copy(), tb.quadruped.q_stand.copy()
    q1[2] -= 0.004                                    # every foot 4 mm further into the ground
    ws = model.workspace()
    ws.compute_checked(q0)
    ws.compute_checked(q1, placements=False)
    assert ws.is_at(q1) and not ws.placed
    reused, fresh = world.detect(q1, workspace=ws), world.detect(q1)
    assert fresh.m
    np.testing.assert_allclose(reused.phi, fresh.phi, rtol=0, atol=ROUND)
    np.testing.assert_allclose(reused.points, fresh.points, rtol=0, atol=ROUND)
    assert ws.compute_checked(q1).placed
