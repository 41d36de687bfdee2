"""The constraint-solver paper's report sections at the smoke scale (a few seconds)."""
import numpy as np

from idyn.experiments.constraint_solver.common import published
from idyn.experiments.reproduce import Claim, Context, Section
from idyn.experiments.reproduce import constraint_solver as cs


def test_sections_at_smoke_scale(tmp_path):
    ctx = Context(out=tmp_path, smoke=True)
    sections = cs.section(ctx)
    assert [s.key for s in sections] == ["cs-fig-4", "cs-fig-6", "cs-tables-1-2", "cs-fig-9",
                                         "cs-fig-10"]
    for s in sections:
        assert isinstance(s, Section) and s.claims and s.seconds > 0
        assert all(isinstance(c, Claim) and c.holds in (True, False, None) for c in s.claims)
        assert all(c.cause for c in s.claims if c.holds is False)   # every "no" says why
        assert s.figures and all(p.exists() and p.parent == ctx.figures for p in s.figures)
    by = {s.key: s for s in sections}
    # the published numbers are printed beside ours (read from experiments/data/cs_paper.json)
    paper = published()
    assert f"{paper['table1_timings_s']['rows'][0]['s'][0]:g}" in by["cs-tables-1-2"].body
    # Fig. 6: the dead impact at h = 1e-5 is reproduced with the paper's row rule
    dead = next(c for c in by["cs-fig-6"].claims if "dead" in c.claim)
    assert dead.holds is True
    # Fig. 4: "energy maintained precisely" is judged on the first step's exact loss -T1
    energy = next(c for c in by["cs-fig-4"].claims if "energy" in c.claim)
    assert energy.holds is False and "-0.4807 J" in energy.evidence
    # Fig. 9: stiction at mu = 0.375 and no friction at mu = 0 hold
    fig9 = {c.claim: c.holds for c in by["cs-fig-9"].claims}
    assert fig9[paper["fig9_incline"]["claims"]["stiction"]] is True
    assert fig9[paper["fig9_incline"]["claims"]["no_friction_mu0"]] is True


def test_published_numbers_are_the_papers():
    """Spot checks of experiments/data/cs_paper.json against the paper's text."""
    paper = published()
    rows = {(r["elements"], r["E"], r["load"]): r["s"] for r in paper["table1_timings_s"]["rows"]}
    assert rows[(100, 1e11, 50.0)] == [0.396, 5550.0, 621.0]
    assert rows[(900, 1e11, 50.0)] == [26.0, 2.31, 17400.0]
    errs = {(r["elements"], r["E"], r["load"]): r["err"] for r in paper["table2_accuracy"]["rows"]}
    assert errs[(100, 1e7, 50.0)] == [0.813, 0.724]
    assert np.isclose(paper["fig6_rom_pendulum"]["k"], 1e12)
    assert paper["fig9_incline"]["mu"] == [0.0, 0.125, 0.25, 0.375]
