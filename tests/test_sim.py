"""Physics of idyn.sim (issue 8): rest without drift, sliding on an incline exactly at
mu < tan(angle) with the analytic acceleration, no energy gain with restitution 0, and the
contact-model conditions (normal and friction complementarity, pyramid, non-penetration) of
every step."""
import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from idyn import RobotModel
from idyn.constraint_solver.models import coulomb_tangents
from idyn.errors import InvalidInputError, NonFiniteError, ShapeError, SolverError
from idyn.sim import Box, Plane, Simulator, Sphere, World, make

G = 9.81
HALF = np.array([0.1, 0.08, 0.05])
DT = 1e-3
RIGID = ("ap-lcp", "noslip", "qp")


def free_box(mass=1.0):
    inertia = mass / 3.0 * np.diag([HALF[1] ** 2 + HALF[2] ** 2, HALF[0] ** 2 + HALF[2] ** 2,
                                    HALF[0] ** 2 + HALF[1] ** 2])
    return RobotModel(pin.Model()).append_free_body("box", mass, inertia)


def box_on_plane(model_name, angle=0.0, mu=0.5, **options):
    """A box resting on a plane tilted by ``angle`` about y (down-slope towards +x)."""
    model = free_box()
    sim = Simulator(model, World(model, [Box("box", HALF)], [Plane.inclined(angle, mu)]), model_name,
                    DT, **options)
    R = pin.utils.rpyToMatrix(0.0, angle, 0.0)
    q = model.neutral()
    q[:3] = R @ np.array([0.0, 0.0, HALF[2]])
    q[3:7] = pin.Quaternion(R).coeffs()
    sim.reset(q)
    return sim


def run(sim, steps):
    tau = np.zeros(sim.model.na)
    return [sim.step(tau) for _ in range(steps)]


# ------------------------------------------------------------------ rest and incline
@pytest.mark.parametrize("name", RIGID)
def test_resting_box_has_zero_drift(name):
    sim = box_on_plane(name)
    q0 = sim.q.copy()
    last = run(sim, 300)[-1]
    assert np.abs(sim.model.difference(q0, sim.q)).max() < 1e-12
    assert np.abs(sim.v).max() < 1e-12
    assert last.normal_total == pytest.approx(G, rel=1e-9)


@pytest.mark.parametrize("name", ("penalty", "compliant"))
def test_compliant_box_settles_at_static_sink_then_stays(name):
    sim = box_on_plane(name)
    run(sim, 600)
    q1 = sim.q.copy()
    run(sim, 200)
    k = sim.contact_model.stiffness
    assert sim.q[2] == pytest.approx(HALF[2] - G / (4 * k), abs=2e-6)
    assert np.abs(sim.model.difference(q1, sim.q)).max() < 1e-8


INCLINES = [(0.3, 0.2), (0.3, 0.3), (0.3, 0.32), (0.5, 0.6), (0.5, 0.45)]


def slide(name, angle, mu, steps=200):
    sim = box_on_plane(name, angle, mu)
    run(sim, steps)
    expected = max(0.0, G * (math.sin(angle) - mu * math.cos(angle))) * steps * DT
    assert abs(sim.v[1]) < 1e-9
    return float(sim.v[0]), expected      # base-frame x is down the slope


@pytest.mark.parametrize("angle,mu", INCLINES)
def test_box_on_incline_slides_only_above_tan_with_analytic_acceleration(angle, mu):
    """Anitescu-Potra: the pyramid edge lies along the slope, so the discrete answer is exact."""
    speed, expected = slide("ap-lcp", angle, mu)
    assert speed == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("angle,mu", INCLINES)
