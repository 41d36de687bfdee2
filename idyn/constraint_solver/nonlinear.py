"""Implicit steps with a convex nonlinear normal law (Hertz, eqs. 121-123) linearised by chords.

The scheme integrates each spring implicitly from its linearisation (Sec. 4.1 allows a
state-dependent K). :meth:`~idyn.constraint_solver.models.HertzLaw.chord` linearises the Hertz
force over [max(d0, 0), d_ref]; the step cannot add energy as long as every contact's
end-of-step depth d1 = d0 - h phi_dot1 stays at or below its reference d_ref (convexity of F,
see HertzLaw). :func:`solve_with_chords` makes that true: it solves, and while some contact's d1
exceeds its d_ref it raises every reference to at least (1 + growth) d1 and solves again (stiffer
chords: d1 shrinks). Raising all of them, not only the violators, stops the cascade in which a
stiffened contact overloads its neighbours in the next round (100-sphere stack: at most 3 rounds
instead of 8).
The caller's first reference decides how often that happens (predictors: the depth reached at
the current closing speed, the depth that carries the previous step's force).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .constraints import ConstraintProblem
from .models import HertzLaw
from .scheme import ConstraintSolution, ConstraintSolver


@dataclass
class ChordStep:
    """A consistent step: the solution, the references used, the predicted end depths d1."""
    solution: ConstraintSolution
    reference: np.ndarray
    depth1: np.ndarray
    rounds: int
    consistent: bool          # d1 <= reference for every contact (no energy gain, see above)


def end_depth(problem: ConstraintProblem, depth0: np.ndarray, v1: np.ndarray) -> np.ndarray:
    """d1 = d0 - h phi_dot1 with phi_dot1 = G_n v1 + h Gdot_n v (the rows' own linear model)."""
    n = problem.contacts.normal
    return depth0 - problem.h * (n.G @ v1 + problem.h * n.Gdot_v)


def solve_with_chords(solver: ConstraintSolver, problem: ConstraintProblem, law: HertzLaw,
                      depth0: np.ndarray, reference: np.ndarray, growth: float = 0.5,
                      max_rounds: int = 8) -> ChordStep:
    """Solve ``problem`` with its contact normal rows set to ``law.chord(depth0, reference)``.

    ``depth0``: the contacts' current depths (negative: separated by that gap); ``reference``:
    first reference depths (> max(depth0, 0) for rows that should be able to push). While an
    end depth exceeds its reference, every reference becomes max(reference, (1 + growth) d1)
    and the program is solved again, at most ``max_rounds`` times in all (``consistent`` says
    whether d1 <= reference held in the end).
    """
    contacts = problem.contacts
    ref = np.maximum(np.asarray(reference, dtype=float), np.maximum(depth0, 0.0))
    rounds = 0
    while True:
        rounds += 1
        chord = law.chord(depth0, ref)
        normal = replace(contacts.normal, phi=chord.phi, K=chord.K, B=chord.B)
        prob = replace(problem, contacts=replace(contacts, normal=normal))
        sol = solver.solve(prob)
        d1 = end_depth(prob, depth0, sol.v1)
        deep = d1 > ref * (1.0 + 1e-9)
        if not deep.any() or rounds == max_rounds:
            return ChordStep(sol, ref, d1, rounds, not deep.any())
        ref = np.maximum(ref, (1.0 + growth) * d1)
