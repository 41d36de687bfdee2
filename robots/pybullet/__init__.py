"""PyBullet testbeds (docs/conventions.md): the quadruped on three terrains and the grasping manipulator.

Importing this package imports PyBullet; ``robots`` itself does not, so planners and
controllers never pull in a simulator.
"""
from .manipulator import ManipulatorTestbed
from .quadruped import QuadrupedTestbed
from .terrain import TERRAINS, Terrain, rough_heightmap

__all__ = ["ManipulatorTestbed", "QuadrupedTestbed", "TERRAINS", "Terrain", "rough_heightmap"]
