"""Sec. 4.5's consistency check (paper eqs. 46-51), shared by every contact-predicting controller.

*The check.*  A desired motion is inconsistent when no contact impulse of the controller's model
lets the actuated joints reach ``qd_des`` without a contact closing further than its gap allows:
the answer's ``N v+ >= -phi/dt`` (eq. 47) fails.  Lemke's method on the no-slip LCP then fails or
returns an answer that penetrates; Stage I of the complementarity-free model (Sec. 6) is then
infeasible and its regularised answer lets the contacts sink.  Fingers that the error feedback
keeps closing into a rigid box, and legs splaying on the ground (the paper's example), are such
commands.  :func:`consistency_violation` measures it.

*The minimal deviation* (eq. 46).  Variables ``x = [delta; z]``, ``P v+ = qd_des + delta``, with
``v+`` and ``tau`` following from ``x`` by the dynamics (eqs. 50-51, the reduced form of
:mod:`idyn.controllers.dynamics`), so every constraint is linear in ``x``:

- non-interpenetration ``N v+ >= -phi/dt`` (eq. 47) and ``f_N >= 0``, every contact;
- *no-slip contacts* (``sticking``): the equalities ``S v+ = 0``, ``T v+ = 0`` (eqs. 48-49), with
  ``|f_S|, |f_T| <= CONSISTENCY_FRICTION f_N`` (no friction without normal force; the QP has no
  complementarity to release an unloaded contact, so the bound does it);
- *Coulomb contacts* (``coulomb``), the analogue derived here: eqs. 48-49 are not part of the
  Coulomb model (a contact may slide), so they are no rows; what the model requires of the
  impulses instead is the friction pyramid of eq. 101, ``|f_S| + |f_T| <= mu f_N`` (the four
  edges ``f_S+, f_S-, f_T+, f_T-`` of Stage I, ``mu f_N >= 1^T f_F``, in the frame's two
  components), four inequality rows per contact.  The only equalities are then the dynamics
  (50-51) and ``P v+ = qd_des + delta``.  A ``delta`` is consistent for the complementarity-free
  model exactly when this set is non-empty: Stage I (eqs. 99-101) is then feasible for
  ``qd_des + delta``, so the controller's own model, solved again for it, has an answer that
  penetrates nothing.  (For the complementarity model of Sec. 5 every desired motion is
  consistent in exact arithmetic, Sec. 5's solvability argument; the same check applies to the
  answer its fallback gives.)  Contacts with ``mu = inf`` among ``coulomb`` are bounded by
  ``CONSISTENCY_FRICTION``.
- every other contact gets no tangential impulse.

Feasible whenever each sticking contact's point can be kept from sliding by the actuated joints
with ``z = 0`` (a foot by its leg, a fingertip following the box), the paper's argument that
``tau = 0`` with its forward solution is a feasible point; with only Coulomb contacts ``z = 0``
and the ``delta`` that stops every actuated joint's approach is feasible when the unactuated
bodies do not themselves close a gap.

Objective (re-derived: the paper minimises ``|P v+ - qd_des|`` over ``v+`` and ``tau``, which
leaves the impulses free)::

    |delta|^2  +  (IMPULSE_ENERGY_WEIGHT / I_a) z^T R M^-1 R^T z  +  ridge |z|^2

``z^T R M^-1 R^T z`` (``R = [N; S; T]``) is twice the kinetic energy the impulse gives the robot at
rest with passive actuators, the size of an impulse measured in the effective mass of its
contacts: loads that move the base and internal forces that only the actuators hold
(``R_u^T z = 0``, ``R_a^T z != 0``) both cost what they would do to the robot.  Dividing by
``I_a``, the mean diagonal of the actuated block of ``M``, turns it into the squared joint speed
carrying the same energy in an average actuated joint, the units of ``|delta|^2``.  The optimum
costs no more than any feasible point ``(delta_0, z_0)``, so
``z^T R M^-1 R^T z <= E(z_0) + I_a |delta_0|^2 / IMPULSE_ENERGY_WEIGHT``: the impulses stay within
the energies of a physical motion.  A ridge of ``1e-8`` on ``|z|^2`` alone priced a
newton-second at 1e-4 rad/s of deviation, and a QP holding near-dependent tangent rows met
slightly inconsistent desired motion with 1e5-1e6 N of opposing impulses.  The weight is small
so that the answer stays eq. 46's whenever the desired motion can be met with physical loads: a
standing LINKS sent to the QP keeps 99.85 % of its weight on its feet at 8e-4 rad/s of deviation
(1e-2: 87 %, 0.07 rad/s).  ``R M^-1 R^T`` is singular for impulses with ``R^T z = 0``, which act
on nothing: the relative ridge :data:`CONSISTENCY_RIDGE` makes the QP strictly convex.

Two uses.  :func:`min_deviation` takes the QP's impulses as the answer (the no-slip
controllers, as the paper's Sec. 4.5: "without re-solving the LCP");
:func:`consistent_step` takes only its ``delta`` and returns the step for the moved desired
velocity, which the controller solves again with its own model (the Coulomb controllers: their
forces stay those of their model, Stage I's maximal dissipation and Stage II's smoothing).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, solve_triangular

from idyn.contact import NO_SLIP_MU
from idyn.errors import SolverError
from idyn.qp import DEFAULT_BACKEND, solve_qp

from .dynamics import Step

#: weight of the impulses' kinetic energy against the squared deviation in the consistency QP
IMPULSE_ENERGY_WEIGHT = 1e-4
#: ridge on the impulses in the consistency QP, relative to the largest diagonal of their cost
CONSISTENCY_RIDGE = 1e-9
#: friction coefficient bounding the tangential impulses of no-slip contacts in the consistency
#: QP (no friction without normal force; the coefficient at and above which a simulator treats
#: contact as no-slip); also the bound of Coulomb contacts with ``mu = inf``
CONSISTENCY_FRICTION = NO_SLIP_MU
#: default tolerance (m/s) of the check ``N v+ + phi/dt >= -tol``
CONSISTENCY_TOL = 1e-6


def consistency_violation(step: Step, v_next: np.ndarray) -> float:
    """How far (m/s) the predicted velocity ``v_next`` closes a contact beyond its gap:
    ``max(0, -min(N v+ + phi/dt))`` (eq. 47); 0 for a consistent answer."""
    if step.m == 0:
        return 0.0
    return max(0.0, -float(step.normal_speeds(v_next).min()))


def solve_consistency(step: Step, sticking: np.ndarray | None = None, coulomb: np.ndarray | None = None,
                      qp_backend: str = DEFAULT_BACKEND):
    """The minimal-deviation QP of the module docstring: ``(qp, delta, z, bounded)`` with ``z =
    [f_N; f_S; f_T]`` impulses (3m,) and ``bounded`` False when only the retry without the
    no-slip contacts' friction bound solved; ``delta`` and ``z`` are None if it did not solve.

    ``sticking``: mask of the no-slip contacts (default: all, unless ``coulomb`` is given);
    ``coulomb``: mask of the Coulomb contacts (pyramid of their own mu, no tangent equality).
    """
    J, u, a, m, na = step.jac, step.u, step.a, step.m, step.qd.size
    if coulomb is None:
        coulomb = np.zeros(m, dtype=bool)
    if sticking is None:
        sticking = ~coulomb
    stick = np.flatnonzero(np.asarray(sticking, dtype=bool) & ~coulomb)
    slide = np.flatnonzero(coulomb)
    tangent = np.concatenate((stick, slide))
    free = np.concatenate((np.arange(m), m + tangent, 2 * m + tangent))   # impulse components in x
    R = step.directions(pyramid=False)[free]             # (k, nv)
    Zr = step.solve_A(R[:, u].T)                           # A^-1 R_u^T   (nu, k)
    Zb = step.solve_A(step.B)                              # A^-1 B       (nu, na)

    def rows(X):  # X v+ = [X_a - X_u Zb] delta + [X_u Zr] z + (X_u p + X_a qd)
        return np.hstack((X[:, a] - X[:, u] @ Zb, X[:, u] @ Zr)), X[:, u] @ step.p + X[:, a] @ step.qd

    Nrow, n0 = rows(J.N)
    Trow, t0 = rows(np.vstack((J.S[stick], J.T[stick])))
    k = na + free.size
    H = np.zeros((k, k))
    H[:na, :na] = np.eye(na)
    H[na:, na:] = impulse_energy(step, R) * (IMPULSE_ENERGY_WEIGHT / float(np.mean(np.diag(step.M)[a])))
    H[na:, na:][np.diag_indices(free.size)] += CONSISTENCY_RIDGE * max(float(np.diag(H)[na:].max()), 1e-300)
    mu = np.where(np.isfinite(J.mu[slide]), J.mu[slide], CONSISTENCY_FRICTION)
    for bounded in (True, False):     # the bound, then (should it be infeasible) eqs. 46-51 alone
        loads = _load_rows(na, m, stick, slide, mu, bounded)
        qp = solve_qp(H, np.zeros(k), A_eq=Trow, b_eq=-t0, A_in=np.vstack((Nrow, loads)),
                      b_in=np.concatenate((-n0 - J.phi / step.dt, np.zeros(loads.shape[0]))), backend=qp_backend)
        if qp.solved or not stick.size:
            break
    if not qp.solved:
        return qp, None, None, bounded
    z = np.zeros(3 * m)
    z[free] = qp.x[na:]
    z[:m] = np.maximum(z[:m], 0.0)
    return qp, qp.x[:na], z, bounded


def min_deviation(step: Step, impulses, tau, v_next, info: dict, qp_backend: str = DEFAULT_BACKEND,
                  sticking: np.ndarray | None = None, coulomb: np.ndarray | None = None):
    """Eqs. 46-51 with the QP's impulses as the answer: ``(z, tau, v+)`` with ``z = [f_N; f_S;
    f_T]`` impulses (the given answer is kept, flagged, if the QP fails).  ``sticking`` (default
    all) and ``coulomb``: see :func:`solve_consistency`.  ``info`` receives
    ``"consistency_qp"`` (the QP's status) and ``"desired_deviation"`` (``|delta|``, rad/s)."""
    qp, delta, z, bounded = solve_consistency(step, sticking, coulomb, qp_backend)
    info["consistency_qp"] = qp.status.value if bounded else f"{qp.status.value} without friction bound"
    if delta is None:
        if info.get("status", "solved") != "solved":
            raise SolverError(f"no-slip LCP {info.get('status')} and consistency QP {qp.status.value}")
        return impulses, tau, v_next  # keep the LCP answer; the flag tells the caller
    tau, v_next = step.resolve(step.rows.T @ z, qd=step.qd + delta)
    info["desired_deviation"] = float(np.linalg.norm(delta))
    if info.get("status", "solved") != "solved":   # the LCP failed: this QP, not it, made tau
        info["fallback"] = "min-deviation"
    return z, tau, v_next


def consistent_step(step: Step, info: dict, qp_backend: str = DEFAULT_BACKEND,
                    sticking: np.ndarray | None = None, coulomb: np.ndarray | None = None) -> Step | None:
    """Eqs. 46-51 with only the QP's ``delta`` kept: the step for the desired actuated velocity
    ``qd_des + delta`` (:meth:`idyn.controllers.dynamics.Step.with_desired`), to be solved again
    by the controller's own model; None when the QP did not solve.  ``info`` receives
    ``"consistency_qp"`` and ``"desired_deviation"`` (rad/s)."""
    qp, delta, _, bounded = solve_consistency(step, sticking, coulomb, qp_backend)
    info["consistency_qp"] = qp.status.value if bounded else f"{qp.status.value} without friction bound"
    if delta is None:
        return None
    info["desired_deviation"] = float(np.linalg.norm(delta))
    return step.with_desired(step.qd + delta)


def _load_rows(na: int, m: int, stick: np.ndarray, slide: np.ndarray, mu: np.ndarray, bounded: bool
               ) -> np.ndarray:
    """Rows ``L`` of ``L x >= 0`` over ``x = [delta; f_N (all m); f_S (stick, slide); f_T (stick,
    slide)]``: ``f_N >= 0``; if ``bounded``, ``|f_S|, |f_T| <= CONSISTENCY_FRICTION f_N`` for the
    ``stick`` contacts; always the pyramid ``mu f_N - (+-f_S +- f_T) >= 0`` (eq. 101, coefficients
    ``mu``) for the ``slide`` (Coulomb) contacts."""
    s, t = stick.size, stick.size + slide.size
    rows = [np.eye(m, na + m + 2 * t, na)]
    if bounded and s:
        box = np.zeros((4 * s, na + m + 2 * t))
        for j, i in enumerate(stick):
            for r, col in enumerate((na + m + j, na + m + t + j)):
                for sign in (1.0, -1.0):
                    row = 4 * j + 2 * r + (sign < 0)
                    box[row, na + i], box[row, col] = CONSISTENCY_FRICTION, sign
        rows.append(box)
    if slide.size:
        cone = np.zeros((4 * slide.size, na + m + 2 * t))
        for j, i in enumerate(slide):
            for r, (ss, st) in enumerate(((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0))):
                row = 4 * j + r
                cone[row, na + i] = mu[j]
                cone[row, na + m + s + j], cone[row, na + m + t + s + j] = -ss, -st
        rows.append(cone)
    return np.vstack(rows)


def impulse_energy(step: Step, R: np.ndarray) -> np.ndarray:
    """``R M^-1 R^T`` for impulse directions ``R`` (rows): ``z^T (R M^-1 R^T) z`` is twice the
    kinetic energy an impulse ``z`` gives the robot at rest with passive actuators."""
    Mc = cho_factor(step.M, lower=True, check_finite=False)[0]
    X = solve_triangular(Mc, R.T, lower=True, check_finite=False)     # L^-1 R^T
    return X.T @ X


def command_effort(step: Step, moved: Step) -> np.ndarray:
    """The actuator torque (N m, (na,)) that the part of the command removed by the check,
    ``step.qd - moved.qd``, asks for: ``S (qd_des - qd_consistent) / dt`` with ``S = C - B^T A^-1 B``
    the actuated joints' inertia with the unactuated coordinates free (eqs. 83, 90).  A rigid
    contact turns that effort into contact force; Stage II takes it as the torque it measures
    from (:mod:`idyn.controllers.qp_coulomb`, option ``command_effort``)."""
    d = step.qd - moved.qd
    return (step.Ma[:, step.a] @ d - step.B.T @ step.solve_A(step.B @ d)) / step.dt
