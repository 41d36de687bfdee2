"""One adapter over dense convex QP backends, shared by every controller and planner.

Problem (all arrays dense, float64)::

    minimize    1/2 x^T H x + c^T x
    subject to  A_eq x  = b_eq
                A_in x >= b_in

Backends (:data:`BACKENDS`):

* ``"daqp"`` (the default, :data:`DEFAULT_BACKEND`): DAQP's dual active-set method (Arnström,
  Bemporad & Axehill 2022), capped at ``max_iterations`` active-set changes
  (:func:`default_max_iterations`); a capped solve returns status ``MAX_PIVOTS``.
* ``"quadprog"`` (Goldfarb-Idnani dual active set, positive definite ``H``): **unbounded** - it
  has no iteration cap and a C call cannot be interrupted in-process; quadprog 0.1.14 loops for
  ever on some ill-conditioned QPs a controller builds (``tests/test_qp_bounded.py``).  Kept as
  an option for comparison.
* ``"cvxopt"`` (interior point; accepts a semi-definite ``H``), capped at
  :data:`CVXOPT_MAX_ITERATIONS` steps.

Why DAQP: measured against quadprog, PIQP, Clarabel and ProxSuite on the QPs idyn's
controllers solve (docs/qp_backends.md), it returned on every one, the hang included, failed
the feasibility check on the fewest (1, quadprog 19) and was the fastest bounded backend.  The adapter adds what a control loop needs around the backends:

* **Validation** of shapes and finiteness (typed :mod:`idyn.errors` exceptions).
* **Dependent equalities** are reduced to an independent set by a rank-revealing QR of
  ``[A_eq | b_eq]``'s rows (quadprog rejects dependent equality rows; duplicated contacts
  produce them).  Consistent dependent rows lose nothing; inconsistent ones make the problem
  infeasible and are reported as such.
* **Regularisation fallback**: quadprog requires ``H`` positive definite.  When it is only
  semi-definite (the maximal-dissipation Hessian of paper Sec. 6 always is), ``eps I`` is added
  with ``eps = s * max(diag H, 1)`` for ``s`` in :data:`REGULARIZATION_SCHEDULE`, smallest first,
  until the answer passes the feasibility check; if none does, cvxopt (which accepts a
  semi-definite ``H``) is tried, without ridge and then with the same schedule (its interior
  point method stalls on some singular ``H``, status "unknown"; ``backend="cvxopt"`` alone
  runs this sequence).  The result records the ``eps`` and the backend used
  (``QPResult.regularization``, ``QPResult.backend``), mirroring
  :func:`idyn.lcp.lemke_regularized`.
* **Feasibility check**: an answer is accepted only if every row is within ``feasibility_tol``
  of its constraint relative to ``(1 + max|x|)(1 + max_j |a_ij|) + |b_i|``.
* **Positive-definiteness test** before quadprog's unregularised attempt: a Cholesky
  factorisation whose squared pivots are all above ``1e-12`` of the largest (a semi-definite
  ``H`` often passes a plain Cholesky by rounding, and quadprog then returns a feasible but
  visibly suboptimal point).  This test, the feasibility check and the objective are flat
  compiled loops (:mod:`idyn.kernels`); the backends are called through their Python APIs.
* **Bounded work**: with ``daqp`` or ``cvxopt`` a call makes at most four attempts (unridged,
  then :data:`REGULARIZATION_SCHEDULE`) on the backend and, with ``regularize``, four on cvxopt,
  each under its iteration cap.
* **Non-finite data never reaches a backend**: a NaN or infinite entry (or one whose square
  overflows) gives status ``NUMERICAL_FAILURE`` without a backend call.
* **Status, not exceptions**: a failed solve returns ``QPResult`` with ``status`` INFEASIBLE,
  MAX_PIVOTS (an iteration cap was reached and nothing passed), NUMERICAL_FAILURE or FAILED and
  ``x`` filled with NaN; the caller falls back.  SOLVED means the answer passed the
  feasibility check above, whatever the backend said.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import daqp
import numpy as np
import quadprog

from . import kernels as kernel
from . import validation
from .errors import InvalidInputError
from .lcp.inputs import finite_data
from .lcp.qr import check_info
from .status import Status

#: Relative ridge values tried, in order, when the backend rejects a singular Hessian.
REGULARIZATION_SCHEDULE = (1e-9, 1e-7, 1e-5)
#: Relative tolerance of the rank decision on equality rows.
EQUALITY_RANK_TOL = 1e-10

BACKENDS = ("daqp", "quadprog", "cvxopt")
#: the backend every caller gets unless it asks for another: bounded, see the module docstring
DEFAULT_BACKEND = "daqp"
#: :func:`default_max_iterations`: a floor, and the iterations allowed per variable and row.  On
#: the QPs of idyn's controllers (2-240 variables, 2-336 rows) DAQP took at most 0.71 (n + rows)
#: iterations (docs/qp_backends.md); the cap leaves a factor 4 above that.
MAX_ITERATIONS_FLOOR = 100
MAX_ITERATIONS_PER_ROW = 3
#: DAQP's primal feasibility tolerance (absolute; its default 1e-6 let answers sit 6e-6 off the
#: active rows, visible in the predicted velocities)
DAQP_PRIMAL_TOL = 1e-9
#: cvxopt's interior-point step cap (its own default)
CVXOPT_MAX_ITERATIONS = 100


#: the adapter's status is the package's one :class:`idyn.Status`
QPStatus = Status


#: a Cholesky pivot below this fraction of the largest counts as singular
PD_TOL = 1e-12


def default_max_iterations(n: int, rows: int) -> int:
    """DAQP's iteration cap for ``n`` variables and ``rows`` constraint rows when the caller
    gives none: ``MAX_ITERATIONS_FLOOR + MAX_ITERATIONS_PER_ROW (n + rows)``."""
    return MAX_ITERATIONS_FLOOR + MAX_ITERATIONS_PER_ROW * (n + rows)


class QPResult(NamedTuple):
    """Answer of :func:`solve_qp` (immutable).

    Attributes:
        x: the minimiser (NaN-filled when not solved).
        status: :class:`QPStatus`.
        backend: the backend that produced ``x``.
        regularization: ``eps`` added to the diagonal of ``H`` (0.0 if none was needed).
        objective: ``1/2 x^T H x + c^T x`` of the *original* problem.
        iterations: backend iteration count (active-set changes or interior-point steps).
        dropped_equalities: number of equality rows removed as linearly dependent.
        active: DAQP on :func:`solve_built`'s ``definite`` path only (else None): the inequality
            rows active at the answer (nonzero multipliers), to start the next solve from.
    """

    x: np.ndarray
    status: QPStatus
    backend: str
    regularization: float = 0.0
    objective: float = float("nan")
    iterations: int = 0
    dropped_equalities: int = 0
    active: np.ndarray | None = None

    @property
    def solved(self) -> bool:
        return self.status is QPStatus.SOLVED


def _rows(A, b, n: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    if A is None:
        return np.zeros((0, n)), np.zeros(0)
    A = validation.matrix(np.atleast_2d(A) if np.size(A) else np.zeros((0, n)), (None, n), f"A_{name}")
    b = validation.vector(np.asarray(b, dtype=float).reshape(-1), A.shape[0], f"b_{name}")
    return A, b


def independent_equalities(A, b, tol: float = EQUALITY_RANK_TOL) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``(A', b')`` spanning the same constraints as ``A x = b`` with ``A'`` of full row rank.

    Uses a column-pivoted QR of ``A^T``: the pivot order picks a maximal independent subset of
    the original rows (so the kept constraints are the user's own rows, not combinations).
    If a dropped row is inconsistent with the kept ones the QP becomes infeasible only through
    that row being ignored; :func:`solve_qp` checks the residual of *all* rows afterwards.
    """
    if A.shape[0] == 0 or A.shape[1] == 0:
        return (A, b) if A.shape[0] == 0 else (A[:0], b[:0])
    keep = np.empty(A.shape[0], np.intp)
    rank = kernel.independent_rows(_c(np.asarray(A, dtype=float)), tol, keep)
    check_info(rank, "geqp3")
    if rank == A.shape[0]:
        return A, b
    return A[keep[:rank]], b[keep[:rank]]


