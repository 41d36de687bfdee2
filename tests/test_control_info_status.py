"""ControlInfo's contract: a step's status says which model its torques solve (REGULARIZED for
M + eps I's), and when it is not SOLVED, ``fallback`` names what produced the torques (e.g.
lcp-noslip's consistency QP of eqs. 46-51, ``"min-deviation"``, or contact-free inverse
dynamics), never None beside a failed LCP's answer."""
import numpy as np

from idyn import Status, controllers
from test_fuzz_controllers import random_state, robot


def test_a_failed_lcp_names_the_path_that_made_tau():
    model = robot("links")[0]
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


def test_a_regularised_stage_one_is_reported_as_regularised():
    """qp-coulomb's Stage I taking regularised Lemke's answer (of M + eps I) reports the step as
    REGULARIZED, not SOLVED (with the plausibility bound off: those answers also exceed it)."""
    model = robot("a1")[0]
    ctrl = controllers.make("qp-coulomb", model, plausibility_margin=None)
    seen = 0
    for seed in range(120):
        state, desired, contacts = random_state("a1", seed, seed % 17)
        ctrl.reset()
        out = ctrl.compute(state, desired, contacts)
        if out.info.details.get("stage1_status") == "regularized" and out.info.fallback is None:
            seen += 1
            assert out.info.status is Status.REGULARIZED, (seed, out.info)
    assert seen, "no regularised Stage I among the seeds: the test checks nothing"
