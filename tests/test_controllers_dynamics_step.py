"""Step's compiled checks (controllers.dynamics) against numpy statements of the same equations
(oracles, to round-off)."""
from __future__ import annotations

import numpy as np
import pytest

from idyn import controllers
from idyn.controllers import _dynamics_kernel as kernel
from idyn.controllers import lcp_noslip
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn.lcp.find_indices import kept_mask
from idyn.lcp.qr import column_pivots


def violation_reference(fN, wN, free, phi, dt):
    """Step.complementarity_violation as numpy statements (eqs. 36, 54)."""
    scale = 1.0 + float(np.abs(free[:phi.size] + phi / dt).max(initial=0.0))
    return max(float(-wN.min(initial=0.0)), float((fN * np.abs(wN) / (1.0 + fN)).max(initial=0.0))) / scale


def agrees(got, want, scale) -> None:
    """Agreement to round-off (1e-13 of ``scale``)."""
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * scale)


def test_complementarity_violation_kernel_equals_numpy_statement():
    """The compiled violation equals the numpy statement on random finite inputs with zero and
    negative forces and no contacts; with a NaN or infinite entry no check passes."""
    rng = np.random.default_rng(5)
    for trial in range(3000):
        m = int(rng.integers(0, 9))
        fN = rng.choice([0.0, 1.0], m) * rng.exponential(3.0, m) - (trial % 7 == 0) * rng.random(m)
        wN, phi = rng.standard_normal(m), rng.standard_normal(m) * 1e-3
        free = rng.standard_normal(3 * m)
        for x in (wN, phi, free, fN):
            if x.size and rng.random() < 0.1:
                x[rng.integers(x.size)] = rng.choice([np.nan, np.inf, -np.inf])
        dt = float(rng.choice([1e-3, 0.01]))
        got = kernel.complementarity_violation(fN, wN, free, phi, dt)
        with np.errstate(invalid="ignore"):
            expected = violation_reference(fN, wN, free, phi, dt)
        if np.isnan(expected) or any(np.isnan(x).any() for x in (fN, wN, free[:m], phi)):
            assert not got <= 1e-6, (trial, fN, wN, free, phi)      # no check passes
        elif not all(np.isfinite(x).all() for x in (fN, wN)):     # undefined force terms: NaN allowed
            assert np.isnan(got) or got == pytest.approx(expected, rel=1e-14, abs=1e-300)
        else:
            assert got == pytest.approx(expected, rel=1e-14, abs=1e-300), (trial, fN, wN, free, phi)


@pytest.mark.parametrize("controller", ["lcp-coulomb", "lcp-noslip"])
def test_step_complementarity_violation_on_stances(controller):
    """Step.complementarity_violation of a stance step equals the numpy statement, with and
    without the caller's normal speeds."""
    rng = np.random.default_rng(11)
    for trial in range(4):
        p = standing_problem("links", 4, np.inf, rng=rng, noise=0.05 * trial)
        step = controllers.make(controller, p.model)._step(p.state.q, p.state.v, np.zeros(p.model.na), p.contacts)
        fN, v_next = rng.exponential(2.0, step.m), p.state.v + 0.01 * rng.standard_normal(p.model.nv)
        wN = step.normal_speeds(v_next)
        expected = violation_reference(fN, wN, step.free_velocity, step.jac.phi, step.dt)
        assert step.complementarity_violation(fN, v_next) == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert step.complementarity_violation(fN, v_next, wN) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("n_contacts", [4, 8])
def test_independent_tangents_visits_the_pivoted_qr_order(n_contacts):
    """Step.independent_tangents (one compiled pivoted_kept_mask call) keeps the rows that
    kept_mask keeps visiting the column pivots of the whitened candidate rows."""
    rng = np.random.default_rng(n_contacts + 20)
    for trial in range(4):
        p = standing_problem("links", n_contacts, np.inf, rng=rng, noise=0.05 * trial)
        step = controllers.make("lcp-noslip", p.model)._step(p.state.q, p.state.v, np.zeros(p.model.na),
                                                             p.contacts)
        m = step.m
        for tol in (lcp_noslip.TANGENT_DEPENDENCE_TOL, 0.3):
            for subset in range(1, 2 ** min(m, 6)):
                contacts = np.flatnonzero([(subset >> i) & 1 for i in range(m)])
                H = step.white.take(np.concatenate((contacts + m, contacts + 2 * m)), axis=1)
                kept = kept_mask(H, column_pivots(H), tol)
                s_idx, t_idx = step.independent_tangents(contacts, tol)
                np.testing.assert_array_equal(s_idx, contacts[kept[:contacts.size]])
                np.testing.assert_array_equal(t_idx, contacts[kept[contacts.size:]])


def test_normal_speeds_kernel_equals_numpy():
    """The compiled N v + phi/dt equals numpy's to round-off, N a view of stacked rows."""
    rng = np.random.default_rng(9)
    for _ in range(2000):
        m, nv = int(rng.integers(0, 13)), int(rng.choice([12, 18, 24]))
        N, v = rng.standard_normal((3 * m, nv))[:m], rng.standard_normal(nv)
        phi, dt, out = rng.standard_normal(m) * 1e-3, float(rng.choice([1e-3, 0.01])), np.empty(m)
        kernel.normal_speeds(N, v, phi, dt, out)
        want = N.dot(v) + phi / dt
        agrees(out, want, 1.0 + np.abs(N).sum(axis=1, initial=0.0).max(initial=0.0)
                                         * np.abs(v).max() + np.abs(want).max(initial=0.0))


def test_free_velocity_kernel_equals_numpy():
    """The compiled [N; S; T] v+(0) equals the numpy statement rows[:, u] p + rows[:, a] qd to
    round-off (a floating base and a fixed one, any number of contacts)."""
    rng = np.random.default_rng(13)
    for _ in range(1000):
        m, nu = int(rng.integers(1, 13)), int(rng.choice([0, 6, 12]))
        rows, na = rng.standard_normal((3 * m, nu + 12)), 12
        u, a = np.arange(nu, dtype=np.intp), np.arange(nu, nu + na, dtype=np.intp)
        p, qd, free = rng.standard_normal(nu), rng.standard_normal(na), np.empty(3 * m)
        kernel.free_velocity(rows, p, qd, u, a, free)
        expected = (rows[:, :nu].dot(p) if nu else np.zeros(3 * m)) + rows[:, nu:].dot(qd)
        agrees(free, expected, 1.0 + np.abs(rows).sum(axis=1).max()
                                         * max(np.abs(p).max(initial=0.0), np.abs(qd).max()))