def test_maximal_dissipation_sticks_as_coulomb_and_slides_close_to_it(angle, mu):
    """The complementarity-free model sticks exactly when Coulomb sticks. When sliding it is not
    Coulomb's law: maximal dissipation may buy friction with a larger normal impulse that lifts
    the box off for a step (paper Sec. 2.3.4), so the speed is only close to Coulomb's, on either
    side (after 0.2 s: +0.8 % at (0.3, 0.2), +7.9 % at (0.3, 0.3), -17 % at (0.5, 0.45)); the
    frictionless speed is 3 to 33 times Coulomb's on these inclines."""
    speed, expected = slide("qp", angle, mu)
    if expected == 0.0:
        assert abs(speed) < 1e-9
    else:
        assert speed == pytest.approx(expected, rel=0.25)


def test_maximal_dissipation_agrees_with_an_independent_qp_solver():
    """The qp model's impulses minimise eqs. 29-33: they satisfy the constraints and reach a
    kinetic energy no larger than cvxopt's interior-point answer to the same program (the
    published relaxation, without the separation price of test_sim_separation)."""
    sim = box_on_plane("qp", 0.5, 0.45, separation_weight=0.0)
    other = make("qp", backend="cvxopt")
    tau = np.zeros(0)
    for _ in range(50):
        problem, _, a = check_step_conditions(sim, tau)
        b = problem.velocity(other.solve(problem).impulses)
        ke_a, ke_b = 0.5 * a @ problem.M @ a, 0.5 * b @ problem.M @ b
        assert ke_a <= ke_b * (1 + 1e-6) + 1e-12
        np.testing.assert_allclose(a, b, atol=1e-2 * np.abs(b).max())
        sim.step(tau)


@pytest.mark.parametrize("name", ("compliant", "penalty"))
@pytest.mark.parametrize("angle,mu", [(0.3, 0.2), (0.5, 0.6)])
def test_compliant_models_slide_with_the_coulomb_acceleration(name, angle, mu):
    """Implicit springs and dampers: the true-cone solver's tangential damper leaves a creep of
    order m g / B_t, the penalty ground a transient while it sinks in."""
    speed, expected = slide(name, angle, mu)
    assert speed == pytest.approx(expected, abs=2e-3)


@pytest.mark.parametrize("angle,mu", [(0.3, 0.2), (0.1, 0.6)])
def test_compliant_dense_path_matches_the_general_solver(monkeypatch, angle, mu):
    """The compiled dense path (idyn.constraint_solver.dense) answers the steps its loop settles
    with the general solver's impulses to round-off and leaves the rest (sliding contacts that
    need the conic backend) to it: a box landing on an incline, then sliding or resting."""
    import idyn.sim.compliant as compliant

    sim = box_on_plane("compliant", angle, mu)
    sim.reset(sim.q + np.r_[0.0, 0.0, 2e-3, np.zeros(4)], np.r_[0.2, 0.0, -0.1, 0.0, 0.0, 0.0])
    model = sim.contact_model
    dense = general = 0
    for _ in range(150):
        problem = sim.problem(np.zeros(0))
        if problem.m:
            fast = model.solve(problem)
            with monkeypatch.context() as patch:
                patch.setattr(compliant, "DENSE_MAX_ROWS", 0)
                slow = model.solve(problem)
            # the tangential split of a resting box is ill-conditioned (B_t = 1e6 / h), its
            # velocity is not
            np.testing.assert_allclose(problem.velocity(fast.impulses), problem.velocity(slow.impulses), rtol=0,
                                       atol=1e-9)
            np.testing.assert_allclose(fast.impulses, slow.impulses, rtol=0, atol=1e-2 * np.abs(slow.impulses).max())
            assert (fast.status, fast.iterations) == (slow.status, slow.iterations)
            found = model._solve_dense(problem, np.split(problem.J, 3), coulomb_tangents(problem.m, problem.dt),
                                       np.minimum(problem.mu, np.inf), np.where(problem.phi <= 0, model.damping, 0.0))
            dense += found is not None
            general += found is None
        sim.step(np.zeros(0))
    sliding = mu < math.tan(angle)
    assert general > 0 and (dense > 0) != sliding          # the landing slides; then it rests or slides


