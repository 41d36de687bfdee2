"""Contacts that open and close: the Hertz chord linearisation, speculative rows and the energy
of the steps (sphere stack of paper Sec. 6.5; the compliant contact model of idyn.sim)."""
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import example, given, settings, strategies as st

from idyn import RobotModel
from idyn.constraint_solver import ConstraintProblem, ConstraintSolver
from idyn.constraint_solver.geometry import sphere_plane, sphere_sphere, sphere_sphere_normal_drift
from idyn.constraint_solver.models import HertzLaw, hertz
from idyn.constraint_solver.nonlinear import end_depth
from idyn.sim import Box, Plane, Simulator, World
from idyn.experiments.constraint_solver import sphere_stack


@settings(max_examples=40, deadline=None)
@given(st.floats(-1e-3, 1e-3), st.floats(1e-9, 1e-3), st.floats(1e9, 1e12), st.floats(1e-3, 1.0))
def test_hertz_chord_brackets_the_law(d0, width, e_star, radius):
    """The chord over [max(d0, 0), d_ref] equals F at the current state, lies above F inside
    the interval and below it outside (convexity), and is stiff at zero depth."""
    law = HertzLaw.of(e_star, np.array([radius]), 1.0)
    lo = max(d0, 0.0)
    ref = lo + width
    chord = law.chord(np.array([d0]), np.array([ref]))
    K, phi = chord.K[0], chord.phi[0]
    assert K > 0

    def lin(d):                                  # the row's force at end depth d
        return -K * (phi + (d0 - d))             # phi1 = phi0 + h phi_dot1, d1 = d0 - h phi_dot1

    scale = float(law.force(ref)[0])
    inside = np.linspace(lo, ref, 7)
    outside = np.r_[np.linspace(lo - 2 * width, lo, 5), np.linspace(ref, ref + 2 * width, 5)]
    assert np.all(lin(inside) >= law.force(inside) - 1e-9 * scale)
    assert np.all(lin(outside) <= law.force(outside) + 1e-9 * scale)
    assert lin(lo) == pytest.approx(float(law.force(lo)[0]), rel=1e-9, abs=1e-12 * scale)


def test_tangent_limit_is_the_papers_linearisation():
    d = np.array([1e-8, 1e-6, 1e-4])
    tangent = hertz(d, 1e11, 0.01, 1.0)
    np.testing.assert_allclose(tangent.K, 1.5e11 * np.sqrt(0.01 * d), rtol=1e-12)
    np.testing.assert_allclose(tangent.phi, -2.0 / 3.0 * d, rtol=1e-12)
    assert hertz(np.zeros(1), 1e11, 0.01, 1.0).K[0] == 0.0          # the defect at first touch


def _tangent_stack_energy(n, steps):
    """The stack stepped the way the paper linearises Hertz: rows only for overlapping
    contacts, tangent stiffness (zero at zero depth)."""
    stack, solver = sphere_stack.Stack(n), ConstraintSolver()
    q, v = stack.initial_state()
    energy = [stack.energy(q, v)]
    for _ in range(steps):
        prob, act, depth, _ = stack.problem(q, v, sphere_stack.H)
        touching = depth >= 0.0
        if prob.contacts is None or not touching.any():
            prob = ConstraintProblem(prob.M, prob.f, prob.v0, prob.h)
        else:
            c = prob.contacts
            keep = np.flatnonzero(touching)
            law = hertz(depth[keep], sphere_stack.E_STAR, 1.0, sphere_stack.B_N)
            normal = c.normal.take(keep)
            scale = np.sqrt(stack.law.c[act][keep] / sphere_stack.E_STAR)   # sqrt(r_eff)
            normal = type(normal)(normal.G, law.phi, law.K * scale, law.B,
                                  Gdot_v=normal.Gdot_v)
            prob = ConstraintProblem(prob.M, prob.f, prob.v0, prob.h, contacts=type(c)(
                normal, c.tangent_r.take(keep), c.mu[keep], c.tangent_s.take(keep)))
        v = solver.solve(prob).v1
        q = stack.bodies.integrate(q, v, sphere_stack.H)
        energy.append(stack.energy(q, v))
    return np.array(energy)


def test_tangent_linearisation_adds_energy_and_chords_do_not():
    """Root cause of the sphere-stack blow-up: with the tangent the spheres sink ~1 mm into
    each other before any force appears and are pushed out, gaining energy; with speculative
    rows and chords the total energy (kinetic + gravity + Hertz) never increases."""
    old = _tangent_stack_energy(3, 60)
    assert np.diff(old).max() > 1.0                                  # joules gained in one step
    new = sphere_stack.simulate(3, {}, 60)
    assert new["max_energy_increase"] <= 1e-12 * abs(new["energy"][0])
    assert new["inconsistent_steps"] == 0 and new["standing"]
    assert new["solver"]["fallbacks"] == 0