def check_options(backend: str, feasibility_tol: float, max_iterations: int | None) -> None:
    """InvalidInputError for an unknown ``backend``, a ``feasibility_tol`` that is not a positive
    finite number or a ``max_iterations`` that is not a positive integer (or None)."""
    if backend not in BACKENDS:
        raise InvalidInputError(f"unknown QP backend {backend!r}; choose from {BACKENDS}")
    if isinstance(feasibility_tol, bool) or not isinstance(feasibility_tol, (int, float, np.floating, np.integer)) \
            or not (math.isfinite(feasibility_tol) and feasibility_tol > 0):
        raise InvalidInputError(f"feasibility_tol must be a positive finite number, got {feasibility_tol!r}")
    if max_iterations is not None and (isinstance(max_iterations, bool)
                                       or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1):
        raise InvalidInputError(f"max_iterations must be a positive integer or None, got {max_iterations!r}")


def solve_qp(H, c, A_eq=None, b_eq=None, A_in=None, b_in=None, *, backend: str = DEFAULT_BACKEND,
             regularize: bool = True, feasibility_tol: float = 1e-7, max_iterations: int | None = None) -> QPResult:
    """Solve the convex QP of the module docstring; never raises on solver failure.

    Args:
        H: (n, n) symmetric positive (semi-)definite Hessian.
        c: (n,) linear term.
        A_eq, b_eq: equality rows (may be dependent, see module docstring).
        A_in, b_in: inequality rows ``A_in x >= b_in``.
        backend: one of :data:`BACKENDS` (default ``"daqp"``; ``"quadprog"`` is unbounded).
        regularize: allow the ridge fallback of :data:`REGULARIZATION_SCHEDULE` (and cvxopt).
        feasibility_tol: relative tolerance of the final constraint check.
        max_iterations: DAQP's iteration cap per attempt (default :func:`default_max_iterations`);
            quadprog has none, cvxopt's is :data:`CVXOPT_MAX_ITERATIONS`.

    Raises:
        ShapeError, NonFiniteError: malformed input.
        InvalidInputError: unknown backend, bad tolerance or iteration cap.
    """
    check_options(backend, feasibility_tol, max_iterations)
    H = validation.square(H, "H")
    n = H.shape[0]
    c = validation.vector(c, n, "c")
    Ae, be = _rows(A_eq, b_eq, n, "eq")
    Ai, bi = _rows(A_in, b_in, n, "in")
    return solve_built(H, c, Ae, be, Ai, bi, backend=backend, regularize=regularize,
                       feasibility_tol=feasibility_tol, max_iterations=max_iterations)


