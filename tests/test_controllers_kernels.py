"""The compiled common paths of the QP controllers (controllers._dissipation_kernel) against the
Python forms they replace, on real LINKS problems: Stage I's LCP solved in one call answers as
the regularised Lemke wrapper does, and Stage II's clip into the cones equals the numpy form."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import controllers
from controllers import _dissipation_kernel as kernel
from controllers import dissipation
from controllers.dissipation import build_stage_one
from idyn._qp_kernel import NOT_TRIED
from idyn.lcp.regularized import regularized_checked
from idyn.lcp.residuals import DEFAULT_TOL, lcp_residuals
from test_controllers_gap_rate import at_gaps
from test_controllers_separation import sliding_stance


def _within_cone(z: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Stage II's former numpy clip into the cones (eq. 101)."""
    z = np.maximum(z, 0.0)
    m = mu.size
    friction = z[m:].reshape(4, m)
    total = friction.sum(axis=0)
    finite = np.isfinite(mu)
    limit = np.where(finite, mu, 0.0) * z[:m]
    over = finite & (total > limit)
    friction[:, over] *= limit[over] / total[over]
    return z


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_clip_to_cone_equals_the_numpy_form(m, seed):
    rng = np.random.default_rng(seed)
    mu = rng.choice([0.0, 0.1, 0.5, 1.0, np.inf], m)
    z = rng.standard_normal(5 * m) * rng.choice([1e-12, 1.0, 1e3], 5 * m)
    z[rng.random(5 * m) < 0.1] = -0.0
    expected = _within_cone(z.copy(), mu)
    kernel.clip_to_cone(z, mu)
    assert np.array_equal(z, expected) and not np.signbit(z).any()


@settings(max_examples=25, deadline=None)
@given(speed=st.floats(0.0, 0.6), heading=st.floats(-np.pi, np.pi), mu=st.sampled_from([0.0, 0.1, 0.5, 2.0]))
def test_stage_one_lemke_on_links_equals_the_regularised_wrapper(speed, heading, mu):
    """LINKS on four sliding (or held) feet: the one-call Stage I LCP is the KKT system of the
    StageOne data, and where it passes its z is regularized_checked's z bit for bit and solves
    the LCP (residuals from the Python check)."""
    model, state, desired, contacts, _ = sliding_stance(speed, heading, mu)
    ctrl = controllers.make("qp-coulomb", model, feedback=False)
    q, v, contacts = ctrl._check(state, desired, contacts)
    step = ctrl.dynamics.update(q, v, desired.vdot, contacts)
    prob = build_stage_one(step, True)
    assert np.array_equal(prob.H, prob.Y.T @ prob.Y)       # the compiled BLAS product, bit for bit
    k, nc = prob.k, prob.G.shape[0]
    M, qv, z = np.empty((k + nc, k + nc)), np.empty(k + nc), np.empty(k + nc)
    passed, pivots = kernel.stage_one_lemke(prob.H, prob.G, prob.c, prob.g, DEFAULT_TOL, M, qv, z)
    assert np.array_equal(M[:k, :k], prob.H) and np.array_equal(M[:k, k:], -prob.G.T)
    assert np.array_equal(M[k:, :k], prob.G) and not M[k:, k:].any()
    assert np.array_equal(qv, np.concatenate((prob.c, prob.g)))
    res = regularized_checked(M, qv)
    if passed:
        assert res.solved and res.regularization == 0.0 and res.pivots == pivots
        assert np.array_equal(z, res.z) and lcp_residuals(M, qv, z).ok()


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_separating_loads_equals_the_numpy_form(m, seed):
    """idyn.separation's compiled mask against its former numpy form, with gaps around
    CONTACT_GAP, unloaded and NaN impulses."""
    from idyn.contact import CONTACT_GAP
    from idyn.separation import LOADED_FRACTION, separating_loads
    rng = np.random.default_rng(seed)
    phi = rng.choice([-1e-5, 0.0, CONTACT_GAP, 2 * CONTACT_GAP, 1e-3], m)
    impulse = rng.choice([0.0, 1e-12, 1e-3, 1.0, np.nan], m, p=[0.3, 0.1, 0.2, 0.35, 0.05])
    speed = rng.standard_normal(m) * rng.choice([1e-4, 1e-2, 1.0], m)
    loaded = impulse > LOADED_FRACTION * max(float(impulse.max()), 1e-300)
    expected = (phi <= CONTACT_GAP) & loaded & (phi + 1e-3 * speed > CONTACT_GAP)
    assert np.array_equal(separating_loads(phi, 1e-3, impulse, speed), expected)


@settings(max_examples=15, deadline=None)
@given(phi=st.lists(st.floats(0.0, 2e-4), min_size=4, max_size=4), mu=st.sampled_from([0.1, 0.5, np.inf]),
       gap_rate=st.booleans())
