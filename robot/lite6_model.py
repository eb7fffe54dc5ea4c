"""The UFACTORY Lite 6 (xArm 6 Lite) model: its joint table, tool frames, per-link forward kinematics and
the ``robot_description`` a 3D viewer draws it from.

The joint table is the kinematic model of ``xarm_description/urdf/lite6/lite6.urdf.xacro`` from
xArm-Developer/xarm_ros2 (Copyright (c) 2018, UFACTORY Inc., BSD-3-Clause). At zero joints the flange
(``link6``) is at (0.087, 0, 0.1536) m in ``link_base`` with roll 180 degrees (tool pointing down).
Units: metres and radians.

``link_transforms`` is what robot_state_publisher computes from ``/joint_states`` (REP 105 / tf2:
each joint's transform is its URDF origin ``T(xyz) @ R(rpy, fixed axes x-y-z)`` times a rotation of
the joint angle about its axis), written here with numpy so that a recording can carry ``/tf``
without a ROS install. ``robot_description`` is the URDF with the visual meshes named as xarm_ros2
installs them (``package://xarm_description/meshes/lite6/visual/<link>.stl``): a viewer that knows
the package (Foxglove with ``ROS_PACKAGE_PATH``, RViz on a machine with xarm_ros2) draws the arm;
any other shows the frames only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = [
    "JointSpec",
    "LITE6_JOINTS",
    "LITE6_TOOL_OFFSETS_M",
    "TOOL_JOINTS",
    "LINK_MESHES",
    "joint_transform",
    "link_transforms",
    "robot_description",
    "MESH_URI",
]


@dataclass(frozen=True)
class JointSpec:
    """One URDF joint: origin (metres, fixed-axis rpy radians), axis, limits (radians)."""

    name: str
    parent: str
    child: str
    xyz_m: tuple[float, float, float]
    rpy_rad: tuple[float, float, float]
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    lower_rad: float = 0.0
    upper_rad: float = 0.0


# xarm_ros2 xarm_description, lite6 (BSD-3-Clause, UFACTORY Inc.): the 6 revolute joints.
LITE6_JOINTS: tuple[JointSpec, ...] = (
    JointSpec(
        "joint1", "link_base", "link1", (0.0, 0.0, 0.2435), (0.0, 0.0, 0.0), lower_rad=-6.283185, upper_rad=6.283185
    ),
    JointSpec(
        "joint2", "link1", "link2", (0.0, 0.0, 0.0), (1.5708, -1.5708, 3.1416), lower_rad=-2.617990, upper_rad=2.617990
    ),
    JointSpec(
        "joint3", "link2", "link3", (0.2002, 0.0, 0.0), (-3.1416, 0.0, 1.5708), lower_rad=-0.061087, upper_rad=5.235988
    ),
    JointSpec(
        "joint4", "link3", "link4", (0.087, -0.22761, 0.0), (1.5708, 0.0, 0.0), lower_rad=-6.283185, upper_rad=6.283185
    ),
    JointSpec("joint5", "link4", "link5", (0.0, 0.0, 0.0), (1.5708, 0.0, 0.0), lower_rad=-2.164200, upper_rad=2.164200),
    JointSpec(
        "joint6", "link5", "link6", (0.0, 0.0625, 0.0), (-1.5708, 0.0, 0.0), lower_rad=-6.283185, upper_rad=6.283185
    ),
)

# Tool frames: TCP distance past the flange (link6) along its +z (UFACTORY's official model).
LITE6_TOOL_OFFSETS_M: dict[str, float] = {"lite_gripper": 0.0836, "lite_vacuum": 0.061}
# tool -> (fixed joint, TCP link) as xarm_ros2 names them
TOOL_JOINTS: dict[str, tuple[str, str]] = {
    "lite_gripper": ("tcp_gripper", "link_tcp_gripper"),
    "lite_vacuum": ("tcp_vacuum", "link_tcp_vacuum"),
}
# link -> visual mesh file stem (xarm_description/meshes/lite6/visual/); tools are drawn on link6
LINK_MESHES: dict[str, str] = {"link_base": "base", **{f"link{i}": f"link{i}" for i in range(1, 7)}}
_TOOL_MESH = {"lite_gripper": "gripper_lite", "lite_vacuum": "vacuum_gripper_lite"}
MESH_URI = "package://xarm_description/meshes/lite6/visual/{}.stl"


def joint_transform(joint: JointSpec, angle_rad: float) -> np.ndarray:
    """4x4 float64 transform of ``joint.child`` in ``joint.parent`` at ``angle_rad`` (metres)."""
    T = np.eye(4)
    T[:3, :3] = (
        Rotation.from_euler("xyz", joint.rpy_rad).as_matrix()
        @ Rotation.from_rotvec(np.asarray(joint.axis, dtype=np.float64) * float(angle_rad)).as_matrix()
    )
    T[:3, 3] = joint.xyz_m
    return T


def link_transforms(joints_rad) -> list[tuple[str, str, np.ndarray]]:
    """``[(parent, child, 4x4 T_parent_child), ...]`` of the six joints at ``joints_rad`` (6 radians,
    ``joint1..joint6``), as robot_state_publisher would put them on ``/tf``.

    Raises:
        ValueError: not 6 finite values.
    """
    q = np.asarray(joints_rad, dtype=np.float64).reshape(-1)
    if q.shape != (6,) or not np.all(np.isfinite(q)):
        raise ValueError(f"need 6 finite joint angles in radians, got {q.tolist()}")
    return [(j.parent, j.child, joint_transform(j, a)) for j, a in zip(LITE6_JOINTS, q)]


def robot_description(tool: str | None = "lite_gripper") -> str:
    """The URDF text of the Lite 6 with its visual meshes (module docstring) and one tool frame
    (``None``: the bare flange).

    Raises:
        ValueError: unknown tool.
    """
    if tool is not None and tool not in LITE6_TOOL_OFFSETS_M:
        raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(LITE6_TOOL_OFFSETS_M))}")
    f = lambda v: " ".join(repr(float(c)) for c in v)  # noqa: E731 - repr keeps every digit

    def link(name: str, mesh: str | None) -> str:
        if mesh is None:
            return f'<link name="{name}"/>'
        return (
            f'<link name="{name}"><visual><origin xyz="0 0 0" rpy="0 0 0"/><geometry>'
            f'<mesh filename="{MESH_URI.format(mesh)}"/></geometry></visual></link>'
        )

    meshes = dict(LINK_MESHES)
    parts = [link("link_base", meshes["link_base"])]
    for j in LITE6_JOINTS:
        parts.append(link(j.child, meshes.get(j.child)))
        parts.append(
            f'<joint name="{j.name}" type="revolute"><origin xyz="{f(j.xyz_m)}" rpy="{f(j.rpy_rad)}"/>'
            f'<parent link="{j.parent}"/><child link="{j.child}"/><axis xyz="{f(j.axis)}"/>'
            f'<limit lower="{j.lower_rad!r}" upper="{j.upper_rad!r}" effort="50" velocity="3.14"/></joint>'
        )
    if tool is not None:
        jname, lname = TOOL_JOINTS[tool]
        # the tool's body hangs on the flange (its mesh is in link6's frame), its TCP is a frame
        parts.append(
            f'<link name="{tool}_body"><visual><origin xyz="0 0 0" rpy="0 0 0"/><geometry>'
            f'<mesh filename="{MESH_URI.format(_TOOL_MESH[tool])}"/></geometry></visual></link>'
        )
        parts.append(
            f'<joint name="{tool}_mount" type="fixed"><origin xyz="0 0 0" rpy="0 0 0"/>'
            f'<parent link="link6"/><child link="{tool}_body"/></joint>'
        )
        parts.append(f'<link name="{lname}"/>')
        parts.append(
            f'<joint name="{jname}" type="fixed"><origin xyz="0 0 {LITE6_TOOL_OFFSETS_M[tool]!r}" '
            f'rpy="0 0 0"/><parent link="link6"/><child link="{lname}"/></joint>'
        )
    body = "\n  ".join(parts)
    return f'<?xml version="1.0"?>\n<robot name="lite6">\n  {body}\n</robot>\n'
