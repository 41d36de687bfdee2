"""idyn.jit: kernels loaded from numba's on-disk cache before their first call (load_cached)."""
import os
import subprocess
import sys
from pathlib import Path

from idyn.jit import cached_jit, load_cached  # noqa: F401 (load_cached: used by the child processes)


@cached_jit
def twice(x):
    """A kernel of this module (its cache lands in tests/__pycache__)."""
    return 2.0 * x


def _run(code: str) -> str:
    """``code`` in a fresh process that imports this module (nothing of it loaded yet)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", f"import test_jit as t\n{code}"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_load_cached_loads_the_cached_specialisations_before_any_call():
    _run("t.twice(1.0)")                       # compiled once and cached on disk
    out = _run("print(t.load_cached(('test_jit',)), t.twice.signatures, t.load_cached(('test_jit',)))")
    count, rest = out.split(" ", 1)
    assert int(count) >= 1                     # every cached specialisation, loaded ...
    assert "float64" in rest                   # ... among them twice(float64), never called here
    assert rest.endswith(" 0")                 # each kernel visited once per process


def test_load_cached_leaves_other_packages_alone():
    out = _run("print(t.load_cached(('no_such_package',)), t.twice.signatures)")
    assert out == "0 []"
