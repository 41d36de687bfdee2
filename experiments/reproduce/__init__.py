"""``idyn reproduce``: both papers' experiments in one report (docs/reproduce.md).

The report is a list of :class:`Section` objects, one per published table or figure (or a
group of them). Each section module exposes ``section(ctx: Context) -> Section`` (or a list of
them); :data:`SECTIONS` lists them in the report's order. A section runs its experiment at the
scale ``ctx.quick`` asks for, writes its figures under ``ctx.figures``, prints the published
numbers beside ours, and states every claim the paper draws from them as a :class:`Claim`
judged on our numbers, with the measured cause of each disagreement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: presets of ``--preset``: the published models and protocol, or idyn's defaults
PRESETS = ("paper", "idyn")


@dataclass(frozen=True)
class Context:
    """What every section is run with."""

    out: Path                               #: report directory (report.md is written here)
    quick: bool = True                      #: the reduced scale of ``--quick``
    smoke: bool = False                     #: the tiny scale of the test suite (seconds per section)
    backend: str = "idyn"                   #: reference physics: idyn.sim, the paper's world
    cross_checks: tuple[str, ...] = ()      #: further backends, one column each (pybullet, mujoco)
    preset: str = "paper"                   #: "paper" or "idyn"
    jobs: int = 2                           #: parallel runs
    executor: str = "process"               #: "process" or "ray"

    @property
    def figures(self) -> Path:
        """Directory of the report's PNG figures (created on first use)."""
        path = Path(self.out) / "figures"
        path.mkdir(parents=True, exist_ok=True)
        return path


@dataclass
class Claim:
    """One statement a paper draws from its numbers, judged on ours."""

    source: str                 #: where the paper says it, e.g. "ID Table 4", "CS Fig. 6"
    claim: str                  #: the paper's statement, in a line
    holds: bool | None          #: True, False, or None when our run cannot decide it
    evidence: str               #: our numbers that decide it (with units)
    cause: str = ""             #: the measured cause when it does not hold (or cannot be decided)
    #: the same claim judged on each cross-check backend: backend -> (holds, evidence)
    cross: dict = field(default_factory=dict)


@dataclass
class Section:
    """One table or figure of a paper: our numbers beside the published ones."""

    key: str                    #: stable identifier, e.g. "id-table-4"
    title: str                  #: e.g. "Table 4: torque smoothness"
    body: str                   #: Markdown: tables (ours beside the paper's) and commentary
    figures: list[Path] = field(default_factory=list)   #: PNGs under ``ctx.figures``
    claims: list[Claim] = field(default_factory=list)
    seconds: float = 0.0        #: wall time this section took


#: The report's sections in order: key -> "module:function" of this package, each function
#: ``f(ctx) -> Section | list[Section]`` (imported only when its key runs; ``--only`` takes keys).
SECTIONS = {
    "id-tables-1-2": "flops:section",
    "id-completion": "id_paper:completion",
    "id-table-3": "id_paper:table3",
    "id-fig-14": "id_paper:fig14",
    "id-table-4": "id_paper:table4",
    "id-fig-15": "smoothing:section",
    "id-table-5": "id_paper:table5",
    "id-table-6": "id_paper:table6",
    "id-fig-16": "id_paper:fig16",
    "id-fig-17": "id_paper:fig17",
    "id-fig-18": "grasp:section",
    "id-fig-19": "fig19:section",
    "cs": "constraint_solver:section",
}
