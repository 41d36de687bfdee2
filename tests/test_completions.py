"""The completion table of a sweep against the paper's (Table 3's "-" marks a fall)."""
from __future__ import annotations

import pytest

from idyn.errors import InvalidInputError
from idyn.experiments.completions import PLANAR, completion_table, paper_completions
from idyn.experiments.report import paper_data
from idyn.experiments.scenario import PAPER_CONTROLLERS


def test_paper_completions_read_table_3():
    done = paper_completions(paper_data())
    assert len(done) == 28 and {c for c, _ in done} == set(PAPER_CONTROLLERS)
    fell = sorted(k for k, v in done.items() if not v)
    assert fell == [("lcp-noslip", "compliant-high"), ("lcp-noslip", "compliant-low"),
                    ("lcp-noslip", "rigid-low"), ("qp-noslip", "compliant-low")]


def test_agreement_counts_cells_not_strings():
    paper = paper_data()
    done = paper_completions(paper)
    rows = [{"controller": c, "terrain": t, "fell": not v, "fall_time": None if v else 1.0}
            for (c, t), v in done.items()]
    assert completion_table(rows, paper)[1:] == (28, 28)
    flipped = [dict(r, fell=not r["fell"]) for r in rows]
    assert completion_table(flipped, paper)[1:] == (0, 28)
    # csv text, an error row (did not complete) and a missing cell
    text = [{**r, "fell": str(r["fell"])} for r in rows]
    text[0] = {"controller": text[0]["controller"], "terrain": text[0]["terrain"], "fell": "",
               "error": "SolverError: the simulation diverged"}
    table, agree, compared = completion_table(text[:-1], paper)
    first_done = done[(rows[0]["controller"], rows[0]["terrain"])]
    assert compared == 27 and agree == 27 - first_done
    assert "diverged" in table
    with pytest.raises(InvalidInputError):
        completion_table([{"controller": "pid", "terrain": "rough", "fell": False}], paper)
    assert set(PLANAR) == {t for _, t in done}
