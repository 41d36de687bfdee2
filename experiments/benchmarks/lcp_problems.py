"""Realistic contact LCPs from real robot states, shared by the LCP tests and ``idyn bench lcp``.

A :class:`ContactProblem` is one control step of a quadruped (LINKS or a1) with ``n`` contact
points made by duplicating the feet in contact and jittering the copies in the ground plane (the
paper's timing experiment, Sec. 8.4.2, duplicates foot contacts the same way).  From it we build
the two LCPs of the paper:

* the no-slip LCP (Sec. 4.4): MLCP eq. 42 with the tangent rows of Algorithm 1, reduced by
  eqs. 121-122 to ``Q = C^T A^-1 C`` (eq. 44) and ``r`` (eq. 45); and the same problem in the
  form Algorithm 2 takes (``N``, ``M``, ``f*``, constraint rows ``J = [P; S; T]``);
* the Anitescu-Potra friction LCP (Sec. 5.2.1, eq. 64) over ``[f_N; f_D; lambda]``; eq. 64 is
  garbled in the PDF conversion, so it is re-derived from eqs. 54-58: the ``E`` block sits in
  the friction rows (``w_D = D v+ + E lambda``) and ``-E^T`` in the ``lambda`` rows.

Dynamics (eq. 37, sign conventions of :mod:`idyn.contact`):
``M (v+ - v-) = -dt h(q, v-) + P^T tau + N^T f_N + S^T f_S + T^T f_T`` with ``P v+ = qd_des``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from idyn import Contact, contact_jacobians
from idyn.lcp import contact_factor, find_indices, mlcp_to_lcp

#: Legs touching the ground in each named state.
STANCE = {"standing": ("LF", "RF", "LH", "RH"), "trot": ("LF", "RH")}


@dataclass(frozen=True)
class ContactProblem:
    """One control step with ``n`` contacts; matrices follow paper Sec. 4-5."""

    robot: str
    state: str
    mu: float
    dt: float
    M: np.ndarray        # (m, m) generalized inertia
    h: np.ndarray        # (m,) bias forces h(q, v-)
    P: np.ndarray        # (na, m) actuation selection
    v: np.ndarray        # (m,) velocity v- at the start of the step
    qd_des: np.ndarray   # (na,) desired actuated velocity at the end of the step (eq. 39)
    N: np.ndarray        # (n, m)
    S: np.ndarray        # (n, m)
    T: np.ndarray        # (n, m)
    phi: np.ndarray      # (n,)
    weight: float        # m g (N)

    @property
    def n(self) -> int:
        return self.N.shape[0]

    @property
    def momentum(self) -> np.ndarray:
        """``M v- - dt h``: the generalized momentum before contact and actuation forces."""
        return self.M @ self.v - self.dt * self.h

    def constrained_velocity(self, J: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Contact-free ``v+`` with ``J v+ = b``: solves ``[[M, -J^T], [J, 0]] [v; l] = [p; b]``."""
        m, c = self.M.shape[0], J.shape[0]
        K = np.block([[self.M, -J.T], [J, np.zeros((c, c))]])
        return np.linalg.solve(K, np.concatenate([self.momentum, b]))[:m]

    # ------------------------------------------------------------------ no-slip (Sec. 4.4)
    @cached_property
    def noslip_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Tangent rows kept by Algorithm 1."""
        return find_indices(self.M, self.P, self.S, self.T)

    @cached_property
    def noslip_constraints(self) -> tuple[np.ndarray, np.ndarray]:
        """``J = [P; S_S; T_T]`` and its right-hand side ``[qd_des; 0; 0]``."""
        s, t = self.noslip_rows
        J = np.vstack([self.P, self.S[s], self.T[t]])
        return J, np.concatenate([self.qd_des, np.zeros(len(s) + len(t))])

    def noslip_algorithm2(self) -> dict:
        """Arguments of :func:`idyn.lcp.ppm_contact` for the no-slip LCP."""
        J, b = self.noslip_constraints
        return dict(N=self.N, M=self.M, f_star=self.constrained_velocity(J, b), constraints=J,
                    offset=self.phi / self.dt)

    @cached_property
    def noslip_mlcp(self):
        """The MLCP of eq. 42 (rows of Algorithm 1) reduced by eqs. 121-122."""
        J, b = self.noslip_constraints
        c, n = J.shape[0], self.n
        A = np.block([[self.M, -J.T], [J, np.zeros((c, c))]])
        C = np.vstack([-self.N.T, np.zeros((c, n))])
        g = np.concatenate([-self.momentum, -b])
        return mlcp_to_lcp(A, np.zeros((n, n)), C, -C.T, g, self.phi / self.dt)

    @property
    def noslip_lcp(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Q, r)`` of eqs. 44-45, dense."""
        return self.noslip_mlcp.Q, self.noslip_mlcp.r

    # ------------------------------------------------------------------ Coulomb (Sec. 5)
    @cached_property
    def friction_lcp(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Q, r)`` of eq. 64 over ``[f_N (n); f_D (4n, D = [S; -S; T; -T]); lambda (n)]``."""
        n = self.n
        D = np.vstack([self.S, -self.S, self.T, -self.T])
        G = contact_factor(np.vstack([self.N, D]), self.M, self.P)
        f_star = self.constrained_velocity(self.P, self.qd_des)
        E = np.tile(np.eye(n), (4, 1))
        Q = np.zeros((6 * n, 6 * n))
        Q[:5 * n, :5 * n] = G.T @ G
        Q[n:5 * n, 5 * n:] = E
        Q[5 * n:, :n] = self.mu * np.eye(n)
        Q[5 * n:, n:5 * n] = -E.T
        r = np.concatenate([self.N @ f_star + self.phi / self.dt, D @ f_star, np.zeros(n)])
        return Q, r


def build_problem(robot: str = "links", state: str = "standing", n_contacts: int = 4,
                  mu: float = 1.0, jitter: float = 1e-3, seed: int = 0,
                  dt: float = 1e-3) -> ContactProblem:
    """A quadruped control step with ``n_contacts`` ground contacts at the feet in stance.

    ``standing``: the robot at rest in its standing pose, holding it (``qd_des = 0``).
    ``trot``: the diagonal pair LF/RH in stance, base moving forward at 0.2 m/s (docs/planner.md) with
    seeded random joint rates and desired accelerations, as in the middle of a trot.
    Contact copies beyond the first per foot are jittered by up to ``jitter`` metres in x, y.
    """
    from idyn.robots.quadruped import quadruped  # robots -> idyn; only this builder needs a robot

    quad = quadruped(robot)
    model = quad.model
    rng = np.random.default_rng(seed)
    q = quad.q_stand.copy()
    v = np.zeros(model.nv)
    P = model.actuation_matrix()
    qd_des = np.zeros(model.na)
    if state == "trot":
        v[0] = 0.2
        v[6:] = 0.3 * rng.standard_normal(model.nv - 6)
        qd_des = P @ v + dt * 2.0 * rng.standard_normal(model.na)
    elif state != "standing":
        raise ValueError(f"unknown state {state!r}; known: {sorted(STANCE)}")
    legs = STANCE[state]
    centres = dict(zip(quad.feet, quad.foot_centres(q)))
    contacts = []
    for k in range(n_contacts):
        leg = legs[k % len(legs)]
        foot = quad.feet[leg]
        p = centres[leg] - np.array([0.0, 0.0, foot.radius])
        if k >= len(legs):
            p = p + np.r_[rng.uniform(-jitter, jitter, 2), 0.0]
        contacts.append(Contact(foot.link, None, p, [0.0, 0.0, 1.0], mu))
    cj = contact_jacobians(model, q, contacts)
    return ContactProblem(robot=robot, state=state, mu=mu, dt=dt, M=model.mass_matrix(q),
                          h=model.bias_forces(q, v), P=P, v=v, qd_des=qd_des, N=cj.N, S=cj.S,
                          T=cj.T, phi=cj.phi, weight=model.total_mass * float(np.linalg.norm(model.gravity)))
