"""Robot descriptions (URDF assets) and testbeds.

``robots.quadruped_urdf()`` and ``robots.quadruped()`` give the LINKS quadruped of the paper (or
another known or public quadruped by name, or one from a URDF path); ``robots.from_urdf()`` builds
any quadruped from its unedited URDF; the PyBullet testbeds live in :mod:`idyn.robots.pybullet`, which is
imported only when used so that planners and controllers never pull in a simulator.
"""
from .manipulator import Manipulator, manipulator, manipulator_urdf
from .quadruped import (KNOWN as QUADRUPEDS, PUBLIC as PUBLIC_QUADRUPEDS, Quadruped, QuadrupedFacts, build,
                        from_urdf, quadruped, quadruped_urdf)

__all__ = ["QUADRUPEDS", "PUBLIC_QUADRUPEDS", "Quadruped", "QuadrupedFacts", "build", "from_urdf", "quadruped",
           "quadruped_urdf",
           "Manipulator", "manipulator", "manipulator_urdf"]
