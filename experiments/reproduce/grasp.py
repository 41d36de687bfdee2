"""ID paper Fig. 18 and Sec. 8.4.1: the manipulator grasping a heavy box, at mu = inf (run as
100, the coefficient the testbeds simulate no slip with) and mu = 1.

``qp-coulomb`` (ID_QP,mu, the paper's controller for this task) runs with idyn's defaults,
Sec. 4.5's consistency check included (:mod:`idyn.controllers.consistency`), and with the check
off (``consistency_check=False``, the paper's controllers: Sec. 8.2 uses no such check), on the
reference backend and every cross-check backend.  Reported: whether the box stays in the hand
(``box_dropped``, ``box_drop_time``), the joint tracking error of the arm and of the fingers
(the fingers' targets close past the grasp, so their error is the reference's), and the
predicted normal force's error against the simulator's.  The paper: ID_QP,mu held the box at
mu = inf and dropped it at about 1.5 s at mu = 1.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from . import Claim, Context, Section
from ..runner import run_scenario
from ..scenario import Scenario
from ..trace import Trace

#: the friction coefficients of Fig. 18 (inf is simulated as 100)
MUS = (100.0, 1.0)
#: controller options compared, named explicitly so that both run under either preset: with
#: Sec. 4.5's check and the command's effort (idyn's defaults), and without them (the paper's)
VARIANTS = {"qp-coulomb": {"consistency_check": True, "command_effort": True},
            "qp-coulomb, no Sec. 4.5 check": {"consistency_check": False, "command_effort": False}}
#: the arm's joints among the manipulator's 11 actuated ones (the rest are the fingers)
ARM_JOINTS = 7
#: the paper's statements (Sec. 8.4.1)
PAPER = {100.0: "held (3 s)", 1.0: "dropped at about 1.5 s"}
PAPER_DROP_TIME = 1.5


def durations(ctx: Context) -> float:
    """Seconds of each run: the paper's 3 s, a fraction of a second for the smoke scale."""
    return 0.1 if ctx.smoke else 3.0


def backends(ctx: Context) -> tuple[str, ...]:
    """The reference backend, then the cross-check backends."""
    return (ctx.backend,) + tuple(b for b in ctx.cross_checks if b != ctx.backend)


def scenario(ctx: Context, backend: str, mu: float, options: dict) -> Scenario:
    """One grasp run under the context's preset."""
    kw = {"preset": ctx.preset}
    return Scenario(controller="qp-coulomb", robot="manipulator", mu=mu, duration=durations(ctx),
                    backend=backend, controller_options=dict(options), **kw)


def run(sc: Scenario) -> dict:
    """Metrics of one run plus the per-step arm and finger errors (rad) from its trace."""
    with tempfile.TemporaryDirectory() as tmp:
        m = run_scenario(sc, tmp)
        trace = Trace.load(Path(tmp) / "trace.npz")
    err = np.abs(trace.q[:, :trace.q_des.shape[1]] - trace.q_des)   # the arm's q come first, flat joints
    m["arm_error_t"], m["finger_error_t"] = err[:, :ARM_JOINTS].mean(axis=1), err[:, ARM_JOINTS:].mean(axis=1)
    m["t"] = trace.t
    m["arm_error"], m["finger_error"] = float(m["arm_error_t"].mean()), float(m["finger_error_t"].mean())
    return m


def box(m: dict) -> str:
    return f"dropped at {m['box_drop_time']:.3f} s" if m["box_dropped"] else f"held ({m['duration']:.2f} s)"