def test_stage_two_in_one_call_equals_the_python_path(phi, mu, gap_rate):
    """Stage II's compiled common path (with gap_rate's eq. 108 row or without) gives the z, and
    the info, of the Python path it falls back to (idyn.qp.solve_built on the same terms)."""
    model, state, desired, contacts = at_gaps(phi, mu)[:4]
    ctrl = controllers.make("qp-coulomb", model, feedback=False, gap_rate=gap_rate)
    q, v, contacts = ctrl._check(state, desired, contacts)
    step = ctrl.dynamics.update(q, v, desired.vdot, contacts)
    prob = build_stage_one(step, True, gap_rate=gap_rate)
    z0, _ = ctrl._stage_one(step, prob)
    fast = dissipation.solve_stage_two(step, prob, z0, 1e-6, "quadprog")
    compiled = dissipation.kernel.stage_two
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dissipation.kernel, "stage_two", lambda *args: compiled(*args) and NOT_TRIED)
        slow = dissipation.solve_stage_two(step, prob, z0, 1e-6, "quadprog")
    assert np.array_equal(fast[0], slow[0]) and fast[1] == slow[1]


@settings(max_examples=20, deadline=None)
@given(speed=st.floats(0.0, 0.6), heading=st.floats(-np.pi, np.pi), seed=st.integers(0, 2**32 - 1))
def test_step_kernels_equal_the_scipy_and_numpy_forms(speed, heading, seed):
    """On LINKS stances: the compiled reduced step (LAPACK's Cholesky as scipy's wrapper calls
    it, the free motion), Stage I's inputs (pyramid rows, LAPACK's triangular solve, the free
    velocity) and the torque/force recovery of pyramid impulses equal, bit for bit, the
    scipy/numpy forms they replace, with and without a touchdown impulse."""
    from scipy.linalg import lapack
    from controllers import _reduced_kernel
    from controllers.dynamics import pyramid_forces
    model, state, desired, contacts, _ = sliding_stance(speed, heading, 0.5)
    ctrl = controllers.make("qp-coulomb", model, feedback=False)
    q, v, contacts = ctrl._check(state, desired, contacts)
    step = ctrl.dynamics.update(q, v, desired.vdot, contacts)
    dyn = ctrl.dynamics
    L, info = lapack.dpotrf(step.M[dyn._uu], lower=1, clean=1)
    assert info == 0 and np.array_equal(step.L, L) and step.L.flags.f_contiguous
    free = np.empty(step.qd.size + 3 * step.p.size)
    _reduced_kernel.free_motion(step.M, step.h, step.v, desired.vdot, L, step.dt, dyn._u_index, dyn._a_index, free)
    assert np.array_equal(np.concatenate((step.qd, step.dt_h_u, step.B_dva, step.p)), free)
    R, Y = step.pyramid_whitened()
    rows, m, u, a = step.rows, step.m, dyn.u, dyn.a
    assert np.array_equal(R, np.concatenate((rows[:2 * m], -rows[m:2 * m], rows[2 * m:], -rows[2 * m:])))
    assert np.array_equal(Y, lapack.dtrtrs(L, R[:, u].T, lower=1)[0]) and Y.flags.f_contiguous
    assert np.array_equal(step.free_velocity, rows[:, u].dot(step.p) + rows[:, a].dot(step.qd))
    z = np.maximum(np.random.default_rng(seed).standard_normal(R.shape[0]), 0.0)
    for impact in (None, np.random.default_rng(seed).standard_normal((step.m, 3))):
        step.impact = impact
        tau, v_next, forces = step.pyramid_outputs(R, z)
        tau_ref, v_ref = step.resolve(R.T @ z)
        assert np.array_equal(tau, tau_ref) and np.array_equal(v_next, v_ref)
        assert np.array_equal(forces, step.forces_from_impulses(z, pyramid=True))
        assert np.array_equal(pyramid_forces(z) / step.dt + (0.0 if impact is None else impact), forces)


def sliding_stage_one(speed: float, feet: int):
    """``(step, prob)``: qp-coulomb's step and Stage I on LINKS sliding at ``speed`` on ``feet`` feet."""
    model, state, desired, contacts, _ = sliding_stance(speed, 0.3, 0.5)
    ctrl = controllers.make("qp-coulomb", model, feedback=False)
    q, v, contacts = ctrl._check(state, desired, contacts[:feet])
    step = ctrl.dynamics.update(q, v, desired.vdot, contacts)
    prob = build_stage_one(step, True)
    return step, prob


