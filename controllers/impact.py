"""Touchdown: the passive impact that precedes a control step (paper Sec. 2.3.4 and 3.2).

The inverse-dynamics models of the paper prescribe the actuated velocities at the end of the
step (``P v+ = qd_des``, eq. 38).  When a contact closes with an approach speed (a swing foot
landing, a fingertip reaching the box), the model can only meet that prescription if the
actuators deliver, within one control period, the impulse that stops the contact: a stiff
joint meeting the ground.  Sec. 3.2 warns of exactly this ("an impact occurred ... actuators
attached to the contacted link ... are heavily loaded").  In closed loop it is what launched
LINKS: a foot landing at 0.3 m/s made ``lcp-noslip`` command 3.8e3 N m (1 kN of predicted force
and up to 2.9e4 N tangential) in PyBullet.

Finite actuators cannot act impulsively, so the impulse that stops a closing contact is
delivered by the contact alone, with the actuators passive over the instant of impact.  We model
it with the paper's own impact model (Drumwright & Shell, Sec. 2.3.4, the Stage I model of
Sec. 6 without the inverse-dynamics constraint eq. 74): the inelastic impulse ``z >= 0`` along
``R = [N; S; -S; T; -T]`` that dissipates kinetic energy maximally,

    minimize_z  1/2 v'^T M v'   with   v' = v + M^-1 R^T z
    subject to  N v' >= -phi/dt (eq. 70),  z >= 0,  mu f_N >= 1^T f_F  (finite mu, eq. 72)

and the controller then solves its own model from ``v'`` instead of the measured ``v``.  The
impulse is applied only when some contact closes faster than ``speed_tol`` beyond what its gap
allows (``N v + phi/dt < -speed_tol``): for feet already at rest on the ground, the common
case, it is exactly zero and nothing changes.  The impulse is part of the contact force over
the step, so it is reported in ``contact_forces`` (a simulator applies it too).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from idyn.contact import ContactJacobians
from idyn.qp import solve_qp

from .dissipation import cone_rows

#: approach speed (m/s) beyond the gap allowance that counts as an impact
IMPACT_SPEED_TOL = 1e-2


def passive_impact(M: np.ndarray, v: np.ndarray, jac: ContactJacobians, dt: float,
                   qp_backend: str = "quadprog") -> tuple[np.ndarray, np.ndarray] | None:
    """``(v', z)``: the maximal-dissipation inelastic impact of the module docstring, with ``z``
    the (5m,) pyramid impulses ``[f_N; f_S+; f_S-; f_T+; f_T-]`` (N s); None if the QP fails."""
    R = np.vstack((jac.N, jac.S, -jac.S, jac.T, -jac.T))
    MiRt = cho_solve(cho_factor(M), R.T)
    H = R @ MiRt
    c = R @ v
    m, k = jac.m, R.shape[0]
    Gn = H[:m]                                   # N M^-1 R^T: rows of R start with N
    gn = jac.N @ v + np.maximum(jac.phi, 0.0) / dt
    cone = cone_rows(jac.mu)
    qp = solve_qp(H, c, A_in=np.vstack((Gn, cone, np.eye(k))),
                  b_in=np.concatenate((-gn, np.zeros(cone.shape[0] + k))), backend=qp_backend)
    if not qp.solved:
        return None
    z = np.maximum(qp.x, 0.0)
    return v + MiRt @ z, z