def solve_built(H: np.ndarray, c: np.ndarray, Ae: np.ndarray, be: np.ndarray, Ai: np.ndarray, bi: np.ndarray,
                *, backend: str = DEFAULT_BACKEND, regularize: bool = True, feasibility_tol: float = 1e-7,
                definite: bool = False, max_iterations: int | None = None,
                active: np.ndarray | None = None, stop=None) -> QPResult:
    """:func:`solve_qp` after its input checks, for float arrays a caller built itself with
    consistent shapes (``H`` (n, n), ``c`` (n,), ``Ae`` (p, n), ``Ai`` (q, n); zero rows for
    none) and a known ``backend``: the same dependent-equality reduction, regularisation
    schedule, feasibility check and result.  A non-finite entry is not reported as bad input:
    no backend is called and the status is NUMERICAL_FAILURE.

    ``definite``: the caller guarantees that ``H`` is exactly symmetric and passes the
    positive-definiteness test by construction (e.g. a ridge bounding its condition number well
    below ``1 / PD_TOL``) and C-contiguous arrays; with no equality rows and some inequality
    rows, the backend's answer is then taken, if the feasibility check accepts it, without the
    test and the symmetrisation (which would not change ``H``); otherwise the general path runs.

    ``active``: on that path with DAQP, indices of inequality rows to start its working set from
    (a warm start, e.g. the previous control step's ``QPResult.active``); the answer and its
    check are the same, only the iterations differ.

    ``stop()`` (optional, a controller's time budget) is asked before every attempt after the
    first: True ends the schedule, and the result reports the verdicts of the attempts made."""
    n = H.shape[0]
    if not finite_data(H, c, Ae, be, Ai, bi):
        return QPResult(np.full(n, np.nan), QPStatus.NUMERICAL_FAILURE, backend)
    cap = default_max_iterations(n, Ae.shape[0] + Ai.shape[0]) if max_iterations is None else int(max_iterations)
    if definite and not Ae.shape[0] and n and Ai.shape[0] and backend != "cvxopt":
        if backend == "daqp":
            status, x, its, rows = _daqp_definite(H, c, Ai, bi, cap, active)
        else:
            (status, x, its), rows = _attempt(backend, H, c, Ai, _unbounded(Ai.shape[0]), bi, 0, cap), None
        if status is QPStatus.SOLVED:
            value = kernel.accepted(H, c, x, Ae, be, Ai, bi, feasibility_tol)
            if value == value:
                return QPResult(x, QPStatus.SOLVED, backend, 0.0, value, its, active=rows)
    Ae_kept, be_kept = independent_equalities(Ae, be) if Ae.shape[0] else (Ae, be)
    dropped = Ae.shape[0] - Ae_kept.shape[0]
    if n == 0:
        return QPResult(np.zeros(0), QPStatus.SOLVED, backend, objective=0.0, dropped_equalities=dropped)
    H, c, Ae, be, Ai, bi = _c(H), _c(c), _c(Ae), _c(be), _c(Ai), _c(bi)
    Hs = np.empty((n, n))
    scale, definite = kernel.prepare(H, PD_TOL, Hs)
    H = Hs
    ridges = [s * scale for s in REGULARIZATION_SCHEDULE] if regularize else []
    verdicts, eps, iters = set(), 0.0, 0
    if backend != "cvxopt":
        p = Ae_kept.shape[0]
        A, lower = (np.concatenate((Ae_kept, Ai)), np.concatenate((be_kept, bi))) if p else (Ai, bi)
        upper = np.concatenate((be_kept, _unbounded(Ai.shape[0]))) if p else _unbounded(Ai.shape[0])
        # unridged only if H passed the test; a semi-definite H gets the ridge schedule (DAQP
        # would take it unridged, but its answers then moved the recorded controller outputs by
        # the old ridge's bias, 1e-5; one semantics for both backends)
        for eps in ([0.0] if definite else []) + ridges:
            if verdicts and stop is not None and stop():
                break
            status, x, its = _attempt(backend, H + eps * np.eye(n) if eps else H, c, A, upper, lower, p, cap)
            iters += its
            if status is QPStatus.SOLVED:
                value = kernel.accepted(H, c, x, Ae, be, Ai, bi, feasibility_tol)
                if value == value:           # not NaN: feasible
                    return QPResult(x, QPStatus.SOLVED, backend, eps, value, iters, dropped)
                status = QPStatus.NUMERICAL_FAILURE
            verdicts.add(status)
    used = backend
    if (backend == "cvxopt" or regularize) and not (verdicts and stop is not None and stop()):
        # the backend asked for, or the last fallback
        used = "cvxopt"                      # (it accepts a semi-definite H)
        # its interior point method can also stall on a singular H ("unknown": a singular KKT
        # system), so it gets the same ridge schedule, unregularised first
        for eps in [0.0] + ridges:
            if verdicts and stop is not None and stop():
                break
            status, x, its = _cvxopt(H + eps * np.eye(n) if eps else H, c, Ae_kept, be_kept, Ai, bi)
            iters += its
            value = kernel.accepted(H, c, x, Ae, be, Ai, bi, feasibility_tol) if status is QPStatus.SOLVED \
                else np.nan
            if status is QPStatus.SOLVED and value != value:
                status = QPStatus.NUMERICAL_FAILURE
            verdicts.add(status)
            # INFEASIBLE is not trusted on its own: with a nearly singular H the dual active-set
            # method breaks down with that message, so the better-conditioned attempts still run
            if status is QPStatus.SOLVED:
                return QPResult(x, status, used, eps, value, iters, dropped)
    status = next((s for s in _VERDICT_ORDER if s in verdicts), QPStatus.FAILED)
    return QPResult(np.full(n, np.nan), status, used, eps, iterations=iters, dropped_equalities=dropped)


