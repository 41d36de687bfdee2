"""Bilateral, unilateral and contact constraints together: the program of Appendix A.

Variables lambda* = [lambda_n, lambda_r, lambda_s, lambda_u] (eq. 194); bilateral forces are
eliminated (eqs. 158-163). With the per-row numbers chi, rho of
:mod:`~idyn.constraint_solver.constraint_space` and a = vdot0 the program is (eqs. 124-142 with
phi1, phi_dot1, beta eliminated)

    min  1/2 (zeta |lambda_n|^2 + zeta |lambda_u|^2 + |lambda_r|^2 + |lambda_s|^2
              + |beta_r|^2 + |beta_s|^2)                                         (eq. 124)
    s.t. lambda_x + chi_x G_x a >= rho_x,  lambda_x >= 0     for x in {u, n}       (eqs. 143-144)
         beta_y = lambda_y + chi_y G_y a - rho_y                for y in {r, s}       (eqs. 145-146)
         lambda_b = rho_b - chi_b G_b a                                           (eq. 147)
         M a = G*^T lambda* + G_b^T lambda_b + f
         mu lambda_n >= |(lambda_r, lambda_s)|  (3D, eq. 142; a second-order cone)
         mu lambda_n >= +-lambda_r              (2D, eqs. 107-108)

Two equivalent forms are built:

* :func:`reduced_program` — the paper's reduction to lambda* only (eqs. 176-198): a = Lambda
  G*^T lambda* + a0 with Lambda = (M + G_b^T diag(chi_b) G_b)^-1 (eq. 189 by Woodbury), hence
  beta = T lambda* + t with T = I + diag(chi) G* Lambda G*^T, and Hessian
  H = diag(zeta, 1, 1, zeta) + T_rs^T T_rs (eq. 180), gradient g = T_rs^T t_rs (eq. 184),
  inequality rows A = T_nu, q = -t_nu (eqs. 185-186). H is sparse (O(n) non-zeros for a sphere
  stack) when M is block diagonal and there are no bilateral rows.
  Re-derived where the conversion is garbled or inconsistent: eq. 197-198 (d, e) omit the
  term G_r M^-1 G_b^T C^-1 c that the preceding expression for beta_r contains; we keep it
  (it is t_rs here). Eq. 176 omits |lambda_s|^2 which eq. 180 includes; we include it.
* :func:`lifted_program` — the same program before eliminating a, lambda_b and beta. It has
  O(nnz(G) + nnz(M)) non-zeros even when G* Lambda G*^T is dense (900 Winkler elements under
  one box: 900 x 900 dense but rank 6), so it is the faster form when rows outnumber degrees of
  freedom. Its optimal lambda* is the reduced program's (the eliminated variables are defined
  by equalities).

Feasibility and convexity (Appendix A, end): H = diag(w) + PSD is positive definite, so the
optimum is unique. The feasible set is non-empty: T_nu,nu = I + diag(chi) S with S PSD is a
P-matrix, so {lambda >= 0, T lambda + t >= 0} is non-empty for every t; with zero tangential
forces the cone holds. The paper's explicit feasible point (lambda_n = lambda_u = large,
tangential zero) works whenever T_nu,nu 1 > 0, which :func:`trivial_feasible_point` checks.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .conic import ConicProgram
from .constraint_space import delassus, spring_terms
from .constraints import ConstraintProblem, ConstraintRows
from .mass import MassMatrix


def _stack(mats, nv: int):
    mats = [m for m in mats if m.shape[0]]
    if not mats:
        return sp.csr_matrix((0, nv))
    if all(sp.issparse(m) and m.format == "csr" for m in mats):
        # CSR blocks stacked by concatenating their arrays (sp.vstack converts through COO)
        offsets = np.cumsum([0] + [m.nnz for m in mats[:-1]])
        indptr = np.concatenate([[0]] + [m.indptr[1:] + o for m, o in zip(mats, offsets)])
        return sp.csr_matrix((np.concatenate([m.data for m in mats]),
                              np.concatenate([m.indices for m in mats]), indptr),
                             shape=(sum(m.shape[0] for m in mats), nv))
    if any(sp.issparse(m) for m in mats):
        return sp.vstack([sp.csr_matrix(m) for m in mats], format="csr")
    return np.vstack(mats)


@dataclass
class RowLayout:
    """lambda* rows stacked as [n, r, s, u] with their spring terms, plus the bilateral rows."""
    G: np.ndarray | sp.csr_matrix       # G* (eq. 193)
    chi: np.ndarray
    rho: np.ndarray
    weight: np.ndarray                  # zeta for n and u rows, 1 for r and s rows
    n: slice
    r: slice
    s: slice
    u: slice
    friction: np.ndarray                # contact indices that carry tangential rows (mu > 0)
    three_d: bool
    mu: np.ndarray                      # all contacts' mu
    bilateral: ConstraintRows | None
    chi_b: np.ndarray
    rho_b: np.ndarray

    @property
    def m(self) -> int:
        return self.chi.shape[0]

    @cached_property
    def nu(self) -> np.ndarray:
        return np.r_[np.arange(self.n.start, self.n.stop), np.arange(self.u.start, self.u.stop)]

    @cached_property
    def rs(self) -> np.ndarray:
        return np.arange(self.r.start, self.s.stop)         # the r and s rows are contiguous

    @cached_property
    def cones(self):
        """(k, t, r, s, mu) of the contacts with finite mu: positions k into ``friction`` and,
        per contact, the rows of lambda* holding its normal and tangential forces (s empty
        in 2D) and its mu (eq. 142)."""
        k = np.flatnonzero(np.isfinite(self.mu[self.friction]))
        contact = self.friction[k]
        t = self.n.start + contact
        r = self.r.start + k
        s = self.s.start + k if self.three_d else np.zeros(0, dtype=int)
        return k, t, r, s, self.mu[contact]


def layout(problem: ConstraintProblem, zeta: float) -> RowLayout:
    h, mass, nv = problem.h, problem.M, problem.nv
    c, u, b = problem.contacts, problem.unilateral, problem.bilateral
    groups: list[ConstraintRows] = []
    friction = np.zeros(0, dtype=int)
    mu = np.zeros(0)
    three_d = False
    if c is not None:
        friction = np.flatnonzero(c.mu > 0)
        mu, three_d = c.mu, c.three_d
        groups += [c.normal, c.tangent_r.take(friction)]
        if three_d:
            groups.append(c.tangent_s.take(friction))
    sizes = [g.m for g in groups]
    sizes += [0] * (3 - len(sizes))
    if u is not None:
        groups.append(u)
    sizes.append(0 if u is None else u.m)
    terms = [spring_terms(g, h, mass) for g in groups]
    chi = np.concatenate([t[0] for t in terms]) if terms else np.zeros(0)
    rho = np.concatenate([t[1] for t in terms]) if terms else np.zeros(0)
    ends = np.cumsum(sizes)
    sl = [slice(e - s, e) for s, e in zip(sizes, ends)]
    weight = np.ones(chi.shape[0])
    weight[sl[0]] = zeta
    weight[sl[3]] = zeta
    chi_b, rho_b = spring_terms(b, h, mass) if b is not None else (np.zeros(0), np.zeros(0))
    return RowLayout(_stack([g.G for g in groups], nv), chi, rho, weight, *sl, friction,
                     three_d, mu, b, chi_b, rho_b)


def bilateral_inertia(problem: ConstraintProblem, rows: RowLayout) -> MassMatrix:
    """Lambda^-1 = M + G_b^T diag(chi_b) G_b (eq. 189, Woodbury form)."""
    if rows.bilateral is None:
        return problem.M
    return problem.M.augmented(rows.bilateral.G, rows.chi_b)


def recover(problem: ConstraintProblem, rows: RowLayout, lam: np.ndarray, inertia: MassMatrix):
    """(a, lambda_b) from lambda*: a = Lambda (G*^T lambda* + G_b^T rho_b + f), eq. 147."""
    rhs = problem.f + rows.G.T @ lam
    if rows.bilateral is None:
        return inertia.solve(rhs), np.zeros(0)
    Gb = rows.bilateral.G
    a = inertia.solve(rhs + Gb.T @ rows.rho_b)
    return a, rows.rho_b - rows.chi_b * (Gb @ a)


def _selector(idx: np.ndarray, n: int, dense: bool = False) -> sp.csr_matrix | np.ndarray:
    if dense:
        return np.eye(n)[idx]
    return sp.csr_matrix((np.ones(idx.shape[0]), (np.arange(idx.shape[0]), idx)),
                         shape=(idx.shape[0], n))


def _friction_rows(rows: RowLayout, n: int, dense: bool = False):
    """2D Coulomb rows mu lambda_n -+ lambda_r >= 0 (eqs. 107-108) or the 3D cones (eq. 142);
    the rows as an array if ``dense``."""
    k, t_idx, r_idx, s_idx, mu = rows.cones
    if rows.three_d:
        return np.zeros((0, n)) if dense else sp.csr_matrix((0, n)), (t_idx, r_idx, s_idx, mu)
    i = np.arange(k.shape[0])
    data = np.r_[mu, -np.ones_like(mu), mu, np.ones_like(mu)]
    ri = np.r_[i, i, i + k.shape[0], i + k.shape[0]]
    ci = np.r_[t_idx, r_idx, t_idx, r_idx]
    lin = sp.csr_matrix((data, (ri, ci)), shape=(2 * k.shape[0], n))
    empty = np.zeros(0, dtype=int)
    return lin.toarray() if dense else lin, (empty, empty, empty, np.zeros(0))


def _program(P, c, A_eq, b_eq, A_in, b_in, cones, dense: bool = False) -> ConicProgram:
    """The program with its matrices as CSC, or as arrays if ``dense``."""
    t, r, s, mu = cones
    if dense:
        return ConicProgram(P, c, A_eq, b_eq, A_in, b_in, t, r, s, mu)
    return ConicProgram(sp.csc_matrix(P), c, sp.csc_matrix(A_eq), b_eq, sp.csc_matrix(A_in), b_in,
                        t, r, s, mu)


@dataclass
class Reduced:
    """The reduced form: y = T lambda* + t, the objective 1/2 x^T P x + c^T x (eqs. 180, 184)
    and, built on first use, the whole program with its inequality rows (eqs. 181-186), dense
    when T is (a few contacts: scipy.sparse construction cost more than the conic solve)."""
    T: np.ndarray | sp.spmatrix
    t: np.ndarray
    P: np.ndarray | sp.csc_matrix                      # dense when T is
    c: np.ndarray
    rows: RowLayout
    _program: ConicProgram | None = None

    @property
    def program(self) -> ConicProgram:
        if self._program is None:
            rows, m, nu = self.rows, self.rows.m, self.rows.nu
            dense = not sp.issparse(self.T)
            fric, cones = _friction_rows(rows, m, dense)
            if dense:
                A_in = np.vstack([self.T[nu], _selector(nu, m, dense), fric])
            else:
                A_in = sp.vstack([sp.csr_matrix(self.T[nu]), _selector(nu, m), fric])
            b_in = np.concatenate((-self.t[nu], np.zeros(nu.shape[0] + fric.shape[0])))
            self._program = _program(self.P, self.c, np.zeros((0, m)) if dense else sp.csr_matrix((0, m)),
                                     np.zeros(0), A_in, b_in, cones, dense)
        return self._program


def reduced_program(problem: ConstraintProblem, rows: RowLayout, inertia: MassMatrix) -> Reduced:
    m = rows.m
    a0 = inertia.solve(problem.f + (rows.bilateral.G.T @ rows.rho_b if rows.bilateral else 0.0))
    L = delassus(rows.G, inertia)
    if sp.issparse(L):
        T = sp.csr_matrix(L, copy=True)
        T.data *= np.repeat(rows.chi, np.diff(T.indptr))         # diag(chi) L, row scaling
        T = T + sp.identity(m, format="csr")
    else:
        T = np.eye(m) + rows.chi[:, None] * L
    t = rows.chi * (rows.G @ a0) - rows.rho
    T_rs = T[rows.r.start:rows.s.stop]                  # the r and s rows are contiguous
    TtT = T_rs.T @ T_rs
    if sp.issparse(TtT):
        P = (TtT + sp.diags(rows.weight)).tocsc()
    else:                                               # dense T: no sparse round trip
        P = TtT
        P[np.diag_indices(m)] += rows.weight
    return Reduced(T, t, P, np.asarray(T_rs.T @ t[rows.r.start:rows.s.stop]).ravel(), rows)


def lifted_program(problem: ConstraintProblem, rows: RowLayout) -> ConicProgram:
    """Variables [lambda*, lambda_b, beta, a]; see the module docstring."""
    m, nv = rows.m, problem.nv
    mb = rows.chi_b.shape[0]
    nu, rs = rows.nu, rows.rs
    mrs = rs.shape[0]
    n = m + mb + mrs + nv
    G = sp.csr_matrix(rows.G)
    Gb = sp.csr_matrix(rows.bilateral.G) if rows.bilateral else sp.csr_matrix((0, nv))
    M = sp.csr_matrix(problem.M.matrix)
    Z = sp.csr_matrix
    dyn = sp.hstack([-G.T, -Gb.T, Z((nv, mrs)), M])
    bil = sp.hstack([Z((mb, m)), sp.identity(mb), Z((mb, mrs)), sp.diags(rows.chi_b) @ Gb])
    beta = sp.hstack([-_selector(rs, m), Z((mrs, mb)), sp.identity(mrs),
                      -sp.diags(rows.chi[rs]) @ G[rs]])
    A_eq = sp.vstack([dyn, bil, beta])
    b_eq = np.r_[problem.f, rows.rho_b, -rows.rho[rs]]
    sel_nu = _selector(nu, m)
    spring = sp.hstack([sel_nu, Z((nu.shape[0], mb + mrs)), sp.diags(rows.chi[nu]) @ G[nu]])
    fric, cones = _friction_rows(rows, m)
    A_in = sp.vstack([spring, sp.hstack([sel_nu, Z((nu.shape[0], n - m))]),
                      sp.hstack([fric, Z((fric.shape[0], n - m))])])
    b_in = np.r_[rows.rho[nu], np.zeros(nu.shape[0] + fric.shape[0])]
    P = sp.diags(np.r_[rows.weight, np.zeros(mb), np.ones(mrs), np.zeros(nv)])
    return _program(P, np.zeros(n), A_eq, b_eq, A_in, b_in, cones)


def separable_solution(rows: RowLayout, red: Reduced) -> np.ndarray | None:
    """Closed-form optimum when no tangential rows exist and T is diagonal (uncoupled rows).

    The QP then splits into min zeta/2 lambda_i^2 s.t. T_ii lambda_i + t_i >= 0, lambda_i >= 0,
    whose solution is lambda_i = max(0, -t_i / T_ii) (the max of eq. 68), T_ii >= 1.
    """
    if rows.rs.shape[0]:
        return None
    T = red.T
    d = T.diagonal()
    off = (T.nnz - np.count_nonzero(d)) if sp.issparse(T) else np.count_nonzero(T - np.diag(d))
    if off:
        return None
    return np.maximum(0.0, -red.t / d)


def trivial_feasible_point(rows: RowLayout, red: Reduced) -> np.ndarray | None:
    """The paper's starting point: tangential forces zero, lambda_n = lambda_u = s * 1 with s
    large enough (Appendix A, last paragraph); None when T_nu,nu 1 has a non-positive entry."""
    nu = rows.nu
    ones = np.zeros(rows.m)
    ones[nu] = 1.0
    slope = (red.T @ ones)[nu]
    if (slope <= 0).any():
        return None
    scale = max(0.0, float(np.max(-red.t[nu] / slope))) if nu.shape[0] else 0.0
    return ones * scale * (1.0 + 1e-9) + ones * 1e-12


def _held_at_zero(rows: RowLayout, on: np.ndarray) -> np.ndarray:
    """Variables an exact-normals round fixes at zero: the unilateral and normal rows off the
    active set, and the tangents of contacts whose normal is off (no normal force, no
    friction; their cones would have an empty interior)."""
    off = rows.nu[~on]
    if off.size == 0:
        return off
    pos = np.flatnonzero(np.isin(rows.n.start + rows.friction, off))
    fixed = np.concatenate((off, rows.r.start + pos))
    if rows.three_d:
        fixed = np.concatenate((fixed, rows.s.start + pos))
    return fixed


def _active_mask(rows: RowLayout, active: np.ndarray) -> np.ndarray:
    on = np.zeros(rows.nu.shape[0], dtype=bool)
    on[active] = True
    return on


def with_exact_normals(prog: ConicProgram, rows: RowLayout, active: np.ndarray) -> ConicProgram:
    """The program with eq. 68 enforced on the unilateral and normal rows.

    Rows in ``active`` (positions into rows.nu) satisfy the spring law with equality,
    lambda = rho - chi G a (the max of eq. 68 taking its first branch); the other rows have
    lambda = 0. The spring rows are the first len(nu) rows of A_in in both formulations, the
    non-negativity rows the next len(nu). The result is still convex (equalities, linear
    inequalities, cones); :class:`~idyn.constraint_solver.scheme.ConstraintSolver` updates
    ``active`` until lambda >= 0 on it and the spring bound is <= 0 off it.

    Unlike the paper's program, a round is not feasible for every ``active``: the equalities
    fix lambda_A as a function of the tangential forces, and lambda_n >= 0 (its own row and
    the cone) may be out of reach. It is feasible by construction when the zero-tangential
    point, T_AA lambda_A = -t_A, has lambda_A >= 0, which holds for the frictionless law's
    active set (:func:`frictionless_active_set`, the solver's first round); with every row
    active instead, a sliding sphere stack can be truly infeasible (docs/design.md).
    """
    k = rows.nu.shape[0]
    on = _active_mask(rows, active)
    fixed = _held_at_zero(rows, on)
    dense = prog.dense
    A_in = prog.A_in if dense else sp.csr_matrix(prog.A_in)
    spring = A_in[:k]
    free_cols = np.ones(prog.n, dtype=bool)
    free_cols[fixed] = False
    rest = A_in[k:]
    touches_free = np.asarray(abs(rest) @ free_cols.astype(float)).ravel() > 0
    keep = k + np.flatnonzero(touches_free)
    cones = ~np.isin(prog.cone_t, fixed)
    zero = _selector(fixed, prog.n, dense)
    blocks = [prog.A_eq, spring[on], zero]
    A_eq = np.vstack(blocks) if dense else sp.vstack(blocks, format="csc")
    b_eq = np.concatenate((prog.b_eq, prog.b_in[:k][on], np.zeros(zero.shape[0])))
    return ConicProgram(prog.P, prog.c, A_eq, b_eq, A_in[keep], prog.b_in[keep],
                        prog.cone_t[cones], prog.cone_r[cones], prog.cone_s[cones],
                        prog.cone_mu[cones])


def equality_optimum(red: Reduced, active: np.ndarray) -> np.ndarray | None:
    """An exact-normals round of the reduced program without its inequalities and cones:

        min 1/2 x^T P x + c^T x   s.t.  T_A x = -t_A (active spring rows),  x_fixed = 0,

    one KKT solve (sparse LU when T is sparse). When its x lies in every friction cone it is
    the round's optimum (dropping inactive constraints does not move a convex program's
    optimum; the caller checks, see :func:`cone_violation`). The sign of the active rows is
    left to the active-set loop, as in :func:`spring_active_set`. None if the KKT matrix is
    singular (the conic backend then solves the round).
    """
    rows = red.rows
    on = _active_mask(rows, active)
    free = np.ones(rows.m, dtype=bool)
    free[_held_at_zero(rows, on)] = False
    fi = np.flatnonzero(free)
    eq = rows.nu[on]
    rhs = np.concatenate((-red.c[fi], -red.t[eq]))
    every = fi.size == rows.m
    try:
        if sp.issparse(red.T):
            A = (red.T[eq] if every else sp.csr_matrix(red.T[eq])[:, fi]).tocoo()
            P = (red.P if every else red.P[fi][:, fi]).tocoo()
            k = fi.size                                  # [[P, A^T], [A, 0]] from triplets
            kkt = sp.csc_matrix((np.concatenate([P.data, A.data, A.data]),
                                 (np.concatenate([P.row, A.row + k, A.col]),
                                  np.concatenate([P.col, A.col, A.row + k]))),
                                shape=(k + eq.size, k + eq.size))
            sol = spla.splu(kkt).solve(rhs)
        else:
            A = red.T[np.ix_(eq, fi)]
            P = red.P if every else red.P[np.ix_(fi, fi)]
            kkt = np.zeros((fi.size + eq.size, fi.size + eq.size))       # [[P, A^T], [A, 0]]
            kkt[:fi.size, :fi.size], kkt[:fi.size, fi.size:], kkt[fi.size:, :fi.size] = P, A.T, A
            sol = np.linalg.solve(kkt, rhs)
    except (RuntimeError, np.linalg.LinAlgError):
        return None
    if not np.isfinite(sol).all():
        return None
    x = np.zeros(rows.m)
    x[fi] = sol[:fi.size]
    return x


def cone_violation(rows: RowLayout, lam: np.ndarray) -> float:
    """max(|lambda_t| - mu lambda_n) over contacts with finite mu (eq. 142; 0 if none)."""
    _, t, r, s, mu = rows.cones
    tang = np.abs(lam[r])
    if rows.three_d:
        tang = np.hypot(tang, lam[s])
    return float(max(0.0, np.max(tang - mu * lam[t], initial=0.0)))


def frictionless_active_set(rows: RowLayout, red: Reduced):
    """:func:`spring_active_set` started from the rows whose spring pushes at zero force
    (t < 0): the first active set of an exact-normals solve, whose round is feasible by
    construction (see :func:`with_exact_normals`)."""
    return spring_active_set(rows, red, np.flatnonzero(red.t[rows.nu] < 0.0))


def spring_active_set(rows: RowLayout, red: Reduced, start: np.ndarray, max_rounds: int = 50):
    """Rows of the frictionless law lambda = max(0, spring) (eq. 68) by principal pivoting.

    With tangential forces zero, eq. 68 on the unilateral and normal rows is the LCP
    lambda >= 0, T lambda + t >= 0, lambda . (T lambda + t) = 0 with T_nu,nu a P-matrix (unique
    solution). Starting from ``start``, solve T_AA lambda_A = -t_A and move violating rows in or
    out until consistent. Returns (active positions into rows.nu, lambda on rows.nu), or None
    if not settled in ``max_rounds`` (the caller then keeps ``start``).
    """
    nu = rows.nu
    sparse = sp.issparse(red.T)
    T = sp.csr_matrix(red.T[nu])[:, nu] if sparse else red.T[np.ix_(nu, nu)]
    t = red.t[nu]
    on = np.zeros(nu.shape[0], dtype=bool)
    on[start] = True
    for _ in range(max_rounds):
        lam = np.zeros(nu.shape[0])
        if on.any():
            if sparse:     # banded for chains of bodies: O(rows), not a dense cubic solve
                lam[on] = spla.splu(sp.csc_matrix(T[on][:, on])).solve(-t[on])
            else:
                lam[on] = np.linalg.solve(T[np.ix_(on, on)], -t[on])
        w = T @ lam + t
        tol = 1e-10 * (1.0 + np.abs(t))
        bad_in, bad_out = on & (lam < -tol), ~on & (w < -tol)
        if not (bad_in.any() or bad_out.any()):
            return np.flatnonzero(on), lam
        on = (on & ~bad_in) | bad_out
    return None
