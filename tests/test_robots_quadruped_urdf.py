"""Quadruped URDF paths and the PyBullet-safe URDF copy (links without an inertial)."""
import xml.etree.ElementTree as ET

import pytest

import robots
from idyn.errors import InvalidInputError
from robots.pybullet.base import pybullet_urdf


@pytest.mark.parametrize("name", ["links", "a1"])
def test_quadruped_urdf_paths(name):
    assert robots.quadruped_urdf(name).is_file()
    with pytest.raises(InvalidInputError):
        robots.quadruped_urdf("no-such-robot")


def test_bare_links_get_zero_inertial_for_pybullet():
    """URDF (and pinocchio) give a link without <inertial> zero mass; PyBullet would give 1 kg."""
    src = robots.quadruped_urdf("links")
    out = pybullet_urdf(src)
    assert pybullet_urdf(src) == out  # written once per process
    assert out != src
    links = ET.parse(str(out)).getroot().findall("link")
    feet = [link for link in links if link.get("name").endswith("_FOOT")]
    assert feet and all(float(f.find("inertial/mass").get("value")) == 0.0 for f in feet)
    a1 = robots.quadruped_urdf("a1")
    assert pybullet_urdf(a1) == a1  # every a1 link has an inertial: used as it is