def test_no_slip_at_high_friction_holds_the_box_on_a_steep_incline():
    sim = box_on_plane("ap-lcp", angle=1.0, mu=100.0)   # tan(1.0) = 1.56: steep, but no tipping
    run(sim, 500)
    assert np.abs(sim.v).max() < 1e-9


# ------------------------------------------------------------------ contact conditions
def check_step_conditions(sim, tau, tol=1e-7):
    problem = sim.problem(tau)
    sol = sim.contact_model.solve(problem)
    f = sol.impulses
    v1 = problem.velocity(f)
    m = problem.m
    if m == 0:
        return problem, f, v1
    uN = problem.J[:m] @ v1
    # a Lemke answer after the regularisation fallback (idyn.lcp.regularized) solves the LCP with
    # W + eps I: its conditions hold to eps relative.  (The example below, a resting box's four
    # coplanar contacts, needed eps = 1e-4 on ap-lcp, 1.4e-6 m/s of approach, until Lemke
    # re-followed a path whose early z0 exit was rejected: test_lcp_solvers' resting box.)
    tol = max(tol, sol.regularization)
    # tolerances relative to the step's impulse and velocity scales (m g dt, |u*|, phi / dt)
    scale = max(np.abs(f).max(), 9.81e-3)
    vscale = (np.abs(problem.u_free).max() + np.abs(problem.phi / problem.dt).max()
              + np.abs(problem.W).sum(axis=1).max() * scale)       # the LCP check's scale of w
    assert (f[:, 0] >= -tol * scale).all()                                    # compressive
    assert (uN + problem.phi / problem.dt >= -tol * vscale).all()            # eq. 54
    bounded = (problem.mu < 100) & (sim.contact_model.name != "noslip")
    assert (np.abs(f[bounded, 1]) + np.abs(f[bounded, 2])
            <= problem.mu[bounded] * f[bounded, 0] + tol * scale).all()       # pyramid, eq. 56
    if sim.contact_model.name in ("ap-lcp", "noslip"):                          # the LCP models
        assert np.abs(f[:, 0] * (uN + problem.phi / problem.dt)).max() <= tol * scale * vscale
    if sim.contact_model.name == "ap-lcp" and bounded.any():
        # eqs. 54-56 on the pyramid D = [S; -S; T; -T]: lambda = max(|u_S|, |u_T|) (the edge rows'
        # slack is zero at the edges the slip leans on), a sliding contact's friction is on the
        # pyramid (lambda (mu f_N - |f_S| - |f_T|) = 0), only those edges are loaded, and friction
        # never pushes along the slip
        fN, fS, fT = f[bounded, 0], f[bounded, 1], f[bounded, 2]
        uS, uT = problem.J[m:2 * m][bounded] @ v1, problem.J[2 * m:][bounded] @ v1
        lam = np.maximum(np.abs(uS), np.abs(uT))
        assert np.abs(lam * (problem.mu[bounded] * fN - np.abs(fS) - np.abs(fT))).max() <= tol * scale * vscale
        assert np.abs(fS * (lam - np.abs(uS))).max() <= tol * scale * vscale
        assert np.abs(fT * (lam - np.abs(uT))).max() <= tol * scale * vscale
        assert max((fS * uS).max(), (fT * uT).max()) <= tol * scale * vscale
    return problem, f, v1


