"""MuJoCo testbeds (``--backend mujoco``): the quadruped (rigid and compliant plane,
rough heightfield) and the manipulator.

The interface and conventions are those of :class:`idyn.robots.testbed.Testbed`, as for
:mod:`idyn.robots.pybullet` and :mod:`idyn.robots.sim`. Importing this package imports MuJoCo (PyPI
``mujoco``, in the ``mujoco`` and ``test`` extras); ``robots`` itself does not.
"""
from .manipulator import ManipulatorTestbed
from .quadruped import QuadrupedTestbed

__all__ = ["ManipulatorTestbed", "QuadrupedTestbed"]
