"""idyn.placements.frame_translations: live views of pinocchio's frame translations, which each
pass that updates the frame placements overwrites."""
import numpy as np
import pinocchio as pin
import pytest

from idyn import robots
from idyn.errors import IdynError
from idyn.placements import frame_translations


def test_views_follow_every_pass():
    model = robots.quadruped("a1").model.pinocchio_model
    data = model.createData()
    frames = [f for f in range(model.nframes) if model.frames[f].parentJoint > 1][:6]
    views = frame_translations(data, frames)
    for _ in range(5):
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        pin.framesForwardKinematics(model, data, q)
        fresh = model.createData()
        pin.framesForwardKinematics(model, fresh, q)
        for f, view in zip(frames, views):
            np.testing.assert_array_equal(view, fresh.oMf[f].translation)   # the same pass, same numbers


def test_copies_are_refused():
    class Copying:                      # a binding that hands out copies
        class _Placement:
            @property
            def translation(self):
                return np.zeros(3)
        oMf = [_Placement()]
    with pytest.raises(IdynError):
        frame_translations(Copying(), [0])
