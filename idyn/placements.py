"""Live views of the translations of pinocchio's frame placements.

pinocchio's Python binding returns ``data.oMf[f].translation`` by reference: an array over the
placement's own memory, which every pass that updates the frame placements
(``framesForwardKinematics``, ``updateFramePlacements``) overwrites in place. Kept once, such
views let a compiled loop read a pass's points (the planner's feet, the testbed's foot spheres)
without a Python call per frame. Used by :mod:`idyn.planners.leg_kinematics` and
:mod:`idyn.robots.pybullet.quadruped`.
"""
from __future__ import annotations

import numpy as np

from .errors import IdynError


def frame_translations(data, frames) -> tuple[np.ndarray, ...]:
    """The translations of ``data.oMf[f]`` for the frame indices ``frames``, as the live arrays
    pinocchio returns (module docstring); the views do not keep ``data`` alive, their owner
    must. Raises :class:`~idyn.errors.IdynError` if this pinocchio returns copies instead (two
    reads of one frame at different addresses): the views would then never change."""
    views = tuple(data.oMf[int(f)].translation for f in frames)
    for f, view in zip(frames, views):
        if view.__array_interface__["data"][0] != data.oMf[int(f)].translation.__array_interface__["data"][0]:
            raise IdynError("this pinocchio returns frame translations by copy, not by reference")
    return views
