"""idyn.jit and the warm-ups: nothing is compiled or loaded inside a control loop."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from idyn import controllers
from idyn.jit import cached_jit, preparing, specialisations


@cached_jit
def twice(x):
    """A kernel of this module (its cache lands in NUMBA_CACHE_DIR)."""
    return 2.0 * x


def _run(code: str, cache: Path) -> str:
    """``code`` in a fresh process that imports this module, with numba's cache in ``cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", f"import test_jit as t\n{code}"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_preparing_tells_compiled_from_loaded(tmp_path):
    code = ("with t.preparing('twice') as p:\n    t.twice(1.0)\n"
            "print(p.compiled, p.loaded, t.specialisations() >= 1)\nprint(p.line())")
    first = _run(code, tmp_path).splitlines()
    assert first[0] == "1 0 True" and first[1].startswith("idyn: compiled 1 kernels for twice")
    again = _run(code, tmp_path).splitlines()      # a later process: the on-disk cache
    assert again[0] == "0 1 True" and "1 kernels loaded from cache" in again[1]


_STEPS_AFTER_WARM_UP = """
import numpy as np
from idyn import controllers
from idyn.jit import specialisations
from idyn.experiments.benchmarks.controllers import standing_problem
p = standing_problem("a1", 4, 0.6, rng=np.random.default_rng(3), noise=1e-3)
ctrl = controllers.make({name!r}, p.model)
before = specialisations()
for drop in (0.0, -0.4):         # standing, then the base dropping onto its feet (touchdown impact)
    v = p.state.v.copy()
    v[2] = drop
    state = type(p.state)(p.state.q, v, 0.0)
    if hasattr(ctrl, "observe_contact_forces"):
        ctrl.observe_contact_forces(p.contacts, np.tile([10.0, 0.0, 0.0], (len(p.contacts), 1)))
    for contacts in (p.contacts, p.contacts[:2], []):
        assert np.all(np.isfinite(ctrl.compute(state, p.desired, contacts).tau))
print(specialisations() - before)
"""


@pytest.mark.parametrize("name", controllers.available())
def test_a_built_controller_meets_no_new_kernel_in_its_steps(name):
    """``controllers.make`` warms the controller up on synthetic states of its model: steps on
    another state, other contact sets and a touchdown impact then add no compiled specialisation
    (none is compiled or loaded inside a loop). In a fresh process, so that no other test's
    kernels are already loaded."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _STEPS_AFTER_WARM_UP.format(name=name)], env=env, check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == "0"


def test_scenario_runs_compile_nothing_in_their_loop(tmp_path):
    from idyn.experiments.runner import run_scenario
    from idyn.experiments.scenario import terrain_scenario
    metrics = run_scenario(terrain_scenario("rigid-high", controller="qp-coulomb", duration=0.8))
    assert metrics["kernels_compiled_in_loop"] == 0


_FUZZ_STATES_AFTER_WARM_UP = """
import numpy as np
import test_fuzz_controllers as F
from idyn import controllers
from idyn.jit import specialisations
ctrl = controllers.make({name!r}, F.robot({robot!r})[0])
rng = np.random.default_rng(0)
draws = [(int(rng.integers(2 ** 32)), int(rng.integers(17))) for _ in range({states})]
before, fallbacks = specialisations(), set()
for seed, m in draws:
    state, desired, contacts = F.random_state({robot!r}, seed, m)
    fallbacks.add(ctrl.compute(state, desired, contacts).info.fallback)
print(specialisations() - before, sorted(map(str, fallbacks)))
"""


@pytest.mark.parametrize("robot, states", [("manipulator", 40), ("a1", 30)])
@pytest.mark.parametrize("name", controllers.available())
def test_fuzz_states_meet_no_new_kernel_after_warm_up(name, robot, states):
    """The data-dependent paths: random physical states with 0-16 contacts (the fuzzer's) reach
    lcp-coulomb's warm-started Lemke, its complementarity-free fallback and a regularised Lemke
    (manipulator), and qp-coulomb's separation price (a1), which the warm-up's ordinary cases
    once missed (a 3.7 s step compiling ``basis_checked`` on a cold cache).  The controller,
    built alone for one robot in a fresh process, as a user builds it, meets no kernel it has
    not compiled or loaded."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    code = _FUZZ_STATES_AFTER_WARM_UP.format(name=name, robot=robot, states=states)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout.strip()
    count, fallbacks = out.split(" ", 1)
    if (name, robot) == ("lcp-coulomb", "manipulator"):
        assert "qp-coulomb-1stage" in fallbacks, fallbacks     # its fallback path was exercised
    assert count == "0", out
