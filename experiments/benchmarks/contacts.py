"""``idyn bench contacts``: controller step time against the number of contacts (paper Fig. 19).

As in the paper's timing experiment (Sec. 8.4.2), the contact at each foot-ground interface of
the standing LINKS quadruped is duplicated (4, 8, ..., 48 contacts in total) and the dynamics
floor and every controller are timed at every count, in two series:

* **merging off** (``merge_duplicates=False``, every controller): the solver gets every copy,
  as the paper's controllers did, so this series measures what Fig. 19 measured, the scaling
  of each model with the number of contacts;
* **merging on** (idyn's default, only the controllers that merge: ``Controller.merge_duplicates``):
  exact duplicates are solved once (:mod:`idyn.controllers.duplicates`), so every count costs about
  what four contacts cost plus the merge.

Both series are timed in the same steps (one after the other, so machine load falls on both
alike).

**Patch case.**  Feet touch at patches, and a contact detector reports several distinct points
per foot: the 12-joint quadruped ``patch_robot`` (a1) stands on ``n / 4`` distinct points per foot
spread on a 4 mm circle (:func:`idyn.experiments.benchmarks.controllers.foot_contacts`), so the
duplicate merge cannot apply; every controller runs with its defaults, timed with the floor of
the same count in the same steps, and is reported in us (median, p99), as a multiple of the
floor and by its pivots (LCP) or iterations (QP) per step; the warm-started controllers also run
cold (``warm_start=False``) in the same steps.

Writes DIR/bench.json (``floor``, ``merging_off`` and ``merging_on``: controller -> contact count
-> median/p90/p99 us and solver statuses; ``patch``: its robot, diameter, floor and controllers
by count) and DIR/contacts.png (solid lines merging off, dashed merging on) and DIR/patch.png.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from idyn import controllers
from idyn.errors import InvalidInputError

from .controllers import single_threaded_blas, standing_problem, time_controllers, write_report

#: contact counts of the default sweep (multiples of four: every foot duplicated alike)
COUNTS = (4, 8, 12, 16, 24, 32, 40, 48)
#: the two series of bench.json, their controller options and how the table names them
SERIES = {"merging_off": ({"merge_duplicates": False}, "off (paper)"),
          "merging_on": ({}, "on (idyn)")}
#: the cases of a run: the paper's exact duplicates and distinct points on a foot patch
CASES = ("duplicates", "patch")
#: diameter (m) of the foot patch of the patch case
PATCH = 0.004
#: the patch case's extra variants: the warm-started controllers started cold every step
COLD = {"qp-coulomb (cold)": ("qp-coulomb", {"warm_start": False}),
        "lcp-coulomb (cold)": ("lcp-coulomb", {"warm_start": False})}


def run(out="results/bench", *, counts=None, seeds: int = 2, repeats: int = 15, robot: str = "links",
        patch_robot: str = "a1", cases=CASES) -> dict:
    """Time every controller for each contact count in ``counts`` (multiples of 4): ``robot``
    with duplicated contacts, merging off and (for the controllers that merge) on, and
    ``patch_robot`` on distinct points of a foot patch (module docstring)."""
    if (child := single_threaded_blas(__name__, out, counts=counts, seeds=seeds, repeats=repeats,
                                      robot=robot, patch_robot=patch_robot, cases=list(cases))) is not None:
        return child
    counts = tuple(COUNTS if counts is None else counts)
    bad = [c for c in counts if c < 4 or c % 4]
    if bad:
        raise InvalidInputError(f"contact counts must be positive multiples of 4, got {bad}")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise InvalidInputError(f"unknown cases {unknown}; choose from {CASES}")
    report = {"benchmark": "contacts", "robot": robot, "counts": list(counts), "seeds": seeds,
              "repeats": repeats}
    if "duplicates" in cases:
        _duplicates(report, robot, counts, seeds, repeats)
    if "patch" in cases:
        report["patch"] = _patch(patch_robot, counts, seeds, repeats)
    write_report(out, report)
    if "duplicates" in cases:
        plot(report, Path(out) / "contacts.png")
    if "patch" in cases:
        plot_patch(report["patch"], counts, Path(out) / "patch.png")
    return report


def _patch(robot: str, counts, seeds: int, repeats: int) -> dict:
    """The patch case: every controller (defaults), the warm-started ones also cold
    (:data:`COLD`), and the floor, by contact count."""
    variants = {n: (n, {}) for n in controllers.available()}
    variants.update(COLD)
    out = {"robot": robot, "diameter_m": PATCH, "floor": {}, "controllers": {n: {} for n in variants}}
    print(f"\npatch case: {robot}, n/4 distinct points per foot on a {PATCH * 1e3:g} mm patch")
    print(f"{'contacts':>8s} {'controller':20s} {'median us':>10s} {'p99 us':>10s} {'x floor':>8s} "
          f"{'pivots':>7s} {'p99':>5s}")
    for n in counts:
        rng = np.random.default_rng(n)
        problems = [standing_problem(robot, n, 1.0, rng=rng, noise=1e-3, patch=PATCH) for _ in range(seeds)]
        res = time_controllers(problems, variants, repeats)
        out["floor"][str(n)] = f = res["floor"]
        print(f"{n:8d} {'floor':20s} {f['median_us']:10.1f} {f['p99_us']:10.1f}")
        for name in variants:
            out["controllers"][name][str(n)] = e = res["controllers"][name]
            print(f"{n:8d} {name:20s} {e['median_us']:10.1f} {e['p99_us']:10.1f} {e['ratio_to_floor']:8.1f} "
                  f"{e['pivots_median']:7.0f} {e['pivots_p99']:5.0f}")
    return out


def _duplicates(report: dict, robot: str, counts, seeds: int, repeats: int) -> None:
    """The paper's case: each foot's contact duplicated, merging off and on (module docstring)."""
    names = controllers.available()
    model = standing_problem(robot, 4).model
    members = {"merging_off": names,
               "merging_on": [n for n in names if controllers.make(n, model).merge_duplicates]}
    variants = {f"{series}/{name}": (name, SERIES[series][0]) for series, ns in members.items() for name in ns}
    report["floor"] = {}
    report.update({series: {n: {} for n in ns} for series, ns in members.items()})
    widths = {n: max(9, len(n)) for n in names}
    print(f"{'contacts':>8s} {'merging':11s} {'floor':>9s} " + " ".join(f"{n:>{widths[n]}s}" for n in names)
          + "   (median us)")
    for n in counts:
        rng = np.random.default_rng(n)
        problems = [standing_problem(robot, n, 1.0, rng=rng, noise=1e-3) for _ in range(seeds)]
        res = time_controllers(problems, variants, repeats)
        report["floor"][str(n)] = res["floor"]
        for series, ns in members.items():
            for name in ns:
                report[series][name][str(n)] = res["controllers"][f"{series}/{name}"]
            cells = (f"{report[series][m][str(n)]['median_us']:{widths[m]}.1f}" if m in ns
                     else f"{'-':>{widths[m]}s}" for m in names)
            print(f"{n:8d} {SERIES[series][1]:11s} {res['floor']['median_us']:9.1f} " + " ".join(cells))


def plot(report: dict, path: Path) -> None:
    """Fig. 19 style: median step time (ms) against contact count, one colour per controller,
    solid merging off (the paper's experiment), dashed merging on."""
    from ..plots import plt, save

    counts = report["counts"]
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = {name: f"C{i}" for i, name in enumerate(report["merging_off"])}
    for series, style, suffix in (("merging_off", "-o", ""), ("merging_on", "--x", " (merging on)")):
        for name, by_count in report[series].items():
            ax.plot(counts, [by_count[str(n)]["median_us"] / 1e3 for n in counts], style,
                    color=colours[name], label=name + suffix)
    ax.plot(counts, [report["floor"][str(n)]["median_us"] / 1e3 for n in counts], "k:", label="pinocchio floor")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("number of contacts (each foot's contact duplicated)")
    ax.set_ylabel("median step time (ms)")
    ax.set_yscale("log")
    ax.set_title(f"Controller step time vs contacts ({report['robot']}); solid: merging off (paper), "
                 "dashed: merging on", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    save(fig, path)


def plot_patch(patch: dict, counts, path: Path) -> None:
    """The patch case: median step time (ms) against contact count, one line per controller."""
    from ..plots import plt, save

    fig, ax = plt.subplots(figsize=(8, 5))
    for name, by_count in patch["controllers"].items():
        ax.plot(counts, [by_count[str(n)]["median_us"] / 1e3 for n in counts], "-o", label=name)
    ax.plot(counts, [patch["floor"][str(n)]["median_us"] / 1e3 for n in counts], "k:", label="pinocchio floor")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(f"number of contacts (distinct points on a {patch['diameter_m'] * 1e3:g} mm patch per foot)")
    ax.set_ylabel("median step time (ms)")
    ax.set_yscale("log")
    ax.set_title(f"Controller step time vs contacts, foot patches ({patch['robot']})", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    save(fig, path)