#: the status of a solve nothing passed: the first of these some attempt reported
_VERDICT_ORDER = (QPStatus.INFEASIBLE, QPStatus.MAX_PIVOTS, QPStatus.NUMERICAL_FAILURE, QPStatus.FAILED)
#: DAQP's exit flags (daqp's constants.h): optimal, soft optimal, infeasible, iteration limit
_DAQP_STATUS = {1: QPStatus.SOLVED, 2: QPStatus.SOLVED, -1: QPStatus.INFEASIBLE, -4: QPStatus.MAX_PIVOTS,
                -7: QPStatus.MAX_PIVOTS}


def _attempt(backend, H, c, A, upper, lower, p, cap) -> tuple[Status, np.ndarray | None, int]:
    """One backend call on ``min 1/2 x'Hx + c'x`` s.t. the first ``p`` rows of ``A x`` equal
    ``lower`` and the others are ``>= lower`` (``upper``: DAQP's upper bounds, ``+inf`` on the
    inequality rows); ``(status, x, iterations)``, ``x`` None unless SOLVED (still unchecked)."""
    if backend == "daqp":
        x, _, flag, info = daqp.solve(H, c, A, upper, lower, _equality_sense(p, A.shape[0]), iter_limit=cap,
                                     primal_tol=DAQP_PRIMAL_TOL)
        status = _DAQP_STATUS.get(flag, QPStatus.FAILED)
        return status, (x if status is QPStatus.SOLVED else None), int(info["iterations"])
    try:                                     # quadprog: unbounded (module docstring)
        x, _, _, its = quadprog.solve_qp(H, -c, *((A.T, lower, p) if A.shape[0] else ()))[:4]
    except ValueError as err:                # "constraints are inconsistent" or "G is not positive definite"
        return (QPStatus.INFEASIBLE if "inconsistent" in str(err) else QPStatus.FAILED), None, 0
    return QPStatus.SOLVED, x, int(its[0])


