"""``/tf_static`` for a recording: the calibration's camera pose, so a 3D viewer places the frames;
and the ``tf2_msgs/TFMessage`` serializer that ``robot_tf`` uses for ``/tf``.

A bag of the realsense-ros topics has no way to say where the camera is relative to the robot;
ROS does it with a static transform on ``/tf_static`` (``tf2_msgs/TFMessage``, REP 105 frame names).
The rclpy wheels here lack ``tf2_msgs`` (not on PyPI), so the message is serialized with rosbags'
own definition (the same Kilted type store as the rest of the bag), and written into every
recording when it begins (``Recorder(static_transforms=...)``), as ``ros2 bag record`` would have
recorded the latched message of a ``static_transform_publisher``.

Rotation as a unit quaternion ``(x, y, z, w)`` (``geometry_msgs/Quaternion``), from the 4x4 matrix
with scipy (``Rotation.from_matrix``); translation in metres.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TF_STATIC", "TF_MESSAGE", "StaticTransform", "tf_message_cdr"]

TF_STATIC = "/tf_static"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"


@dataclass(frozen=True)
class StaticTransform:
    """``T_parent_child``: the child frame's pose in the parent frame (4x4 homogeneous, metres)."""

    parent_frame: str
    child_frame: str
    T_parent_child: np.ndarray

    @classmethod
    def of_calibration(cls, calibration) -> "StaticTransform":
        """From a ``perception.extrinsics.Calibration`` (``link_base`` -> ``camera_color_optical_frame``
        for eye-to-hand)."""
        return cls(calibration.parent_frame, calibration.child_frame, np.asarray(calibration.T_base_camera.matrix))


def tf_message_cdr(transforms: list[StaticTransform], stamp_ns: int) -> bytes:
    """One ``tf2_msgs/TFMessage`` holding ``transforms``, each stamped ``stamp_ns``, as CDR bytes
    (for ``/tf_static``, and for ``/tf`` as ``robot_tf`` builds it).

    Raises:
        ValueError: a matrix that is not 4x4 with a proper rotation (det 1, orthonormal to 1e-6).
    """
    from scipy.spatial.transform import Rotation

    from pointlab.bridge.recording.trial_bag import typestore

    store = typestore()
    T = store.types
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    out: list[Any] = []  # rosbags' generated TransformStamped
    if not transforms:
        return bytes(store.serialize_cdr(T[TF_MESSAGE](transforms=out), TF_MESSAGE))
    # checked and converted as one stack: the recorder builds a /tf for every joint state
    for st in transforms:
        if np.shape(st.T_parent_child) != (4, 4):
            raise ValueError(f"{st.parent_frame} -> {st.child_frame}: not a 4x4 homogeneous transform")
    mats = np.array([st.T_parent_child for st in transforms], dtype=float)
    rot = mats[:, :3, :3]
    homogeneous = np.isclose(mats[:, 3], [0, 0, 0, 1]).all(axis=1)
    proper = np.isclose(rot @ rot.transpose(0, 2, 1), np.eye(3), atol=1e-6).all(axis=(1, 2)) & (
        np.abs(np.linalg.det(rot) - 1) < 1e-6
    )
    for st, h, p in zip(transforms, homogeneous, proper):
        if not h:
            raise ValueError(f"{st.parent_frame} -> {st.child_frame}: not a 4x4 homogeneous transform")
        if not p:
            raise ValueError(f"{st.parent_frame} -> {st.child_frame}: the rotation is not proper and orthonormal")
    quats = Rotation.from_matrix(rot).as_quat()
    for st, m, (qx, qy, qz, qw) in zip(transforms, mats, quats):
        header = T["std_msgs/msg/Header"](
            stamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec), frame_id=st.parent_frame
        )
        transform = T["geometry_msgs/msg/Transform"](
            translation=T["geometry_msgs/msg/Vector3"](x=float(m[0, 3]), y=float(m[1, 3]), z=float(m[2, 3])),
            rotation=T["geometry_msgs/msg/Quaternion"](x=float(qx), y=float(qy), z=float(qz), w=float(qw)),
        )
        out.append(
            T["geometry_msgs/msg/TransformStamped"](header=header, child_frame_id=st.child_frame, transform=transform)
        )
    return bytes(store.serialize_cdr(T[TF_MESSAGE](transforms=out), TF_MESSAGE))
