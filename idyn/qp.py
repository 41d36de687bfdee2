"""One adapter over dense convex QP backends, shared by every controller and planner.

Problem (all arrays dense, float64)::

    minimize    1/2 x^T H x + c^T x
    subject to  A_eq x  = b_eq
                A_in x >= b_in

Backends: ``"quadprog"`` (Goldfarb-Idnani dual active set, the default: fast on the small dense
problems of a control step) and ``"cvxopt"`` (interior point; accepts a merely positive
semi-definite ``H``).  The adapter adds what a control loop needs around them:

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
  compiled loops (:mod:`idyn.kernels`); quadprog is called through its Python API.
* **Status, not exceptions**: a failed solve returns ``QPResult`` with ``status`` INFEASIBLE or
  FAILED and ``x`` filled with NaN; the caller falls back.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import quadprog

from . import kernels as kernel
from . import validation
from .errors import InvalidInputError
from .lcp.qr import check_info
from .status import Status

#: Relative ridge values tried, in order, when the backend rejects a singular Hessian.
REGULARIZATION_SCHEDULE = (1e-9, 1e-7, 1e-5)
#: Relative tolerance of the rank decision on equality rows.
EQUALITY_RANK_TOL = 1e-10

BACKENDS = ("quadprog", "cvxopt")


#: the adapter's status is the package's one :class:`idyn.Status` (SOLVED, INFEASIBLE or FAILED)
QPStatus = Status


#: a Cholesky pivot below this fraction of the largest counts as singular
PD_TOL = 1e-12


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
    """

    x: np.ndarray
    status: QPStatus
    backend: str
    regularization: float = 0.0
    objective: float = float("nan")
    iterations: int = 0
    dropped_equalities: int = 0

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


def solve_qp(H, c, A_eq=None, b_eq=None, A_in=None, b_in=None, *, backend: str = "quadprog",
             regularize: bool = True, feasibility_tol: float = 1e-7) -> QPResult:
    """Solve the convex QP of the module docstring; never raises on solver failure.

    Args:
        H: (n, n) symmetric positive (semi-)definite Hessian.
        c: (n,) linear term.
        A_eq, b_eq: equality rows (may be dependent, see module docstring).
        A_in, b_in: inequality rows ``A_in x >= b_in``.
        backend: ``"quadprog"`` or ``"cvxopt"``.
        regularize: allow the ridge fallback of :data:`REGULARIZATION_SCHEDULE`.
        feasibility_tol: relative tolerance of the final constraint check.

    Raises:
        ShapeError, NonFiniteError: malformed input.
        InvalidInputError: unknown backend.
    """
    if backend not in BACKENDS:
        raise InvalidInputError(f"unknown QP backend {backend!r}; choose from {BACKENDS}")
    H = validation.square(H, "H")
    n = H.shape[0]
    c = validation.vector(c, n, "c")
    Ae, be = _rows(A_eq, b_eq, n, "eq")
    Ai, bi = _rows(A_in, b_in, n, "in")
    return solve_built(H, c, Ae, be, Ai, bi, backend=backend, regularize=regularize,
                       feasibility_tol=feasibility_tol)


