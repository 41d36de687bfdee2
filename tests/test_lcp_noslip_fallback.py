"""ControlInfo's contract on lcp-noslip: when the step's status is not SOLVED, ``fallback``
names what produced the torques (here the consistency QP of eqs. 46-51, ``"min-deviation"``,
or contact-free inverse dynamics), never None beside a failed LCP's answer."""
import numpy as np

from idyn import Status, controllers
from test_fuzz_controllers import random_state, robot


def test_a_failed_lcp_names_the_path_that_made_tau():
    model = robot("links").model
    ctrl = controllers.make("lcp-noslip", model)
    failed = 0
    for seed in range(120):
        state, desired, contacts = random_state("links", seed, seed % 17)
        ctrl.reset()
        out = ctrl.compute(state, desired, contacts)
        assert np.all(np.isfinite(out.tau))
        if out.info.status is not Status.SOLVED:
            failed += 1
            assert out.info.fallback in ("min-deviation", "no-contact-id"), (seed, out.info)
    assert failed, "no failing state among the seeds: the test checks nothing"