#: DAQP's constraint type "active at its lower bound" (daqp's constants.h: ACTIVE | LOWER); an
#: ACTIVE row alone is taken at its upper bound, here infinite
_DAQP_ACTIVE_LOWER = 3


def _daqp_definite(H, c, Ai, bi, cap, active) -> tuple[Status, np.ndarray | None, int, np.ndarray | None]:
    """DAQP on ``min 1/2 x'Hx + c'x`` s.t. ``Ai x >= bi``, its working set started at the rows
    ``active`` (or empty): ``(status, x, iterations, rows active at x)``."""
    sense = None
    if active is not None and active.size:
        sense = np.zeros(Ai.shape[0], np.int32)
        sense[active] = _DAQP_ACTIVE_LOWER
    x, _, flag, info = daqp.solve(H, c, Ai, _unbounded(Ai.shape[0]), bi, sense, iter_limit=cap,
                                 primal_tol=DAQP_PRIMAL_TOL)
    status = _DAQP_STATUS.get(flag, QPStatus.FAILED)
    if status is not QPStatus.SOLVED:
        return status, None, int(info["iterations"]), None
    return status, x, int(info["iterations"]), np.flatnonzero(info["lam"])


@lru_cache(maxsize=256)
def _unbounded(m: int) -> np.ndarray:
    """``m`` upper bounds ``+inf``, made once per size (DAQP takes writable buffers only and
    does not write them)."""
    return np.full(m, np.inf)


