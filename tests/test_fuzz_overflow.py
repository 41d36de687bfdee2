"""A finite state whose dynamics overflow never crashes a controller.

A joint velocity of 1e160 is finite, so it passes the input checks, but its square overflows in
h(q, v).  Such a state once killed the process (SIGSEGV) in lcp-noslip, lcp-coulomb and
qp-coulomb: the non-finite LCP reached the compiled Lemke loop.  Each robot's run happens in a
child process, so a crash fails the test instead of ending the test session.  Every
controller must return finite torques with a status that is not SOLVED (a model-based
controller cannot have solved a step whose dynamics are not finite), or raise an idyn error.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys
import numpy as np
from idyn import controllers
from idyn.experiments.benchmarks.controllers import standing_problem
from idyn.errors import IdynError
from idyn.state import RobotState
p = standing_problem(sys.argv[1], 4)
model = p.model
results = []
for name in controllers.available():
    ctrl = controllers.make(name, model)
    for index in (0, 3, 6, model.nv - 1):        # base linear, base angular, first and last joint
        for value in (1e160, -1e160):
            v = p.state.v.copy()
            v[index] = value
            try:
                out = ctrl.compute(RobotState(p.state.q, v), p.desired, p.contacts)
            except IdynError as exc:
                results.append([name, index, "error " + type(exc).__name__, True])
                continue
            results.append([name, index, out.info.status.value, bool(np.isfinite(out.tau).all()
                                                                      and np.isfinite(out.contact_forces).all())])
print(json.dumps(results))
"""


@pytest.mark.parametrize("robot", ["links", "a1"])
def test_overflowing_velocity_returns_cleanly_on_every_controller(robot):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    proc = subprocess.run([sys.executable, "-c", CHILD, robot], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, f"the child process died (return code {proc.returncode}): {proc.stderr[-2000:]}"
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results
    for name, index, status, finite in results:
        assert finite, (name, index, status)
        if name != "pid":           # PID uses no model: its torque is the (finite) feedback
            assert status != "solved", (name, index)
