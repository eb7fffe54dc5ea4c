"""The Lite 6 model of robot/lite6_model.py: per-link FK against the facts of the released model and
against ikpy (an independent implementation, through the sim's kinematics), and its URDF."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pointlab.robot.lite6_model import LITE6_JOINTS, link_transforms, robot_description


def _chain(q):
    T = np.eye(4)
    for _p, _c, M in link_transforms(q):
        T = T @ M
    return T


def test_zero_joints_put_the_flange_where_ufactory_says():
    # xarm_ros2's Lite 6 at zero joints: flange (link6) at (87, 0, 153.6) mm, roll 180 degrees
    T = _chain(np.zeros(6))
    assert T[:3, 3] == pytest.approx([0.087, 0.0, 0.1536], abs=1e-4)
    assert T[:3, :3] == pytest.approx(np.diag([1.0, -1.0, -1.0]), abs=1e-4)  # tool z pointing down


def test_the_chain_of_link_transforms_is_ikpys_forward_kinematics():
    from pointlab.sim_mock.kinematics import Lite6Kinematics

    kin = Lite6Kinematics()
    rng = np.random.default_rng(3)
    for q in rng.uniform(-2.0, 2.0, size=(20, 6)):
        assert _chain(q) == pytest.approx(kin.fk(q), abs=1e-9)
    links = link_transforms(np.zeros(6))
    assert [(p, c) for p, c, _ in links] == [(j.parent, j.child) for j in LITE6_JOINTS]


def test_bad_joints_are_refused():
    for bad in ([0.0] * 5, [0.0, 0.0, np.nan, 0.0, 0.0, 0.0]):
        with pytest.raises(ValueError):
            link_transforms(bad)


def test_the_description_is_a_urdf_with_the_meshes_xarm_ros2_installs():
    root = ET.fromstring(robot_description("lite_gripper"))
    links = {link.get("name"): link for link in root.findall("link")}
    assert {"link_base", "link1", "link6", "link_tcp_gripper"} <= set(links)
    meshes = [m.get("filename") for m in root.iter("mesh")]
    assert "package://xarm_description/meshes/lite6/visual/link3.stl" in meshes
    assert "package://xarm_description/meshes/lite6/visual/gripper_lite.stl" in meshes
    tcp = [j for j in root.findall("joint") if j.get("name") == "tcp_gripper"][0]
    assert tcp.find("origin").get("xyz") == "0 0 0.0836"
    with pytest.raises(ValueError):
        robot_description("hand")