def section(ctx: Context) -> Section:
    t0 = time.perf_counter()
    results = {(b, mu, name): run(scenario(ctx, b, mu, opts))
               for b in backends(ctx) for mu in MUS for name, opts in VARIANTS.items()}
    lines = ["| backend | mu | controller | box | arm error (rad) | finger error (rad) | normal force error (%) "
             "| paper |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (b, mu, name), m in results.items():
        lines.append(f"| {b} | {mu:g} | {name} | {box(m)} | {m['arm_error']:.4f} | {m['finger_error']:.4f} "
                     f"| {m['force_error_rel']:.1f} | {PAPER[mu]} |")
    body = (f"`qp-coulomb` on the grasp for {durations(ctx):g} s per run (mu = inf run as 100). Errors "
            "are E|q - q_des| over the 7 arm joints and the 4 finger joints; the force error is the "
            "summed predicted normal force against the simulator's, in percent of the simulator's.\n\n"
            + "\n".join(lines))
    figures = [_figure(ctx, results)]
    claims = [_held_claim(ctx, results), _dropped_claim(ctx, results)]
    return Section("id-fig-18", "Fig. 18: the manipulator grasping a box", body, figures, claims,
                   time.perf_counter() - t0)


def _figure(ctx: Context, results: dict) -> Path:
    from ..plots import plt, save
    bs = backends(ctx)
    fig, axes = plt.subplots(len(MUS), len(bs), figsize=(5 * len(bs), 3.2 * len(MUS)), squeeze=False)
    for i, mu in enumerate(MUS):
        for j, b in enumerate(bs):
            ax = axes[i, j]
            for name in VARIANTS:
                m = results[(b, mu, name)]
                line, = ax.plot(m["t"], m["arm_error_t"], lw=0.8, label=f"{name}, arm")
                ax.plot(m["t"], m["finger_error_t"], lw=0.6, ls=":", color=line.get_color(), label=f"{name}, fingers")
                if m["box_dropped"]:
                    ax.axvline(m["box_drop_time"], color=line.get_color(), ls="--", lw=0.6)
            ax.set(title=f"{b}, mu = {mu:g}", xlabel="time (s)", ylabel="E|q - q_des| (rad)")
            ax.legend(fontsize=6)
    return save(fig, ctx.figures / "id_fig18_grasp.png")


def _held_claim(ctx: Context, results: dict) -> Claim:
    runs = {b: results[(b, 100.0, "qp-coulomb")] for b in backends(ctx)}
    evidence = "; ".join(f"{b}: {box(m)}, arm error {m['arm_error']:.4f} rad" for b, m in runs.items())
    off = results[(ctx.backend, 100.0, "qp-coulomb, no Sec. 4.5 check")]
    evidence += f"; {ctx.backend} without the check: {box(off)}"
    ref = runs[ctx.backend]
    full = ref["duration"] >= 3.0 - 1e-9 or ref["box_dropped"]
    holds = (not ref["box_dropped"]) if full else None
    cause = ""
    if holds is None:
        cause = f"the run lasts {ref['duration']:.2f} s, not the paper's 3 s (smoke scale)"
    elif not holds:
        cause = ("the model's least-squeeze grasp carries the box on friction at the cone's limit; see "
                 "docs/results.md, 'Grasping manipulator'")
    if "pybullet" in runs and runs["pybullet"]["box_dropped"]:
        cause += ("" if not cause else "; ") + (
            "PyBullet drops it: Bullet simulates at most Coulomb mu = 10 (it clamps friction at 10; the "
            "testbed reports that 10), and under finite Coulomb friction the least-squeeze grasp drops the "
            "box in idyn.sim too (measured for mu = 2 to 99: docs/results.md); idyn.sim holds it at mu = 100 "
            "because it simulates mu >= 100 as no slip, and only on a knife edge (docs/results.md)")
    return Claim("ID Sec. 8.4.1, Fig. 18", "ID_QP,mu holds the box at mu = inf for the 3 s experiment",
                 holds, evidence, cause)


def _dropped_claim(ctx: Context, results: dict) -> Claim:
    runs = {b: results[(b, 1.0, "qp-coulomb")] for b in backends(ctx)}
    evidence = "; ".join(f"{b}: {box(m)}, force error {m['force_error_rel']:.1f} %" for b, m in runs.items())
    ref = runs[ctx.backend]
    if ref["box_dropped"]:
        holds = abs(ref["box_drop_time"] - PAPER_DROP_TIME) <= 0.5
    else:
        holds = False if ref["duration"] >= 3.0 - 1e-9 else None
    cause = ""
    if holds is None:
        cause = f"the run lasts {ref['duration']:.2f} s, before the paper's drop (smoke scale)"
    elif not holds and not ref["box_dropped"]:
        cause = ("at mu = 1 the friction cone forces the model to squeeze (Stage I needs normal force for "
                 "every newton of friction), the prediction follows the simulator "
                 f"({ref['force_error_rel']:.1f} % normal-force error on {ctx.backend}) and the box stays; "
                 "the paper attributes its drop to excessive contact forces (Table 6), which our runs do "
                 "not show")
    return Claim("ID Sec. 8.4.1, Fig. 18", "ID_QP,mu drops the box at mu = 1 at about 1.5 s",
                 holds, evidence, cause)
