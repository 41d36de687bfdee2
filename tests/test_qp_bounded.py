"""idyn.qp's default backend is bounded: the QP on which quadprog 0.1.14 loops for ever returns.

tests/data/qp_hang.npz: a 30-variable convex QP (H positive definite, condition 8.4e6, 40 rows
``A_in x >= b_in``) captured from lcp-coulomb's one-stage fallback on a LINKS state with 9
contacts.  quadprog's ``solve_qp`` never returns on it (and cannot be interrupted in-process), so
each solve runs in a child process that the test kills if it does not return.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from idyn.errors import InvalidInputError
from idyn.qp import BACKENDS, DEFAULT_BACKEND, QPStatus, default_max_iterations, solve_built, solve_qp

DATA = Path(__file__).parent / "data" / "qp_hang.npz"
ROOT = Path(__file__).resolve().parents[1]
#: a generous bound on a call that takes milliseconds: only a hang exceeds it
HANG = 300.0


def _child(code: str) -> dict:
    """Run ``code`` (which prints one JSON line last) in a child process; fails the test if it
    does not return within :data:`HANG` seconds."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG, env=env,
                             check=True)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the QP solve did not return within {HANG} s")
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_quadprog_hang_returns_solved_by_default():
    code = f"""
import json, numpy as np
from idyn.qp import solve_qp
d = np.load({str(DATA)!r})
res = solve_qp(d["H"], d["c"], A_in=d["A_in"], b_in=d["b_in"])
print(json.dumps({{"status": res.status.value, "backend": res.backend, "x": res.x.tolist(),
                  "iterations": res.iterations}}))
"""
    got = _child(code)
    assert got["status"] == "solved" and got["backend"] == DEFAULT_BACKEND
    d = np.load(DATA)
    H, c, A, b = d["H"], d["c"], d["A_in"], d["b_in"]
    x = np.array(got["x"])
    scale = 1 + np.abs(x).max()
    assert (A @ x - b).min() > -1e-7 * scale
    # optimal: cvxopt (an independent interior-point solver) reaches the same objective
    ref = solve_qp(H, c, A_in=A, b_in=b, backend="cvxopt")
    assert ref.solved
    f = lambda y: 0.5 * y @ H @ y + c @ y  # noqa: E731
    assert f(x) <= f(ref.x) + 1e-7 * (1 + abs(f(ref.x)))


def test_a_capped_solve_says_so():
    """One iteration cannot solve the hang QP: the status is MAX_PIVOTS, x is NaN, and the
    attempts made stay within the documented caps."""
    d = np.load(DATA)
    res = solve_qp(d["H"], d["c"], A_in=d["A_in"], b_in=d["b_in"], max_iterations=1, regularize=False)
    assert res.status is QPStatus.MAX_PIVOTS and not res.solved and np.isnan(res.x).all()
    assert res.iterations <= 1


def test_backends_and_caps_are_documented_options():
    assert DEFAULT_BACKEND == "daqp" and set(BACKENDS) == {"daqp", "quadprog", "cvxopt"}
    assert default_max_iterations(30, 40) >= 70
    for bad in (0, -1, 2.5, "10", True):
        with pytest.raises(InvalidInputError):
            solve_qp(np.eye(2), np.zeros(2), max_iterations=bad)
    for bad in (-1e-7, 0.0, float("nan"), float("inf"), "1e-7"):
        with pytest.raises(InvalidInputError):
            solve_qp(np.eye(2), np.zeros(2), feasibility_tol=bad)


@pytest.mark.parametrize("backend", ["daqp", "quadprog", "cvxopt"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e160])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # 1e160 squared
def test_non_finite_data_never_reaches_a_backend(backend, bad):
    """solve_built (the unchecked entry) reports NUMERICAL_FAILURE for a NaN, an infinity or an
    entry whose square overflows, in any array, without calling the backend."""
    n = 3
    arrays = [np.eye(n), np.zeros(n), np.ones((1, n)), np.ones(1), np.eye(n), -np.ones(n)]
    for i in range(len(arrays)):
        data = [a.copy() for a in arrays]
        data[i].flat[0] = bad
        res = solve_built(*data, backend=backend)
        assert res.status is QPStatus.NUMERICAL_FAILURE and np.isnan(res.x).all()