@settings(max_examples=30, deadline=None)
@given(speed=st.floats(0.0, 0.6), feet=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_flagged_separations_equal_the_numpy_form(speed, feet, seed):
    """Stage I's separation check in one call (N v+ by numpy's BLAS calls: ddot for one contact,
    dgemv for more) flags the contacts the numpy form flags, on LINKS with 1-4 feet touching."""
    from idyn.separation import separating_loads as core
    step, prob = sliding_stage_one(speed, feet)
    rng = np.random.default_rng(seed)
    for z in (np.maximum(rng.standard_normal(prob.k), 0.0) * 1e-3, np.zeros(prob.k)):
        m = step.m
        speed_ref = prob.Y[:, :m].T @ (prob.Y @ z) + step.free_velocity[:m]
        expected = core(step.jac.phi, step.dt, z[:m], speed_ref)
        assert np.array_equal(dissipation.separating_loads(step, prob, z), expected)
        priced, new = rng.random(m) < 0.5, np.empty(m, dtype=np.intp)
        count = dissipation.flag_separations(step, prob, z, priced, new)
        assert np.array_equal(new[:count], np.flatnonzero(expected & ~priced))


@settings(max_examples=20, deadline=None)
@given(speed=st.floats(0.0, 0.6), feet=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_compiled_separation_price_equals_the_numpy_form(speed, feet, seed):
    """Stage I's compiled loop prices separations (kernel.price_contacts, in place) as
    dissipation.price_separation (numpy's @: gemm, syrk for P^T P, gemv), on LINKS with 1-4 feet."""
    step, prob = sliding_stage_one(speed, feet)
    rng = np.random.default_rng(seed)
    priced = np.flatnonzero(rng.random(step.m) < 0.6) if step.m > 1 else np.arange(1)
    H, c = prob.H.copy(), prob.c.copy()
    dissipation.price_separation(step, prob, priced, 3.7)
    dissipation.kernel.price_contacts(H, c, prob.Y, step.free_velocity, priced.astype(np.intp), 3.7)
    # to the bit with the wheels this was written against; numba's BLAS is scipy's build, numpy's
    # its own, so other builds may round differently
    np.testing.assert_allclose(H, prob.H, rtol=1e-13, atol=1e-13 * np.abs(prob.H).max())
    np.testing.assert_allclose(c, prob.c, rtol=1e-13, atol=1e-13 * np.abs(prob.c).max())


@settings(max_examples=25, deadline=None)
@given(speed=st.floats(0.0, 0.6), heading=st.floats(-np.pi, np.pi), mu=st.sampled_from([0.1, 0.5, 2.0]),
       feet=st.integers(1, 4), weight=st.sampled_from([None, 0.0]))
def test_common_step_in_one_call_equals_the_general_path(speed, heading, mu, feet, weight):
    """qp-coulomb's one-call common path (dissipation.solve_common) gives the torques, forces,
    predicted velocity and info of the general path it stands for, bit for bit."""
    model, state, desired, contacts, _ = sliding_stance(speed, heading, mu)
    outs = []
    for common in (True, False):
        ctrl = controllers.make("qp-coulomb", model, separation_weight=weight)
        ctrl._common = common
        outs.append(ctrl.compute(state, desired, contacts[:feet]))
    fast, general = outs
    assert np.array_equal(fast.tau, general.tau) and np.array_equal(fast.contact_forces, general.contact_forces)
    assert np.array_equal(fast.info.v_next, general.info.v_next)
    a, b = (dataclasses.replace(out.info, v_next=None, solve_time=0.0) for out in outs)
    assert a == b and list(a.details) == list(b.details)


@settings(max_examples=20, deadline=None)
@given(speed=st.floats(0.0, 0.6), heading=st.floats(-np.pi, np.pi), mu=st.sampled_from([0.1, 0.5, 2.0]),
       feet=st.integers(1, 4), drop=st.sampled_from([0.0, 0.3]))
def test_common_step_from_its_inputs_equals_update_then_solve_common(speed, heading, mu, feet, drop):
    """dissipation.solve_step_common (the step's arrays and the common path in one call) answers
    as StepDynamics.update followed by solve_common, bit for bit; a base dropping at ``drop``
    lands its feet: step_arrays then asks for the touchdown impact (info < 0), answers nothing,
    and StepDynamics.finish on its arrays builds the Step update builds."""
    model, state, desired, contacts, _ = sliding_stance(speed, heading, mu)
    v = state.v.copy()
    v[2] = -drop
    ctrl = controllers.make("qp-coulomb", model, feedback=False)
    common = (ctrl._separation_mass, ctrl.ridge, ctrl.qp_backend)
    arrays = ctrl.dynamics.prepare(state.q, v, desired.vdot, contacts[:feet])
    info, fast = dissipation.solve_step_common(arrays, ctrl.dynamics.nu, *common)
    finished = ctrl.dynamics.finish(arrays, info)
    step = ctrl.dynamics.update(state.q, v, desired.vdot, contacts[:feet])
    assert (info < 0) == (drop > 0) and (step.impact is not None) == (drop > 0)
    for name in ("v", "L", "p", "qd", "dt_h_u", "B_dva", "h", "rows", "impact_rows"):
        assert np.array_equal(getattr(finished, name), getattr(step, name)), name
    assert np.array_equal(finished.jac.phi, step.jac.phi)
    if info < 0:
        assert fast is None
        return
    slow = dissipation.solve_common(step, *common)
    assert (fast is None) == (slow is None)
    if fast is not None:
        for a, b in zip(fast[:3], slow[:3]):
            assert np.array_equal(a, b)
        assert fast[3] == slow[3]