def solve_built(H: np.ndarray, c: np.ndarray, Ae: np.ndarray, be: np.ndarray, Ai: np.ndarray, bi: np.ndarray,
                *, backend: str = "quadprog", regularize: bool = True, feasibility_tol: float = 1e-7,
                definite: bool = False) -> QPResult:
    """:func:`solve_qp` after its input checks, for float arrays a caller built itself with
    consistent shapes (``H`` (n, n), ``c`` (n,), ``Ae`` (p, n), ``Ai`` (q, n); zero rows for
    none) and a known ``backend``: the same dependent-equality reduction, regularisation
    schedule, feasibility check and result.  A non-finite entry is not reported as bad input
    but fails the feasibility check (status INFEASIBLE or FAILED).

    ``definite``: the caller guarantees that ``H`` is exactly symmetric and passes the
    positive-definiteness test by construction (e.g. a ridge bounding its condition number well
    below ``1 / PD_TOL``) and C-contiguous arrays; with no equality rows and some inequality
    rows, quadprog's answer is then taken, if the feasibility check accepts it, without the test
    and the symmetrisation (which would not change ``H``); otherwise the general path runs."""
    if definite and backend == "quadprog" and not Ae.shape[0] and H.shape[0] and Ai.shape[0]:
        try:
            x, _, _, its = quadprog.solve_qp(H, -c, Ai.T, bi, 0)[:4]
        except ValueError:               # the general path gives the verdict
            pass
        else:
            value = kernel.accepted(H, c, x, Ae, be, Ai, bi, feasibility_tol)
            if value == value:
                return QPResult(x, QPStatus.SOLVED, backend, 0.0, value, int(its[0]))
    n = H.shape[0]
    Ae_kept, be_kept = independent_equalities(Ae, be) if Ae.shape[0] else (Ae, be)
    dropped = Ae.shape[0] - Ae_kept.shape[0]
    if n == 0:
        return QPResult(np.zeros(0), QPStatus.SOLVED, backend, objective=0.0, dropped_equalities=dropped)
    H, c, Ae, be, Ai, bi = _c(H), _c(c), _c(Ae), _c(be), _c(Ai), _c(bi)
    Hs = np.empty((n, n))
    scale, definite = kernel.prepare(H, PD_TOL, Hs)
    H = Hs
    ridges = [s * scale for s in REGULARIZATION_SCHEDULE] if regularize else []
    verdicts, status, eps, iters = set(), QPStatus.FAILED, 0.0, 0
    if backend == "quadprog":
        if not Ae_kept.shape[0]:
            C, b = (Ai.T, bi) if Ai.shape[0] else (None, None)
        else:
            C, b = np.concatenate((Ae_kept, Ai)).T, np.concatenate((be_kept, bi))
        for eps in ([0.0] if definite else []) + ridges:
            try:
                x, _, _, its = quadprog.solve_qp(H + eps * np.eye(n) if eps else H, -c, C, b, Ae_kept.shape[0])[:4]
            except ValueError as err:        # "constraints are inconsistent" or "G is not positive definite"
                status = QPStatus.INFEASIBLE if "inconsistent" in str(err) else QPStatus.FAILED
                verdicts.add(status)
                continue
            iters = int(its[0])
            value = kernel.accepted(H, c, x, Ae, be, Ai, bi, feasibility_tol)
            if value == value:               # not NaN: feasible
                return QPResult(x, QPStatus.SOLVED, backend, eps, value, iters, dropped)
            status = QPStatus.INFEASIBLE
            verdicts.add(status)
    used = backend
    if backend == "cvxopt" or regularize:    # the backend asked for, or quadprog's last fallback
        used = "cvxopt"                      # (it accepts a semi-definite H)
        # its interior point method can also stall on a singular H ("unknown": a singular KKT
        # system), so it gets the same ridge schedule, unregularised first
        for eps in [0.0] + ridges:
            status, x, iters = _cvxopt(H + eps * np.eye(n) if eps else H, c, Ae_kept, be_kept, Ai, bi)
            value = kernel.accepted(H, c, x, Ae, be, Ai, bi, feasibility_tol) if status is QPStatus.SOLVED \
                else np.nan
            if status is QPStatus.SOLVED and value != value:
                status = QPStatus.INFEASIBLE
            verdicts.add(status)
            # INFEASIBLE is not trusted on its own: with a nearly singular H the dual active-set
            # method breaks down with that message, so the better-conditioned attempts still run
            if status is QPStatus.SOLVED:
                return QPResult(x, status, used, eps, value, iters, dropped)
    status = QPStatus.INFEASIBLE if QPStatus.INFEASIBLE in verdicts else status
    return QPResult(np.full(n, np.nan), status, used, eps, iterations=iters, dropped_equalities=dropped)


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
        sol = solvers.qp(M(H), M(c), options={"show_progress": False}, **kwargs)
    except (ValueError, ArithmeticError):
        return QPStatus.FAILED, None, 0
    if sol["status"] == "optimal":
        return QPStatus.SOLVED, np.array(sol["x"]).ravel(), int(sol["iterations"])
    if sol["status"] in ("primal infeasible", "dual infeasible"):
        return QPStatus.INFEASIBLE, None, int(sol["iterations"])
    return QPStatus.FAILED, None, int(sol.get("iterations", 0))


__all__ = ["QPResult", "QPStatus", "BACKENDS", "REGULARIZATION_SCHEDULE", "independent_equalities",
           "solve_built", "solve_qp", "warm_up"]
