"""lcp-noslip's release loop reports the contact set its answer was solved for.

The release rule re-holds a released contact that the next answer loads, so the loop over
released sets is not monotone and can run out of its m + 1 passes without repeating a set. The
answer returned must then be the last one solved, labelled with the set it was solved for, not
with the next, unsolved set (found by review: a contact labelled released carried friction)."""
import itertools

import numpy as np

from idyn import controllers
import idyn.controllers.lcp_noslip as lcp_noslip
from idyn.experiments.benchmarks.controllers import standing_problem


def test_an_exhausted_release_loop_labels_the_answer_with_the_set_it_solved(monkeypatch):
    p = standing_problem("links", 4, 1.0, rng=np.random.default_rng(0), noise=1e-3)
    ctrl = controllers.make("lcp-noslip", p.model)
    solved_for = []
    real_solve = lcp_noslip.LCPNoSlip._lcp_with_rows

    def spy(self, step, contacts, keys, info):
        solved_for.append(np.asarray(contacts).copy())
        return real_solve(self, step, contacts, keys, info)

    fresh = (np.array(bits, dtype=bool) for bits in itertools.product((False, True), repeat=4)
             if any(bits))                                  # never the start set (none sliding)

    def never_repeats(fN, w, gap_speed, opening, tol, sliding, released, update, unloaded_open):
        update[:] = next(fresh)
        unloaded_open[:] = False
        return True

    monkeypatch.setattr(lcp_noslip.LCPNoSlip, "_lcp_with_rows", spy)
    monkeypatch.setattr(lcp_noslip.kernel, "release_update", never_repeats)
    out = ctrl.compute(p.state, p.desired, p.contacts)

    assert len(solved_for) == 5                               # m + 1 passes, none repeating
    held = np.flatnonzero(out.info.details["held"])
    np.testing.assert_array_equal(held, solved_for[-1])       # the set the kept answer solved
    assert out.info.details["slip_released"] == 4 - held.size and out.info.details["release_cycle"]
    assert np.isfinite(out.tau).all()
