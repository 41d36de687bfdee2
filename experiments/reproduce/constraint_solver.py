"""The constraint-solver paper (Drumwright) in ``idyn reproduce``: Figs. 4, 6, 9, 10, Tables 1-2.

One :class:`~idyn.experiments.reproduce.Section` per published table or figure, each running
the example of :mod:`idyn.experiments.constraint_solver` at the context's scale (``smoke``: a
second or so in all; ``quick``: about a minute and a half; full: the examples' own full runs,
the elastic foundation's references take most of an hour), with the published numbers read
from ``experiments/data/cs_paper.json`` beside ours and every claim judged on our numbers.
Measurements and their causes: docs/results.md, "Constraint-solver examples".
"""
from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import numpy as np

from idyn.experiments.constraint_solver import (foundation, incline, pendulum, rom_pendulum,
                                                sphere_stack)
from idyn.experiments.constraint_solver.common import published

from . import Claim, Context, Section

SOURCE = "CS"


def section(ctx: Context) -> list[Section]:
    """Figs. 4 and 6, Tables 1-2, Figs. 9 and 10 of the constraint-solver paper."""
    return [_timed(fn, ctx) for fn in (fig4, fig6, tables_1_2, fig9, fig10)]


# ----------------------------------------------------------------------------- helpers
def _timed(fn, ctx: Context) -> Section:
    t0 = time.perf_counter()
    sec = fn(ctx)
    sec.seconds = time.perf_counter() - t0
    return sec


def _scale(ctx: Context) -> str:
    return "smoke" if ctx.smoke else "quick" if ctx.quick else "full"


