"""``idyn bench contacts``: controller step time against the number of contacts (paper Fig. 19).

As in the paper's timing experiment, the contacts at each foot-ground interface of the standing
LINKS quadruped are duplicated (4, 8, ..., 48 contacts in total); every controller and the
dynamics floor are timed at every count.  Writes DIR/bench.json and DIR/contacts.png.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import controllers

from .controllers import single_threaded_blas, standing_problem, time_controllers

#: contact counts of the default sweep (multiples of four: every foot duplicated alike)
COUNTS = (4, 8, 12, 16, 24, 32, 40, 48)


def run(out="results/bench", *, counts=None, seeds: int = 2, repeats: int = 15, robot: str = "links") -> dict:
    """Time every controller for each contact count in ``counts`` (multiples of 4)."""
    if single_threaded_blas(__name__, out, counts=counts, seeds=seeds, repeats=repeats):
        return json.loads((Path(out) / "bench.json").read_text())
    counts = tuple(COUNTS if counts is None else counts)
    bad = [c for c in counts if c < 4 or c % 4]
    if bad:
        raise ValueError(f"contact counts must be positive multiples of 4, got {bad}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = controllers.available()
    report = {"benchmark": "contacts", "robot": robot, "counts": list(counts), "seeds": seeds,
              "repeats": repeats, "floor": {}, "controllers": {n: {} for n in names}}
    print(f"{'contacts':>8s} {'floor':>9s} " + " ".join(f"{n:>17s}" for n in names) + "   (median us)")
    for n in counts:
        rng = np.random.default_rng(n)
        problems = [standing_problem(robot, n, 1.0, rng=rng, noise=1e-3) for _ in range(seeds)]
        res = time_controllers(problems, names, repeats)
        report["floor"][str(n)] = res["floor"]
        for name, entry in res["controllers"].items():
            report["controllers"][name][str(n)] = entry
        print(f"{n:8d} {res['floor']['median_us']:9.1f} "
              + " ".join(f"{res['controllers'][m]['median_us']:17.1f}" for m in names))
    (out / "bench.json").write_text(json.dumps(report, indent=2))
    plot(report, out / "contacts.png")
    return report


def plot(report: dict, path: Path) -> None:
    """Fig. 19 style: median step time (ms) against contact count, one line per controller."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = report["counts"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, by_count in report["controllers"].items():
        ax.plot(counts, [by_count[str(n)]["median_us"] / 1e3 for n in counts], marker="o", label=name)
    ax.plot(counts, [report["floor"][str(n)]["median_us"] / 1e3 for n in counts], "k--", label="dynamics floor")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("number of contacts")
    ax.set_ylabel("median step time (ms)")
    ax.set_yscale("log")
    ax.set_title(f"Controller step time vs contacts ({report['robot']})")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
