"""Lite 6 kinematics: the embedded joint table against the shared URDF and hand-worked poses."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pointlab.sim_mock.kinematics import (
    LITE6_JOINTS,
    Lite6Kinematics,
    lite6_urdf_text,
    matrix_to_rpy_deg,
    rpy_deg_to_matrix,
)

JOINT_VECTORS = [
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [0.3, -0.5, 1.2, 0.4, -0.7, 1.0],
    [-1.1, 0.8, 2.5, -2.0, 1.5, -3.0],
    [2.9, 1.9, 0.1, 3.1, -2.0, 0.5],
    [-0.2, 0.35, 1.1, 0.0, 0.75, 0.0],
]


@pytest.fixture(scope="module")
def kin() -> Lite6Kinematics:
    return Lite6Kinematics()


def _attr(e: ET.Element, child: str, name: str) -> str:
    """Attribute ``name`` of ``e``'s ``child`` element (both must be there)."""
    c = e.find(child)
    value = None if c is None else c.get(name)
    assert value is not None, (child, name)
    return value


def _urdf_fk(root: ET.Element, q: list[float], last_link: str) -> np.ndarray:
    """FK straight from URDF XML, written here without ikpy: walk the joints from link_base."""
    joints = {_attr(j, "parent", "link"): j for j in root.findall("joint")}
    by_child = {_attr(j, "child", "link"): j for j in root.findall("joint")}
    chain = []
    link = last_link
    while link in by_child:
        chain.append(by_child[link])
        link = _attr(by_child[link], "parent", "link")
    assert link == "link_base" and joints  # the chain starts at the base
    T = np.eye(4)
    angles = iter(q)
    for j in reversed(chain):
        xyz = [float(v) for v in _attr(j, "origin", "xyz").split()]
        rpy = [float(v) for v in _attr(j, "origin", "rpy").split()]
        A = np.eye(4)
        A[:3, :3] = Rotation.from_euler("xyz", rpy).as_matrix()  # URDF: fixed-axis roll, pitch, yaw
        A[:3, 3] = xyz
        T = T @ A
        if j.get("type") == "revolute":
            axis = [float(v) for v in _attr(j, "axis", "xyz").split()]
            R = np.eye(4)
            R[:3, :3] = Rotation.from_rotvec(np.asarray(axis) * next(angles)).as_matrix()
            T = T @ R
    return T


def test_zero_joints_flange_matches_shared_readme(kin):
    # shared/data/README.md: at zero joints the flange is at (87, 0, 153.6) mm with roll 180 degrees.
    T = kin.fk(np.zeros(6), tool=None)
    assert np.allclose(T[:3, 3], [0.087, 0.0, 0.1536], atol=1e-4)
    assert np.allclose(T[:3, :3], np.diag([1.0, -1.0, -1.0]), atol=1e-4)  # Rx(180): tool z points down
    rpy = matrix_to_rpy_deg(T[:3, :3])
    assert abs(abs(rpy[0]) - 180.0) < 0.01 and abs(rpy[1]) < 0.01 and abs(rpy[2]) < 0.01


def test_tool_frames_sit_below_the_flange_at_zero(kin):
    # the flange z axis points down at zero joints, so each TCP is its offset below 153.6 mm
    assert np.allclose(kin.fk(np.zeros(6), "lite_gripper")[:3, 3], [0.087, 0.0, 0.1536 - 0.0836], atol=1e-4)
    assert np.allclose(kin.fk(np.zeros(6), "lite_vacuum")[:3, 3], [0.087, 0.0, 0.1536 - 0.061], atol=1e-4)


def test_joint1_turns_the_flange_about_the_base_axis(kin):
    T = kin.fk([math.pi / 2, 0, 0, 0, 0, 0], tool=None)
    assert np.allclose(T[:3, 3], [0.0, 0.087, 0.1536], atol=1e-4)


@pytest.mark.parametrize("tool", [None, "lite_gripper", "lite_vacuum"])
def test_embedded_model_matches_the_shared_urdf(shared_data, kin, tool):
    path = shared_data / "robots" / "lite6_kinematics.urdf"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    root = ET.parse(path).getroot()
    last = {None: "link6", "lite_gripper": "link_tcp_gripper", "lite_vacuum": "link_tcp_vacuum"}[tool]
    from_file = Lite6Kinematics(str(path))
    for q in JOINT_VECTORS:
        expected = _urdf_fk(root, q, last)
        assert np.allclose(kin.fk(q, tool), expected, atol=1e-9), q
        assert np.allclose(from_file.fk(q, tool), expected, atol=1e-9), q
    limits = {
        j.get("name"): (float(_attr(j, "limit", "lower")), float(_attr(j, "limit", "upper")))
        for j in root.findall("joint")
        if j.get("type") == "revolute"
    }
    assert [limits[j.name] for j in LITE6_JOINTS] == [tuple(r) for r in kin.joint_limits_rad.tolist()]


