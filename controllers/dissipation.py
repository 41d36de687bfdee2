"""Complementarity-free inverse dynamics (paper Sec. 6): Stage I and Stage II.

**Stage I** (eqs. 69-74, reduced as in Sec. 6.2.1-6.2.2, eqs. 75-101).  Impulses
``z = [f_N; f_S+; f_S-; f_T+; f_T-] >= 0`` (friction pyramid, Sec. 5.1) along the rows of
``R = [N; S; -S; T; -T]``.  With the reduced dynamics of :mod:`idyn.controllers.dynamics`
(``v+_u = p + Z z``, ``Z = A^-1 R_u^T``, actuated velocity fixed to ``qd_des``) Stage I is

    minimize  1/2 z^T (Z^T A Z) z + c^T z

subject to non-interpenetration ``N v+ >= -phi/dt`` (eq. 99), ``z >= 0`` (eq. 100) and, for
finite friction, ``mu_i f_N,i >= 1^T f_F,i`` (eq. 101, re-derived from eq. 72).
``Z^T A Z = Y^T Y`` with ``Y = L^-1 R_u^T`` (``A = L L^T``) has rank at most ``nu``, so Stage I
is convex, not strictly convex: indeterminate contact.  As the authors do (footnote 1), it is
solved through its KKT LCP ``([c; g], [[H, -G^T], [G, 0]])`` by Lemke's method
(``stage1_solver="lemke"``, regularised Lemke and the QP as fallbacks), or as a QP
(``"qp"``, :func:`idyn.qp.solve_built`).

*Which energy.*  ``objective="kinetic-energy"`` is eq. 98 literally, ``c = R_u (p + A^-1 B qd)``;
the default ``"contact-work"`` takes the work the contact impulses do, ``c = R v+(0)``, projected
onto ``range(R_u)`` (the contact velocities impulses can change), with ``v+(0) = (p, qd_des)``:
the forward model's objective with the actuated rows prescribed, whose frictionless optimality
conditions are the contact LCP.

*Separation of touching contacts.*  Touching contacts (:data:`idyn.contact.CONTACT_GAP`) that
carry normal impulse yet end the step apart (:func:`separating_loads`) get their separation
speed priced, ``w/2 |N_c v+|^2`` (:func:`price_separation`, ``w`` = ``separation_weight`` robot
masses), and Stage I is solved again until none is added (:mod:`idyn.separation`).  The price
keeps ``ker(Y)``, the projected ``c`` and Stage II unchanged.

*Contacts at a distance* (``gap_rate``).  The normal rows of ``c`` measure ``N v+ +
max(phi - CONTACT_GAP, 0)/dt`` (eq. 35) at contacts with a friction bound, added after the
projection; Stage II then keeps eq. 108 as one equality row.

**No slip** (ID_QP,inf).  The equalities ``S v+ = 0``, ``T v+ = 0`` (eqs. 40-41) for the tangent
rows Algorithm 1 keeps: ``E z + e = 0``, ``E = S_u A^-1 R_u^T``; Stage I is then a QP.

**Stage II** (Sec. 6.2.4, eqs. 102-112).  With ``W`` an orthonormal basis of ``ker(Y)`` (the SVD
of ``Y``, whose other right singular vectors project ``c``), every ``z0 + W w`` is Stage I
optimal and eqs. 108-109 hold for every ``w``; ``tau`` changes by ``-R_a W w / dt`` (eq. 90):

    minimize_w  1/2 |tau0 - R_a W w / dt|^2 + rho/2 |z0 + W w|^2     s.t. (110), (111)

in torque units, with a ridge ``rho`` (``ridge`` times the mean eigenvalue of the torque term)
that makes the answer unique where impulse combinations give equal torques.  By default the whole
torque ``|tau|^2`` is minimised, as the paper's prose and the authors' code do;
``stage2_objective="correction"`` minimises eqs. 105-107 as written, ``|y|^2`` with
``y = tau - f_ID`` and ``f_ID = C qdd_des + h_a`` (eq. 87: ``C`` the actuated block of ``M``,
``f_ext = -h``), i.e. ``tau0`` above is replaced by ``tau0 - f_ID`` (:func:`contact_free_torque`).
When the QP fails, Stage I's answer stands.

Design notes with the measurements behind these choices: ``docs/dissipation.md``.

The step is one path: :meth:`idyn.controllers.dynamics.StepDynamics.update`, :func:`build_stage_one`
(one compiled call), :func:`solve_priced` (Lemke's method, the shared :mod:`idyn.lcp` kernel),
:func:`solve_stage_two` (from nullity :data:`DUAL_MIN_NULLITY` its dual by Newton's method, else
or as fallback its terms and :func:`idyn.qp.solve_built`; its answer and outputs); the
arithmetic is in :mod:`idyn.controllers._dissipation_kernel`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from idyn.errors import InvalidInputError, SolverError
from idyn.lcp.inputs import finite_data
from idyn.lcp.lemke import basis_checked, cold_checked
from idyn.lcp.regularized import regularized_checked
from idyn.lcp.residuals import DEFAULT_TOL
from idyn.qp import BACKENDS, PD_TOL, solve_built
from idyn.separation import closing_speed
from idyn.separation import price_separation as core_price_separation

from . import _dissipation_kernel as kernel
from .base import OverBudget

if TYPE_CHECKING:   # dynamics imports this module's cone rows (touchdown impact)
    from .dynamics import Step

RANK_TOL = kernel.RANK_TOL
#: Stage I objectives: the contact impulses' work (default) or the literal kinetic energy
OBJECTIVES = ("contact-work", "kinetic-energy")
#: Stage II objectives: the whole torque |tau|^2 (default) or, as eqs. 105-107 write it, the
#: torque beyond the contact-free inverse dynamics, |y|^2 with y = tau - f_ID (eq. 87)
STAGE2_OBJECTIVES = ("torque", "correction")


@dataclass
class StageOne:
    """Stage I data: ``min 1/2 |Y z|^2 + c^T z  s.t.  G z + g >= 0, z >= 0`` (and ``E z + e = 0``)."""

    R: np.ndarray       #: (k, nv) impulse directions, k = 5 m
    Y: np.ndarray       #: (nu, k) whitened unactuated impulse map
    H: np.ndarray       #: (k, k) the Hessian Y^T Y = Z^T A Z, plus the separation price
    W: np.ndarray       #: (k, k - rank) orthonormal basis of ker(H) = ker(Y) (Stage II)
    c: np.ndarray       #: (k,) linear term (eq. 98)
    G: np.ndarray       #: constraint rows: live non-penetration rows, then cone rows
    g: np.ndarray
    cone: np.ndarray    #: (mf, k) cone rows mu f_N - 1^T f_F (eq. 101)
    unenforceable: int  #: non-penetration rows no impulse can change (dropped)
    E: np.ndarray = None   #: no-slip equality rows ``E z + e = 0`` (eqs. 40-41), or (0, k)
    e: np.ndarray = None
    kept_tangent_rows: tuple = (0, 0)   #: (S rows, T rows) kept by Algorithm 1
    #: (m,) closing speeds added to c's normal rows (``gap_rate``, idyn.separation), or None
    closing: np.ndarray | None = None
    #: Stage I's KKT LCP ``(Mlcp, qlcp)`` (:func:`kernel.kkt`), kept up to date with ``H`` and ``c``
    Mlcp: np.ndarray | None = None
    qlcp: np.ndarray | None = None
    #: the controller's work arrays (:func:`arrays`), or None
    buffers: dict | None = None
    #: indices of the KKT LCP's ``z`` to try as its basis first (:func:`solve_stage_one`), or
    #: None; after a Lemke solve, that answer's basis (so a priced re-solve starts from it)
    warm: np.ndarray | None = None
    #: Stage II's inequality rows to start DAQP's working set from (:func:`solve_stage_two`), or
    #: None; after Stage II, the rows active at its answer (None if it gave none)
    stage_two_active: np.ndarray | None = None
    #: (m,) the friction coefficients the cone rows were made from (inf: no row), or None
    mu: np.ndarray | None = None

    def __post_init__(self):
        if self.E is None:
            self.E, self.e = _no_rows(self.R.shape[0])

    @property
    def k(self) -> int:
        return self.R.shape[0]

    def lcp(self) -> tuple[np.ndarray, np.ndarray]:
        """Stage I's KKT LCP ``(M, q)`` (footnote 1), made on first use."""
        if self.Mlcp is None:
            n = self.k + self.G.shape[0]
            self.Mlcp, self.qlcp = np.empty((n, n)), np.empty(n)
            kernel.kkt(self.H, self.G, self.c, self.g, self.Mlcp, self.qlcp)
        return self.Mlcp, self.qlcp


