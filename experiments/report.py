"""Printed summaries: one run, and the paper's Tables 3-6 with our numbers beside theirs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .orderings import orderings_report

#: the paper's published numbers, shipped as package data
PAPER_JSON = Path(__file__).resolve().parent / "data" / "paper.json"


def paper_data() -> dict:
    """The paper's Tables 3-6 (experiments/data/paper.json); no network needed."""
    return json.loads(PAPER_JSON.read_text())


def _fmt(x, spec=".4f") -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return format(x, spec)


def print_run_summary(scenario, m: dict) -> None:
    print(f"\n{scenario.controller} on {scenario.terrain_label} ({scenario.robot}, {scenario.backend}), "
          f"{m['duration']:.2f} s of {scenario.duration:g} s simulated")
    if scenario.robot == "quadruped":
        print(f"  fell:                {m['fell']}" + (f" at t = {m['fall_time']:.3f} s" if m["fell"] else ""))
    else:
        print(f"  box dropped:         {m['box_dropped']}"
              + (f" at t = {m['box_drop_time']:.3f} s" if m["box_dropped"] else ""))
    if scenario.robot == "quadruped":
        print(f"  distance covered:    {m.get('distance', float('nan')):.3f} m, "
              f"waypoints reached: {m.get('waypoints_reached', 0)}")
    print(f"  tracking error:      E|q - q_des| = {_fmt(m['pos_error'])} rad, "
          f"E|qd - qd_des| = {_fmt(m['vel_error'])} rad/s")
    print(f"  torque:              E|dtau/dt| = {_fmt(m['torque_rate'], '.1f')} N m/s, "
          f"E|tau| = {_fmt(m['torque_mean'])} N m")
    print(f"  normal force error:  {_fmt(m['force_error_abs'], '.3f')} N ({_fmt(m['force_error_rel'], '.2f')} %)")
    print(f"  controller time:     p50 {_fmt(m['solve_time_p50_us'], '.0f')} us, "
          f"p95 {_fmt(m['solve_time_p95_us'], '.0f')} us, {m['deadline_misses']} over 1 ms")
    print(f"  real-time factor:    {_fmt(m['realtime_factor'], '.2f')}x")


def _table(title, columns, rows) -> str:
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) for i, c in enumerate(columns)]
    line = "  ".join(str(c).ljust(w) for c, w in zip(columns, widths))
    out = [title, line, "-" * len(line)]
    out += ["  ".join(str(v).ljust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _lookup(rows, controller, terrain):
    return next((r for r in rows if r["controller"] == controller and r["terrain"] == terrain
                 and "error" not in r), None)


def comparison_tables(rows: list[dict], paper: dict | None = None) -> str:
    """Tables 3, 4, 5 (ours | paper) and the Table 6 scorecard from a sweep's rows."""
    paper = paper or paper_data()
    controllers = list(dict.fromkeys(r["controller"] for r in rows))
    terrains = list(dict.fromkeys(r["terrain"] for r in rows))
    parts = []
    t3, t5 = paper["table3_tracking"]["data"], paper["table5_force_prediction"]["data"]
    for terr in terrains:
        body3, body5 = [], []
        for c in controllers:
            r = _lookup(rows, c, terr)
            fell = r is None or r["fell"]
            p3 = t3.get(terr, {}).get(c)
            body3.append([c, "FELL" if fell else _fmt(r["pos_error"]), "-" if fell else _fmt(r["vel_error"]),
                          _fmt(p3[0]) if p3 else "-", _fmt(p3[1]) if p3 else "-"])
            p5 = t5.get(terr, {}).get(c)
            if r is not None and np.isfinite(r.get("force_error_abs", np.nan)):
                body5.append([c, _fmt(r["force_error_abs"], ".3f"), _fmt(r["force_error_rel"], ".2f"),
                              _fmt(p5[0], ".3f") if p5 else "-", _fmt(p5[1], ".2f") if p5 else "-"])
        parts.append(_table(f"Table 3, {terr}: tracking error (ours | paper)",
                            ["controller", "pos (rad)", "vel (rad/s)", "paper pos", "paper vel"], body3))
        if body5:
            parts.append(_table(f"Table 5, {terr}: normal-force prediction error (ours | paper)",
                                ["controller", "abs (N)", "rel (%)", "paper abs", "paper rel"], body5))
    t4 = paper["table4_smoothness"]["data"]
    body4 = []
    for c in controllers:
        ok = [r for r in rows if r["controller"] == c and "error" not in r and not r["fell"]]
        rate = np.mean([r["torque_rate"] for r in ok]) if ok else np.nan
        mean = np.mean([r["torque_mean"] for r in ok]) if ok else np.nan
        p = t4.get(c)
        body4.append([c, _fmt(rate, ".1f"), _fmt(mean), _fmt(p[0], ".1f") if p else "-", _fmt(p[1]) if p else "-"])
    parts.append(_table("Table 4: torque smoothness over runs that did not fall (ours | paper)",
                        ["controller", "E|dtau/dt|", "E|tau|", "paper E|dtau/dt|", "paper E|tau|"], body4))
    parts.append(scorecard(rows, paper))
    parts.append(orderings_report(rows))
    errors = [r for r in rows if "error" in r]
    if errors:
        parts.append("Runs that raised:\n" + "\n".join(f"  {r['controller']} {r['terrain']}: {r['error']}" for r in errors))
    return "\n\n".join(parts)


def scorecard(rows: list[dict], paper: dict) -> str:
    """Table 6 for the quadruped tasks: PASS when no run on that friction class fell."""
    t6 = paper["table6_scorecard"]["data"]
    body = []
    for c in dict.fromkeys(r["controller"] for r in rows):
        cells = [c]
        for label, friction in (("high", "-high"), ("low", "-low")):
            runs = [r for r in rows if r["controller"] == c and r["terrain"].endswith(friction)]
            if not runs:
                cells.append("-")
                continue
            bad = [r["terrain"] for r in runs if "error" in r or r["fell"]]
            cells.append("PASS" if not bad else "FAIL (fell: " + ", ".join(bad) + ")")
        p = t6.get(c)
        cells += [p[2] if p else "-", p[3] if p else "-"]
        body.append(cells)
    return _table("Table 6 (quadruped rows): ours | paper",
                  ["controller", "high friction", "low friction", "paper high", "paper low"], body)