def test_joint_limits_are_the_lite6_ranges(kin):
    # UFACTORY Lite 6 user manual, joint ranges: J2 +-150 deg, J3 -3.5..300 deg, J5 +-124 deg
    lim = np.degrees(kin.joint_limits_rad)
    assert np.allclose(lim[1], [-150, 150], atol=0.01)
    assert np.allclose(lim[2], [-3.5, 300], atol=0.01)
    assert np.allclose(lim[4], [-124, 124], atol=0.01)


@pytest.mark.parametrize("position", [(0.25, 0.0, 0.15), (0.30, 0.10, 0.03), (0.36, -0.20, 0.05), (0.20, 0.25, 0.30)])
def test_ik_round_trip_tool_down(kin, position):
    q = kin.ik(position, (180, 0, 0), tool="lite_gripper")
    assert q is not None and kin.within_limits(q)
    T = kin.fk(q, "lite_gripper")
    assert np.linalg.norm(T[:3, 3] - position) <= 0.001
    # tool pointing straight down: the TCP z axis is -z of the base
    assert np.dot(T[:3, 2], [0, 0, -1]) > math.cos(math.radians(1.0))


def test_ik_round_trip_from_joint_vectors(kin):
    for q0 in JOINT_VECTORS[1:]:
        T = kin.fk(q0, "lite_vacuum")
        rpy = matrix_to_rpy_deg(T[:3, :3])
        q = kin.ik(T[:3, 3], rpy, seed_rad=np.asarray(q0) + 0.05, tool="lite_vacuum")
        assert q is not None
        pos_err, rot_err = kin.pose_error(q, T[:3, 3], rpy, "lite_vacuum")
        assert pos_err <= 0.001 and rot_err <= 1.0


def test_ik_refuses_beyond_reach(kin):
    assert kin.ik((0.50, 0.0, 0.10), (180, 0, 0)) is None  # 0.5 m from the axis, reach is ~0.44 m
    assert kin.ik((0.0, 0.46, 0.05), (180, 0, 0)) is None


def test_ik_refuses_what_only_a_joint_limit_forbids(tmp_path):
    # Same robot with joint1 limited to +-30 deg: a target 63 deg off the x axis needs joint1 ~63 deg.
    text = lite6_urdf_text("lite_gripper").replace(
        'lower="-6.283185" upper="6.283185"', 'lower="-0.5236" upper="0.5236"', 1
    )
    path = tmp_path / "narrow.urdf"
    path.write_text(text)
    narrow = Lite6Kinematics(str(path))
    target = (0.12, 0.24, 0.05)
    assert Lite6Kinematics().ik(target) is not None
    assert narrow.ik(target) is None
    assert narrow.ik((0.30, 0.05, 0.05)) is not None


def test_a_urdf_file_without_the_tool_frame_is_refused(tmp_path):
    path = tmp_path / "flange_only.urdf"
    path.write_text(lite6_urdf_text(None))
    k = Lite6Kinematics(str(path))
    assert np.allclose(k.fk(np.zeros(6))[:3, 3], [0.087, 0.0, 0.1536], atol=1e-4)
    with pytest.raises(ValueError, match="tcp_gripper"):
        k.fk(np.zeros(6), "lite_gripper")


def test_rpy_convention_is_xarm_fixed_axis():
    # (180, 0, 0): tool z down; (180, 0, 90): then yawed so the tool x axis points along base +y
    R = rpy_deg_to_matrix((180, 0, 90))
    assert np.allclose(R @ [0, 0, 1], [0, 0, -1], atol=1e-12)
    assert np.allclose(R @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    assert np.allclose(matrix_to_rpy_deg(rpy_deg_to_matrix((-180, 0, 0))), [180, 0, 0], atol=1e-9)


def test_bad_input_raises_value_error(kin):
    with pytest.raises(ValueError):
        kin.fk([0, 0, 0])
    with pytest.raises(ValueError):
        kin.ik((0.3, float("nan"), 0.1))
    with pytest.raises(ValueError):
        kin.fk(np.zeros(6), tool="hand")
