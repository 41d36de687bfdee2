"""Complementarity-free inverse dynamics (paper Sec. 6): Stage I and Stage II.

**Stage I** (eqs. 69-74, reduced as in Sec. 6.2.1-6.2.2, eqs. 75-101).  Impulses
``z = [f_N; f_S+; f_S-; f_T+; f_T-] >= 0`` (friction pyramid, Sec. 5.1) along the rows of
``R = [N; S; -S; T; -T]``.  With the reduced dynamics of :mod:`controllers.dynamics`
(``v+_u = p + Z z``, ``Z = A^-1 R_u^T``, actuated velocity fixed to ``qd_des``) Stage I is

    minimize  1/2 z^T (Z^T A Z) z + c^T z

subject to non-interpenetration ``N v+ >= -phi/dt`` (eq. 99), ``z >= 0`` (eq. 100) and, for
finite friction, ``mu_i f_N,i >= 1^T f_F,i`` (eq. 101; the sum of the four pyramid components,
the ``c_S + c_T`` of the garbled eq. 101 being re-derived from eq. 72).  ``Z^T A Z = Y^T Y`` with
``Y = L^-1 R_u^T`` (``A = L L^T``) has rank at most ``nu`` (6 for a quadruped), so Stage I is
convex, not strictly convex: indeterminate contact.  As the authors do (footnote 1), Stage I
is solved through its KKT conditions, the LCP ``([c; g], [[H, -G^T], [G, 0]])`` with Lemke's
method (``stage1_solver="lemke"``, with the regularisation fallback); ``"qp"`` solves the QP
directly through :func:`idyn.qp.solve_qp` (ridge fallback) instead.

**Which energy.**  Eqs. 95-98 take ``c = Z^T A p + Z^T B qd_des``: the kinetic energy
``1/2 v+^T M v+`` of the whole robot (``objective="kinetic-energy"``, the literal paper).  With
the actuated velocities prescribed, that energy includes what the actuators inject, and its
minimum cancels the robot's momentum through the contacts: legs pushing the base forward get
stance feet that slide back under a slowing base (tested), and the frictionless QP is *not* the
contact LCP the paper says it is (Sec. 6.2: "identical to an LCP of the form that Baraff has
proven solvable").  Maximal dissipation is a statement about the contact impulses: the work
they do, ``z^T R (v+(0) + v+)/2``, is as negative as possible, with ``v+(0) = (p, qd_des)`` the
velocity the step would end with without contact impulses and ``v+`` the one it ends with (the
impulses act on top of everything else in the step, so the velocity they change is ``v+(0)``,
not the step's initial ``v``).  Since ``R v+ = R v+(0) + Y^T Y z``, that work is exactly
``1/2 z^T (Z^T A Z) z + z^T R v+(0)``, so the default ``objective="contact-work"`` takes
``c = R v+(0)``.  This is
the forward model's objective (Anitescu 2006; idyn.sim's ``qp`` contact model) with the
actuated rows prescribed: feet that can stick stick, and with ``mu = 0`` the optimality
conditions are the contact LCP ``w = N v+ >= 0, z_N >= 0, z_N w = 0`` for contact velocities
the impulses can change (tested; see the projection below for the others).  Measured on
the trot against idyn.sim's ``qp`` model (mu 0.5, 0.3 s): summed normal force error 8.6 % with
the literal objective, 0.65 % with this one (10.3 % and 0.45 % with SPEC's feedback kv 10).  One more step: ``R v+(0)`` is projected onto
the range of ``R_u``, the contact velocities the impulses can change.  The part outside it is
relative motion of the feet that the prescribed joint velocities impose and no impulse can
stop (with error feedback, every closed-loop step has some).  Left in, it is opposed with the
full ``mu f_N`` of internal friction (1.3 kN between two feet at ``mu = 100``, measured) and
its normal part picks an extreme load distribution whose choice flips with micrometre-per-second
velocities: the torque chatter of Fig. 15 came back through Stage I (max |d tau/dt| 977 N m/s
with and without Stage II, measured), because the objective was no longer constant along
``ker(Z^T A Z)``.  Projected, it is constant there, as with eq. 98, Stage II holds unchanged,
and Algorithm 1 treats such motion the same way (dependent tangent rows dropped, Appendix E).

**Separation of touching contacts.**  Without complementarity a loaded contact may separate:
at a sliding contact the optimum trades the separation speed its normal impulse causes against
the friction that impulse buys, and predicts ``N v+ ~ mu |v_T|`` together with a large normal
force (Anitescu's relaxation; Sec. 2.3.4).  In an inverse dynamics controller that prediction is
an instruction: the torques realise the predicted lift.  Measured on LINKS in PyBullet at
mu = 0.1 (qp-coulomb, default feedback): two stance feet sliding at 0.2 m/s were predicted to
carry 162 N (the robot weighs 47 N) while separating at 0.012 m/s; PyBullet realised the
predicted base velocity to 1e-3 m/s, the base rose at 0.68 m/s and the robot fell at 2.33 s (on
the rough terrain at 0.52 s, on its low-friction cells).  A rigid (complementarity) world does
not let a touching foot leave while it pushes, so the controllers check Stage I's answer, as
Sec. 4.5 checks consistency: the touching contacts (gap at most
:data:`idyn.contact.CONTACT_GAP`) that carry normal impulse yet end the step further apart than
that gap (:func:`separating_loads`) get their separation priced, ``w/2 |N_c v+|^2`` (the kinetic
energy of a mass ``w`` moving at the separation speed, :func:`price_separation`), and Stage I
is solved again, until no new contact separates under load.  With ``P = N_c A^-1 R_u^T`` that
is ``H += w P^T P``, ``c += w P^T N_c v+(0)``: still convex, so Stage I stays always feasible
(a hard ``N_c v+ = 0`` was infeasible on about half the steps of that trot: legs that must lift
a foot faster than gravity lowers the base).  ``P = (N_c L^-T) Y``, so ``ker(Y)`` is in
``ker(P)``: the Hessian's nullspace, the projected ``c`` and Stage II are unchanged.  Only
violating contacts are priced: pricing every touching contact also pulls on feet that rightly
separate unloaded (a base moving up), and the frictionless Stage I, which is the contact LCP,
would lose its complementarity (tested).  The controllers take ``w`` in multiples of the robot's
mass (``separation_weight``, default 1; 0 is the relaxation as published).  The rule itself is
:mod:`idyn.separation`, shared with idyn.sim's ``qp`` contact model, the controllers' matched
simulator.

**Contacts at a distance** (``gap_rate``, off by default).  As eqs. 94-101 are written the gap
enters Stage I only through the non-penetration rows (eq. 99), so the frictionless optimum is
``f_N _|_ N v+ >= 0`` for every contact given, at whatever gap: a contact the planner or a
simulator's detection margin hands over 0.1 mm before touchdown is predicted to stop there and
carry load, and on its own matched simulator (idyn.sim's ``qp``, which does the same) LINKS rode
on feet that never reached the ground and fell at 2.5 s (:mod:`idyn.separation`, "Contacts at a
distance", has the numbers).  With ``gap_rate`` the normal rows of ``c`` measure ``N v+ +
max(phi - CONTACT_GAP, 0)/dt`` (Anitescu's stabilised relaxation, eq. 35 for frictionless
contact, with contacts within :data:`idyn.contact.CONTACT_GAP` touching): a contact at a distance
is loaded only to close its gap within the step.  Only at contacts with a friction bound (cone
rows; not under no slip, so ``qp-noslip`` is unchanged): unloaded, a contact without one could
carry any friction (:func:`idyn.separation.closing_speed` says why).  The closing speeds are added
after the projection onto ``range(R_u)``: projected, most of a foot's gap lands on the rows of
the others (LINKS at rest on a diagonal pair, the other two feet 50 um up: all four predicted at
11.8 N, the lifted ones ending 50 um apart; added after, 23.5 N on the pair and none on the
others, eq. 35 to 1e-18).  The objective then varies along ``ker(Y)``, where it prefers loads on
the contacts with smaller gaps (bounded below: the speeds are >= 0), and Stage II keeps eq. 108
as one equality row (below).  On the 30 s matched trot with the same term in the ``qp`` model
(balance term off): 30 s at 0.59 % mean relative error of the summed normal force (without it:
a fall at 2.5 s, 0.51 %; projected instead: 1.6 %; with the term in the controller alone: a fall
at 1.4 s, 48 %).  idyn.sim's ``qp`` model does not have the term yet, so ``gap_rate`` is off by
default, which keeps the matched pair one model; in PyBullet it changes little (contacts come
at overlaps, counted as zero gap; rigid mu 0.1 and rough ground: 30 s, 4 waypoints each, joint
error 0.0311 and 0.0186 rad against 0.0310 and 0.0195).

**No slip** (ID_QP,inf, Table 6 "No-slip (impact model)").  The same model with the hard
equalities ``S v+ = 0``, ``T v+ = 0`` (eqs. 40-41) for the tangent rows that Algorithm 1 keeps
(:meth:`controllers.dynamics.Step.independent_tangents`; dropped rows are implied by the kept
ones, Appendix E): ``E z + e = 0`` with ``E = S_u A^-1 R_u^T``.  With the literal
kinetic-energy objective they are what holds the feet (measured in PyBullet: without them the
base never moved).  The equalities make
Stage I a QP with equality rows, solved by :func:`idyn.qp.solve_qp` whatever ``stage1_solver``.

**Stage II** (Sec. 6.2.4, eqs. 102-112).  With ``W`` an orthonormal basis of ``ker(Z^T A Z) =
ker(Y)`` (from the SVD of ``Y``, whose other right singular vectors span ``range(R_u)`` and
project ``c`` onto it: one factorisation and one rank decision for both), every ``z0 + W w``
dissipates the same energy; since
``Z W = 0`` (the paper's "Z ker(Z^T A Z) = 0") and ``c`` lies in the range of ``R_u``, the
energy equality (108), the non-interpenetration rows (109) and the no-slip equalities hold for
every ``w`` and drop out; with ``gap_rate``'s closing speeds in ``c`` eq. 108 stays, as the one
row ``closing^T W_N w = 0``.  Then ``tau`` changes by
``-R_a W w / dt`` only (eq. 90), and Stage II is

    minimize_w  1/2 |tau0 - R_a W w / dt|^2 + rho/2 |z0 + W w|^2     s.t. (110), (111)

with a small ridge ``rho`` on the impulses: the paper's Stage II Hessian ``W^T U^T G^-1 G^-1 U W``
is itself singular whenever two impulse combinations give equal torques (opposite pyramid edges,
duplicated contacts), and the ridge picks the least-norm one so the solution is unique and
continuous in the data.  ``rho`` is relative to the mean eigenvalue of the torque term (default
1e-6).

*Which torque* (a deliberate departure from the literal equations).  Eqs. 105-107 minimise
``|y|^2`` with ``y`` eq. 90's ``x``: the actuator force beyond the contact-free inverse dynamics
``f_ID`` (eq. 87; the torque is ``y + f_ID``).  This code minimises ``|tau|^2``, the whole
actuator torque, as the paper's prose says ("the one that minimizes the l2-norm of joint
torques") and the authors' Pacer code does.

*Units.*  The objective is in torque units, (N m)^2, with ``w`` in impulses (N s); eq. 112
scales its objective by ``dt^2``.  Scaled so (values ~1e-6, Hessian eigenvalues down to ~1e-8),
the QP sat at the scale of quadprog's round-off thresholds (its Goldfarb-Idnani method tests
step directions and slacks against an absolute ~1e-15), and on LINKS with two or three contacts
per foot (exact copies solved unmerged, or 1 mm apart) its answers' objective was up to 81 %
above the optimum, in some states above Stage I's own answer (``w = 0``, always feasible); in
torque units it is within 3e-6 of cvxopt's (tests/test_controllers_stage_two_scaling.py).  With
one contact per foot both scalings were within 2e-8 (N m)^2 of the optimum.  Exact copies solved
unmerged (the controllers merge them by default) and copies 1 mm apart can still be declared
inconsistent by quadprog and then by idyn.qp's cvxopt fallback (qp-coulomb, triple copies: 1
state in 40; more found by hypothesis): Stage II then keeps Stage I's answer (``stage2_status``).  Scaling the rows
of (110)-(111) to unit norm removed those, but made the manipulator grasp at mu = 100 far worse
(mean |d tau/dt| 392 -> 5742 N m/s), so it is not done.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from idyn.errors import InvalidInputError, SolverError
from idyn.lcp.lemke import cold_checked
from idyn.lcp.regularized import regularized_checked
from idyn.lcp.residuals import DEFAULT_TOL
from idyn.qp import BACKENDS, solve_built
from idyn.separation import closing_speed
from idyn.separation import price_separation as core_price_separation

from . import _dissipation_kernel as kernel

if TYPE_CHECKING:   # dynamics imports this module's cone rows (touchdown impact)
    from .dynamics import Step

RANK_TOL = kernel.RANK_TOL
#: Stage I objectives: the contact impulses' work (default) or the literal kinetic energy
OBJECTIVES = ("contact-work", "kinetic-energy")


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
                    objective: str = "contact-work", gap_rate: bool = False, lcp: bool = False) -> StageOne:
    """Assemble Stage I (eqs. 94-101) for ``step``; ``coulomb=False`` drops the cone (mu = inf).

    ``objective`` chooses the linear term (see "Which energy" in the module docstring):
    ``"contact-work"`` ``c = R v+(0)`` projected onto ``range(R_u)``, ``"kinetic-energy"``
    eq. 98's ``c = R_u (p + A^-1 B qd)``.  ``gap_rate`` adds the closing speeds of the contacts
    with a friction bound (:func:`idyn.separation.closing_speed`) to its normal rows, after the
    projection (see "Contacts at a distance" in the module docstring).

    With ``no_slip_tol`` the no-slip equalities ``S v+ = 0``, ``T v+ = 0`` (eqs. 40-41) are added
    for the tangent rows Algorithm 1 keeps at that dependence tolerance:
    ``S_u (p + A^-1 R_u^T z) + S_a qd_des = 0``, linear in ``z``.

    ``lcp``: the KKT LCP (:meth:`StageOne.lcp`, for Lemke's method) is made in the same call.
    """
    if objective not in OBJECTIVES:
        raise InvalidInputError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    m, nu, nv = step.m, step.nu, step.v.size
    k = 5 * m
    if objective == "kinetic-energy":                        # [N; S; T]_u (p + A^-1 B qd)
        x3 = step.rows[:, step.u] @ (step.p + step.solve_A(step.B @ step.qd))
    else:
        x3 = _NOTHING
    cone = cone_rows(step.jac.mu if coulomb else np.full(m, np.inf))
    nc = m + cone.shape[0]
    R, Y, free, Vt = np.empty((k, nv)), np.empty((nu, k), order="F"), np.empty(3 * m), np.empty((k, k))
    c, G, g, H = np.empty(k), np.empty((nc, k)), np.empty(nc), np.empty((k, k))
    lcp = lcp and not gap_rate and no_slip_tol is None
    Mlcp, qlcp = (np.empty((k + nc, k + nc)), np.empty(k + nc)) if lcp else (_NO_LCP, _NOTHING)
    rank, smallest, largest = kernel.stage_one(step.rows, step.L, step.p, step.qd, step.u_index, step.a_index,
                                               step.jac.phi, step.dt, cone, x3, R, Y, free, Vt, c, G, g, H, Mlcp, qlcp)
    step._free, step._pyramid = free, R
    dead = 0
    if not smallest > RANK_TOL * max(largest, 1.0):          # some row no impulse can change
        Gn, gn = G[:m], g[:m]
        live = np.sqrt(np.einsum("ij,ij->i", Gn, Gn)) > RANK_TOL * max(largest, 1.0)
        dead = int(np.count_nonzero(~live & (gn < 0)))
        G, g = np.concatenate((Gn[live], cone)), np.concatenate((gn[live], np.zeros(cone.shape[0])))
        lcp = False                                          # made again with the live rows
    prob = StageOne(R, Y, H, Vt[rank:].T, c, G, g, cone, dead)
    if lcp:
        prob.Mlcp, prob.qlcp = Mlcp, qlcp
    if gap_rate:                                             # the contacts with cone rows
        bounded = np.isfinite(step.jac.mu) if coulomb else np.zeros(m, dtype=bool)
        prob.closing = closing_speed(step.jac.phi, step.dt, bounded)
        c[:m] += prob.closing
    if no_slip_tol is not None:
        s_idx, t_idx = step.independent_tangents(np.arange(m), no_slip_tol)
        prob.E, prob.e = np.empty((s_idx.size + t_idx.size, k)), np.empty(s_idx.size + t_idx.size)
        kernel.no_slip_rows(Y, free, s_idx, t_idx, prob.E, prob.e)   # T_u A^-1 R_u^T, T v+(0)
        prob.kept_tangent_rows = (s_idx.size, t_idx.size)
    return prob


def solve_stage_one(prob: StageOne, method: str, qp_backend: str) -> tuple[np.ndarray, dict]:
    """Stage I optimum ``z0`` (any one of them) and solver info: Lemke's method on the KKT LCP
    (``method="lemke"`` without equality rows), then regularised Lemke, then the QP."""
    if method == "lemke" and not prob.E.shape[0]:
        Mlcp, qlcp = prob.lcp()
        z = np.empty(qlcp.size)
        passed, pivots = cold_checked(Mlcp, qlcp, 1e-12, DEFAULT_TOL, z)
        if passed:
            return z[:prob.k], {"stage1_status": "solved", "pivots": pivots, "regularization": 0.0}
        try:
            res = regularized_checked(Mlcp, qlcp)
        except np.linalg.LinAlgError:  # a solver must report, not raise; fall through to the QP
            res = None
        if res is not None and res.solved:
            return res.z[:prob.k], {"stage1_status": res.status.value, "pivots": res.pivots,
                                    "regularization": res.regularization}
    A_in, b_in = _with_bounds(prob.G, prob.g)
    qp = solve_built(prob.H, prob.c, prob.E, -prob.e, A_in, b_in, backend=_backend(qp_backend))
    info = {"stage1_status": qp.status.value, "pivots": qp.iterations, "regularization": qp.regularization,
            "stage1_solver": "qp" if method == "qp" or prob.E.shape[0] else "qp (lemke failed)"}
    if not qp.solved:
        raise SolverError(f"Stage I failed: {qp.status.value}")
    return np.maximum(qp.x, 0.0), info


def solve_priced(step: Step, prob: StageOne, weight: float, method: str, qp_backend: str,
                 solve=None) -> tuple[np.ndarray, dict]:
    """Stage I, solved again with the separation of the contacts that separate under load
    priced at ``weight`` (kg), until none is added (see "Separation of touching contacts");
    ``info["separation_priced"]``: how many.  ``solve(prob)`` solves Stage I once (default
    :func:`solve_stage_one` with ``method``, ``qp_backend``)."""
    priced, new = np.zeros(step.m, dtype=bool), np.empty(step.m, dtype=np.intp)
    count = 0
    while True:
        z, info = solve(prob) if solve is not None else solve_stage_one(prob, method, qp_backend)
        if not weight > 0.0:
            break
        added = kernel.new_separations(prob.Y, z, step.free_velocity, step.jac.phi, step.dt, priced, new)
        if not added:
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


def solve_stage_two(step: Step, prob: StageOne, z0: np.ndarray, ridge: float, qp_backend: str,
                    outputs: tuple | None = None) -> tuple[np.ndarray, dict]:
    """Stage II: least torque (plus ``ridge``) over the Stage I optimal set (eqs. 102-112).
    With ``outputs = (tau, v_next, forces)`` (arrays to fill) they are written for the answer
    (:meth:`controllers.dynamics.Step.pyramid_outputs`) in the same compiled call."""
    W = prob.W
    k, nul = W.shape
    if nul == 0:
        if outputs is not None:
            _outputs(step, prob, z0, outputs)
        return z0, {"stage2_status": "determinate", "nullity": 0}
    rows = k + prob.cone.shape[0]
    H2, c2, A_in, b_in = np.empty((nul, nul)), np.empty(nul), np.empty((rows, nul)), np.empty(rows)
    kernel.stage_two_terms(prob.R, W, z0, ridge, prob.cone, step.L, step.v, step.qd, step.dt_h_u, step.B_dva, step.Ma,
                           step.h, step.dt, step.u_index, step.a_index, H2, c2, A_in, b_in)
    level = _level_row(prob, W)
    qp = solve_built(H2, c2, level, np.zeros(level.shape[0]), A_in, b_in, backend=_backend(qp_backend))
    info = {"stage2_status": qp.status.value, "nullity": nul, "stage2_iterations": qp.iterations}
    if not qp.solved:         # Stage I's answer is still a valid contact model solution
        if outputs is not None:
            _outputs(step, prob, z0, outputs)
        return z0, info
    z = np.empty(k)
    tau, v_next, forces = outputs if outputs is not None else new_outputs(step)
    kernel.stage_two_outputs(prob.R, z0, W, qp.x, step.jac.mu if prob.cone.shape[0] else _NOTHING, step.L, step.v,
                             step.qd, step.dt_h_u, step.B_dva, step.Ma, step.h, step.dt, step.u_index, step.a_index,
                             step.impact_rows, z, tau, v_next, forces)
    return z, info


def new_outputs(step: Step) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tau, v_next, forces)`` of ``step``, not yet written."""
    return np.empty(step.a_index.size), np.empty(step.v.size), np.empty((step.m, 3))


def _outputs(step: Step, prob: StageOne, z: np.ndarray, outputs: tuple) -> None:
    tau, v_next, forces = outputs
    tau[:], v_next[:], forces[:] = step.pyramid_outputs(prob.R, z)


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
#: :func:`kernel.clip_to_cone`; and no KKT LCP to make
#: (writable, as every array the kernels take: a read-only one is another type to compile for)
_NOTHING = np.zeros(0)
_NO_LCP = np.zeros((0, 0))


def solve_one_stage(prob: StageOne, regularization: float, qp_backend: str) -> tuple[np.ndarray, dict]:
    """Sec. 6.1 one-stage variant: Stage I with the Hessian regularised to ``H + eps I``,
    ``eps = regularization * max(diag Z^T A Z)`` (Todorov 2014), strictly convex hence unique.
    The scale is that of the contact Hessian ``Y^T Y`` alone, without the separation price
    (which would raise ``eps`` and the bias it causes with its weight)."""
    k = prob.k
    eps = regularization * max(float(np.einsum("ij,ij->j", prob.Y, prob.Y).max(initial=0.0)), 1e-12)
    H = prob.H + eps * np.eye(k)
    A_in, b_in = _with_bounds(prob.G, prob.g)
    qp = solve_built(H, prob.c, np.zeros((0, k)), np.zeros(0), A_in, b_in, backend=_backend(qp_backend))
    info = {"stage1_status": qp.status.value, "pivots": qp.iterations,
            "regularization": eps + qp.regularization}
    if not qp.solved:
        raise SolverError(f"one-stage QP failed: {qp.status.value}")
    return np.maximum(qp.x, 0.0), info


def _with_bounds(G: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``G z + g >= 0`` and ``z >= 0`` as ``A z >= b``."""
    k = G.shape[1]
    return np.concatenate((G, np.eye(k))), np.concatenate((-g, np.zeros(k)))


def _backend(name: str) -> str:
    """``name`` if :func:`idyn.qp.solve_qp` knows it (the same InvalidInputError otherwise)."""
    if name not in BACKENDS:
        raise InvalidInputError(f"unknown QP backend {name!r}; choose from {BACKENDS}")
    return name
