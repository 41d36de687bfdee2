"""The shared friction-pyramid LCP builder (idyn.friction_pyramid, paper eqs. 52-56): against the
LCP written out with its friction matrices, its equilibration, and its solutions' physics."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idyn.friction_pyramid import PyramidLCP
from idyn.lcp import lemke_regularized, lcp_residuals


def contact_space(seed: int, m: int):
    """A Delassus matrix W = J M^-1 J^T of m contacts on a random 3m + 4 dof system (positive
    definite), its free contact velocity u, normal constants b and friction mu."""
    rng = np.random.default_rng(seed)
    nv = 3 * m + 4
    A = rng.normal(size=(nv, nv))
    M = A @ A.T + nv * np.eye(nv)
    J = rng.normal(size=(3 * m, nv))
    W = J @ np.linalg.solve(M, J.T)
    return (W + W.T) / 2, rng.normal(size=3 * m), rng.uniform(0.0, 0.5, m), rng.uniform(0.1, 1.5, m)


def written_out(W, u, b, mu, edged, G):
    """The LCP of the module docstring with the friction matrices multiplied: the rows [N; D] of
    the contact space as a matrix H, the equality rows G eliminated by numpy's solve."""
    m, me = b.size, edged.size
    R = np.setdiff1d(np.arange(3 * m), G)
    Wr = W[np.ix_(R, R)] - W[np.ix_(R, G)] @ np.linalg.solve(W[np.ix_(G, G)], W[np.ix_(G, R)])
    ur = u[R] - W[np.ix_(R, G)] @ np.linalg.solve(W[np.ix_(G, G)], u[G])
    H = np.zeros((m + 4 * me, 3 * m))
    H[np.arange(m), np.arange(m)] = 1.0
    for k, c in enumerate(edged):
        for e, (row, sign) in enumerate(((m + c, 1.0), (m + c, -1.0), (2 * m + c, 1.0), (2 * m + c, -1.0))):
            H[m + e * me + k, row] = sign
    H = H[:, R]
    E = np.tile(np.eye(me), (4, 1))
    n = m + 5 * me
    Q = np.zeros((n, n))
    Q[:m + 4 * me, :m + 4 * me] = H @ Wr @ H.T
    Q[m:m + 4 * me, m + 4 * me:] = E
    Q[m + 4 * me:, m:m + 4 * me] = -E.T
    Q[m + 4 * me + np.arange(me), edged] = mu[edged]
    r = np.zeros(n)
    r[:m + 4 * me] = H @ ur
    r[:m] += b
    return Q, r


layouts = st.tuples(st.integers(0, 10_000), st.integers(1, 5)).flatmap(
    lambda sm: st.tuples(st.just(sm[0]), st.just(sm[1]), st.lists(st.booleans(), min_size=sm[1], max_size=sm[1])))


@settings(max_examples=40, deadline=None)
@given(layouts)
def test_builder_is_the_lcp_written_out(layout):
    """Q and r equal the LCP built with H = [N; D], E and numpy's Schur complement, to round-off
    (measured over 400 draws: at most 1.3e-15 of the scale with held contacts, 0 without;
    asserted 1e-12)."""
    seed, m, held = layout
    W, u, b, mu = contact_space(seed, m)
    lcp = PyramidLCP.without(m, np.array(held).tobytes())
    held_idx = np.flatnonzero(held)
    G = np.concatenate((m + held_idx, 2 * m + held_idx))
    lcp.build(W, u, b, mu, G)
    Q, r = written_out(W, u, b, mu, lcp.edged, G)
    scale = np.abs(W).max() + np.abs(u).max() + 1.0
    np.testing.assert_allclose(lcp.Q, Q, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(lcp.r, r, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("m", [1, 3, 5])
def test_equilibrated_solution_solves_the_lcp(m):
    """Lemke's answer to the equilibrated LCP, z = s z', solves the unscaled LCP; the impulses
    lie in the pyramid, and held contacts' tangential equalities hold at the end velocity."""
    W, u, b, mu = contact_space(m, m)
    held = np.zeros(m, dtype=bool)
    held[0] = True
    lcp = PyramidLCP.without(m, held.tobytes())
    G = np.array([m, 2 * m])
    U = lcp.build(W, u, b, mu, G)
    np.testing.assert_allclose(lcp.Qs, lcp.s[:, None] * lcp.Q * lcp.s, rtol=1e-15)
    diag = np.diag(lcp.Qs)[:m + 4 * lcp.edged.size]
    np.testing.assert_allclose(diag[diag > 0], 1.0, rtol=1e-14)
    res = lemke_regularized(lcp.Qs, lcp.rs)
    assert res.solved and res.regularization == 0.0
    z = lcp.s * res.z
    assert lcp_residuals(lcp.Q, lcp.r, z).ok()
    f = lcp.impulses(res.z, W, u, G, U)
    assert (f[:, 0] >= -1e-12).all()
    bounded = ~held
    assert (np.abs(f[bounded, 1]) + np.abs(f[bounded, 2]) <= mu[bounded] * f[bounded, 0] + 1e-9).all()
    velocity = W @ f.T.reshape(-1) + u
    np.testing.assert_allclose(velocity[G], 0.0, atol=1e-10)
    assert (velocity[:m] + b >= -1e-9).all()
