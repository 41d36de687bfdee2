"""The first-order scheme (paper Sec. 4.2, eqs. 36-39) and the solver that drives it.

Given q0, v0, h and the constraints evaluated at (q0, v0), :meth:`ConstraintSolver.solve`
computes lambda1 — by one linear solve when only bilateral rows exist (eqs. 51-62), otherwise
by the convex program of Appendix A (QP for unilateral rows, eqs. 83-85; QP with linear Coulomb
rows in 2D, eqs. 99-108; second-order cone program with a true friction cone in 3D,
eqs. 109-120 and 124-198) — and then

    v1 = v0 + h M^-1 (G^T lambda1 + f)        (eq. 37)
    q1 = q0 (+) h v1                          (eq. 36; the caller's integrate, e.g. pinocchio's)

Constraint forces are integrated implicitly (L-stable for any K, B and h); the multibody
semi-explicitly. The program is convex and feasible by construction; every solve reports the
backend status and residuals, and a backend that fails is retried with the other backend.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from . import appendix_a, unilateral_newton
from .bilateral import solve_bilateral
from .conic import BACKENDS, ConicStatus, solve_conic
from .constraints import ConstraintProblem

FORMULATIONS = ("auto", "reduced", "lifted")
_NEWTON_MAX_NV = 64       # dense 2 nv x 2 nv Newton systems stay cheaper than a conic solve
_CONIC = {s.value for s in ConicStatus}


@dataclass
class SolveInfo:
    """How lambda was obtained and how well it satisfies the constraints.

    ``method``: "linear" (bilateral only), "closed_form" (uncoupled unilateral rows), or
    "conic-reduced" / "conic-lifted". Residuals are absolute, in the units of lambda:
    ``spring`` = max violation of lambda >= rho - chi G a (unilateral and normal rows),
    ``nonnegativity`` = max(-lambda) over those rows, ``cone`` = max(|lambda_t| - mu lambda_n),
    ``dynamics`` = max |M vdot - G^T lambda - f| (the accuracy of the solve with M).
    """
    method: str
    status: str = "solved"
    backend: str | None = None
    iterations: int = 0
    solve_time: float = 0.0
    fallback: bool = False
    residuals: dict = field(default_factory=dict)
    n_variables: int = 0


@dataclass
class ConstraintSolution:
    """lambda per kind (contact tangents in contact order, zero where mu = 0), v1, vdot."""
    lambda_b: np.ndarray
    lambda_u: np.ndarray
    lambda_n: np.ndarray
    lambda_r: np.ndarray
    lambda_s: np.ndarray
    vdot: np.ndarray
    v1: np.ndarray
    info: SolveInfo

    def generalized_force(self, problem: ConstraintProblem) -> np.ndarray:
        """G^T lambda, the constraint force acting on the multibody."""
        out = np.zeros(problem.nv)
        for rows, lam in _pairs(problem, self):
            out += rows.G.T @ lam
        return out


def _pairs(problem: ConstraintProblem, sol: ConstraintSolution):
    if problem.bilateral is not None:
        yield problem.bilateral, sol.lambda_b
    if problem.unilateral is not None:
        yield problem.unilateral, sol.lambda_u
    c = problem.contacts
    if c is not None:
        yield c.normal, sol.lambda_n
        yield c.tangent_r, sol.lambda_r
        if c.tangent_s is not None:
            yield c.tangent_s, sol.lambda_s


class ConstraintSolver:
    """Reusable solver settings (the problem data change every step).

    backend: "clarabel" (default) or "cvxopt". formulation: "reduced" (the paper's variables
    lambda*), "lifted" (sparse, keeps a = vdot as a variable) or "auto": lifted without
    friction rows (O(nnz) even when G* Lambda G*^T is dense and low-rank, 900 Winkler rows on
    one box, and better conditioned: clarabel can misreport a stiff reduced QP infeasible
    where the lifted one solves), reduced with friction rows (the
    exact-normal programs were more reliable in that form on the examples). Uncoupled
    frictionless rows are solved in closed form. A failed solve is retried with the other
    backend, then (single program) with the other formulation; the status says so. zeta: weight of |lambda_n|^2 and |lambda_u|^2
    (Sec. 6.1; default 1/h as in the paper).

    exact_normals (default True) applies to programs with friction rows. The paper's program
    bounds lambda_n only from below (eq. 144) and trades |lambda_n|^2 (weight zeta) against
    |beta|^2, so during sliding the optimum *inflates* lambda_n to buy friction, the effect
    Sec. 6.1 warns about: a sliding particle or box leaves the plane
    (tests/test_constraint_solver_core.py, the incline example; docs/design.md). With exact_normals the
    unilateral and normal rows obey eq. 68 exactly (lambda = max(0, -K phi1 - B phi_dot1 -
    Mhat Gdot v), the law the paper's QP is meant to reproduce): an active set of rows holds
    the spring law with equality, the rest are zero, and each round is the paper's convex
    program (same objective, cones, tangential rows) with those equalities, seeded by the
    frictionless program's support; rounds stop when lambda >= 0 on the set and the spring
    bound <= 0 off it (usually one round after the seed). In the reduced form a round is first
    solved as its equality-constrained QP (one sparse KKT solve); the conic backend is called
    only when that optimum leaves a friction cone, i.e. when some contact slides.
    exact_normals=False solves the paper's single program literally.

    kkt_newton (default True): coupled frictionless programs on small multibodies (nv <= 64)
    are solved by semismooth Newton on their 2 nv KKT equations
    (:mod:`~idyn.constraint_solver.unilateral_newton`), warm-started from the previous call's
    KKT point, with the conic backends as fallback (a few Newton iterations per step, far
    cheaper than an interior-point solve; docs/design.md).
    """

    def __init__(self, backend: str = "clarabel", formulation: str = "auto",
                 zeta: float | None = None, exact_normals: bool = True, tol: float = 1e-9,
                 max_iter: int = 200, max_rounds: int = 8, kkt_newton: bool = True):
        if backend not in BACKENDS:
            raise InvalidInputError(f"unknown backend {backend!r}; choose one of {BACKENDS}")
        if formulation not in FORMULATIONS:
            raise InvalidInputError(f"unknown formulation {formulation!r}; one of {FORMULATIONS}")
        if zeta is not None and not (np.isfinite(zeta) and zeta > 0):
            raise InvalidInputError(f"zeta must be positive and finite, got {zeta}")
        self.backend, self.formulation, self.zeta = backend, formulation, zeta
        self.exact_normals, self.max_rounds, self.kkt_newton = exact_normals, max_rounds, kkt_newton
        self.tol, self.max_iter = tol, max_iter
        self._warm = None        # last KKT point of unilateral_newton, a warm start only

    # ------------------------------------------------------------------ public
    def solve(self, problem: ConstraintProblem) -> ConstraintSolution:
        t0 = time.perf_counter()
        if problem.unilateral is None and problem.contacts is None:
            sol = self._solve_bilateral(problem)
        else:
            sol = self._solve_program(problem)
        sol.info.solve_time = time.perf_counter() - t0
        return sol

    def step(self, problem: ConstraintProblem, q0, integrate):
        """(q1, solution): eq. 36 with ``integrate(q0, v1, h)`` (e.g. RobotModel.integrate)."""
        sol = self.solve(problem)
        return integrate(q0, sol.v1, problem.h), sol

    # ------------------------------------------------------------------ internals
    def _finish(self, problem, lam_b, lam_u, lam_n, lam_r, lam_s, info) -> ConstraintSolution:
        sol = ConstraintSolution(lam_b, lam_u, lam_n, lam_r, lam_s, np.zeros(problem.nv),
                                 problem.v0, info)
        gf = sol.generalized_force(problem)
        sol.vdot = problem.M.solve(gf + problem.f)
        sol.v1 = problem.v0 + problem.h * sol.vdot            # eq. 37
        Mv = problem.M.matrix @ sol.vdot
        info.residuals["dynamics"] = float(np.max(np.abs(Mv - gf - problem.f), initial=0.0))
        return sol

    def _solve_bilateral(self, problem: ConstraintProblem) -> ConstraintSolution:
        z = np.zeros(0)
        if problem.bilateral is None:
            return self._finish(problem, z, z, z, z, z, SolveInfo("unconstrained"))
        b = solve_bilateral(problem)
        info = SolveInfo("linear", n_variables=b.lam.shape[0])
        return self._finish(problem, b.lam, z, z, z, z, info)

    def _choose_formulation(self, problem, rows) -> str:
        if self.formulation != "auto":
            return self.formulation
        return "lifted" if rows.rs.shape[0] == 0 else "reduced"

    @staticmethod
    def _build(problem, rows, inertia, form):
        if form == "reduced":
            return appendix_a.reduced_program(problem, rows, inertia).program
        return appendix_a.lifted_program(problem, rows)

    def _solve_program(self, problem: ConstraintProblem) -> ConstraintSolution:
        zeta = self.zeta if self.zeta is not None else 1.0 / problem.h
        rows = appendix_a.layout(problem, zeta)
        inertia = appendix_a.bilateral_inertia(problem, rows)
        form = self._choose_formulation(problem, rows)
        lam = None
        if rows.rs.shape[0] == 0 and (rows.m <= problem.nv or form == "reduced"):
            lam = appendix_a.separable_solution(
                rows, appendix_a.reduced_program(problem, rows, inertia))
            if lam is not None:
                info = SolveInfo("closed_form", n_variables=rows.m)
        if (lam is None and self.kkt_newton and rows.rs.shape[0] == 0
                and problem.nv <= _NEWTON_MAX_NV):
            lam, info = self._newton(problem, rows, inertia)
        if lam is None and self.exact_normals and rows.rs.shape[0] > 0:
            red = appendix_a.reduced_program(problem, rows, inertia) if form == "reduced" else None
            lam, info = self._active_set(problem, rows, inertia, form, red)
        elif lam is None:
            lam, info = self._conic(self._build(problem, rows, inertia, form), form)
            if not ConicStatus(info.status).ok:
                # the other formulation is the same program, differently conditioned
                other = "lifted" if form == "reduced" else "reduced"
                x, retry = self._conic(self._build(problem, rows, inertia, other), other)
                if ConicStatus(retry.status).ok:
                    lam, info = x, retry
                    info.fallback = True
            lam = lam[:rows.m]
        a, lam_b = appendix_a.recover(problem, rows, lam, inertia)
        self._residuals(rows, lam, a, info)
        return self._finish(problem, lam_b, *self._split(problem, rows, lam), info)

    def _newton(self, problem, rows, inertia):
        """The frictionless QP through its 2 nv KKT equations (unilateral_newton), started
        from the last step's KKT point; None when Newton does not converge (the conic
        backends then solve it)."""
        G = rows.G.toarray() if sp.issparse(rows.G) else rows.G
        Minv = inertia.matrix.toarray() if sp.issparse(inertia.matrix) else inertia.matrix
        r0 = problem.f + (rows.bilateral.G.T @ rows.rho_b if rows.bilateral else 0.0)
        res = unilateral_newton.solve(G, rows.chi, rows.rho, rows.weight, Minv, r0, self._warm)
        if not res.converged:
            self._warm = None
            return None, None
        self._warm = res.x
        info = SolveInfo("kkt-newton", iterations=res.iterations, n_variables=rows.m)
        info.residuals["kkt"] = res.residual
        return res.lam, info

    def _active_set(self, problem, rows, inertia, form, red):
        """Eq. 68 exactly on the normal rows: convex programs over an active set.

        The first active set is the frictionless law's (appendix_a.frictionless_active_set;
        its round is feasible by construction); the frictionless QP seeds it only
        when that pivoting does not settle (or in the lifted form). In the reduced form a round
        is first solved without its cones (one KKT solve, appendix_a.equality_optimum); the
        conic backend runs only when that answer leaves a friction cone (a sliding contact)."""
        nu = rows.nu
        frictionless = np.zeros(rows.m)
        lcp = None
        if red is not None:
            lcp = appendix_a.frictionless_active_set(rows, red)
        if lcp is None:
            seed = self._solve_program(problem.frictionless()).lambda_u
            active = np.flatnonzero(seed > 1e-9 * (1.0 + np.max(seed, initial=0.0)))
            frictionless[nu] = seed
        else:
            active, frictionless[nu] = lcp
        program = None
        seen, iterations, rounds = set(), 0, 0
        while True:
            rounds += 1
            x = appendix_a.equality_optimum(red, active) if red is not None else None
            if x is not None and appendix_a.cone_violation(rows, x) <= \
                    1e-12 * (1.0 + np.max(np.abs(x), initial=0.0)):
                info = SolveInfo(f"kkt-{form}", ConicStatus.SOLVED.value, "kkt", 1,
                                 n_variables=rows.m)
            else:
                if program is None:
                    program = red.program if red is not None else \
                        self._build(problem, rows, inertia, form)
                x, info = self._conic(appendix_a.with_exact_normals(program, rows, active), form)
            iterations += info.iterations
            lam = x[:rows.m]
            a, _ = appendix_a.recover(problem, rows, lam, inertia)
            bound = rows.rho[nu] - rows.chi[nu] * (rows.G @ a)[nu]     # spring lower bound
            tol = 1e-9 * (1.0 + np.abs(rows.rho[nu]))
            on = np.zeros(nu.shape[0], dtype=bool)
            on[active] = True
            keep = on & (lam[nu] > -tol) | ~on & (bound > tol)
            seen.add(tuple(active))
            nxt = np.flatnonzero(keep)
            if np.array_equal(nxt, active) or tuple(nxt) in seen or rounds >= self.max_rounds:
                break
            active = nxt
        info.method += "-exact-normals"
        info.iterations = iterations
        info.residuals["active_set_rounds"] = float(rounds)
        if not ConicStatus(info.status).ok if info.status in _CONIC else True:
            # the feasible point of Appendix A: normal forces of the frictionless law, zero
            # tangential forces (always feasible); reported, never silent
            info.status, info.fallback = f"{info.status}->frictionless_fallback", True
            return frictionless, info
        if not np.array_equal(nxt, active):
            info.status = "active_set_not_converged"
        return lam, info

    def _conic(self, prog, form):
        res = solve_conic(prog, self.backend, self.tol, self.max_iter)
        fallback = False
        if not res.status.ok:
            other = next(b for b in BACKENDS if b != self.backend)
            retry = solve_conic(prog, other, self.tol, self.max_iter)
            fallback = True
            if retry.status.ok or retry.status is not ConicStatus.NUMERICAL_ERROR:
                res = retry
        info = SolveInfo(f"conic-{form}", res.status.value, res.backend, res.iterations,
                         fallback=fallback, n_variables=prog.n)
        return res.x, info

    @staticmethod
    def _split(problem, rows, lam):
        c = problem.contacts
        lam_u = lam[rows.u]
        if c is None:
            z = np.zeros(0)
            return lam_u, z, z, z
        lam_r, lam_s = np.zeros(c.m), np.zeros(c.m if c.three_d else 0)
        lam_r[rows.friction] = lam[rows.r]
        if c.three_d:
            lam_s[rows.friction] = lam[rows.s]
        return lam_u, lam[rows.n], lam_r, lam_s

    @staticmethod
    def _residuals(rows, lam, a, info):
        nu = rows.nu
        Ga = rows.G @ a
        slack = lam[nu] + rows.chi[nu] * Ga[nu] - rows.rho[nu]
        res = info.residuals
        res["spring"] = float(max(0.0, -np.min(slack, initial=0.0)))
        res["nonnegativity"] = float(max(0.0, -np.min(lam[nu], initial=0.0)))
        res["cone"] = appendix_a.cone_violation(rows, lam)