def test_chord_step_ends_no_deeper_than_its_reference():
    stack = sphere_stack.Stack(4)
    q, v = stack.initial_state()
    force = np.zeros(stack.n)
    for _ in range(30):
        q, v, chord = sphere_stack._step(stack, ConstraintSolver(), q, v, force)
        if chord is not None:
            assert chord.consistent and np.all(chord.depth1 <= chord.reference * (1 + 1e-9))
    prob, act, depth, _ = stack.problem(q, v, sphere_stack.H)
    assert act.size == stack.n                                       # all touching after 0.3 s
    np.testing.assert_allclose(end_depth(prob, depth, v), depth - sphere_stack.H * (
        prob.contacts.normal.G @ v), atol=1e-15)


def test_compliant_model_landing_box_never_gains_energy():
    """idyn.sim's compliant model had the same late rows: a box dropped 1 cm gained
    1/2 K d0^2 = 4.7 mJ on landing. With the world's speculative candidates as rows the
    total energy (with the contact springs') never increases."""
    half = np.array([0.1, 0.08, 0.05])
    inertia = np.diag([half[1] ** 2 + half[2] ** 2, half[0] ** 2 + half[2] ** 2,
                       half[0] ** 2 + half[1] ** 2]) / 3.0
    model = RobotModel(pin.Model()).append_free_body("box", 1.0, inertia)
    sim = Simulator(model, World(model, [Box("box", half)], [Plane.inclined(0.0, 0.3)]),
                    "compliant", 1e-3)
    q = model.neutral()
    q[2] = half[2] + 0.01
    sim.reset(q, np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0]))
    k = sim.contact_model.stiffness

    def energy():
        phi = np.array([c.phi for c in sim.contacts()])
        return sim.energy() + 0.5 * k * float(np.sum(np.minimum(phi, 0.0) ** 2))

    e = [energy()]
    for _ in range(150):
        sim.step(np.zeros(0))
        e.append(energy())
    assert np.diff(e).max() <= 1e-12
    assert sim.q[2] == pytest.approx(half[2] - 9.81 / (4 * k), abs=1e-4)   # landed, resting


def _pressed_stack_round(n, mu, lateral, spin, seed):
    """A random sphere stack pressed together and moving (sliding and spinning contacts):
    (problem, rows, reduced program) of its step with chords."""
    from idyn.constraint_solver import appendix_a

    rng = np.random.default_rng(seed)
    stack = sphere_stack.Stack(n)
    q, v = stack.initial_state()
    p = stack.bodies.positions(q).copy()
    p[:, 2] -= sphere_stack.GAP * (np.arange(n) + 1) + 2e-5 * (n - np.arange(n))
    p[:, :2] += rng.normal(scale=1e-3, size=(n, 2))
    q = stack.bodies.state(p)
    v = v.reshape(n, 6)
    v[:, :2] = lateral * rng.normal(size=(n, 2))
    v[:, 3:] = spin * rng.normal(size=(n, 3))
    v = v.ravel()
    prob, act, depth, _ = stack.problem(q, v, sphere_stack.H)
    law = stack.law.take(act).chord(depth, 1.5 * np.maximum(depth, 1e-6))
    c = prob.contacts
    prob = ConstraintProblem(prob.M, prob.f, prob.v0, prob.h, contacts=type(c)(
        type(c.normal)(c.normal.G, law.phi, law.K, law.B, Gdot_v=c.normal.Gdot_v),
        c.tangent_r, np.full(c.m, mu), c.tangent_s))
    rows = appendix_a.layout(prob, 1.0 / prob.h)
    return prob, rows, appendix_a.reduced_program(prob, rows, prob.M)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 4), st.floats(0.05, 2.0), st.floats(-0.3, 0.3), st.floats(-3.0, 3.0),
       st.integers(0, 10_000))
@example(n=4, mu=1.0, lateral=-0.296875, spin=0.0, seed=8173)     # a pulling spring row
def test_cone_free_kkt_round_matches_the_conic_backend(n, mu, lateral, spin, seed):
    """An exact-normals round solved by one KKT system (cones dropped) is accepted only when
    its answer lies in every cone, and then it is the conic backend's optimum. The round is
    the solver's first one (the frictionless law's active set, feasible by construction)."""
    from idyn.constraint_solver import appendix_a
    from idyn.constraint_solver.conic import solve_conic

    prob, rows, red = _pressed_stack_round(n, mu, lateral, spin, seed)
    active, _ = appendix_a.frictionless_active_set(rows, red)
    x = appendix_a.equality_optimum(red, active)
    ref = solve_conic(appendix_a.with_exact_normals(red.program, rows, active), "clarabel")
    assert ref.status.ok
    scale = 1.0 + np.abs(ref.x).max()
    if appendix_a.cone_violation(rows, x) <= 1e-12 * (1.0 + np.abs(x).max()):
        np.testing.assert_allclose(x, ref.x, atol=1e-5 * scale)
    else:
        assert appendix_a.cone_violation(rows, ref.x) <= 1e-6 * scale


