"""Smoke scale of the report sections of Fig. 18 (grasp) and Fig. 15 / Algorithm 3 (smoothing):
they run, write their figures, and judge their claims on numbers that obey the physics they
report (a held box has no drop time; MINDIFF's answers are LCP solutions whose torques differ
from Lemke's only where the LCP has several solutions)."""
import numpy as np

from idyn.experiments.reproduce import Context
from idyn.experiments.reproduce import grasp, smoothing


def test_grasp_section_smoke(tmp_path):
    s = grasp.section(Context(out=tmp_path, smoke=True, preset="idyn"))
    assert s.key == "id-fig-18" and all(p.exists() and p.suffix == ".png" for p in s.figures)
    assert len(s.claims) == 2 and all(c.holds is None for c in s.claims)     # 0.1 s decides neither
    assert s.body.count("| idyn |") == len(grasp.MUS) * len(grasp.VARIANTS)


def test_smoothing_section_smoke(tmp_path):
    s = smoothing.section(Context(out=tmp_path, smoke=True))
    assert s.key == "id-fig-15" and all(p.exists() for p in s.figures)
    fig15, md = s.claims
    assert fig15.holds in (True, False) and md.holds in (True, False, None)


def test_mindiff_changes_the_torques_only_where_the_lcp_is_indeterminate():
    """While the feet slide the LCP has one solution and both controllers give the same torques;
    once held, the solution set has many points and MINDIFF keeps the internal force of the
    previous step, which Lemke's vertex drops: a torque jump Lemke has and MINDIFF has not."""
    d = smoothing.mindiff_demo(6)
    hold = d["hold"]
    change = np.abs(d["lemke"] - d["mindiff"]).max(axis=1)
    assert np.all(d["solutions"][:hold] == 1) and np.all(d["solutions"][hold:] > 1)
    assert change[:hold].max() < 1e-9 and change[hold:].min() > 1e-3
    jump = lambda tau: np.abs(tau[hold] - tau[hold - 1]).max()
    assert jump(d["mindiff"]) < jump(d["lemke"])