@settings(max_examples=8, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(st.sampled_from(RIGID), st.floats(0.05, 1.5), st.floats(-2, 2), st.floats(-2, 2),
       st.floats(-10, 10), st.floats(0.0, 0.05))
@example("ap-lcp", 1.4511867811407, 0.015, -0.6556802927370764, -5.4139184756063, 0.0489783471808086)
def test_contact_impulses_never_add_energy(name, mu, vx, vy, wz, drop):
    """A tumbling box dropped on a plane: every step satisfies the model's conditions and the
    contact impulse does no positive work, KE(v+) <= KE(v*) (paper Sec. 2.3.4 for qp; for the
    LCPs f_N . N v+ = -f_N phi / dt <= 0 and friction opposes slip). The free flight between
    impacts is semi-implicit Euler with h at the start of the step (eq. 37), which is not
    energy-exact for a spinning body, so the total is checked in the next test."""
    sim = box_on_plane(name, 0.0, mu)
    q = sim.q.copy()
    q[2] += 0.05 + drop
    q[3:7] = pin.Quaternion(pin.utils.rpyToMatrix(0.3, -0.2, 0.1)).coeffs()
    sim.reset(q, np.array([vx, vy, -0.5, 1.0, -2.0, wz]))
    tau = np.zeros(0)
    for _ in range(250):
        problem, f, v1 = check_step_conditions(sim, tau)
        if problem.m and (problem.phi >= 0).all():
            ke_free = 0.5 * problem.v_free @ problem.M @ problem.v_free
            ke_next = 0.5 * v1 @ problem.M @ v1
            assert ke_next <= ke_free * (1 + 1e-9) + 1e-12
        sim.step(tau)


def total_energy(sim):
    """Kinetic + gravitational + the elastic energy of compressed contact springs."""
    k = getattr(sim.contact_model, "stiffness", 0.0)
    phi = np.array([c.phi for c in sim.contacts()])
    return sim.energy() + 0.5 * k * float(np.sum(np.minimum(phi, 0.0) ** 2))


@pytest.mark.parametrize("name", RIGID + ("penalty",))
@pytest.mark.parametrize("mu,vx,vy", [(0.3, 1.0, 0.0), (0.8, -0.5, 0.7), (100.0, 0.4, -0.4)])
def test_total_energy_never_increases(name, mu, vx, vy):
    """A box dropped flat with a lateral velocity lands, slides and stops: the total energy
    (with the springs' for the compliant models) never increases from one step to the next
    (restitution 0). Free fall under eq. 37 loses m g^2 dt^2 / 2 per step, so no tolerance
    beyond round-off is needed."""
    sim = box_on_plane(name, 0.0, mu)
    q = sim.q.copy()
    q[2] += 0.01
    sim.reset(q, np.array([vx, vy, 0.0, 0.0, 0.0, 0.0]))
    tau = np.zeros(0)
    energy = total_energy(sim)
    for _ in range(400):
        sim.step(tau)
        e = total_energy(sim)
        assert e <= energy + 1e-12
        energy = e


def test_no_slip_model_equals_coulomb_limit_of_large_mu():
    """noslip is the mu -> inf limit of the pyramid LCP (the released-contact rule included)."""
    a = box_on_plane("noslip", mu=0.5)
    b = box_on_plane("ap-lcp", mu=50.0)
    v0 = np.array([0.3, -0.2, -0.4, 0.5, 1.0, -2.0])
    for s in (a, b):
        q = s.q.copy()
        q[2] += 1e-5
        s.reset(q, v0)
    fa, fb = run(a, 1)[0].forces, run(b, 1)[0].forces
    np.testing.assert_allclose(a.v, b.v, atol=1e-9)
    np.testing.assert_allclose(fa.sum(axis=0), fb.sum(axis=0), rtol=1e-6, atol=1e-9)


# ------------------------------------------------------------------ spheres and bad input
def test_sphere_stack_rests_on_the_ground():
    model = RobotModel(pin.Model()).append_free_body("low", 1.0, np.eye(3) * 4e-4) \
        .append_free_body("high", 1.0, np.eye(3) * 4e-4)
    world = World(model, [Sphere("low", 0.05), Sphere("high", 0.05)], [Plane(mu=0.5)])
    sim = Simulator(model, world, "ap-lcp", DT)
    q = model.neutral()
    q[2], q[9] = 0.05, 0.15
    sim.reset(q)
    last = run(sim, 500)[-1]
    assert np.abs(sim.v).max() < 1e-12
    ground = [f[0] for c, f in zip(last.contacts, last.forces) if c.body_b is None]
    between = [f[0] for c, f in zip(last.contacts, last.forces) if c.body_b is not None]
    assert sum(ground) == pytest.approx(2 * G)
    assert sum(between) == pytest.approx(G)


def test_bad_input_raises_typed_errors():
    sim = box_on_plane("ap-lcp")
    with pytest.raises(ShapeError):
        sim.step(np.zeros(3))
    with pytest.raises(InvalidInputError):
        make("bullet")
    with pytest.raises(InvalidInputError):
        Simulator(sim.model, sim.world, "ap-lcp", dt=0.0)
    with pytest.raises(InvalidInputError):
        World(sim.model, [Sphere("box", -1.0)])


def test_non_finite_torques_are_refused_at_the_boundary():
    """The step checks tau inside its compiled call: NaN or inf raise NonFiniteError, the
    simulator's state untouched."""
    from idyn.robots import sim as sim_testbeds
    tb = sim_testbeds.QuadrupedTestbed("links", "rigid", math.inf)
    q = tb.sim.q.copy()
    for bad in (np.nan, np.inf, -np.inf):
        tau = np.zeros(tb.na)
        tau[3] = bad
        with pytest.raises(NonFiniteError):
            tb.sim.step(tau)
    with pytest.raises(ShapeError):
        tb.sim.step(np.zeros((tb.na, 1)))
    assert np.array_equal(tb.sim.q, q) and tb.sim.t == 0.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.floats(0.0, 13.0), st.integers(0, 2**32 - 1))
