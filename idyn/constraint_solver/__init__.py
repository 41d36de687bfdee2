"""The unconditionally stable first-order constraint solver (Drumwright; paper 000).

Generic multibody input (M dense or sparse, f, G, phi, phi_dot, K, B, mu) so the same solver
runs on pinocchio models (:class:`idyn.RobotModel`) and on the free rigid bodies of
:mod:`~idyn.constraint_solver.bodies`. Small dense contact problems (a simulator step) have a
compiled path beside it, :mod:`~idyn.constraint_solver.dense`.
"""
from .conic import BACKENDS, ConicStatus
from .constraints import ConstraintProblem, ConstraintRows, ContactRows
from .mass import MassMatrix
from .scheme import FORMULATIONS, ConstraintSolution, ConstraintSolver, SolveInfo

__all__ = [
    "BACKENDS", "ConicStatus", "ConstraintProblem", "ConstraintRows", "ContactRows",
    "ConstraintSolution", "ConstraintSolver", "FORMULATIONS", "MassMatrix", "SolveInfo",
]
