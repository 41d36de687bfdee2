"""The ``compliant`` contact model: Drumwright's L-stable constraint solver with a true cone.

Each contact with phi <= 0 becomes a spring-damper normal row (stiffness K, damping B on the gap)
and two memoryless Coulomb damper rows (paper 000, Sec. 6.3-6.4, K = 0 and B = 1e6 / h), and
:class:`idyn.constraint_solver.ConstraintSolver` integrates them implicitly, which is stable for
any K, B and dt and bounds the friction force by the true cone |f_t| <= mu f_n (not a pyramid).
Every candidate the world detects is a row, the speculative ones (gap phi > 0 that would close
within the step) too: their spring -K (phi0 + h phi_dot1) pushes only if the implicit step would
end overlapping, so a landing body meets the spring within the step instead of sinking up to
|v| h before any force appears (the late rows added the energy 1/2 K d0^2 of that overlap on
every landing: +4.7 mJ for a box dropped 1 cm). Their damper is off (B = 0): nothing to damp
until the bodies touch, and B phi_dot would otherwise pull at a distance. The step has the same
form as the other models (v1 = v0 + h M^-1 (G^T lambda + f), eq. 37 of paper 000 = eq. 37 of
paper 001), so the impulses are lambda h with G = [N; S; T].
"""
from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrs

from ..constraint_solver import (ConicStatus, ConstraintProblem, ConstraintRows, ConstraintSolver, ContactRows,
                                 MassMatrix)
from ..constraint_solver.dense import DENSE_MAX_ROWS, solve_contacts
from ..constraint_solver.models import coulomb_tangents
from ..errors import InvalidInputError
from .contact_models import NO_SLIP_MU, ContactModel, ContactProblem, ContactSolution


class Compliant(ContactModel):
    """Contacts as stiff implicit springs with a true friction cone (paper 000, Sec. 6.3).

    stiffness (N/m) and damping (N s/m) are per contact; the defaults make a nearly rigid
    contact (about 0.1 mm of sink for the 47 N quadruped on four feet). Contacts with
    mu >= ``no_slip_mu`` are no-slip (mu = inf for the solver). ``solver_options`` go to
    :class:`idyn.constraint_solver.ConstraintSolver`.
    """

    name = "compliant"

    def __init__(self, stiffness: float = 1e5, damping: float = 1e3, no_slip_mu: float = NO_SLIP_MU,
                 **solver_options):
        if not (np.isfinite(stiffness) and stiffness > 0 and np.isfinite(damping) and damping >= 0):
            raise InvalidInputError(f"compliant needs stiffness > 0 and damping >= 0, got {stiffness}, {damping}")
        self.stiffness, self.damping = float(stiffness), float(damping)
        self.no_slip_mu = float(no_slip_mu)
        self.solver = ConstraintSolver(**solver_options)

    def solve(self, problem: ContactProblem) -> ContactSolution:
        m = problem.m
        if m == 0:
            return ContactSolution(np.zeros((0, 3)))
        tangent = coulomb_tangents(m, problem.dt)
        mu = np.where(problem.mu >= self.no_slip_mu, np.inf, problem.mu)
        damping = np.where(problem.phi <= 0.0, self.damping, 0.0)
        N, S, T = blocks = tuple(problem.J[block * m:(block + 1) * m] for block in range(3))
        dense = self._solve_dense(problem, blocks, tangent, mu, damping)
        if dense is not None:
            return dense
        rows = ContactRows(
            normal=ConstraintRows(N, problem.phi, np.full(m, self.stiffness), damping),
            tangent_r=ConstraintRows(S, tangent.phi, tangent.K, tangent.B),
            tangent_s=ConstraintRows(T, tangent.phi, tangent.K, tangent.B),
            mu=mu)
        mass = MassMatrix(problem.M, cholesky=problem.chol[0])      # the step's factor of M
        sol = self.solver.solve(ConstraintProblem(mass, problem.f, problem.v, problem.dt, contacts=rows))
        impulses = np.empty((m, 3))
        impulses[:, 0] = sol.lambda_n * problem.dt
        impulses[:, 1] = sol.lambda_r * problem.dt
        impulses[:, 2] = sol.lambda_s * problem.dt
        return ContactSolution(impulses, sol.info.status, 0, 0.0, sol.info.iterations)

    def _solve_dense(self, problem: ContactProblem, blocks, tangent, mu, damping) -> ContactSolution | None:
        """The step by :func:`idyn.constraint_solver.dense.solve_contacts` (one compiled call,
        much cheaper than the general path on small problems) when it is small, every contact
        has friction and the solver settings are the ones that path implements (exact normals,
        reduced form); None otherwise or when the general solver must decide. L = J M^-1 J^T
        and G a0 = J M^-1 f are formed as the general path forms them (not from the problem's
        W, whose different round-off the ill-conditioned tangential split of a resting body,
        B_t = 1e6 / h, amplifies to 1e-3 relative), phi_dot = G v per block of ``blocks``
        [N, S, T] as ConstraintRows.checked forms it, so both paths solve the same data."""
        m, solver = problem.m, self.solver
        if (3 * m > DENSE_MAX_ROWS or not problem.finite or not solver.exact_normals
                or solver.formulation == "lifted" or not (problem.mu > 0).all()):
            return None
        dt, J = problem.dt, problem.J
        zero = np.zeros(2 * m)
        U = problem.chol[0]         # scipy's cho_solve is this LAPACK call behind its argument checks
        L = J @ dpotrs(U, J.T)[0]
        Ga0 = J @ dpotrs(U, problem.f)[0]
        phi_dot = np.concatenate([G @ problem.v for G in blocks])
        found = solve_contacts(L, Ga0, np.concatenate((problem.phi, zero)), phi_dot,
                               np.concatenate((np.full(m, self.stiffness), zero)),
                               np.concatenate((damping, tangent.B, tangent.B)), dt,
                               solver.zeta if solver.zeta is not None else 1.0 / dt, mu, solver.max_rounds)
        if found is None:
            return None
        lam, rounds = found
        return ContactSolution(lam.reshape(3, m).T * dt, ConicStatus.SOLVED.value, 0, 0.0, rounds)