def machine() -> str:
    """This machine, for absolute timings."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                         model)
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} logical CPUs, {platform.system()}, Python "
            f"{platform.python_version()}, one process and one BLAS thread "
            f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')})")


def _md(headers, rows) -> str:
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _g(x, fmt=".3g") -> str:
    return "n/a" if x is None else format(x, fmt)


def _figures(paths) -> list[Path]:
    return [Path(p) for p in paths]


# ----------------------------------------------------------------------------- Fig. 4
def fig4(ctx: Context) -> Section:
    scale = _scale(ctx)
    paper = published()["fig4_pendulum"]
    res = pendulum.run(short=scale == "quick", smoke=scale == "smoke")
    figs = _figures(pendulum.plot(res, str(ctx.figures)))
    runs = res["runs"]
    rows = [[f"{r['h']:g}", r["steps"], f"{r['max_deviation']:.3e}", f"{r['max_energy_error']:.3e}",
             f"{r['max_modified_energy_error']:.3e}", f"{r['first_step_energy_change']:+.3e}",
             "O(h^2)", "0 (\"precisely\")"] for r in runs]
    body = [f"Pendulum in absolute coordinates, k = {paper['k']:g}, b = {paper['b']:g}, 1 s from "
            "the horizontal (`idyn constraint-solver pendulum`). E = T + m g y (E0 = 0); "
            "E~ = E + (h/2) f.v, the modified energy of semi-implicit Euler (eqs. 36-37).", "",
            _md(["h [s]", "steps", "max abs(phi) [m]", "max abs(E-E0) [J]", "max abs(E~-E~0) [J]",
                 "E1-E0, first step [J]", "paper: deviation", "paper: energy"], rows), "",
            "Observed orders in h: abs(phi) " + ", ".join(f"{o:.2f}" for o in
                                                         res["deviation_orders_in_h"])
            + "; abs(E-E0) " + ", ".join(f"{o:.2f}" for o in res["energy_error_orders_in_h"])
            + "; abs(E~-E~0) " + ", ".join(f"{o:.2f}" for o in
                                           res["modified_energy_error_orders_in_h"]) + "."]
    for c in res["coarse_stability"]:
        body.append(f"- {c['duration']:.0f} s at h = {c['h']:g}, k = {c['k']:g}: "
                    + ("abs(E-E0) stays below 100 m g L" if c["diverged_at"] is None else
                       f"abs(E-E0) passes 100 m g L at t = {c['diverged_at']:.2f} s"))
    claims = []
    worst = {r["h"]: r["max_energy_error"] for r in runs}
    first = runs[0]
    # "maintained precisely": every run's energy within round-off of the start (1e-9 of m g L)
    scale = pendulum.MASS * pendulum.GRAVITY * pendulum.LENGTH
    claims.append(Claim(
        "CS Fig. 4 / Sec. 4.4", paper["claims"]["energy"], bool(max(worst.values()) <= 1e-9 * scale),
        "max abs(E-E0) = " + ", ".join(f"{v:.3g} J at h = {h:g}" for h, v in worst.items())
        + f"; first step from rest E1-E0 = {first['first_step_energy_change']:+.4g} J, "
        f"-T1 = {-first['first_step_kinetic']:+.4g} J",
        "Eqs. 36-37 are semi-implicit Euler: from rest the stiff joint makes v1 the M-orthogonal "
        "projection of h M^-1 f, so h f.v1 = 2 T1 and E1 - E0 = -T1 (with k h^2 >> m). "
        "E carries the bounded offset -(h/2) f.(v - v0), first order in h; E~ = E + (h/2) f.v "
        "moves only by the constraint work, second order. The energy is kept to O(h), not "
        "precisely."))
    fine = [o for (r0, r1), o in zip(zip(runs, runs[1:]), res["deviation_orders_in_h"])
            if r0["h"] <= 1e-2]
    coarse = res["deviation_orders_in_h"][0]
    claims.append(Claim(
        "CS Fig. 4 / Sec. 4.4", paper["claims"]["deviation"],
        None if not fine else bool(all(1.8 < o < 2.2 for o in fine)),
        "orders of max abs(phi) between successive h: " + ", ".join(
            f"{o:.2f}" for o in res["deviation_orders_in_h"])
        + f" (h = {runs[0]['h']:g} ... {runs[-1]['h']:g})",
        "" if fine else "needs two steps <= 1e-2 (the smoke scale runs h = 0.1 and 1e-2 only; "
        f"between them the order is {coarse:.2f}: h = 0.1 is outside the asymptotic range, "
        "the bob turns ~25 degrees per step)"))
    one_s = runs[0]
    claims.append(Claim(
        "CS Fig. 4", paper["claims"]["stable"] + " (1 s at h = 0.1)",
        bool(np.isfinite(one_s["max_deviation"]) and one_s["max_energy_error"] < 10 * 9.81),
        f"h = {one_s['h']:g}, 1 s: max abs(phi) = {one_s['max_deviation']:.3g} m, "
        f"max abs(E-E0) = {one_s['max_energy_error']:.3g} J"))
    long = [c for c in res["coarse_stability"] if c["k"] == paper["k"]]
    soft = [c for c in res["coarse_stability"] if c["k"] != paper["k"]]
    diverged = [c for c in long if c["diverged_at"] is not None]
    claims.append(Claim(
        "CS Sec. 4.3", "any step size can be used without the constraint forces giving rise "
        "to instability (beyond the paper's 1 s)", not diverged,
        "; ".join(f"h = {c['h']:g}, k = {c['k']:g}: " + (
            "bounded over 20 s" if c["diverged_at"] is None
            else f"abs(E-E0) > 100 m g L at t = {c['diverged_at']:.2f} s")
            for c in long + soft),
        "" if not diverged else
        "not the stiff spring (eqs. 61-62 are L-stable in k h^2): a soft joint diverges at the "
        "same step too. G, Gdot v and M are linearized at q0 (eqs. 36, 53) while the bob turns "
        "~25 degrees per step at h = 0.1; the coupled nonlinear map is not unconditionally "
        "stable."))
    return Section("cs-fig-4", "CS Fig. 4: pendulum, joint deviation and energy",
                   "\n".join(body), figs, claims)


# ----------------------------------------------------------------------------- Fig. 6
def fig6(ctx: Context) -> Section:
    scale = _scale(ctx)
    paper = published()["fig6_rom_pendulum"]
    res = rom_pendulum.run(short=scale == "quick", smoke=scale == "smoke")
    figs = _figures(rom_pendulum.plot(res, str(ctx.figures)))
    inertia = rom_pendulum.MASS * rom_pendulum.LENGTH ** 2
    rows = []
    for r, late in zip(res["impacts"], res["impacts_rows_at_contact"]):
        rows.append([f"{r['h']:g}", f"{rom_pendulum.K * r['h'] ** 2 / inertia:g}",
                     f"{r['restitution']:.4f}", f"{r['implicit_euler_restitution']:.4f}",
                     f"{late['restitution']:.4f}", f"{r['max_penetration_rad']:.2e}",
                     "dead" if r["h"] >= paper["dead_for_h_at_least"] else "elastic as h -> 0"])
    body = [f"Pendulum with a range-of-motion limit theta >= 0, k = {paper['k']:g}, "
            f"b = {paper['b']:g} (`idyn constraint-solver rom-pendulum`). Restitution "
            "e = -theta_dot after / theta_dot before, over an impact window started at "
            "theta = 5e-5 rad with the exact speed.", "",
            "The limit row is in the program whenever the step can reach it, because eqs. 75 and "
            "84 evaluate the spring at the end of the step (lambda1 >= -K phi1). Adding it only "
            "once the limit is violated at t0 (how this example ran before) engages the spring "
            "one step late; with k h^2 = 100 m L^2 the implicit spring then returns the step's "
            "penetration as rebound velocity, so e is the phase at which the limit was crossed.",
            "",
            _md(["h [s]", "k h^2 / (m L^2)", "e (eqs. 75, 84)", "e, implicit-Euler closed form",
                 "e, row only once violated", "max penetration [rad]", "paper"], rows)]
    if "phase_scan" in res:
        ps = res["phase_scan"]
        body += ["", f"At h = {res['phase_h']:g}, {len(ps['speculative'])} crossing phases: "
                 f"e in [{min(ps['speculative']):.4f}, {max(ps['speculative']):.4f}] with the "
                 f"paper's row rule, [{min(ps['rows_at_contact']):.4f}, "
                 f"{max(ps['rows_at_contact']):.4f}] with the row only once violated."]
        for r in res["from_rest"]:
            rule = "eqs. 75, 84" if r["speculative"] else "row only once violated"
            body.append(f"- 1 s from pi/2 at h = {r['h']:g} ({rule}): e = {r['restitution']:.4f}, "
                        f"rebound to theta = {r['rebound_theta']:.3g} rad")
    claims = []
    big = [r for r in res["impacts"] if r["h"] >= paper["dead_for_h_at_least"]]
    scan = res.get("phase_scan", {}).get("speculative", [])
    dead = max([r["restitution"] for r in big] + scan)
    claims.append(Claim(
        "CS Fig. 6 / Sec. 5.4", paper["claims"]["dead"], bool(dead < 0.05),
        f"e <= {dead:.4f} at h >= 1e-5" + (f" over {len(scan)} crossing phases" if scan else "")
        + "; with the row added only once violated e = "
        + ", ".join(f"{r['restitution']:.3f}" for r in res["impacts_rows_at_contact"]
                    if r["h"] >= paper["dead_for_h_at_least"]),
        "" if dead < 0.05 else "the limit row engages too late (see the table)"))
    es = [r["restitution"] for r in res["impacts"]]
    rising = bool(np.all(np.diff(es) > 0))
    smallest = res["impacts"][-1]
    claims.append(Claim(
        "CS Fig. 6", paper["claims"]["elastic_small_h"], rising and smallest["restitution"] > 0.2,
        "e = " + ", ".join(f"{r['restitution']:.4f} at h = {r['h']:g}" for r in res["impacts"])
        + " (the implicit-Euler spring's closed form: "
        + ", ".join(f"{r['implicit_euler_restitution']:.4f}" for r in res["impacts"]) + ")"))
    if len(res["impacts"]) >= 3:
        a, b = res["impacts"][-2], res["impacts"][-1]
        ratio = (1 - a["restitution"]) / (1 - b["restitution"])
        claims.append(Claim(
            "CS Sec. 5.4", "as expected, accuracy increases linearly as h decreases",
            bool(5 < ratio < 20),
            f"1 - e = {1 - a['restitution']:.4f} at h = {a['h']:g}, {1 - b['restitution']:.4f} "
            f"at h = {b['h']:g}: ratio {ratio:.2f} for a 10x smaller step"))
    else:
        claims.append(Claim("CS Sec. 5.4", "as expected, accuracy increases linearly as h "
                            "decreases", None, "e at h = 1e-5, 1e-6 only",
                            "needs h <= 1e-7 (quick and full scales)"))
    stab = res["stability"]
    claims.append(Claim(
        "CS Sec. 5.4", paper["claims"]["stable"], bool(res["stable_for_all_h"]),
        "1 s from pi/2: max abs(theta) = " + ", ".join(
            f"{r['max_abs_theta']:.4f} (min {r['min_theta']:+.1e}) at h = {r['h']:g}"
            for r in stab)))
    return Section("cs-fig-6", "CS Fig. 6: range-of-motion limit, dead impact at large h",
                   "\n".join(body), figs, claims)


# ----------------------------------------------------------------------------- Tables 1-2
_QUICK_SCIPY = [(100, 1e7, 5.0), (100, 1e11, 5.0), (100, 1e7, 50.0), (100, 1e11, 50.0)]
_QUICK_REFERENCE = [(100, 1e7, 5.0), (100, 1e7, 50.0)]


def _foundation(scale: str) -> dict:
    if scale == "smoke":
        return foundation.run(cases=[(100, 1e7, 5.0)], scipy_cases=[], reference_cases=[],
                              fine_step=False)
    if scale == "quick":
        return foundation.run(budget=4.0, reference_budget=60.0, scipy_cases=_QUICK_SCIPY,
                              reference_cases=_QUICK_REFERENCE, fine_step=True)
    return foundation.run()


def _secs(r) -> tuple[float | None, str]:
    """(seconds or a lower bound, text) of a scipy run; (None, 'not run') when absent."""
    if r is None:
        return None, "not run"
    if r["timeout"]:
        return r["budget_s"], f"> {r['budget_s']:.0f}"
    return (r["seconds"], f"{r['seconds']:.3g}") if r["completed"] else (None, "failed")


def tables_1_2(ctx: Context) -> Section:
    scale = _scale(ctx)
    res = _foundation(scale)
    figs = _figures(foundation.plot(res, str(ctx.figures)))
    t1 = foundation.PAPER_TABLE1
    t2 = foundation.PAPER_TABLE2

    def key(c):
        return c["elements"], c["youngs_modulus"], c["load"]

    rows1, rows2 = [], []
    for c in sorted(res["cases"], key=lambda c: (c["elements"], c["load"], c["youngs_modulus"])):
        ours = c["constraint_solver"]["seconds"]
        cb, o15, o45 = t1[key(c)]
        cells = [c["elements"], f"{c['youngs_modulus']:.0e}", f"{c['load']:g}", f"{ours:.3f}"]
        for m in ("BDF", "Radau", "reference"):
            s, text = _secs(c.get(m))
            ratio = "n/a" if s is None else (f"> {s / ours:.3g}" if text.startswith(">")
                                             else f"{s / ours:.3g}")
            cells += [text, ratio]
        cells += [f"{cb:g}", f"{o15 / cb:.3g}", f"{o45 / cb:.3g}"]
        rows1.append(cells)
    for c in res["cases"]:
        pa, pr = t2[key(c)]
        rows2.append([f"{c['load']:g}", c["elements"], f"{c['youngs_modulus']:.0e}",
                      _g(c.get("abs_error"), ".2e"), _g(c.get("rel_error"), ".2e"),
                      f"{pa:.3g}", f"{pr:.3g}"])
    body = ["Cube on a Winkler foundation, 1 s at h = 0.01 "
            "(`idyn constraint-solver elastic-foundation`). Table 1: seconds, and each "
            "integrator's time over the constraint solver's (ours: scipy BDF and Radau at "
            "rtol 1e-3, atol 1e-6 for the paper's ode15s, DOP853 at rtol 1e-10 for its ode45; "
            "'> x' is a timeout). Machine: " + machine() + f". Scale: {scale}.", "",
            _md(["elements", "E [N/m^2]", "load [N]", "ours [s]", "BDF [s]", "BDF/ours",
                 "Radau [s]", "Radau/ours", "DOP853 [s]", "DOP853/ours", "paper: ours [s]",
                 "paper: ode15s/ours", "paper: ode45/ours"], rows1), "",
            "Table 2: error of q = [position, quaternion] after 1 s against the DOP853 "
            "reference (relative to abs(q_ref)).", "",
            _md(["load [N]", "elements", "E [N/m^2]", "ours abs", "ours rel", "paper abs",
                 "paper rel"], rows2)]
    for f in res["fine_step"]:
        body.append(f"- h = {f['h']:g}, {f['load']:g} N, {f['elements']} elements, "
                    f"E = {f['youngs_modulus']:.0e}: abs error {f['abs_error']:.2e} "
                    f"(paper {foundation.PAPER_FINE_STEP[key(f)]:.3g})")
    return Section("cs-tables-1-2", "CS Tables 1-2: box on an elastic foundation",
                   "\n".join(body), figs, _foundation_claims(res, key))


def _foundation_claims(res, key) -> list[Claim]:
    paper = published()
    c1, c2 = paper["table1_timings_s"]["claims"], paper["table2_accuracy"]["claims"]
    cases = res["cases"]
    ours = {key(c): c["constraint_solver"]["seconds"] for c in cases}
    claims = [Claim("CS Table 1", c1["never_thousands"], bool(max(ours.values()) < 1000),
                    f"ours: {min(ours.values()):.3f}-{max(ours.values()):.3f} s per case "
                    f"({len(ours)} cases)")]
    timed = [c for c in cases if c.get("BDF") is not None]
    if timed:
        others = {m: max(_secs(c[m])[0] or 0.0 for c in timed) for m in ("BDF", "Radau")}
        worst_ours = max(ours[key(c)] for c in timed)
        claims.append(Claim(
            "CS Table 1 / Sec. 7", c1["best_worst_case"],
            bool(all(worst_ours < v for v in others.values())),
            f"worst case over {len(timed)} cases: ours {worst_ours:.3f} s, BDF "
            f">= {others['BDF']:.3g} s, Radau >= {others['Radau']:.3g} s (timeouts at the "
            "budget count as the budget)"))
        steady = []
        for youngs in (1e7, 1e11):
            pair = [next((c for c in timed if key(c) == (100, youngs, load)), None)
                    for load in (5.0, 50.0)]
            if all(pair):
                s5, s50 = (_secs(p["BDF"]) for p in pair)
                if s5[0] and s50[0]:
                    steady.append((youngs, s5, s50, pair[0]["BDF"]["rhs_evaluations"],
                                   pair[1]["BDF"]["rhs_evaluations"]))
        comparable = [s for s in steady if not s[1][1].startswith(">")]
        if comparable:
            slower = all(s[2][0] > 3 * s[1][0] for s in comparable)
            claims.append(Claim(
                "CS Table 1 / Sec. 5.5", c1["steady_state"], bool(slower),
                "; ".join(f"BDF, 100 elements, E = {y:.0e}: {a[1]} s at 5 N ({ra} rhs), "
                          f"{b[1]} s at 50 N ({rb} rhs)" for y, a, b, ra, rb in steady),
                "" if slower else "scipy's BDF (variable order, numerical Jacobian) is not "
                "MATLAB's ode15s at order 1: at E = 1e7 it needs about as many right-hand sides "
                "for the rocking 50 N case as for the steady 5 N case"))
        else:
            claims.append(Claim("CS Table 1 / Sec. 5.5", c1["steady_state"], None,
                                "BDF timed out at both loads", "raise --budget"))
    by_size = {}
    for (e, youngs, load), s in ours.items():
        by_size.setdefault((youngs, load), {})[e] = s
    ratios = {k: v[900] / v[100] for k, v in by_size.items() if 100 in v and 900 in v}
    if ratios:
        cubic = all(r > 0.5 * 9 ** 3 for r in ratios.values())
        pr = [paper_row["s"][0] for paper_row in paper["table1_timings_s"]["rows"]]
        claims.append(Claim(
            "CS Table 1 / Sec. 5.5", c1["cubic"], bool(cubic),
            "ours t(900)/t(100) = " + ", ".join(f"{r:.2f}" for r in ratios.values())
            + f" (cubic: 729; the paper's own: {pr[4] / pr[0]:.0f}, {pr[5] / pr[1]:.0f}, "
            f"{pr[6] / pr[2]:.0f}, {pr[7] / pr[3]:.0f})",
            "" if cubic else "our frictionless Winkler program is solved in its lifted sparse "
            "form (accelerations kept as variables, O(nnz) per step), not as a dense "
            "900 x 900 problem; the paper's own ratios are not cubic either"))
    errs = [c for c in cases if "abs_error" in c]
    light = [c for c in errs if c["load"] == 5.0]
    heavy = [c for c in errs if c["load"] == 50.0]
    if light:
        claims.append(Claim(
            "CS Table 2", c2["small_load_accurate"],
            bool(all(c["abs_error"] <= 3e-5 for c in light)),
            "5 N: abs error " + ", ".join(f"{c['abs_error']:.2e} ({c['elements']}, "
                                          f"E = {c['youngs_modulus']:.0e})" for c in light)))
    if heavy:
        big = [c for c in heavy if c["abs_error"] > 1e-3]
        lifted = [c["constraint_solver"]["max_active_elements"] for c in heavy]
        claims.append(Claim(
            "CS Table 2", c2["large_load_error"] + " (0.81 abs at 100 elements)",
            bool(len(big) == len(heavy)),
            "50 N: abs error " + ", ".join(f"{c['abs_error']:.2e} ({c['elements']}, "
                                           f"E = {c['youngs_modulus']:.0e})" for c in heavy)
            + f"; elements in contact at most {max(lifted)}",
            "" if len(big) == len(heavy) else
            "our first-order error against the DOP853 reference stays ~1e-6 at 50 N (the load "
            "does rock the cube); an error of 0.81 in abs(q) = 1.12 is a different final pose, "
            "not the O(h) truncation of the scheme the paper describes"))
    for f in res["fine_step"]:
        coarse = next(c for c in errs if key(c) == key(f))
        better = bool(f["abs_error"] < coarse["abs_error"] / 3)
        order = np.log10(coarse["abs_error"] / f["abs_error"]) / np.log10(res["h"] / f["h"])
        claims.append(Claim(
            "CS Table 2 note", c2["fine_step_better"], better,
            f"{f['load']:g} N, {f['elements']} elements, E = {f['youngs_modulus']:.0e}: "
            f"{coarse['abs_error']:.2e} at h = {res['h']:g}, {f['abs_error']:.2e} at "
            f"h = {f['h']:g} (observed order {order:.2f}; the paper: "
            f"{foundation.PAPER_TABLE2[key(f)][0]:.3g} -> "
            f"{foundation.PAPER_FINE_STEP[key(f)]:.3g})",
            "" if better else "our error at h = 0.01 is already ~1e5 times below the paper's; "
            "between h = 0.01 and 1e-3 the error is not yet in its asymptotic range; it keeps "
            "converging at smaller h (order 0.8 from 1e-3 to 1e-4, and dropping Mhat Gdot v "
            "changes it in the 7th digit: docs/results.md), so it is truncation, already small"))
    return claims


# ----------------------------------------------------------------------------- Fig. 9
def fig9(ctx: Context) -> Section:
    scale = _scale(ctx)
    paper = published()["fig9_incline"]
    res = incline.run(duration=0.05 if scale == "smoke" else paper["duration_s"])
    figs = _figures(incline.plot(res, str(ctx.figures)))
    g, th, h = 9.81, np.deg2rad(paper["angle_deg"]), res["h"]
    steps = int(round(res["duration"] / h))

    def coulomb(mu):
        """Semi-implicit Euler of a block under Coulomb friction: 1/2 a h^2 N (N + 1)."""
        a = max(0.0, g * (np.sin(th) - mu * np.cos(th)))
        return 0.5 * a * h * h * steps * (steps + 1)

    rows = [[f"{r['mu']:g}", f"{r['final_distance']:.5f}", f"{coulomb(r['mu']):.5f}",
             f"{r['max_friction']:.3f}", f"{r['mean_normal_per_foot']:.3f}",
             f"{r['hertz_depth_at_mean_load']:.2e}", r["solver"]["status_counts"],
             "stiction" if r["mu"] == paper["stiction_mu"] else "plotted only"]
            for r in res["runs"]]
    body = [f"Box on a {paper['angle_deg']:g} degree incline, four Hertzian feet, true friction "
            f"cone, h = {h:g}, {res['duration']:g} s (`idyn constraint-solver incline`). The "
            "paper gives Fig. 9's distances only as a plot; the Coulomb column is the "
            "semi-implicit Euler distance of a rigid block, 1/2 g (sin - mu cos) h^2 N (N+1).", "",
            _md(["mu", "distance [m]", "Coulomb block [m]", "max friction [N]",
                 "normal per foot [N]", "Hertz depth [m]", "solver", "paper"], rows)]
    d = [r["final_distance"] for r in res["runs"]]
    mus = [r["mu"] for r in res["runs"]]
    c = paper["claims"]
    claims = [
        Claim("CS Fig. 9 / Sec. 6.4", c["no_friction_mu0"],
              bool(res["runs"][0]["max_friction"] == 0.0),
              f"max friction at mu = 0: {res['runs'][0]['max_friction']:g} N"),
        Claim("CS Fig. 9 / Sec. 6.4", c["stiction"], bool(abs(d[-1]) < 1e-6),
              f"distance at mu = {mus[-1]:g}: {d[-1]:.2e} m (tan 15 deg = {np.tan(th):.3f})"),
        Claim("CS Fig. 9 / Sec. 6.4", "contacting bodies slide farther with lower mu",
              bool(np.all(np.diff(d) < 0)),
              "distances " + ", ".join(f"{x:.4g} m" for x in d)),
        Claim("CS Fig. 9 / Sec. 6.4", c["opposes"],
              bool(all(r["max_friction_power"] <= 1e-9 for r in res["runs"])),
              "max friction power over the runs: "
              f"{max(r['max_friction_power'] for r in res['runs']):.2e} W (<= 0 opposes)")]
    if d[1] > 0 and d[2] > 0:
        ratio = d[1] / d[2]
        claims.append(Claim(
            "CS Sec. 6.4", c["decreasing"] + " (literally: d(0.125) / d(0.25) = 2)",
            bool(1.5 < ratio < 2.5),
            f"d(0.125) / d(0.25) = {ratio:.2f}; the Coulomb block's "
            f"{coulomb(0.125) / coulomb(0.25):.2f}",
            "" if 1.5 < ratio < 2.5 else "the distance follows Coulomb's law, "
            "a = g (sin 15 - mu cos 15), not 1/mu: ours within "
            f"{100 * max(abs(x / coulomb(m) - 1) for x, m in zip(d[1:3], mus[1:3])):.2g} % of "
            "the rigid Coulomb block"))
    normal = np.mean([r["mean_normal_per_foot"] for r in res["runs"]])
    depth = np.mean([r["hertz_depth_at_mean_load"] for r in res["runs"]])
    claims.append(Claim(
        "CS Sec. 6.4", "normal force around 2.5 N per point",
        bool(abs(normal - paper["normal_per_point_N"]) < 0.5),
        f"mean {normal:.3f} N per foot (m g cos 15 / 4 = {9.81 * np.cos(th) / 4:.3f} N)"))
    claims.append(Claim(
        "CS Sec. 6.4", "the deformation should be around 1e-8 m",
        bool(0.3 < depth / paper["deformation_m"] < 3),
        f"Hertz depth at the mean load: {depth:.2e} m",
        "eq. 121 with E* sqrt(r) = 1e10 N/m^(1/2) gives d = (F / 1e10)^(2/3) = "
        f"{depth:.1e} m at {normal:.2f} N; 1e-8 m would carry "
        f"{1e10 * 1e-8 ** 1.5:.2g} N: the paper's figure contradicts its eq. 121"))
    return Section("cs-fig-9", "CS Fig. 9: box on an incline, distance against mu",
                   "\n".join(body), figs, claims)


# ----------------------------------------------------------------------------- Fig. 10
def fig10(ctx: Context) -> Section:
    scale = _scale(ctx)
    paper = published()["fig10_sphere_stack"]
    if scale == "smoke":
        res = sphere_stack.run(sizes=(2, 3), steps=20, ode=False)
    elif scale == "quick":
        res = sphere_stack.run(short=True, sizes=(5, 10, 20, 40), steps=200, budget=5.0)
    else:
        res = sphere_stack.run()
    figs = _figures(sphere_stack.plot(res, str(ctx.figures)))
    virtual = res["steps"] * res["h"]
    sparse = {s["n"]: s for s in res["hessian_sparsity"]}
    rows = [[r["n"], f"{r['seconds']:.3f}", f"{r['seconds'] / virtual:.3f}",
             f"{1e3 * r['step_median_s']:.2f}", str(r["standing"]),
             f"{sparse[r['n']]['hessian_nnz']} / {sparse[r['n']]['variables']}",
             f"{paper['hessian_nnz_bound_per_sphere'] * r['n']}", "plotted only"]
            for r in res["runs"]]
    body = [f"Stacks of steel spheres (E* = {paper['E']:g}, B = {paper['B']:g}), "
            f"{res['steps']} steps of {res['h']:g} s (`idyn constraint-solver sphere-stack`). "
            "Machine: " + machine() + f". Scale: {scale}. The paper plots seconds for 1 s of "
            "virtual time (its text says 500 steps of 10 ms); no values are in the text.", "",
            _md(["spheres", "seconds", "seconds per virtual s", "median step [ms]", "standing",
                 "Hessian nnz / variables", "paper's bound 18 m", "paper"], rows)]
    for o in res["ode"]:
        s, text = _secs(o)
        body.append(f"- scipy {o['method']}, {o['n']} spheres, same model as an ODE: {text} s")
    ns = np.array([r["n"] for r in res["runs"]], dtype=float)
    ts = np.array([r["seconds"] for r in res["runs"]])
    c = paper["claims"]
    claims = [Claim("CS Fig. 10 / Sec. 6.5", c["stands"], bool(res["all_standing"]),
                    "max lateral drift " + ", ".join(
                        f"{r['max_lateral_drift']:.0e} m (n = {r['n']})" for r in res["runs"]))]
    nnz_ok = all(s["hessian_nnz"] <= paper["hessian_nnz_bound_per_sphere"] * s["n"]
                 for s in res["hessian_sparsity"])
    claims.append(Claim(
        "CS Sec. 6.5", c["sparse"], bool(nnz_ok),
        ", ".join(f"n = {s['n']}: {s['hessian_nnz']} non-zeros of {s['dense_entries']}"
                  for s in res["hessian_sparsity"])))
    if ns.size >= 3 and ns.max() / ns.min() >= 4:
        slope = float(np.polyfit(np.log(ns), np.log(ts), 1)[0])
        claims.append(Claim(
            "CS Fig. 10", "time grows about linearly with the number of spheres (sparse problem)",
            bool(slope < 1.5),
            f"fitted exponent {slope:.2f} of seconds against n over n = "
            f"{int(ns.min())}-{int(ns.max())}; " + ", ".join(
                f"{t:.2f} s (n = {int(n)})" for n, t in zip(ns, ts))))
    else:
        claims.append(Claim("CS Fig. 10", "time grows about linearly with the number of spheres",
                            None, "stacks of " + ", ".join(str(int(n)) for n in ns) + " only",
                            "needs sizes spanning 4x or more (quick and full scales)"))
    return Section("cs-fig-10", "CS Fig. 10: sphere stack, time against size",
                   "\n".join(body), figs, claims)
