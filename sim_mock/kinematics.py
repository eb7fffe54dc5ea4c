"""Forward and inverse kinematics of the UFACTORY Lite 6 (xArm 6 Lite), through ikpy.

The joint table below is the kinematic model of ``xarm_description/urdf/lite6/lite6.urdf.xacro`` from
xArm-Developer/xarm_ros2 (Copyright (c) 2018, UFACTORY Inc., BSD-3-Clause; the same values as
``../shared/data/robots/lite6_kinematics.urdf``, whose licence file is ``LICENSE.xarm_ros2``). It is
embedded so the simulated arm runs on a machine without ``../shared/``; a test checks that it gives
the same forward kinematics as the shared file. At zero joints the flange (``link6``) is at
(0.087, 0, 0.1536) m with roll 180 degrees (tool pointing down).

Units: metres and radians inside; orientations at the interface are xArm-style fixed-axis roll, pitch,
yaw in **degrees** (``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``; ``(180, 0, 0)`` points the tool straight
down), the convention of ``pointlab.robot.arm``.
"""

from __future__ import annotations

import io
import logging
import threading
import warnings

import numpy as np
from scipy.spatial.transform import Rotation

# the Lite 6's model lives with the product (robot/): the sim and the recordings share it
from pointlab.robot.lite6_model import LITE6_JOINTS, LITE6_TOOL_OFFSETS_M, TOOL_JOINTS, JointSpec

__all__ = [
    "Lite6Kinematics",
    "JointSpec",
    "LITE6_JOINTS",
    "LITE6_TOOL_OFFSETS_M",
    "rpy_deg_to_matrix",
    "matrix_to_rpy_deg",
    "lite6_urdf_text",
    "MAX_POSITION_ERROR_M",
    "MAX_ORIENTATION_ERROR_DEG",
]

log = logging.getLogger(__name__)

MAX_POSITION_ERROR_M = 0.001
MAX_ORIENTATION_ERROR_DEG = 1.0


_TOOL_JOINT = TOOL_JOINTS


def rpy_deg_to_matrix(rpy_deg) -> np.ndarray:
    """xArm fixed-axis roll, pitch, yaw (degrees, ``(3,)``) -> 3x3 rotation matrix (float64)."""
    return Rotation.from_euler("xyz", np.asarray(rpy_deg, dtype=np.float64).reshape(3), degrees=True).as_matrix()


def matrix_to_rpy_deg(rotation: np.ndarray) -> np.ndarray:
    """3x3 rotation -> xArm roll, pitch, yaw in degrees ``(3,)``; roll near -180 is reported as +180
    (the controller's habit), so the tool-down pose reads ``(180, 0, 0)``."""
    with warnings.catch_warnings():  # gimbal lock warnings at pitch +-90 are harmless here
        warnings.simplefilter("ignore")
        rpy = Rotation.from_matrix(np.asarray(rotation, dtype=np.float64)).as_euler("xyz", degrees=True)
    if rpy[0] <= -179.999:
        rpy[0] += 360.0
    return rpy


def lite6_urdf_text(tool: str | None = None) -> str:
    """The URDF text of the embedded joint table with at most one tool frame (``None`` = flange).

    Raises:
        ValueError: unknown tool name.
    """
    if tool is not None and tool not in LITE6_TOOL_OFFSETS_M:
        raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(LITE6_TOOL_OFFSETS_M))}")
    f = lambda v: " ".join(repr(float(c)) for c in v)  # noqa: E731 - repr keeps every digit
    links = ["link_base"] + [j.child for j in LITE6_JOINTS]
    joints = [
        f'<joint name="{j.name}" type="revolute"><origin xyz="{f(j.xyz_m)}" rpy="{f(j.rpy_rad)}"/>'
        f'<parent link="{j.parent}"/><child link="{j.child}"/><axis xyz="{f(j.axis)}"/>'
        f'<limit lower="{j.lower_rad!r}" upper="{j.upper_rad!r}" effort="50" velocity="3.14"/></joint>'
        for j in LITE6_JOINTS
    ]
    if tool is not None:
        jname, lname = _TOOL_JOINT[tool]
        links.append(lname)
        offset_m = LITE6_TOOL_OFFSETS_M[tool]
        joints.append(
            f'<joint name="{jname}" type="fixed"><origin xyz="0 0 {offset_m!r}" rpy="0 0 0"/>'
            f'<parent link="link6"/><child link="{lname}"/></joint>'
        )
    body = "\n  ".join([f'<link name="{n}"/>' for n in links] + joints)
    return f'<?xml version="1.0"?>\n<robot name="lite6">\n  {body}\n</robot>\n'


