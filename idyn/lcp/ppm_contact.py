"""Algorithm 2: the modified PPM I for contact LCPs, in O(m^3 + n m^2) (paper Sec. 4.6-4.7).

Solves the LCP ``(r, Q)`` with ``Q = N W N^T`` and ``r = N f* + offset``, where ``N`` (n x m)
holds the contact normal wrenches, ``f*`` is the contact-free velocity at the end of the step,
and ``W`` is the inverse inertia: ``W = M^-1``, or, when the velocity is also subject to
equality constraints ``J v = b`` (the no-slip model of Sec. 4.4 with ``J = [P; S; T]`` rows
chosen by :func:`idyn.lcp.find_indices`), the constrained inverse inertia
``W = M^-1 - M^-1 J^T (J M^-1 J^T)^-1 J M^-1`` (the upper-left block of ``A^-1`` in eq. 44).
The contact impulses ``z`` then give the velocity ``v+ = f* + W N^T z`` and ``w = N v+ + offset``.

What makes it linear in the number of contacts ``n`` for a fixed number of degrees of freedom
``m`` (Sec. 4.7):

* ``N M^-1 N^T`` is never formed.  With ``M = L L^T`` we form ``G = L^-1 N^T`` (and, with
  constraints, project it onto the orthogonal complement of ``L^-1 J^T``), once, in
  ``O(m^2 n)``; then ``Q = G^T G``.
* By Appendix F at most ``rank(N) <= m`` impulses need be positive, so the active set
  (Algorithm 2's non-basic set B-bar) has at most ``m`` members.  The Cholesky factor of
  ``Q_aa = G_a^T G_a`` (Alg. 2 line 11, an at most m x m system) is updated by one ``O(m^2)``
  step per pivot (a triangular solve to append, Givens rotations to delete), never
  refactorised; the pivoting loop is compiled (:mod:`idyn.lcp._ppm_kernel`).
* Lines 12-14 cost ``O(m n)``: ``w = r + G^T (G_a z_a)``.
* Duplicated or linearly dependent contacts: an index whose column of ``G`` lies in the span of
  the active columns cannot enter (``Q_aa`` would be singular); Appendix F (Theorem 2) shows its
  ``w`` equals a combination of the active ``w``, which are zero, so skipping it loses nothing.

Warm start (Sec. 4.6, Alg. 2 line 6): pass ``result.basis`` of the previous control step as
``warm_start``; the solver then predicts forces at the same contacts whenever such a solution
exists, which is the paper's remedy for torque chatter from indeterminate contact.

Alg. 2 as printed (PDF conversion) reads ``r <- N f*`` on line 2 but "LCP (N M^-1 f*, ...)" in
its caption; lines 13-14 (``a = M^-1 N^T z + f*``, ``w = N a``) fix ``f*`` as a velocity, which
is what we implement.  ``offset`` adds the ``phi / dt`` term of eq. 45.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .. import validation
from ._ppm_kernel import MAX_PIVOTS, NUMERICAL_FAILURE, SOLVED, checked_contact_ppm, projected_contact_ppm
from .gram import DEFAULT_DEPENDENCE_TOL, cholesky_factor
from .inputs import check_indices, check_options, finite_data
from .lemke import checked_lemke
from .principal_pivoting import REL_TOL as PIVOTING_REL_TOL
from .qr import check_info, complement_coordinates
from .residuals import DEFAULT_TOL
from .result import LCPResult, LCPStatus

_STATUS = {SOLVED: LCPStatus.SOLVED, MAX_PIVOTS: LCPStatus.MAX_PIVOTS, NUMERICAL_FAILURE: LCPStatus.NUMERICAL_FAILURE}


def contact_factor(N, M, constraints=None, cholesky=None) -> np.ndarray:
    """Return ``G`` with ``G^T G = N W N^T`` (see the module docstring), in ``O(m^2 n)``.

    ``cholesky``: the lower Cholesky factor ``L`` of ``M`` if the caller has it (a controller
    factors ``M`` once per step), else ``M`` is factored here.

    Raises :class:`idyn.errors.InvalidInputError` if ``M`` is not symmetric positive definite.
    """
    M = validation.square(M, "M")
    m = M.shape[0]
    N = validation.matrix(N, (None, m), "N")
    L = cholesky_factor(M, cholesky)
    G = _lower_solve(L, N.T)
    if constraints is None:
        return G
    J = validation.matrix(constraints, (None, m), "constraints")
    return project_constraints(G, _lower_solve(L, J.T))


def project_constraints(G: np.ndarray, H: np.ndarray) -> np.ndarray:
    """The part of the whitened normals ``G = L^-1 N^T`` outside ``span(H)``, ``H = L^-1 J^T``
    the whitened constraint rows, in an orthonormal basis of the complement: then ``G'^T G'``
    is ``N W N^T`` with the constrained inverse inertia ``W`` (module docstring).  The rank of
    ``H`` is decided by its column-pivoted QR (``DEFAULT_DEPENDENCE_TOL`` relative)."""
    if H.shape[1] == 0:
        return G
    return complement_coordinates(G, H, DEFAULT_DEPENDENCE_TOL)   # component of G outside span(L^-1 J^T)


def _lower_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    X, info = lapack.dtrtrs(L, np.asfortranarray(B), lower=1)
    return X


def ppm_contact(N, M, f_star, warm_start=None, *, constraints=None, offset=None,
                max_pivots: int | None = None, dependence_tol: float = DEFAULT_DEPENDENCE_TOL,
                tol: float = DEFAULT_TOL, cholesky=None) -> LCPResult:
    """Solve the contact LCP ``(N f* + offset, N W N^T)`` by Algorithm 2 (module docstring).

    Args:
        N: (n, m) contact normal wrenches (one row per contact).
        M: (m, m) symmetric positive definite generalized inertia.
        f_star: (m,) contact-free velocity (must satisfy ``constraints`` if given).
        warm_start: indices of contacts active at the previous solve (``result.basis``).
        constraints: optional (c, m) equality-constraint rows ``J`` (``J v = const``).
        offset: optional (n,) added to ``r`` (``phi / dt`` of eq. 45).
        max_pivots: pivot limit of Algorithm 2 (default ``max(100, 4 n)``: its compiled loop
            keeps every visited active set, an array of that many rows), before the Lemke hand-over.
        dependence_tol: sine of the angle below which a contact counts as dependent.
        tol: relative residual tolerance of the acceptance check.
        cholesky: the lower Cholesky factor of ``M``, if already computed (not recomputed).

    Returns:
        :class:`LCPResult` with ``z`` the normal impulses, ``w = N v+ + offset`` and ``basis``
        the active contacts (at most ``m``) to warm-start the next call.  When Algorithm 2 does
        not solve the LCP (it can fail where the offset lies outside the range of ``N`` on a
        rank-deficient problem) it hands the LCP ``(r, G^T G)`` to Lemke's method
        (:func:`idyn.lcp.lemke`), whose answer is returned if it solves it (pivots of both).
    """
    check_options(tol, max_pivots)
    G = contact_factor(N, M, constraints, cholesky)
    n = G.shape[1]
    r = np.asarray(N, dtype=float) @ validation.vector(f_star, np.shape(M)[0], "f_star")
    if offset is not None:
        r = r + validation.vector(offset, n, "offset")
    res = solve_factored(G, r, check_indices(warm_start, n, "warm_start"), max_pivots=max_pivots,
                         dependence_tol=dependence_tol, tol=tol)
    if res.solved or not finite_data(r, G):
        return res
    lemke = checked_lemke(G.T @ G, r, max_pivots=max_pivots, tol=tol)
    if not lemke.solved:
        return res
    return LCPResult(lemke.z, lemke.w, lemke.status, res.pivots + lemke.pivots, 0.0, np.flatnonzero(lemke.z > 0.0))


def solve_factored(G: np.ndarray, r: np.ndarray, warm: np.ndarray, *, max_pivots: int | None = None,
                   dependence_tol: float = DEFAULT_DEPENDENCE_TOL, tol: float = DEFAULT_TOL) -> LCPResult:
    """Algorithm 2 on the LCP ``(r, G^T G)`` given the factor ``G`` (:func:`contact_factor`);
    the part of :func:`ppm_contact` after its input checks, for a caller that built ``G``,
    ``r`` and the sorted, distinct ``warm`` indices itself.  Non-finite data
    (:func:`idyn.lcp.inputs.finite_data`) never reaches the compiled loop: ``NUMERICAL_FAILURE``,
    ``z = 0``."""
    n = G.shape[1]
    if not finite_data(r, G):
        return _unsolved(r)
    limit = contact_pivots(n) if max_pivots is None else int(max_pivots)
    GT = np.ascontiguousarray(G.T)
    z, w, active = np.zeros(n), np.empty(n), np.empty(G.shape[0], dtype=np.intp)
    size, code, pivots = checked_contact_ppm(GT, r, warm, limit, float(dependence_tol), PIVOTING_REL_TOL,
                                             float(tol), z, w, active)
    return LCPResult(z, w, _STATUS[code], pivots, 0.0, active[:size])


def solve_projected(white: np.ndarray, m: int, kept: np.ndarray, r: np.ndarray, warm: np.ndarray
                    ) -> tuple[LCPResult, np.ndarray]:
    """``(solve_factored(G, r, warm), G)`` with the default options for ``G`` the normals'
    whitened columns ``white[:, :m]`` projected off the span of the ``kept`` ones
    (:func:`project_constraints`): a control step's Algorithm 2 with the inverse inertia
    constrained by its kept no-slip rows, as one compiled call
    (:func:`idyn.lcp._ppm_kernel.projected_contact_ppm`).  Non-finite data
    (:func:`idyn.lcp.inputs.finite_data`) gets ``NUMERICAL_FAILURE`` without the call."""
    if not finite_data(r, white):
        return _unsolved(r), np.array(white[:, :m])
    z, w, active = np.zeros(m), np.empty(m), np.empty(white.shape[0], dtype=np.intp)
    G, size, code, pivots, info_geqp3, info_ormqr = projected_contact_ppm(
        white, m, kept, DEFAULT_DEPENDENCE_TOL, r, warm, contact_pivots(m), DEFAULT_DEPENDENCE_TOL, PIVOTING_REL_TOL,
        DEFAULT_TOL, z, w, active)
    check_info(info_geqp3, "geqp3")
    check_info(info_ormqr, "ormqr")
    return LCPResult(z, w, _STATUS[code], pivots, 0.0, active[:size]), G


def contact_pivots(n: int) -> int:
    """Algorithm 2's default pivot limit for ``n`` contacts: ``max(100, 4 n)`` (its compiled
    loop allocates a row per allowed pivot to detect a repeated active set, so the limit is not
    :func:`idyn.lcp.inputs.default_max_pivots`; a failure hands over to Lemke)."""
    return max(100, 4 * n)


def _unsolved(r: np.ndarray) -> LCPResult:
    """What a non-finite LCP gets instead of the compiled loop: ``z = 0``, NUMERICAL_FAILURE."""
    return LCPResult(np.zeros(r.shape[0]), np.array(r, dtype=float), LCPStatus.NUMERICAL_FAILURE, 0, 0.0,
                     np.empty(0, np.intp))
