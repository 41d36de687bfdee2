"""Gait timing: which foot is in stance when (paper Sec. 7.2.1 and 7.6, docs/planner.md).

A gait is a cyclic timing pattern. Each leg touches down at a fixed fraction of the cycle (its
*touchdown phase*) and stays in stance for ``duty_factor`` of the cycle; the rest of the cycle is
its swing phase. The paper's trot (Sec. 7.6, from the authors' Pacer configuration) has a period
of 0.3 s, duty factor 0.75, touchdown phases {LF 0.25, RF 0.75, LH 0.75, RH 0.25} and a step
height of 1.5 cm: LF and RH swing together during the first quarter of the cycle, RF and LH
during the third, with four feet down in between.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from idyn.errors import InvalidInputError
from idyn.jit import cached_jit

#: Phases closer than this to a gait event are rounded onto it, so that times such as
#: k * 1 ms hit stance and swing boundaries deterministically despite floating-point division.
_PHASE_EPS = 1e-9


@cached_jit
def cycles_since(phase: float, cycles: float, duty_factor: float) -> float:
    """Cycles elapsed since the most recent touchdown of a leg with touchdown ``phase``, at
    ``cycles`` (time / period) from the gait's start, in [0, 1); within :data:`_PHASE_EPS` of
    the cycle's end or of liftoff (``duty_factor``) it is rounded onto that event."""
    s = (cycles - phase) % 1.0
    if s > 1.0 - _PHASE_EPS:
        return 0.0
    if abs(s - duty_factor) < _PHASE_EPS:
        return duty_factor
    return s


@cached_jit
def stance_flags(phases, period: float, duty_factor: float, t: float, out) -> None:
    """``out[i]`` = leg ``i`` (touchdown phase ``phases[i]``) is in stance at time ``t``: the
    per-step form of :meth:`Gait.stance` (the planner's compiled step calls it)."""
    cycles = t / period
    for i in range(phases.shape[0]):
        out[i] = cycles_since(phases[i], cycles, duty_factor) < duty_factor


@dataclass(frozen=True)
class Gait:
    """A periodic gait: ``period`` (s), ``duty_factor`` in (0, 1), per-leg ``touchdown`` phases in
    [0, 1) and the swing ``step_height`` (m). Times are measured from the gait's start."""

    period: float
    duty_factor: float
    touchdown: dict[str, float]
    step_height: float

    def __post_init__(self):
        if not (math.isfinite(self.period) and self.period > 0):
            raise InvalidInputError(f"gait period must be positive, got {self.period}")
        if not (0.0 < self.duty_factor < 1.0):
            raise InvalidInputError(f"duty factor must lie in (0, 1), got {self.duty_factor}")
        if not self.touchdown:
            raise InvalidInputError("a gait needs at least one leg")
        for leg, phase in self.touchdown.items():
            if not (0.0 <= phase < 1.0):
                raise InvalidInputError(f"touchdown phase of {leg} must lie in [0, 1), got {phase}")
        if not (math.isfinite(self.step_height) and self.step_height >= 0):
            raise InvalidInputError(f"step height must be >= 0, got {self.step_height}")
        object.__setattr__(self, "touchdown", dict(self.touchdown))
        object.__setattr__(self, "_phases", np.array(list(self.touchdown.values()), dtype=float))

    # ------------------------------------------------------------------ derived durations
    @property
    def legs(self) -> tuple[str, ...]:
        return tuple(self.touchdown)

    @property
    def stance_duration(self) -> float:
        return self.duty_factor * self.period

    @property
    def swing_duration(self) -> float:
        return (1.0 - self.duty_factor) * self.period

    # ------------------------------------------------------------------ phase queries
    def progress(self, t: float) -> float:
        """Fraction of the current cycle elapsed at time ``t``, in [0, 1)."""
        s = (t / self.period) % 1.0
        return 0.0 if s > 1.0 - _PHASE_EPS else s

    def _since_touchdown(self, leg: str, t: float) -> float:
        """Cycles elapsed since the leg's most recent touchdown, in [0, 1)."""
        return self._since(self._phase(leg), t / self.period)

    def _since(self, phase: float, cycles: float) -> float:
        """:func:`cycles_since` with this gait's duty factor."""
        return cycles_since(phase, cycles, self.duty_factor)

    def _phase(self, leg: str) -> float:
        try:
            return self.touchdown[leg]
        except KeyError:
            raise InvalidInputError(f"gait has no leg {leg!r}; legs: {list(self.touchdown)}") from None

    def in_stance(self, leg: str, t: float) -> bool:
        """True when the leg is planned to be on the ground at time ``t`` (stance is
        [touchdown, liftoff), swing is [liftoff, next touchdown))."""
        return self._since_touchdown(leg, t) < self.duty_factor

    def stance(self, t: float) -> np.ndarray:
        """Boolean stance flags of all legs (in :attr:`legs` order) at time ``t`` (:meth:`in_stance`
        of each leg, in one compiled loop: the planner asks every control step)."""
        out = np.empty(len(self._phases), dtype=bool)
        stance_flags(self._phases, float(self.period), float(self.duty_factor), float(t), out)
        return out

    def contact_schedule(self, times) -> np.ndarray:
        """Planned stance flags, shape (len(times), number of legs)."""
        return np.array([self.stance(float(t)) for t in np.asarray(times, dtype=float).ravel()])

    def swing_window(self, leg: str, t: float) -> tuple[float, float]:
        """(liftoff, touchdown) times of the swing that contains ``t`` or, in stance, of the next
        swing."""
        since = self._since_touchdown(leg, t)
        liftoff = t + (self.duty_factor - since) * self.period
        if since >= self.duty_factor:  # in swing: the liftoff was in the past
            liftoff = t - (since - self.duty_factor) * self.period
        return liftoff, liftoff + self.swing_duration

    def remaining(self, leg: str, t: float) -> float:
        """Seconds left in the leg's current phase (stance or swing)."""
        since = self._since_touchdown(leg, t)
        if since < self.duty_factor:
            return (self.duty_factor - since) * self.period
        return (1.0 - since) * self.period


@dataclass(frozen=True)
class TrotGait(Gait):
    """The paper's trot (Sec. 7.6): 0.3 s, duty factor 0.75, touchdown phases
    {LF 0.25, RF 0.75, LH 0.75, RH 0.25}, step height 0.015 m."""

    period: float = 0.3
    duty_factor: float = 0.75
    touchdown: dict[str, float] = field(
        default_factory=lambda: {"LF": 0.25, "RF": 0.75, "LH": 0.75, "RH": 0.25})
    step_height: float = 0.015