@lru_cache(maxsize=64)
def _no_rows(k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(E, e)`` without rows for ``k`` impulses (made once per size; nothing to write)."""
    return np.zeros((0, k)), np.zeros(0)


def cone_rows(mu: np.ndarray) -> np.ndarray:
    """Rows ``mu_i f_N,i - (f_S+ + f_S- + f_T+ + f_T-)_i`` for contacts with finite ``mu``
    (read-only: the rows of a coefficient vector are made once, contacts keep their ``mu``)."""
    return _cone_rows(np.ascontiguousarray(mu, dtype=float).tobytes())


@lru_cache(maxsize=64)
def _inf(m: int) -> np.ndarray:
    """``m`` infinite friction coefficients (no cone row; writable, as the kernels take them,
    never written)."""
    return np.full(m, np.inf)


@lru_cache(maxsize=256)
def _cone_rows(key: bytes) -> np.ndarray:
    mu = np.frombuffer(key)
    m = mu.size
    finite = np.flatnonzero(np.isfinite(mu))
    rows = np.zeros((finite.size, 5 * m))
    r = np.arange(finite.size)
    rows[r, finite] = mu[finite]
    rows[r[:, None], finite[:, None] + np.arange(1, 5) * m] = -1.0
    rows.setflags(write=False)
    return rows


def build_stage_one(step: Step, coulomb: bool, no_slip_tol: float | None = None,
                    objective: str = "contact-work", gap_rate: bool = False, lcp: bool = False,
                    buffers: dict | None = None, held: np.ndarray | None = None,
                    held_mu: float = np.inf) -> StageOne:
    """Assemble Stage I (eqs. 94-101) for ``step``; ``coulomb=False`` drops the cone (mu = inf).

    ``objective`` chooses the linear term (see "Which energy" in the module docstring):
    ``"contact-work"`` ``c = R v+(0)`` projected onto ``range(R_u)``, ``"kinetic-energy"``
    eq. 98's ``c = R_u (p + A^-1 B qd)``.  ``gap_rate`` adds the closing speeds of the contacts
    with a friction bound (:func:`idyn.separation.closing_speed`) to its normal rows, after the
    projection (see "Contacts at a distance" in the module docstring).

    With ``no_slip_tol`` the no-slip equalities ``S v+ = 0``, ``T v+ = 0`` (eqs. 40-41) are added
    for the tangent rows Algorithm 1 keeps at that dependence tolerance:
    ``S_u (p + A^-1 R_u^T z) + S_a qd_des = 0``, linear in ``z``.

    ``held`` (with ``no_slip_tol``, ``coulomb=False``; default every contact): the contacts
    offered no-slip rows; the others get cone rows with ``mu = 0`` (no friction: the release rule
    of :func:`idyn.controllers.lcp_noslip.release_rounds`).  ``held_mu`` (``coulomb=False``): the
    cone coefficient of the held contacts (eq. 101; inf: no cone row, eqs. 40-41 alone).

    ``lcp``: the KKT LCP (:meth:`StageOne.lcp`, for Lemke's method) is made in the same call.
    ``buffers``: a controller's arrays of earlier steps, written again (see :func:`arrays`).
    """
    if objective not in OBJECTIVES:
        raise InvalidInputError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    m, nu, nv = step.m, step.nu, step.v.size
    k = 5 * m
    if objective == "kinetic-energy":                        # [N; S; T]_u (p + A^-1 B qd)
        x3 = step.rows[:, step.u] @ (step.p + step.solve_A(step.B @ step.qd))
    else:
        x3 = _NOTHING
    if coulomb:
        mu = step.jac.mu
    elif (held is None or held.all()) and not np.isfinite(held_mu):
        mu = _inf(m)
    else:
        mu = np.full(m, held_mu) if held is None else np.where(held, held_mu, 0.0)
    cone = cone_rows(mu)
    nc = m + cone.shape[0]
    lcp = lcp and not gap_rate and no_slip_tol is None
    R, Y, free, Vt, c, G, g, H, Mlcp, qlcp = arrays(buffers, ("stage one", k, nc, nu, nv, lcp), lambda: (
        ((k, nv), "C"), ((nu, k), "F"), (3 * m, "C"), ((k, k), "C"), (k, "C"), ((nc, k), "C"), (nc, "C"),
        ((k, k), "C"), ((k + nc, k + nc) if lcp else (0, 0), "C"), (k + nc if lcp else 0, "C")))
    rank, smallest, largest = kernel.stage_one(step.rows, step.L, step.p, step.qd, step.u_index, step.a_index,
                                               step.jac.phi, step.dt, cone, x3, R, Y, free, Vt, c,
                                               G, g, H, Mlcp, qlcp)
    step._free, step._pyramid = free, R
    dead = 0
    if not smallest > RANK_TOL * max(largest, 1.0):          # some row no impulse can change
        Gn, gn = G[:m], g[:m]
        live = np.sqrt(np.einsum("ij,ij->i", Gn, Gn)) > RANK_TOL * max(largest, 1.0)
        dead = int(np.count_nonzero(~live & (gn < 0)))
        G, g = np.concatenate((Gn[live], cone)), np.concatenate((gn[live], np.zeros(cone.shape[0])))
        lcp = False                                          # made again with the live rows
    prob = StageOne(R, Y, H, Vt[rank:].T, c, G, g, cone, dead, buffers=buffers, mu=mu)
    if lcp:
        prob.Mlcp, prob.qlcp = Mlcp, qlcp
    if gap_rate:                                             # the contacts with cone rows
        bounded = np.isfinite(step.jac.mu) if coulomb else np.zeros(m, dtype=bool)
        prob.closing = closing_speed(step.jac.phi, step.dt, bounded)
        c[:m] += prob.closing
    if no_slip_tol is not None:
        if step._white is None and nu:                       # Step.white: Y's [N; S; T] columns
            step._white = np.asfortranarray(Y[:, _contact_columns(m)])
        s_idx, t_idx = step.independent_tangents(np.arange(m) if held is None else np.flatnonzero(held),
                                                 no_slip_tol)
        prob.E, prob.e = np.empty((s_idx.size + t_idx.size, k)), np.empty(s_idx.size + t_idx.size)
        kernel.no_slip_rows(Y, free, s_idx, t_idx, prob.E, prob.e)   # T_u A^-1 R_u^T, T v+(0)
        prob.kept_tangent_rows = (s_idx.size, t_idx.size)
    return prob


@lru_cache(maxsize=64)
def _contact_columns(m: int) -> np.ndarray:
    """The columns ``[N; S; T]`` among the pyramid rows ``[N; S; -S; T; -T]`` of ``m`` contacts."""
    return np.concatenate((np.arange(2 * m), np.arange(3 * m, 4 * m)))


def arrays(buffers: dict | None, key: tuple, layout) -> tuple[np.ndarray, ...]:
    """New arrays of ``layout()`` (``(shape, order)`` pairs), or with ``buffers`` (a controller's)
    the ones made for ``key`` at an earlier step: a step overwrites every entry of them, and
    reused buffers stay in the cache where new ones would not."""
    out = buffers.get(key) if buffers is not None else None
    if out is None:
        out = tuple(np.empty(shape, order=order) for shape, order in layout())
        if buffers is not None:
            buffers[key] = out
    return out


def solve_stage_one(prob: StageOne, method: str, qp_backend: str, out_of_time=None) -> tuple[np.ndarray, dict]:
    """Stage I optimum ``z0`` (any one of them) and solver info: Lemke's method on the KKT LCP
    (``method="lemke"`` without equality rows), then regularised Lemke, then the QP.

    Warm start: when ``prob.warm`` names a basis (the previous step's, :func:`stage_one_layout`),
    that basis alone is tried first (:func:`idyn.lcp.lemke.basis_checked`, no pivot); the cold
    path runs when it fails.  ``info["stage1_start"]`` says which: ``"warm"``, ``"cold"`` or
    ``"cold (warm basis failed)"``; ``prob.warm`` is left at the answer's support (None after
    the QP).  The support, not :func:`idyn.lcp.lemke.answer_pattern`: Stage I's KKT LCP has many
    impulses of zero reduced cost beside the loaded ones (indeterminate contact), and the
    least-norm solve over all of them leaves the cone more often (measured on foot patches,
    docs/performance.md).  ``out_of_time(stage)`` (the controller's budget): True before a retry
    raises :class:`idyn.controllers.base.OverBudget`."""
    if method == "lemke" and not prob.E.shape[0]:
        Mlcp, qlcp = prob.lcp()
        if not finite_data(qlcp, Mlcp):  # cold_checked takes finite data only; the QP reports it
            prob.warm = None
            return _stage_one_qp(prob, method, qp_backend, out_of_time)
        start = "cold"
        z = np.empty(qlcp.size)
        if prob.warm is not None and prob.warm.size:
            if basis_checked(Mlcp, qlcp, prob.warm, DEFAULT_TOL, z):
                prob.warm = np.flatnonzero(z > 0.0)
                return z[:prob.k], {"stage1_status": "solved", "pivots": 0, "regularization": 0.0,
                                    "stage1_start": "warm"}
            start = "cold (warm basis failed)"
        passed, pivots = cold_checked(Mlcp, qlcp, 1e-12, DEFAULT_TOL, z)
        if passed:
            prob.warm = np.flatnonzero(z > 0.0)
            return z[:prob.k], {"stage1_status": "solved", "pivots": pivots, "regularization": 0.0,
                                "stage1_start": start}
        if out_of_time is not None and out_of_time("stage1 retries"):
            raise OverBudget("budget spent after Stage I's Lemke path failed")
        try:
            stop = None if out_of_time is None else (lambda: out_of_time("regularized lemke"))
            res = regularized_checked(Mlcp, qlcp, stop=stop)
        except np.linalg.LinAlgError:  # a solver must report, not raise; fall through to the QP
            res = None
        if res is not None and res.solved:
            prob.warm = res.basis
            # the step's status says so too: its tau solves M + eps I's model, not the stated one
            return res.z[:prob.k], {"stage1_status": res.status.value, "status": res.status.value,
                                    "pivots": res.pivots, "regularization": res.regularization,
                                    "stage1_start": start}
        if out_of_time is not None and out_of_time("stage1 qp"):
            raise OverBudget("budget spent before Stage I's QP retry")
    prob.warm = None
    return _stage_one_qp(prob, method, qp_backend, out_of_time)


def stage_one_layout(prob: StageOne, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(contact, block)`` of each variable of Stage I's KKT LCP, for a warm start by contact
    identity (:class:`idyn.controllers.warm_start.BasisMemory`): impulses ``[f_N; f_S+; f_S-;
    f_T+; f_T-]`` are blocks 0-4, the non-penetration multipliers 5, the cone multipliers 6 (of
    the contacts with finite ``mu`` among ``mu``, the coefficients the cone rows were built from).
    None when rows no impulse can change were dropped (the rows no longer follow the contacts)."""
    m = prob.k // 5
    cones = prob.cone.shape[0]
    if prob.G.shape[0] != m + cones:
        return None
    return _layout(m, np.isfinite(mu).tobytes() if cones else b"")


def stage_two_layout(prob: StageOne, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(contact, block)`` of each inequality row of Stage II (:func:`solve_stage_two`): the
    impulse bounds ``z0 + W w >= 0`` (blocks 0-4, as :func:`stage_one_layout`), then the cone rows
    (block 6), for a warm start of its working set by contact identity."""
    return _layout_two(prob.k // 5, np.isfinite(mu).tobytes() if prob.cone.shape[0] else b"")


@lru_cache(maxsize=64)
def _layout_two(m: int, finite: bytes) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_layout` without the non-penetration rows (block 5)."""
    contact, block = _layout(m, finite)
    keep = np.concatenate((np.arange(5 * m), np.arange(6 * m, contact.size)))
    c, b = contact[keep], block[keep]
    c.setflags(write=False)
    b.setflags(write=False)
    return c, b


@lru_cache(maxsize=64)
def _layout(m: int, finite: bytes) -> tuple[np.ndarray, np.ndarray]:
    contacts = np.arange(m)
    coned = np.flatnonzero(np.frombuffer(finite, dtype=bool)) if finite else np.zeros(0, dtype=np.intp)
    contact = np.concatenate((np.tile(contacts, 6), coned))
    block = np.concatenate((np.repeat(np.arange(6), m), np.full(coned.size, 6)))
    contact.setflags(write=False)
    block.setflags(write=False)
    return contact, block


def _stage_one_qp(prob: StageOne, method: str, qp_backend: str, out_of_time=None) -> tuple[np.ndarray, dict]:
    """Stage I as a QP (:func:`solve_stage_one`'s last resort); SolverError if not solved."""
    A_in, b_in = _with_bounds(prob)
    qp = solve_built(prob.H, prob.c, prob.E, -prob.e, A_in, b_in, backend=_backend(qp_backend),
                     stop=None if out_of_time is None else (lambda: out_of_time("stage1 qp retries")))
    info = {"stage1_status": qp.status.value, "pivots": qp.iterations, "regularization": qp.regularization,
            "stage1_solver": "qp" if method == "qp" or prob.E.shape[0] else "qp (lemke failed)"}
    if not qp.solved:
        raise SolverError(f"Stage I failed: {qp.status.value}")
    return np.maximum(qp.x, 0.0), info


def solve_priced(step: Step, prob: StageOne, weight: float, method: str, qp_backend: str,
                 solve=None, out_of_time=None) -> tuple[np.ndarray, dict]:
    """Stage I, solved again with the separation of the contacts that separate under load
    priced at ``weight`` (kg), until none is added (see "Separation of touching contacts");
    ``info["separation_priced"]``: how many.  ``solve(prob)`` solves Stage I once (default
    :func:`solve_stage_one` with ``method``, ``qp_backend``).  ``out_of_time(stage)`` (the
    controller's budget, :meth:`idyn.controllers.Controller.out_of_time`): True stops the
    pricing rounds (the last answer, of the problem priced so far, stands)."""
    priced, new = np.zeros(step.m, dtype=bool), np.empty(step.m, dtype=np.intp)
    count = 0
    while True:
        z, info = solve(prob) if solve is not None else solve_stage_one(prob, method, qp_backend, out_of_time)
        if not weight > 0.0:
            break
        added = kernel.new_separations(prob.Y, z, step.free_velocity, step.jac.phi, step.dt, priced, new)
        if not added or (out_of_time is not None and out_of_time("separation pricing")):
            break
        priced[new[:added]] = True
        count += added
        price_separation(step, prob, new[:added], weight)
    info["separation_priced"] = count
    return z, info


def separating_loads(step: Step, prob: StageOne, z: np.ndarray) -> np.ndarray:
    """Mask of the touching contacts that carry normal impulse ``z`` yet end the step apart
    (:func:`idyn.separation.separating_loads`, with ``N v+ = Y_N^T Y z + N v+(0)``; see
    "Separation of touching contacts")."""
    new = np.empty(step.m, dtype=np.intp)
    mask = np.zeros(step.m, dtype=bool)
    count = kernel.new_separations(prob.Y, z, step.free_velocity, step.jac.phi, step.dt, mask.copy(), new)
    mask[new[:count]] = True
    return mask


def price_separation(step: Step, prob: StageOne, contacts: np.ndarray, weight: float) -> None:
    """Add ``weight/2 |N_c v+|^2`` over ``contacts`` to the Stage I objective of ``prob``, in
    place (:func:`idyn.separation.price_separation`): ``N_c v+ = P z + N_c v+(0)`` with
    ``P = N_c A^-1 R_u^T = Y_c^T Y``, so ``ker(Y)`` and Stage II are unchanged."""
    P = prob.Y[:, contacts].T @ prob.Y
    prob.H, prob.c = core_price_separation(prob.H, prob.c, P, step.free_velocity[contacts], weight)
    if prob.Mlcp is not None:
        kernel.kkt(prob.H, prob.G, prob.c, prob.g, prob.Mlcp, prob.qlcp)


def contact_free_torque(step: Step) -> np.ndarray:
    """``f_ID = C qdd_des - f_ext,a`` (eq. 87): the joint forces of the desired acceleration
    without contact and without the base coupling, ``C = M_aa``, ``f_ext = -h``, and
    ``qdd_des = (qd_des - v_a) / dt`` (the step's desired end velocity, eq. 39)."""
    a = step.a_index
    qdd = (step.qd - step.v[a]) / step.dt
    return step.Ma[:, a] @ qdd + step.h[a]


def solve_stage_two(step: Step, prob: StageOne, z0: np.ndarray, ridge: float, qp_backend: str,
                    outputs: tuple | None = None, buffers: dict | None = None,
                    out_of_time=None, offset: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Stage II: least torque (plus ``ridge``) over the Stage I optimal set (eqs. 102-112).
    ``offset`` (na, or None: zero) is the torque the objective measures from: Stage II minimises
    ``|tau - offset|^2``; :func:`contact_free_torque` gives eqs. 105-107's ``y``.
    From nullity :data:`DUAL_MIN_NULLITY` by its dual (:func:`stage_two_by_dual`), else or when
    that does not converge as the nullspace QP (:func:`idyn.qp.solve_built`, ``qp_backend``);
    ``info["stage2_solver"]`` says which ("dual" or "qp").  DAQP's working set starts at
    ``prob.stage_two_active`` (a warm start; the answer is the same); either path leaves it at
    the rows active at the answer.
    With ``outputs = (tau, v_next, forces)`` (arrays to fill) they are written for the answer
    (:meth:`idyn.controllers.dynamics.Step.pyramid_outputs`) in the same compiled call; ``buffers``
    as for :func:`build_stage_one`; ``out_of_time(stage)`` (the controller's budget) ends the
    QP's retry schedule (:func:`idyn.qp.solve_built`'s ``stop``), Stage I's answer then stands."""
    W = prob.W
    k, nul = W.shape
    move, mu, info = _NOTHING, _NOTHING, {"stage2_status": "determinate", "nullity": 0}
    active, prob.stage_two_active = prob.stage_two_active, None
    if nul:
        mu = prob.mu if prob.cone.shape[0] else _NOTHING     # the cones' coefficients (held no-slip: no_slip_mu)
        level = _level_row(prob, W)
        # with qp-noslip's no-slip equality rows the dual converges on some states and not on
        # others (then the QP answers; docs/performance.md)
        if nul >= DUAL_MIN_NULLITY and not level.shape[0]:
            move, info = stage_two_by_dual(step, prob, z0, ridge, mu, offset)
            if move is not None:
                return _stage_two_answer(step, prob, z0, move, mu, outputs), info
        rows = k + prob.cone.shape[0]
        H2, c2, A_in, b_in = arrays(buffers, ("stage two", nul, rows), lambda: (
            ((nul, nul), "C"), (nul, "C"), ((rows, nul), "C"), (rows, "C")))
        kernel.stage_two_terms(prob.R, W, z0, ridge, prob.cone, step.L, step.v, step.qd, step.dt_h_u, step.B_dva,
                               step.Ma, step.h, step.dt, step.u_index, step.a_index, H2, c2, A_in, b_in)
        if offset is not None:   # tau0 - offset in c2 = -RW^T tau0 + ...: add RW^T offset, RW = R_a^T W / dt
            c2 += (prob.R[:, step.a_index].T @ W).T @ offset / step.dt   # this order: docs/results.md, grasp
        # H2 is exactly symmetric and its ridge bounds its condition number by 1 + nul / ridge
        qp = solve_built(H2, c2, level, _NOTHING if not level.shape[0] else np.zeros(1), A_in, b_in,
                         backend=_backend(qp_backend), definite=ridge > DEFINITE_RIDGE * nul,
                         active=active,
                         stop=None if out_of_time is None else (lambda: out_of_time("stage2 retries")))
        prob.stage_two_active = qp.active
        info.update({"stage2_status": qp.status.value, "nullity": nul, "stage2_iterations": qp.iterations,
                     "stage2_solver": "qp"})
        if qp.solved:
            move = qp.x
        else:                 # Stage I's answer is still a valid contact model solution
            move, mu = np.zeros(nul), _NOTHING
    # the determinate and the failed case go through the same kernel, with no move and no clipping
    return _stage_two_answer(step, prob, z0, move, mu, outputs), info


def _stage_two_answer(step: Step, prob: StageOne, z0: np.ndarray, move: np.ndarray, mu: np.ndarray,
                      outputs: tuple | None) -> tuple[np.ndarray, np.ndarray]:
    """Stage II's impulses ``z0 + W move`` (clipped into the cones of ``mu``) and its outputs."""
    W = prob.W
    k = W.shape[0]
    z = np.empty(k)
    tau, v_next, forces = outputs if outputs is not None else new_outputs(step)
    kernel.stage_two_outputs(prob.R, z0, W, move, mu, step.L, step.v, step.qd, step.dt_h_u, step.B_dva, step.Ma,
                             step.h, step.dt, step.u_index, step.a_index, step.impact_rows, z, tau, v_next, forces)
    return z


#: the dual Newton method of Stage II (:func:`stage_two_by_dual`): relative duality gap and
#: infeasibility it stops at, and its step cap (beyond it the QP runs; cold starts took up to 28
#: steps at 48 patch contacts and 62 at 64)
DUAL_TOL = 1e-13
#: the nullity from which Stage II goes to the dual first (without eq. 108's row of ``gap_rate``:
#: with it the dual fell back to the QP in 7 of 8 forced cases at 32 patch contacts, after up to
#: 100 Newton steps): below it DAQP on the nullspace QP was
#: as fast (median 0.06 ms each at 4 patch contacts, nullity 14; 0.13 ms at 8, 34) and above it
#: slower (0.30 against 0.11 ms at 12, 54; docs/performance.md)
DUAL_MIN_NULLITY = 40
DUAL_MAX_ITERATIONS = 100


def stage_two_by_dual(step: Step, prob: StageOne, z0: np.ndarray, ridge: float, mu: np.ndarray,
                    offset: np.ndarray | None):
    """Stage II by its dual (:func:`kernel.stage_two_dual`): ``(move, info)``, or ``(None, info)``
    when it did not converge (the QP then runs).  Its multipliers (``na`` torques, the ``rank``
    rows of Stage I's optimal set) start from a least-squares fit to ``z0``
    every step: the last step's multipliers took fewer Newton steps but more line-search trials,
    0.63 against 0.39 ms median at 32 patch contacts (docs/performance.md).  On success
    ``prob.stage_two_active`` gets the rows active at the answer (the QP's warm start)."""
    W = prob.W
    k, nul = W.shape
    lam = np.full(step.a_index.size + prob.Y.shape[0], np.nan)
    move, rows = np.empty(nul), np.empty(k + prob.cone.shape[0], np.intp)
    its, gap, infeas, count = kernel.stage_two_dual(
        prob.R, W, z0, ridge, mu, prob.Y, _NOTHING.reshape(0, k), step.L, step.v, step.qd, step.dt_h_u,
        step.B_dva, step.Ma, step.h, step.dt, step.u_index, step.a_index,
        _NOTHING if offset is None else offset, lam, DUAL_TOL, DUAL_MAX_ITERATIONS, move, rows)
    info = {"stage2_dual_iterations": its, "stage2_dual_gap": gap}
    if its < 0 or not np.all(np.isfinite(move)):
        return None, info
    prob.stage_two_active = rows[:count]
    info.update({"stage2_status": "solved", "nullity": nul, "stage2_iterations": its, "stage2_solver": "dual"})
    return move, info


#: Stage II's ridge (relative) above which, times the nullity, ``H2`` passes
#: :func:`idyn.qp.solve_built`'s positive-definiteness test by construction: its eigenvalues lie
#: in ``[rho, frob + rho]`` with ``rho = ridge frob / nul``, so the ratio of its Cholesky pivots
#: is at least ``ridge / (nul + ridge)``, here kept 1000 times above :data:`idyn.qp.PD_TOL`
DEFINITE_RIDGE = 1e3 * PD_TOL


def new_outputs(step: Step) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tau, v_next, forces)`` of ``step``, not yet written."""
    return np.empty(step.a_index.size), np.empty(step.v.size), np.empty((step.m, 3))


def _level_row(prob: StageOne, W: np.ndarray) -> np.ndarray:
    """Eq. 108 for Stage II: ``c^T W w = 0``, the nullspace moves that keep Stage I's objective.
    ``c``'s projected part is orthogonal to ``W``; the closing speeds of ``gap_rate`` are not, and
    their row ``closing^T W_N`` (scaled to unit largest entry) is returned as a (1, nullity) equality;
    (0, nullity) without them or when it is round-off (:data:`RANK_TOL` of the largest speed)."""
    if prob.closing is None:
        return np.zeros((0, W.shape[1]))
    row = prob.closing @ W[:prob.closing.size]
    scale = float(np.abs(row).max(initial=0.0))
    if not scale > RANK_TOL * float(prob.closing.max(initial=0.0)):   # round-off: no component along W
        return np.zeros((0, W.shape[1]))
    return (row / scale)[None]


#: an empty vector: no ``x3`` for :func:`kernel.stage_one`, no friction bound for
#: :func:`kernel.clip_to_cone` (writable, as every array the kernels take: a read-only one
#: is another type to compile for)
_NOTHING = np.zeros(0)


def solve_one_stage(prob: StageOne, regularization: float, qp_backend: str, out_of_time=None
                    ) -> tuple[np.ndarray, dict]:
    """Sec. 6.1 one-stage variant: Stage I with the Hessian regularised to ``H + eps I``,
    ``eps = regularization * max(diag Z^T A Z)`` (Todorov 2014), strictly convex hence unique.
    The scale is that of the contact Hessian ``Y^T Y`` alone, without the separation price
    (which would raise ``eps`` and the bias it causes with its weight).  ``out_of_time`` as for
    :func:`solve_stage_two`."""
    k = prob.k
    eps = regularization * max(float(np.einsum("ij,ij->j", prob.Y, prob.Y).max(initial=0.0)), 1e-12)
    H = prob.H + eps * np.eye(k)
    A_in, b_in = _with_bounds(prob)
    qp = solve_built(H, prob.c, np.zeros((0, k)), np.zeros(0), A_in, b_in, backend=_backend(qp_backend),
                     stop=None if out_of_time is None else (lambda: out_of_time("one-stage qp retries")))
    info = {"stage1_status": qp.status.value, "pivots": qp.iterations,
            "regularization": eps + qp.regularization}
    if not qp.solved:
        raise SolverError(f"one-stage QP failed: {qp.status.value}")
    return np.maximum(qp.x, 0.0), info


def _with_bounds(prob: StageOne) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``G z + g >= 0`` and ``z >= 0`` of ``prob`` as ``A z >= b`` (in the buffers
    of :attr:`StageOne.buffers`, whose bound rows are written once)."""
    G, g = prob.G, prob.g
    nc, k = G.shape
    key = ("bounds", nc, k)
    fresh = prob.buffers is None or key not in prob.buffers
    A, b = arrays(prob.buffers, key, lambda: (((nc + k, k), "C"), (nc + k, "C")))
    if fresh:                                         # a new buffer: its bound rows
        A[nc:], b[nc:] = np.eye(k), 0.0
    A[:nc], b[:nc] = G, g
    np.negative(b[:nc], out=b[:nc])
    return A, b


def _backend(name: str) -> str:
    """``name`` if :func:`idyn.qp.solve_qp` knows it (the same InvalidInputError otherwise)."""
    if name not in BACKENDS:
        raise InvalidInputError(f"unknown QP backend {name!r}; choose from {BACKENDS}")
    return name
