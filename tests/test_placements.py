"""idyn.placements: live rows of pinocchio's records, and placed points equal to pinocchio's.

Pinocchio-vs-kernel comparisons allow a few ulps of the operands' scale, since another Eigen
build may vectorise ``R o`` differently; on this project's pip wheel they are bit-identical (the
closed-loop trace checks depend on that and prove it there).
"""
import numpy as np
import pinocchio as pin
import pytest

import robots
from idyn.errors import IdynError
from idyn.placements import placed_points, record_rows

EPS = np.finfo(float).eps


def test_record_rows_are_live_views_of_the_placements():
    """The (nframes, 12) rows of data.oMf are each frame's rotation (column-major) and
    translation, and follow a pass without being rebuilt."""
    model = robots.quadruped("links").model.pinocchio_model
    data = model.createData()
    rows = record_rows(data.oMf, "rotation")
    assert rows.shape == (model.nframes, 12)
    pin.framesForwardKinematics(model, data, pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq)))
    for f in range(model.nframes):
        np.testing.assert_array_equal(rows[f, :9], data.oMf[f].rotation.ravel(order="F"))
        np.testing.assert_array_equal(rows[f, 9:], data.oMf[f].translation)


def test_record_rows_refuses_uneven_records():
    """Records not evenly spaced in memory (here at 0, 3 and 9 doubles of one buffer) are refused."""
    class Record:
        def __init__(self, field):
            self.field = field
    memory = np.zeros(12)
    with pytest.raises(IdynError):
        record_rows([Record(memory[i:i + 3]) for i in (0, 3, 9)], "field")


def test_placed_points_are_pinocchios_act():
    """placed_points(rows, i, o) = M_i.act(o) for random placements and offsets."""
    rng = np.random.default_rng(5)
    Ms = [pin.SE3(pin.Quaternion(*rng.normal(size=4)).normalized().toRotationMatrix(), rng.normal(size=3))
          for _ in range(6)]
    rows = np.array([np.concatenate([M.rotation.ravel(order="F"), M.translation]) for M in Ms])
    for _ in range(2000):
        indices = rng.integers(0, len(Ms), 4)
        offsets = rng.normal(size=(4, 3)) * rng.choice([1e-3, 1.0, 1e3])
        got = np.empty((4, 3))
        placed_points(rows, indices, offsets, got)
        want = np.array([Ms[i].act(o) for i, o in zip(indices, offsets)])
        scale = np.abs(offsets).max() + np.abs(rows[:, 9:]).max()
        np.testing.assert_allclose(got, want, rtol=0, atol=4 * EPS * scale)
