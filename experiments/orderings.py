"""The paper's orderings (Sec. 8, Tables 4-6), checked on a sweep's metrics.

Each :class:`Ordering` states one claim of the paper, whether our sweep supports it (``True``,
``False``, or ``None`` when the sweep lacks the runs to decide) and the numbers that decide it,
so a claim that does not hold is reported with its data rather than hidden:

* Table 4: ``qp-coulomb`` has the smoothest torques of the ID controllers (smallest
  E|d tau/dt|) and ``sensed-2`` the roughest;
* Table 5: on rigid ground the LCP controllers predict the summed normal force better (smaller
  relative error) than the QP controllers;
* Table 6: the no-slip controllers fall on low friction.

Like the paper's tables, the smoothness and force comparisons use the runs that did not fall
(a fall's last steps say nothing about the controller's nominal torques). When that leaves too
few controllers to decide (in PyBullet several ID controllers fall on every terrain), the claim
is judged on every run up to its fall instead, and ``basis`` says which was used.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the inverse-dynamics controllers of Table 4 (pid is the error-feedback baseline, not ID)
ID_CONTROLLERS = ("qp-coulomb", "qp-noslip", "lcp-coulomb", "lcp-noslip", "sensed-1", "sensed-2")
LCP_CONTROLLERS = ("lcp-coulomb", "lcp-noslip")
QP_CONTROLLERS = ("qp-coulomb", "qp-noslip")
NOSLIP_CONTROLLERS = ("lcp-noslip", "qp-noslip")
RIGID_TERRAINS = ("rigid-low", "rigid-high")
LOW_FRICTION_TERRAINS = ("rigid-low", "compliant-low")
UPRIGHT, UP_TO_FALL = "runs that did not fall", "every run up to its fall"


@dataclass(frozen=True)
class Ordering:
    claim: str          #: the paper's statement
    source: str         #: where the paper makes it
    holds: bool | None  #: our verdict; None: not enough runs to decide
    evidence: str       #: the numbers behind the verdict
    basis: str = UPRIGHT  #: the runs judged: UPRIGHT or UP_TO_FALL

    @property
    def verdict(self) -> str:
        return {True: "HOLDS", False: "DOES NOT HOLD", None: "UNDECIDED"}[self.holds]


def _ok(row: dict) -> bool:
    return "error" not in row


def _runs(rows, controller, terrains, basis) -> list[dict]:
    return [r for r in rows if r["controller"] == controller and _ok(r)
            and (basis == UP_TO_FALL or not r["fell"])
            and (terrains is None or r["terrain"] in terrains)]


def _mean(rows, key) -> float:
    vals = [r[key] for r in rows if r.get(key) is not None and np.isfinite(r[key])]
    return float(np.mean(vals)) if vals else float("nan")


def _per_controller(rows, controllers, key, terrains, basis) -> tuple[dict, list[str]]:
    """{controller: mean of ``key`` over its runs on ``basis``} and the controllers without one."""
    present = [c for c in controllers if any(r["controller"] == c for r in rows)]
    values, missing = {}, []
    for c in present:
        v = _mean(_runs(rows, c, terrains, basis), key)
        if np.isfinite(v):
            values[c] = v
        else:
            missing.append(c)
    return values, missing


def _judged(rows, controllers, key, terrains, decide) -> tuple[bool | None, dict, list[str], str]:
    """``decide(values)`` on the upright runs, or on every run up to its fall when the upright
    runs cannot decide (``decide`` returns None)."""
    for basis in (UPRIGHT, UP_TO_FALL):
        values, missing = _per_controller(rows, controllers, key, terrains, basis)
        holds = decide(values)
        if holds is not None:
            break
    return holds, values, missing, basis


def _listing(values: dict, spec: str, unit: str) -> str:
    return ", ".join(f"{c} {format(v, spec)}{unit}" for c, v in sorted(values.items(), key=lambda kv: kv[1]))


def _evidence(what: str, values: dict, spec: str, unit: str, missing: list[str], basis: str) -> str:
    text = f"{what} over {basis}: " + (_listing(values, spec, unit) or "none")
    return text + (f"; no such run: {', '.join(missing)}" if missing else "")


def _extreme(rows, controller: str, smallest: bool) -> Ordering:
    word = "smoothest" if smallest else "roughest"
    claim = f"{controller} has the {word} torques of the ID controllers (E|dtau/dt|)"
    pick = min if smallest else max

    def decide(values):
        return None if controller not in values or len(values) < 2 else \
            pick(values, key=values.get) == controller
    holds, values, missing, basis = _judged(rows, ID_CONTROLLERS, "torque_rate", None, decide)
    return Ordering(claim, "Table 4", holds,
                    _evidence("E|dtau/dt| (N m/s)", values, ".1f", "", missing, basis), basis)


def lcp_predicts_better(rows) -> Ordering:
    claim = "LCP controllers predict summed normal forces better than QP controllers on rigid ground"

    def decide(values):
        lcp = [values[c] for c in LCP_CONTROLLERS if c in values]
        qp = [values[c] for c in QP_CONTROLLERS if c in values]
        return None if not (lcp and qp) else max(lcp) < min(qp)
    holds, values, missing, basis = _judged(rows, LCP_CONTROLLERS + QP_CONTROLLERS,
                                            "force_error_rel", RIGID_TERRAINS, decide)
    return Ordering(claim, "Table 5", holds,
                    _evidence("relative error (%) on rigid ground", values, ".2f", " %", missing,
                              basis), basis)


def noslip_falls_on_low_friction(rows) -> Ordering:
    claim = "the no-slip controllers fall on low friction"
    runs = [r for r in rows if r["controller"] in NOSLIP_CONTROLLERS and _ok(r)]
    low = [r for r in runs if r["terrain"] in LOW_FRICTION_TERRAINS]
    high = [r for r in runs if r["terrain"] not in LOW_FRICTION_TERRAINS]
    holds = None if not low else all(r["fell"] for r in low)

    def fate(r):
        return f"{r['controller']} {r['terrain']} " + (f"fell at {r['fall_time']:.2f} s" if r["fell"]
                                                         else "completed")
    evidence = "; ".join(fate(r) for r in low) or "no low-friction run"
    fell_high = [r for r in high if r["fell"]]
    if fell_high:
        evidence += (f". They also fell on {len(fell_high)} of {len(high)} high-friction runs "
                     "(the paper: they complete those)")
    return Ordering(claim, "Table 6", holds, evidence, UP_TO_FALL)


def paper_orderings(rows: list[dict]) -> list[Ordering]:
    """The orderings of the paper's Tables 4-6, judged on a sweep's rows (``idyn compare``)."""
    return [_extreme(rows, "qp-coulomb", smallest=True), _extreme(rows, "sensed-2", smallest=False),
            lcp_predicts_better(rows), noslip_falls_on_low_friction(rows)]


def orderings_report(rows: list[dict]) -> str:
    lines = ["The paper's orderings on this sweep:"]
    for o in paper_orderings(rows):
        lines.append(f"  [{o.verdict}] {o.source}: {o.claim}")
        lines.append(f"      {o.evidence}")
    return "\n".join(lines)
