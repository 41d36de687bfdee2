"""The report of ``idyn reproduce``: Markdown tables, claims judged per backend, report.md and
claims.csv (docs/reproduce.md)."""
from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Callable

from . import Claim, Section

VERDICT = {True: "holds", False: "does not hold", None: "undecided"}
#: the cause a claim states when none was measured
NOT_MEASURED = "cause not measured"
#: the cause of an undecided claim whose runs simply lack the cells it compares
UNDECIDABLE = "these runs lack the cells that decide it (see evidence)"


def fmt(x, spec: str = ".4f") -> str:
    """A number for a table; "-" for a missing one."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return format(x, spec)


def md_table(columns, rows) -> str:
    """A Markdown table (``|`` in a cell escaped)."""
    def cell(v):
        return str(v).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def judged(source: str, claim: str, judge: Callable, rows_by_backend: dict, reference: str,
           cause: Callable | str = NOT_MEASURED) -> Claim:
    """``claim`` judged by ``judge(rows) -> (holds, evidence)`` on the reference backend's rows
    and, for the record, on every cross-check backend's. ``cause`` (text, or a function of the
    reference rows) is kept only when the claim does not hold or cannot be decided."""
    holds, evidence = judge(rows_by_backend[reference])
    cross = {b: judge(rows) for b, rows in rows_by_backend.items() if b != reference}
    why = "" if holds else (cause(rows_by_backend[reference]) if callable(cause) else cause)
    if holds is None and why == NOT_MEASURED:
        why = UNDECIDABLE
    return Claim(source, claim, holds, evidence, why, cross)


def relative(path: Path, out: Path) -> str:
    return Path(os.path.relpath(Path(path), Path(out))).as_posix()


def claims_table(claims: list[Claim], cross_backends=()) -> str:
    columns = ["source", "claim", "verdict", "evidence", "cause"] + [f"on {b}" for b in cross_backends]
    rows = []
    for c in claims:
        rows.append([c.source, c.claim, f"**{VERDICT[c.holds]}**", c.evidence, c.cause]
                    + [VERDICT[c.cross[b][0]] if b in c.cross else "-" for b in cross_backends])
    return md_table(columns, rows)


def write(ctx, sections: list[Section], header: str) -> tuple[Path, Path]:
    """Write ``report.md`` (the holds table first, then every section) and ``claims.csv``."""
    out = Path(ctx.out)
    out.mkdir(parents=True, exist_ok=True)
    claims = [c for s in sections for c in s.claims]
    counts = {v: sum(1 for c in claims if c.holds is k) for k, v in VERDICT.items()}
    cross = tuple(b for b in ctx.cross_checks if b != ctx.backend)
    parts = [header,
             f"## Claims: {counts['holds']} hold, {counts['does not hold']} do not hold, "
             f"{counts['undecided']} undecided (of {len(claims)})",
             claims_table(claims, cross)]
    parts.append("## Sections\n\n" + "\n".join(f"- [{s.title}](#{s.key}) ({s.seconds:.0f} s)" for s in sections))
    for s in sections:
        parts.append(f'<a id="{s.key}"></a>\n\n## {s.title}\n\n{s.body}')
        for fig in s.figures:
            parts.append(f"![{s.title}]({relative(fig, out)})")
        if s.claims:
            parts.append("Claims of this section:\n\n" + claims_table(s.claims, cross))
    report = out / "report.md"
    report.write_text("\n\n".join(parts) + "\n")
    path = out / "claims.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["section", "source", "claim", "verdict", "evidence", "cause"]
                        + [f"verdict_{b}" for b in cross] + [f"evidence_{b}" for b in cross])
        for s in sections:
            for c in s.claims:
                writer.writerow([s.key, c.source, c.claim, VERDICT[c.holds], c.evidence, c.cause]
                                + [VERDICT[c.cross[b][0]] if b in c.cross else "" for b in cross]
                                + [c.cross[b][1] if b in c.cross else "" for b in cross])
    return report, path
