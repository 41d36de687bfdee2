"""Lemke warm-started by contact identity: qp-coulomb's Stage I and lcp-coulomb's pyramid LCP.

The memory maps a basis across contact lists by identity; the basis check accepts only answers
that pass the LCP residual check and refuses a pattern that does not solve; the controllers'
warm answers pass the same physics checks as their cold ones, and qp-coulomb's (Stage II has a
unique answer) agree with the cold controller's to the QP's tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

from idyn import Contact, controllers
from idyn.controllers.warm_start import BasisMemory, contact_keys
from idyn.experiments.benchmarks.controllers import standing_problem, trajectory
from idyn.lcp import lemke
from idyn.lcp.lemke import warm_checked, warm_lemke
from idyn.lcp.residuals import lcp_residuals

from test_controllers import check_physics


def test_basis_memory_follows_contacts_across_lists():
    a, b, c = (Contact(name, None, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), 1.0) for name in ("FL", "FR", "HL"))
    keys = contact_keys([a, b, c])
    contact, block = np.tile(np.arange(3), 2), np.repeat(np.arange(2), 3)   # 2 blocks of 3 contacts
    memory = BasisMemory()
    assert memory.recall(keys, contact, block).size == 0
    memory.store(keys, contact, block, np.array([0, 2, 4]))         # FL block 0, HL block 0, FR block 1
    np.testing.assert_array_equal(memory.recall(keys, contact, block), [0, 2, 4])
    new = contact_keys([c, b])                                      # FL gone, HL first
    contact2, block2 = np.tile(np.arange(2), 2), np.repeat(np.arange(2), 2)
    np.testing.assert_array_equal(memory.recall(new, contact2, block2), [0, 3])   # HL block 0, FR block 1
    memory.reset()
    assert memory.recall(keys, contact, block).size == 0


def test_warm_paths_accept_only_solutions():
    """From its own terminal basis Lemke makes no pivot and the basis check solves; from any other
    pattern the warm path and the check either solve (residual check) or say they failed, never
    a wrong answer."""
    rng = np.random.default_rng(4)
    seen = 0
    for _ in range(30):
        A = rng.standard_normal((8, 5))
        M = A @ A.T + 0.1 * rng.standard_normal((8, 8))   # a nonsymmetric, singular-ish LCP
        M = A @ A.T if rng.random() < 0.5 else M
        q = rng.standard_normal(8)
        cold = lemke(M, q)
        if not cold.solved or cold.basic is None:
            continue
        seen += 1
        own = warm_lemke(M, q, cold.basic)
        assert own.solved and own.pivots == 0 and lcp_residuals(M, q, own.z).ok(1e-9)
        for pattern in (np.setdiff1d(np.arange(8), cold.basic), rng.choice(8, 3, replace=False)):
            if not pattern.size:
                continue
            other = warm_lemke(M, q, np.sort(pattern))
            assert not other.solved or lcp_residuals(M, q, other.z).ok(1e-9)
            check = warm_checked(M, q, np.sort(pattern).astype(np.intp))
            assert check is None or (check.pivots == 0 and lcp_residuals(M, q, check.z).ok(1e-9))
        assert warm_checked(M, q, cold.basic) is not None     # Lemke's own basis still solves
    assert seen >= 10


@pytest.mark.parametrize("name,key", [("qp-coulomb", "stage1_start"), ("lcp-coulomb", "lcp_start")])
def test_warm_answers_pass_the_physics_checks(name, key):
    """16 distinct points on four 4 mm foot patches: most steps are warm, every answer passes."""
    p = standing_problem("a1", 16, 1.0, rng=np.random.default_rng(16), noise=1e-3, patch=0.004)
    warm, cold = controllers.make(name, p.model), controllers.make(name, p.model, warm_start=False)
    starts = []
    for st in trajectory(p, 12, np.random.default_rng(0)):
        out = warm.compute(st, p.desired, p.contacts)
        check_physics(name, p.model, st, p.contacts, out)
        starts.append(out.info.details[key])
        ref = cold.compute(st, p.desired, p.contacts)
        assert ref.info.details[key] == "cold"
        if name == "qp-coulomb":      # Stage II's answer is unique (its ridge): warm or cold alike
            scale = np.abs(ref.tau).max()
            assert np.abs(out.tau - ref.tau).max() <= 1e-6 * scale
    assert starts.count("warm") >= len(starts) // 2
    assert set(starts) <= {"warm", "cold", "cold (warm basis failed)"}
