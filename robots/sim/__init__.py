"""idyn.sim testbeds: the PyBullet testbeds' interface on our own simulator (``--backend idyn``).

The simulator's contact models match the controllers' (paper Sec. 8.2), so predicted contact
forces can be verified exactly; see :mod:`idyn.sim`.
"""
from .base import SimTestbed
from .manipulator import ManipulatorTestbed
from .quadruped import QuadrupedTestbed

__all__ = ["ManipulatorTestbed", "QuadrupedTestbed", "SimTestbed"]