def test_independence_bound_never_contradicts_the_eigenvalues(n, log_condition, seed):
    """The no-slip rows' independence is decided by a Cholesky bound where it can be: on
    Delassus-like blocks from well conditioned to singular it answers as the eigenvalue test."""
    from idyn.sim._step_kernel import rows_independent
    rng = np.random.default_rng(seed)
    Qm, _ = np.linalg.qr(rng.standard_normal((n, n)))
    d = np.logspace(0.0, -log_condition, n) * rng.uniform(0.1, 10.0)
    W = np.zeros((n + 2, n + 2))
    W[1:n + 1, 1:n + 1] = (Qm * d) @ Qm.T
    rows = np.arange(1, n + 1)
    eig = np.linalg.eigvalsh(W[1:n + 1, 1:n + 1])
    expected = eig[0] > 1e-9 * eig[-1]
    if abs(eig[0] / eig[-1] - 1e-9) > 1e-12:       # not at the threshold itself
        assert rows_independent(W, rows) == expected


def test_overflowing_torques_stop_with_the_simulators_error():
    """Finite but huge torques (a controller that lost the robot reached 1e159 N m on the 30 s
    trot) overflow M^-1 tau: the step raises SolverError("diverged") before any contact solver
    sees NaN (lemke used to raise NonFiniteError about its own input)."""
    from idyn.robots import sim as sim_testbeds
    tb = sim_testbeds.QuadrupedTestbed("links", "rigid", math.inf, contact_model="noslip")
    with np.errstate(over="ignore", invalid="ignore"), pytest.raises(SolverError, match="diverged"):
        tb.sim.step(np.full(tb.na, 1e306))


def test_state_is_read_only_and_assigning_it_redetects_the_contacts():
    """q and v are the simulator's own read-only arrays; assigning a new q or v re-runs the step
    pass and the detection, so contacts() and the next step see the assigned state."""
    sim = box_on_plane("ap-lcp")
    assert sim.contact_set().m == 4
    with pytest.raises(ValueError):
        sim.q[2] += 1.0
    lifted = sim.q.copy()
    lifted[2] += 0.5
    sim.q = lifted
    assert sim.contact_set().m == 0 and sim.q[2] == lifted[2]
    lifted[2] = 0.0            # the simulator kept a copy
    assert sim.q[2] > 0.5
    sim.v = np.r_[0.0, 0.0, -1.0, 0.0, 0.0, 0.0]
    result = sim.step(np.zeros(0))
    assert result.contact_set.m == 0 and sim.v[2] == pytest.approx(-1.0 - G * DT)
