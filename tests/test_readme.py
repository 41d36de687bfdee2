"""The README's "Using it" code blocks run as printed, in order, in one namespace (the MuJoCo
loop of "Use it in your own loop" runs in test_mujoco_testbed.py)."""
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_using_it_blocks_run_as_printed():
    text = README.read_text()
    section = text[text.index("## Using it"):text.index("## Use it in your own loop")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 2
    scope: dict = {}
    for code in blocks:
        exec(compile(code, "README.md", "exec"), scope)
    # what the first block promises: M(q) symmetric positive definite, one Jacobian row per contact
    M, J = scope["M"], scope["J"]
    assert np.allclose(M, M.T) and np.all(np.linalg.eigvalsh(M) > 0)
    assert J.N.shape == (len(scope["contacts"]), scope["model"].nv)
    # the public quadrupeds load unedited, Desired.q has one angle per actuated joint
    assert scope["positions"].shape == (scope["aliengo"].model.na,)
