"""Quadruped URDF paths and the PyBullet-safe URDF copy (links without an inertial)."""
import xml.etree.ElementTree as ET

import pytest

from idyn import robots
from idyn.errors import InvalidInputError
from idyn.robots.pybullet.base import pybullet_urdf


@pytest.mark.parametrize("name", ["links", "a1"])
def test_quadruped_urdf_paths(name):
    assert robots.quadruped_urdf(name).is_file()
    with pytest.raises(InvalidInputError):
        robots.quadruped_urdf("no-such-robot")


def test_bare_links_get_zero_inertial_for_pybullet(tmp_path):
    """URDF (and pinocchio) give a link without <inertial> zero mass; PyBullet would give 1 kg."""
    bare = tmp_path / "bare.urdf"
    bare.write_text("""<robot name="bare">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="fix" type="fixed"><parent link="base"/><child link="tip"/></joint>
  <link name="tip"><collision><geometry><sphere radius="0.01"/></geometry></collision></link>
</robot>""")
    out = pybullet_urdf(bare)
    assert pybullet_urdf(bare) == out  # written once per process
    assert out != bare
    tip = [link for link in ET.parse(str(out)).getroot().findall("link") if link.get("name") == "tip"]
    assert float(tip[0].find("inertial/mass").get("value")) == 0.0
    links = robots.quadruped_urdf("links")
    assert pybullet_urdf(links) == links  # LINKS declares its massless feet explicitly
    a1 = robots.quadruped_urdf("a1")
    assert pybullet_urdf(a1) == a1  # every a1 link has an inertial: used as it is


def test_nominal_stance_facts_place_the_feet_by_ik():
    """A robot described by its nominal stance (SPEC section 4's LINKS numbers) stands with its
    feet at (+-L/2, +-W/2) on the ground and the base at the given height."""
    import numpy as np

    from idyn.robots.quadruped import KNOWN, QuadrupedFacts, build

    links = KNOWN["links"]
    quad = build(QuadrupedFacts(links.urdf, links.leg_joint_guess, base_height=0.161853,
                                stance_length=0.309926, stance_width=0.1344496), "links-spec")
    assert quad.q_stand[2] == pytest.approx(0.161853)
    feet = quad.foot_centres(quad.q_stand)
    np.testing.assert_allclose(np.abs(feet[:, 0]), 0.309926 / 2, atol=1e-8)
    np.testing.assert_allclose(np.abs(feet[:, 1]), 0.1344496 / 2, atol=1e-8)
    np.testing.assert_allclose(feet[:, 2], quad.foot_radius, atol=1e-8)
    with pytest.raises(InvalidInputError, match="go together"):
        build(QuadrupedFacts(links.urdf, links.leg_joint_guess, stance_length=0.3), "partial")