def _build_chain(urdf_text: str):
    from ikpy.chain import Chain

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = Chain.from_urdf_file(io.StringIO(urdf_text), base_elements=["link_base"], name="lite6")
        n = len(chain.links)
        mask = [link.joint_type == "revolute" for link in chain.links]
        chain = Chain(chain.links, active_links_mask=mask, name="lite6")
    if sum(mask) != 6 or n not in (7, 8):
        raise RuntimeError(f"Lite 6 chain has {sum(mask)} revolute joints in {n} links; expected 6")
    return chain


class Lite6Kinematics:
    """FK and IK of the Lite 6 flange and its two tool frames.

    Args:
        urdf_path: a URDF file to use instead of the embedded joint table (e.g. the shared
            ``lite6_kinematics.urdf``); it must hold joints ``joint1..joint6`` from ``link_base``
            and may hold the tool joints.

    Joint vectors are 6 radians, ``joint1..joint6``. Thread-safe (ikpy calls are serialised).
    """

    # A tool-down configuration above the table in front of the base (TCP near (0.25, 0, 0.15) m):
    # a good seed for everything the sim arm does. Found with ik() from zero joints.
    TOOL_DOWN_SEED_RAD = np.array([0.0, 0.35, 1.1, 0.0, 0.75, 0.0])

    def __init__(self, urdf_path: str | None = None) -> None:
        self._lock = threading.Lock()
        self._chains: dict[str | None, object] = {}
        self._urdf_text = None if urdf_path is None else open(urdf_path, encoding="utf-8").read()
        flange = self._chain(None)
        bounds = [flange.links[i].bounds for i in range(1, 7)]
        self.joint_limits_rad = np.array(bounds, dtype=np.float64)  # (6, 2): lower, upper

    # -- chains ------------------------------------------------------------------------------
    def _chain(self, tool: str | None):
        if tool not in self._chains:
            if self._urdf_text is None:
                text = lite6_urdf_text(tool)
            else:
                text = self._file_text_for(tool)
            self._chains[tool] = _build_chain(text)
        return self._chains[tool]

    def _file_text_for(self, tool: str | None) -> str:
        # Keep only the wanted tool joint of the file so that ikpy follows one branch from link6.
        import xml.etree.ElementTree as ET

        assert self._urdf_text is not None  # the caller reads the packaged file when none was given
        root = ET.fromstring(self._urdf_text)
        if tool is not None and tool not in _TOOL_JOINT:
            raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(_TOOL_JOINT))}")
        keep = None if tool is None else _TOOL_JOINT[tool][0]
        if keep is not None and keep not in {j.get("name") for j in root.findall("joint")}:
            raise ValueError(f"the URDF file has no {keep!r} joint for tool {tool!r}")
        for joint in list(root.findall("joint")):
            if joint.get("type") == "fixed" and joint.get("name") != keep:
                root.remove(joint)
        return ET.tostring(root, encoding="unicode")

    @staticmethod
    def _full(chain, joints_rad) -> np.ndarray:
        q = np.zeros(len(chain.links))
        q[1:7] = np.asarray(joints_rad, dtype=np.float64).reshape(6)
        return q

    # -- API -----------------------------------------------------------------------------------
    def fk(self, joints_rad, tool: str | None = None) -> np.ndarray:
        """Pose of the flange (``tool=None``) or of a tool TCP (``"lite_gripper"``, ``"lite_vacuum"``)
        in ``link_base``: 4x4 float64, metres.

        Raises:
            ValueError: not 6 finite joint values, unknown tool, or (file model) a URDF without
                that tool's frame.
        """
        q = np.asarray(joints_rad, dtype=np.float64).reshape(-1)
        if q.shape != (6,) or not np.all(np.isfinite(q)):
            raise ValueError(f"need 6 finite joint angles in radians, got {q.tolist()}")
        with self._lock:
            chain = self._chain(tool)
            return np.asarray(chain.forward_kinematics(self._full(chain, q)), dtype=np.float64)

    def within_limits(self, joints_rad, tol_rad: float = 1e-6) -> bool:
        q = np.asarray(joints_rad, dtype=np.float64).reshape(6)
        lo, hi = self.joint_limits_rad[:, 0], self.joint_limits_rad[:, 1]
        return bool(np.all(q >= lo - tol_rad) and np.all(q <= hi + tol_rad))

    def pose_error(self, joints_rad, position_m, rpy_deg, tool: str | None = None) -> tuple[float, float]:
        """(position error m, orientation error deg) of ``fk(joints_rad)`` against a target."""
        T = self.fk(joints_rad, tool)
        target_R = rpy_deg_to_matrix(rpy_deg)
        pos_err = float(np.linalg.norm(T[:3, 3] - np.asarray(position_m, dtype=np.float64).reshape(3)))
        rot_err = float(np.degrees(Rotation.from_matrix(T[:3, :3] @ target_R.T).magnitude()))
        return pos_err, rot_err

    def ik(
        self, position_m, rpy_deg=(180.0, 0.0, 0.0), seed_rad=None, tool: str | None = "lite_gripper"
    ) -> np.ndarray | None:
        """Joint angles (6, radians) that put the flange/TCP at ``position_m`` (metres, base frame)
        with orientation ``rpy_deg`` (xArm roll, pitch, yaw, degrees), or ``None`` when there is no
        solution within the joint limits with position error <= 1 mm and orientation error <= 1 deg.

        The search starts from ``seed_rad`` (e.g. the current joints, so consecutive solutions stay
        on one branch) and falls back to a tool-down seed and zero joints.

        Raises:
            ValueError: malformed position/orientation, or unknown tool.
        """
        p = np.asarray(position_m, dtype=np.float64).reshape(-1)
        rpy = np.asarray(rpy_deg, dtype=np.float64).reshape(-1)
        if p.shape != (3,) or rpy.shape != (3,) or not (np.all(np.isfinite(p)) and np.all(np.isfinite(rpy))):
            raise ValueError(f"need a finite 3D position (m) and 3 angles (deg), got {p.tolist()}, {rpy.tolist()}")
        target = np.eye(4)
        target[:3, :3] = rpy_deg_to_matrix(rpy)
        target[:3, 3] = p
        seeds = [] if seed_rad is None else [np.asarray(seed_rad, dtype=np.float64).reshape(6)]
        base_seed = self.TOOL_DOWN_SEED_RAD.copy()
        base_seed[0] = np.arctan2(p[1], p[0])  # face the target: converges in fewer iterations
        seeds += [base_seed, np.zeros(6)]
        with self._lock:
            chain = self._chain(tool)
        for seed in seeds:
            seed = np.clip(seed, self.joint_limits_rad[:, 0], self.joint_limits_rad[:, 1])
            with self._lock, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                full = chain.inverse_kinematics_frame(
                    target, initial_position=self._full(chain, seed), orientation_mode="all"
                )
            q = np.asarray(full[1:7], dtype=np.float64)
            if not self.within_limits(q):
                continue
            pos_err, rot_err = self.pose_error(q, p, rpy, tool)
            if pos_err <= MAX_POSITION_ERROR_M and rot_err <= MAX_ORIENTATION_ERROR_DEG:
                return q
        return None
