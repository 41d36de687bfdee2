"""One adapter over the conic backends that solve the constraint solver's convex programs.

Every program the solver builds (the QP of Sec. 5.3, the reduced QP of Sec. 6.2, the
friction-cone QCQP of Sec. 6.3 / Appendix A) has the form

    minimize    1/2 x^T P x + c^T x
    subject to  A_eq x  = b_eq
                A_in x >= b_in
                mu_k x[t_k] >= || (x[r_k], x[s_k]) ||     (one second-order cone per contact)

The QCQP's quadratic constraint mu^2 lambda_n^2 >= lambda_r^2 + lambda_s^2 with lambda_n >= 0
(eq. 142) is exactly this second-order cone, so the QCQP is a second-order cone program.

Backends: ``clarabel`` (sparse interior point, the default: the faster on every example of
the ``constraint-solver`` command) and ``cvxopt`` (``coneqp``). A backend that does
not converge is reported through :class:`ConicStatus`; the caller decides the fallback.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError

BACKENDS = ("clarabel", "cvxopt")


class ConicStatus(enum.Enum):
    SOLVED = "solved"
    ALMOST_SOLVED = "almost_solved"      # converged to the backend's reduced tolerances
    MAX_ITERATIONS = "max_iterations"
    NUMERICAL_ERROR = "numerical_error"
    INFEASIBLE = "infeasible"            # clarabel only; cvxopt's coneqp cannot detect it
    # (the paper's programs are feasible by construction; an exact-normals round is only for
    # a consistent active set, see appendix_a.with_exact_normals)

    @property
    def ok(self) -> bool:
        return self in (ConicStatus.SOLVED, ConicStatus.ALMOST_SOLVED)


@dataclass
class ConicProgram:
    """The program above; matrices are scipy.sparse (any format) or dense arrays."""
    P: sp.spmatrix
    c: np.ndarray
    A_eq: sp.spmatrix
    b_eq: np.ndarray
    A_in: sp.spmatrix
    b_in: np.ndarray
    cone_t: np.ndarray          # index of mu*x_t in each cone
    cone_r: np.ndarray
    cone_s: np.ndarray          # -1 for a 2D contact is not allowed: 2D friction is linear rows
    cone_mu: np.ndarray

    @property
    def n(self) -> int:
        return self.c.shape[0]

    @property
    def dense(self) -> bool:
        """P, A_eq and A_in are all arrays (a small program, built without scipy.sparse)."""
        return not any(sp.issparse(M) for M in (self.P, self.A_eq, self.A_in))


@dataclass
class ConicResult:
    x: np.ndarray
    status: ConicStatus
    iterations: int
    solve_time: float
    backend: str


def _cone_entries(prog: ConicProgram):
    """(rows, cols, values) of S in s = -S x for the cones, ordered (t, r, s) per cone as both
    backends expect; one entry per row."""
    k = prog.cone_t.shape[0]
    cols, vals = np.empty(3 * k, dtype=int), np.full(3 * k, -1.0)
    cols[0::3], cols[1::3], cols[2::3] = prog.cone_t, prog.cone_r, prog.cone_s
    vals[0::3] = -prog.cone_mu
    return np.arange(3 * k), cols, vals


def _cone_rows(prog: ConicProgram) -> sp.csc_matrix:
    """S as a sparse matrix (3 rows per cone)."""
    rows, cols, vals = _cone_entries(prog)
    return sp.csc_matrix((vals, (rows, cols)), shape=(rows.shape[0], prog.n))


def _csc(values: np.ndarray, stored: np.ndarray) -> sp.csc_matrix:
    """The entries of ``values`` where ``stored`` is True as CSC, laid out as scipy lays out
    a canonical matrix (column by column, rows ascending): the matrices scipy.sparse builds
    from the same entries, without its format conversions."""
    cols, rows = np.nonzero(stored.T)
    indptr = np.zeros(values.shape[1] + 1, dtype=np.int32)
    np.cumsum(np.bincount(cols, minlength=values.shape[1]), out=indptr[1:])
    return sp.csc_matrix((values[rows, cols], rows.astype(np.int32), indptr), shape=values.shape)


@dataclass
class _Scaled:
    """The program with the objective / sigma and every linear row / its largest entry.

    Dense programs stay dense; ``stored`` then holds the non-zero patterns of the unscaled
    P, A_eq and A_in, the entries a sparse copy of the program stores (a scaled entry that
    underflows to zero stays stored, as it does in the sparse form)."""
    P: sp.csc_matrix | np.ndarray
    c: np.ndarray
    A_eq: sp.csc_matrix | np.ndarray
    b_eq: np.ndarray
    A_in: sp.csc_matrix | np.ndarray
    b_in: np.ndarray
    sigma: float
    stored: tuple | None = None


def _row_scaled(A: sp.csc_matrix | np.ndarray, b: np.ndarray):
    """diag(r) A and r b with r_i = 1 / max_j |A_ij|: each stored entry times its row's r (the
    product diag(r) @ A went through a sparse matrix product and format conversions)."""
    if not sp.issparse(A):
        norm = np.max(np.abs(A), axis=1, initial=0.0)
        r = 1.0 / np.where(norm > 0, norm, 1.0)
        return A * r[:, None], b * r
    scaled = A.copy()
    scaled.sum_duplicates()
    norm = np.zeros(A.shape[0])
    np.maximum.at(norm, scaled.indices, np.abs(scaled.data))
    r = 1.0 / np.where(norm > 0, norm, 1.0)
    scaled.data *= r[scaled.indices]
    return scaled, b * r


def _equilibrate(prog: ConicProgram) -> _Scaled:
    """Divide the objective by the largest diagonal entry of P and each linear row by its
    largest entry (same minimizer, same feasible set).

    The programs mix weights 1, zeta = 1/h and (h B_t)^2 ~ 1e10 on the diagonal of P (the
    Coulomb dampers of Sec. 6.4, B = 1e6 / h). Unscaled, clarabel reports a trivially
    feasible one-contact program (lambda_t = 0 is feasible) primal infeasible after one
    iteration, and cvxopt's absolute tolerances are unreachable at objective values ~1e10
    (counts on a sphere stack: docs/design.md). Scaling the variables by P_ii^-1/2 instead
    would squash the cone: the three variables of one cone must share a scale. Frictionless
    programs need it too. The price: near-zero optima are found to ~1e-5 absolute instead of
    ~1e-6.
    """
    dense = prog.dense
    P = prog.P if dense else sp.csc_matrix(prog.P)
    largest = float(np.max(np.abs(P.diagonal()), initial=0.0))
    sigma = largest if largest > 0 else 1.0
    A_eq, b_eq = _row_scaled(prog.A_eq if dense else sp.csc_matrix(prog.A_eq), prog.b_eq)
    A_in, b_in = _row_scaled(prog.A_in if dense else sp.csc_matrix(prog.A_in), prog.b_in)
    stored = (prog.P != 0, prog.A_eq != 0, prog.A_in != 0) if dense else None
    # P * (1 / sigma): scipy.sparse divides by a scalar so, and dense P must round alike
    return _Scaled(P * (1.0 / sigma), prog.c / sigma, A_eq, b_eq, A_in, b_in, sigma, stored)


def _backend_matrices(prog: ConicProgram, sc: _Scaled, P_upper: bool, stack_eq: bool):
    """(P, A_eq, G) for the backends as CSC: P (its upper triangle if ``P_upper``),
    G = [A_eq; -A_in; S] if ``stack_eq`` (clarabel's A y + s = b; A_eq None) else [-A_in; S]
    with A_eq apart (cvxopt's). Dense programs go to CSC once, without sparse stacking."""
    if sc.stored is None:
        P = sp.triu(sc.P, format="csc") if P_upper else sc.P
        blocks = [sc.A_eq, -sc.A_in, _cone_rows(prog)]
        if stack_eq:
            return P, None, sp.vstack(blocks, format="csc")
        return P, sc.A_eq, sp.vstack(blocks[1:], format="csc")
    P_stored, eq_stored, in_stored = sc.stored
    rows, cols, vals = _cone_entries(prog)
    S = np.zeros((rows.shape[0], prog.n))
    S_stored = np.zeros(S.shape, dtype=bool)
    S[rows, cols], S_stored[rows, cols] = vals, True
    P = _csc(sc.P, np.triu(P_stored) if P_upper else P_stored)
    if stack_eq:
        return P, None, _csc(np.vstack([sc.A_eq, -sc.A_in, S]), np.vstack([eq_stored, in_stored, S_stored]))
    return P, _csc(sc.A_eq, eq_stored), _csc(np.vstack([-sc.A_in, S]), np.vstack([in_stored, S_stored]))


def _solve_clarabel(prog: ConicProgram, tol: float, max_iter: int) -> ConicResult:
    import clarabel

    sc = _equilibrate(prog)
    # standard form A y + s = b, s in K: [A_eq; -A_in; S] and [b_eq; -b_in; 0]
    P, _, A = _backend_matrices(prog, sc, P_upper=True, stack_eq=True)
    b = np.concatenate([sc.b_eq, -sc.b_in, np.zeros(3 * prog.cone_t.shape[0])])
    cones = []
    if prog.b_eq.shape[0]:
        cones.append(clarabel.ZeroConeT(prog.b_eq.shape[0]))
    if prog.b_in.shape[0]:
        cones.append(clarabel.NonnegativeConeT(prog.b_in.shape[0]))
    cones.extend(clarabel.SecondOrderConeT(3) for _ in range(prog.cone_t.shape[0]))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = tol
    settings.max_iter = max_iter
    t0 = time.perf_counter()
    sol = clarabel.DefaultSolver(P, sc.c, A, b, cones, settings).solve()
    elapsed = time.perf_counter() - t0
    name = str(sol.status).split(".")[-1]
    status = {
        "Solved": ConicStatus.SOLVED, "AlmostSolved": ConicStatus.ALMOST_SOLVED,
        "MaxIterations": ConicStatus.MAX_ITERATIONS, "MaxTime": ConicStatus.MAX_ITERATIONS,
        "PrimalInfeasible": ConicStatus.INFEASIBLE, "AlmostPrimalInfeasible": ConicStatus.INFEASIBLE,
    }.get(name, ConicStatus.NUMERICAL_ERROR)
    return ConicResult(np.asarray(sol.x), status, int(sol.iterations), elapsed, "clarabel")


def _to_cvxopt(M):
    import cvxopt

    M = sp.coo_matrix(M)
    return cvxopt.spmatrix(M.data.tolist(), M.row.tolist(), M.col.tolist(), size=M.shape)


def _solve_cvxopt(prog: ConicProgram, tol: float, max_iter: int) -> ConicResult:
    import cvxopt
    from cvxopt import solvers

    sc = _equilibrate(prog)
    P, A_eq, A_in = _backend_matrices(prog, sc, P_upper=False, stack_eq=False)
    h = np.concatenate([-sc.b_in, np.zeros(3 * prog.cone_t.shape[0])])
    dims = {"l": int(prog.b_in.shape[0]), "q": [3] * int(prog.cone_t.shape[0]), "s": []}
    options = {"show_progress": False, "abstol": tol, "reltol": tol, "feastol": tol,
               "maxiters": max_iter}
    eq = prog.b_eq.shape[0] > 0
    t0 = time.perf_counter()
    try:
        sol = solvers.coneqp(_to_cvxopt(P), cvxopt.matrix(sc.c), _to_cvxopt(A_in),
                             cvxopt.matrix(h), dims,
                             _to_cvxopt(A_eq) if eq else None,
                             cvxopt.matrix(sc.b_eq) if eq else None, options=options)
    except (ValueError, ArithmeticError):
        return ConicResult(np.zeros(prog.n), ConicStatus.NUMERICAL_ERROR, 0,
                           time.perf_counter() - t0, "cvxopt")
    elapsed = time.perf_counter() - t0
    status = {"optimal": ConicStatus.SOLVED}.get(sol["status"], ConicStatus.MAX_ITERATIONS)
    if sol["x"] is None:
        return ConicResult(np.zeros(prog.n), ConicStatus.NUMERICAL_ERROR, int(sol["iterations"]),
                           elapsed, "cvxopt")
    return ConicResult(np.array(sol["x"]).ravel(), status, int(sol["iterations"]), elapsed,
                       "cvxopt")


def solve_conic(prog: ConicProgram, backend: str = "clarabel", tol: float = 1e-9,
                max_iter: int = 200) -> ConicResult:
    """Solve ``prog`` with ``backend`` (one of :data:`BACKENDS`)."""
    if backend == "clarabel":
        return _solve_clarabel(prog, tol, max_iter)
    if backend == "cvxopt":
        return _solve_cvxopt(prog, tol, max_iter)
    raise InvalidInputError(f"unknown conic backend {backend!r}; choose one of {BACKENDS}")