@lru_cache(maxsize=256)
def _equality_sense(p: int, rows: int) -> np.ndarray | None:
    """DAQP's constraint types: 5 (equality) for the first ``p`` of ``rows``, 0 (inequality)
    for the rest; None (all inequalities) without equalities.  Made once per size, as
    :func:`_unbounded`."""
    if not p:
        return None
    sense = np.zeros(rows, np.int32)
    sense[:p] = 5
    return sense


def warm_up() -> None:
    """Load (or compile) the compiled parts of :func:`solve_built`'s general path (the test of
    ``H``, the rank of the equality rows and the feasibility check) on a 2 x 2 problem with an
    equality row, for a caller whose warm-up only meets the ``definite`` path: a later fallback
    to the general path then loads nothing in its loop."""
    solve_built(np.eye(2), np.zeros(2), np.ones((1, 2)), np.ones(1), np.eye(2), np.zeros(2))


def feasible(x: np.ndarray, Ae: np.ndarray, be: np.ndarray, Ai: np.ndarray, bi: np.ndarray, tol: float) -> bool:
    """Every equality row ``|a x - b|`` and inequality row ``b - a x`` below ``tol`` times
    ``(1 + max|x|)(1 + max_j |a_ij|) + |b_i|``; False for a non-finite ``x``."""
    x = _c(np.asarray(x, dtype=float))
    return not np.isnan(kernel.accepted(np.zeros((x.size, x.size)), np.zeros(x.size), x, _c(Ae), _c(be), _c(Ai),
                                        _c(bi), tol))


def _c(a: np.ndarray) -> np.ndarray:
    """``a`` C-contiguous (the compiled loops are specialised for that layout)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _cvxopt(H, c, Ae, be, Ai, bi):
    import cvxopt
    from cvxopt import solvers

    M = lambda a: cvxopt.matrix(np.ascontiguousarray(a, dtype=float))  # noqa: E731
    kwargs = {}
    if Ai.shape[0]:
        kwargs.update(G=M(-Ai), h=M(-bi))
    if Ae.shape[0]:
        kwargs.update(A=M(Ae), b=M(be))
    try:
        sol = solvers.qp(M(H), M(c), options={"show_progress": False, "maxiters": CVXOPT_MAX_ITERATIONS}, **kwargs)
    except (ValueError, ArithmeticError):
        return QPStatus.FAILED, None, 0
    if sol["status"] == "optimal":
        return QPStatus.SOLVED, np.array(sol["x"]).ravel(), int(sol["iterations"])
    if sol["status"] in ("primal infeasible", "dual infeasible"):
        return QPStatus.INFEASIBLE, None, int(sol["iterations"])
    if int(sol.get("iterations", 0)) >= CVXOPT_MAX_ITERATIONS:
        return QPStatus.MAX_PIVOTS, None, int(sol["iterations"])
    return QPStatus.FAILED, None, int(sol.get("iterations", 0))


__all__ = ["BACKENDS", "CVXOPT_MAX_ITERATIONS", "DEFAULT_BACKEND", "MAX_ITERATIONS_FLOOR", "MAX_ITERATIONS_PER_ROW",
           "QPResult", "QPStatus", "REGULARIZATION_SCHEDULE", "check_options", "default_max_iterations",
           "independent_equalities", "solve_built", "solve_qp", "warm_up"]
