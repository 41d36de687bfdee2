"""Who completes the 30 s course: a sweep's planar cells beside the paper's (Table 3's "-").

The paper marks a run that fell with "-" in Tables 3 and 5 (``null`` in
``experiments/data/paper.json``'s ``table3_tracking``); every other planar cell completed.
:func:`completion_table` puts a sweep's rows (``idyn compare``'s ``metrics.csv`` or
:func:`idyn.experiments.runner.run_sweep`'s) beside those and counts the cells that agree. A
run that ended in an error (e.g. the simulation diverged) did not complete.
"""
from __future__ import annotations

import math

from idyn.errors import InvalidInputError

PLANAR = ("rigid-low", "rigid-high", "compliant-low", "compliant-high")


def paper_completions(paper: dict) -> dict:
    """``{(controller, terrain): completed}`` of the paper's planar cells."""
    table = paper["table3_tracking"]["data"]
    return {(c, t): row is not None for t in PLANAR for c, row in table[t].items()}


def completed(row: dict) -> bool | None:
    """Whether a sweep row completed its run (False after a fall or an error; None if the row
    does not say)."""
    if row.get("error"):
        return False
    fell = row.get("fell")
    if fell in (None, ""):
        return None
    if isinstance(fell, str):
        return fell.strip().lower() not in ("true", "1")
    return not bool(fell)


def completion_table(rows: list[dict], paper: dict, duration: float | None = None) -> tuple[str, int, int]:
    """A Markdown table (controller x planar terrain: ours / the paper's, fall time when ours
    fell) and ``(agreeing cells, cells compared)``."""
    ours = {(r["controller"], r["terrain"]): r for r in rows}
    theirs = paper_completions(paper)
    controllers = list(dict.fromkeys(c for c, _ in theirs))
    agree = compared = 0
    lines = ["| controller | " + " | ".join(PLANAR) + " |", "| --- |" + " --- |" * len(PLANAR)]
    for c in controllers:
        cells = []
        for t in PLANAR:
            row = ours.get((c, t))
            done = None if row is None else completed(row)
            paper_done = theirs[(c, t)]
            if done is None:
                cells.append(f"- / {'yes' if paper_done else 'fell'}")
                continue
            compared += 1
            agree += done == paper_done
            what = "yes" if done else _fall(row)
            mark = "" if done == paper_done else " ✗"
            cells.append(f"{what} / {'yes' if paper_done else 'fell'}{mark}")
        lines.append(f"| `{c}` | " + " | ".join(cells) + " |")
    if not compared:
        raise InvalidInputError("no planar cell of the paper's controllers in these rows")
    return "\n".join(lines), agree, compared


def _fall(row: dict) -> str:
    if row.get("error"):
        return "diverged" if "diverged" in str(row["error"]) else "error"
    t = row.get("fall_time")
    try:
        t = float(t)
    except (TypeError, ValueError):
        return "fell"
    return "fell" if math.isnan(t) else f"fell {t:.2f} s"
