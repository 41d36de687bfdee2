"""The leg inverse's fast paths give exactly the inverse its definition asks for.

:meth:`planners.LegKinematics.inverse` is exact for a leg whose smallest singular value exceeds
10 sqrt(damping) and damped otherwise; it recognises regular legs by a determinant bound
(:func:`planners._leg_kernel.surely_regular`) instead of an SVD. These tests hold it to the
definition, computed here with the SVD, bit for bit.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import robots
from planners import BaseGoal, LegKinematics
from planners._leg_kernel import leg_jacobians, regular_inverses, surely_regular
from idyn.errors import NonFiniteError


def _kin():
    robot = robots.quadruped("links")
    return LegKinematics(robot.model, {leg: f.link for leg, f in robot.feet.items()}, robot.leg_joints)


def _definition(J, damping):
    """The inverse by its definition: SVD test, exact or damped per leg."""
    Jt = np.transpose(J, (0, 2, 1))
    damped = Jt @ np.linalg.inv(J @ Jt + damping * np.eye(3))
    ok = np.linalg.svd(J, compute_uv=False)[:, -1] > 10.0 * np.sqrt(damping)
    if ok.any():
        damped[ok] = np.linalg.inv(J[ok])
    return damped


# legs from regular to singular: J = U diag(s) V^T with chosen singular values
_sigmas = st.lists(st.floats(1e-6, 0.3), min_size=3, max_size=3)


@settings(max_examples=200, deadline=None)
@given(legs=st.lists(_sigmas, min_size=1, max_size=4), seed=st.integers(0, 2**31))
def test_inverse_is_the_definition_bit_for_bit(legs, seed):
    rng = np.random.default_rng(seed)
    J = []
    for s in legs:
        U, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        V, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        J.append(U @ np.diag(s) @ V.T)
    J = np.array(J)
    kin = _kin()
    np.testing.assert_array_equal(kin.inverse(J), _definition(J, kin._damping))


def test_compiled_lapack_inverse_is_numpys_bit_for_bit():
    rng = np.random.default_rng(11)
    J = rng.normal(size=(5000, 3, 3)) * 10.0 ** rng.uniform(-2, 1, size=(5000, 1, 1))
    out, ok = np.empty_like(J), np.empty(len(J), dtype=bool)
    assert regular_inverses(J, 0.0, ok, out) and ok.all()
    np.testing.assert_array_equal(out, np.linalg.inv(J))
    assert not regular_inverses(np.zeros((2, 3, 3)), 1e-3, ok[:2], out[:2])       # a singular leg: not certain


@settings(max_examples=300, deadline=None)
@given(s=_sigmas, threshold=st.floats(1e-4, 0.1), seed=st.integers(0, 2**31))
def test_the_determinant_bound_never_calls_a_near_singular_leg_regular(s, threshold, seed):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    V, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    J = (U @ np.diag(s) @ V.T)[None]
    out = np.zeros(1, dtype=bool)
    surely_regular(J, threshold, out)
    if out[0]:
        assert np.linalg.svd(J[0], compute_uv=False)[-1] > threshold
    if min(s) > threshold and np.prod(s) / np.sum(np.square(s)) > 1.01 * threshold:
        assert out[0]                     # the bound is tight enough to decide the usual legs


def test_compiled_leg_jacobians_are_the_cross_product_formula_bit_for_bit():
    rng = np.random.default_rng(1)
    Jw, x = rng.normal(size=(6, 18)), rng.normal(size=(4, 3))
    leg_v = np.arange(6, 18).reshape(4, 3)
    eps = np.zeros((3, 3, 3))
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
    cols = Jw[:, leg_v]
    expected = np.transpose(cols[:3] + np.einsum("ijk,jlm,lk->ilm", eps, cols[3:], x), (1, 0, 2))
    out = np.empty((4, 3, 3))
    leg_jacobians(Jw, leg_v, x, out)
    np.testing.assert_array_equal(out, expected)


def test_base_goal_validates_what_users_build():
    with pytest.raises(NonFiniteError):
        BaseGoal(np.zeros(3), np.array([0.0, np.nan, 0.0]), np.zeros(3), np.zeros(3))
    goal = BaseGoal([0.0, 0.0, 0.3], [0.0, 0.0, 1.0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.2])
    assert goal.position.dtype == float and goal.rpy[2] == 1.0