def test_round_with_a_pulling_spring_row_is_infeasible_and_the_solver_avoids_it():
    """Every row active is not a valid exact-normals round when a spring pulls: row 4's
    lambda_n is -48 N s with zero friction, and no tangential forces inside the cones bring it
    to zero (clarabel's 'infeasible' is right). The solver starts from the frictionless law's
    active set instead, whose zero-tangential point is feasible, and solves the step."""
    from idyn.constraint_solver import appendix_a
    from idyn.constraint_solver.conic import ConicStatus, solve_conic

    prob, rows, red = _pressed_stack_round(4, 1.0, -0.296875, 0.0, 8173)
    nu = rows.nu
    every = np.arange(nu.shape[0])
    T = red.T.toarray()
    zero_tangential = np.linalg.solve(T[np.ix_(nu, nu)], -red.t[nu])
    assert zero_tangential[3] < -40.0
    program = appendix_a.with_exact_normals(red.program, rows, every)
    assert solve_conic(program, "clarabel").status is ConicStatus.INFEASIBLE
    active, lam = appendix_a.frictionless_active_set(rows, red)
    np.testing.assert_array_equal(active, [0, 1, 2])
    assert lam.min() >= 0.0
    for backend in ("clarabel", "cvxopt"):
        res = solve_conic(appendix_a.with_exact_normals(red.program, rows, active), backend)
        assert res.status.ok
    sol = ConstraintSolver().solve(prob)
    assert sol.info.status == "solved" and not sol.info.fallback
    scale = 1.0 + np.abs(sol.lambda_n).max()
    assert sol.info.residuals["cone"] <= 1e-9 * scale
    assert sol.info.residuals["nonnegativity"] <= 1e-9 * scale
    assert sol.info.residuals["spring"] <= 1e-9 * scale
    assert abs(sol.lambda_n[3]) <= 1e-9 * scale                      # row 4 off


# ------------------------------------------------------------------ contact geometry (Secs. 6.4-6.5)
_vec = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).map(np.array)


@settings(max_examples=40, deadline=None)
@given(_vec, _vec, _vec, _vec, _vec, st.floats(0.05, 0.3), st.floats(0.05, 0.3))
def test_sphere_sphere_geometry_and_normal_drift_match_the_distance(offset, va, vb, aa, ab,
                                                                   ra, rb):
    """depth = r_A + r_B - |c_B - c_A|, the contact points on both surfaces, and Gdot_n v =
    d^2/dt^2 |c_B - c_A| - n . (a_B - a_A) (eq. 29's velocity-product term), against a
    central difference of the distance along c(t) = c + v t + a t^2 / 2."""
    ca = np.zeros(3)
    cb = (ra + rb) * (0.8 + 0.1 * offset) + np.array([0.0, 0.0, 0.2 * (ra + rb)])
    g = sphere_sphere(ca[None], np.array([ra]), cb[None], np.array([rb]))
    dist = np.linalg.norm(cb - ca)
    assert g.depth[0] == pytest.approx(ra + rb - dist, abs=1e-14)
    np.testing.assert_allclose(g.normal[0], (cb - ca) / dist, atol=1e-14)
    assert np.linalg.norm(g.point_a[0] - ca) == pytest.approx(ra, abs=1e-14)
    assert np.linalg.norm(g.point_b[0] - cb) == pytest.approx(rb, abs=1e-14)
    dt = 1e-4

    def distance(t):
        return np.linalg.norm(cb + vb * t + ab * t * t / 2 - (ca + va * t + aa * t * t / 2))
    second = (distance(dt) - 2 * distance(0.0) + distance(-dt)) / dt ** 2
    drift = sphere_sphere_normal_drift(ca[None], cb[None], va[None], vb[None], aa[None],
                                       ab[None])[0]
    assert drift == pytest.approx(second, abs=1e-5 * (1 + abs(second)))


def test_sphere_plane_geometry_on_an_incline():
    n = np.array([0.0, -np.sin(0.3), np.cos(0.3)])
    centers = np.array([[0.1, 0.2, 0.09], [0.0, 0.0, 0.2]])
    plane_point = np.array([0.0, 0.0, -0.01])
    g = sphere_plane(centers, np.array([0.1, 0.1]), plane_point, 2 * n)
    height = (centers - plane_point) @ n
    np.testing.assert_allclose(g.depth, 0.1 - height, atol=1e-15)
    np.testing.assert_allclose(g.normal, [n, n], atol=1e-15)
    np.testing.assert_allclose((g.point_a - plane_point) @ n, 0.0, atol=1e-15)   # on the plane
    np.testing.assert_allclose(g.point_b, centers - 0.1 * n, atol=1e-15)          # on the sphere
