"""Conversions between our types (numpy images, ``Intrinsics``, ``TcpPose``) and standard ROS 2 messages.

Topic conventions follow realsense-ros 4.x and REP 118 so a lab can swap our camera node for theirs:

- colour: ``sensor_msgs/Image`` ``rgb8``, ``(H, W, 3)`` uint8, row-major, ``step = 3 W``;
- aligned depth: ``sensor_msgs/Image`` ``16UC1`` in **millimetres** (``DEPTH_TOPIC_SCALE_M`` = 0.001 m
  per unit), 0 = no data; also accepted on input: ``32FC1`` in metres (REP 118);
- ``sensor_msgs/CameraInfo``: ``k = [fx 0 ppx; 0 fy ppy; 0 0 1]``, ``d`` = 5 Brown-Conrady
  coefficients with ``distortion_model = "plumb_bob"``.

Messages are imported lazily (inside functions) so importing this module does not need ROS. The
conversions from messages (``image_to_rgb``, ``image_to_depth``, ``camera_info_to_intrinsics``,
``stamp_to_ns``) read fields only and live in ``perception.image_msgs`` (a recording's reader uses them
too); they are re-exported here.
"""

from __future__ import annotations

import array
from typing import Any

import numpy as np

from pointlab.perception.frame import Intrinsics
from pointlab.perception.image_msgs import (
    DEPTH_TOPIC_SCALE_M,
    REALSENSE_COMPRESSED_TOPICS,
    REALSENSE_TOPICS,
    camera_info_to_intrinsics,
    image_to_depth,
    image_to_rgb,
    stamp_to_ns,
)

__all__ = [
    "DEPTH_TOPIC_SCALE_M",
    "TOPICS",
    "stamp_to_ns",
    "ns_to_stamp",
    "rgb_to_image",
    "compressed_image",
    "image_to_rgb",
    "depth_to_image",
    "image_to_depth",
    "intrinsics_to_camera_info",
    "camera_info_to_intrinsics",
    "to_depth_mm",
    "image_qos",
    "state_qos",
]

# Every topic of the node set, in one place (docs/ros.md lists them with their message types).
TOPICS = {
    **REALSENSE_TOPICS,  # color, depth, camera_info
    # the colour as image_transport's ``compressed`` (JPEG), encoded once by the camera node: the
    # live view, the recorder and the clip all use these bytes
    "color_compressed": REALSENSE_COMPRESSED_TOPICS["color"],
    # the aligned depth's own camera_info (realsense-ros publishes one per stream): the colour's
    # intrinsics, since the depth is aligned to the colour; what a 3D viewer projects the depth with
    "depth_camera_info": "/camera/camera/aligned_depth_to_color/camera_info",
    "frame_meta": "/pointlab/camera/frame_meta",
    "point_request": "/pointlab/point_request",
    "point_frame": "/pointlab/point_frame",
    "point_answer": "/pointlab/point_answer",
    "target": "/pointlab/target",
    "target_result": "/pointlab/target_result",
    "arm_command": "/pointlab/arm/command",
    "arm_result": "/pointlab/arm/result",
    "arm_state": "/pointlab/arm/state",
    "arm_estop": "/pointlab/arm/estop",
    "arm_reset": "/pointlab/arm/reset",
    "arm_halt": "/pointlab/arm/halt",
    "joint_states": "/joint_states",
    "tcp_pose": "/pointlab/arm/tcp_pose",
}


def image_qos(depth: int = 2):
    """QoS of image subscriptions: reliable, keep last ``depth``.

    Reliable, not the best-effort "sensor data" profile: a 640x480 colour frame (0.9 MB) crosses
    processes in many DDS fragments, and best effort then loses most frames (measured here between
    two processes: 0-9 of 60 colour frames arrived best effort, 59 of 60 reliable). realsense-ros
    publishes reliable by default, and a reliable subscription with a short history never slows
    the publisher down."""
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)


def state_qos():
    """QoS of the arm state: reliable, depth 1, transient local (the latest state is latched for a
    subscriber that joins later)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def ns_to_stamp(stamp_ns: int):
    """Nanoseconds -> ``builtin_interfaces/Time``."""
    from builtin_interfaces.msg import Time

    return Time(sec=int(stamp_ns // 1_000_000_000), nanosec=int(stamp_ns % 1_000_000_000))


def _fill_image(msg, arr: np.ndarray, encoding: str, stamp_ns: int, frame_id: str) -> Any:
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(arr.shape[0]), int(arr.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    arr = np.ascontiguousarray(arr)
    msg.step = int(arr.strides[0])
    # rclpy copies an array.array('B') with one memcpy; a bytes object would be checked byte by byte.
    msg.data = array.array("B", arr.tobytes())
    return msg


def compressed_image(fmt: str, data: bytes, stamp_ns: int, frame_id: str):
    """A ``sensor_msgs/CompressedImage`` of ``(format, data)`` (``perception.image_codecs``)."""
    from sensor_msgs.msg import CompressedImage

    msg = CompressedImage(format=fmt)
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = frame_id
    msg.data = array.array("B", data)  # one memcpy (see _fill_image)
    return msg


def rgb_to_image(rgb: np.ndarray, stamp_ns: int, frame_id: str):
    """``(H, W, 3)`` uint8 RGB -> ``sensor_msgs/Image`` ``rgb8``."""
    from sensor_msgs.msg import Image

    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"colour must be (H, W, 3) uint8, got {rgb.shape} {rgb.dtype}")
    return _fill_image(Image(), rgb, "rgb8", stamp_ns, frame_id)


def to_depth_mm(depth: np.ndarray, depth_scale_m: float) -> np.ndarray:
    """Depth in device units (``(H, W)`` uint16, ``depth_scale_m`` m/unit) -> uint16 millimetres.

    Values that would exceed 65535 mm become 0 (no data) rather than wrapping around."""
    if abs(depth_scale_m - DEPTH_TOPIC_SCALE_M) < 1e-12:
        return depth
    mm = np.rint(depth.astype(np.float64) * (depth_scale_m / DEPTH_TOPIC_SCALE_M))
    mm[mm > 65535] = 0
    return mm.astype(np.uint16)


def depth_to_image(depth_mm: np.ndarray, stamp_ns: int, frame_id: str):
    """``(H, W)`` uint16 millimetres -> ``sensor_msgs/Image`` ``16UC1``."""
    from sensor_msgs.msg import Image

    if depth_mm.ndim != 2 or depth_mm.dtype != np.uint16:
        raise ValueError(f"depth must be (H, W) uint16, got {depth_mm.shape} {depth_mm.dtype}")
    return _fill_image(Image(), depth_mm.astype("<u2", copy=False), "16UC1", stamp_ns, frame_id)


def intrinsics_to_camera_info(intr: Intrinsics, stamp_ns: int, frame_id: str):
    """``Intrinsics`` -> ``sensor_msgs/CameraInfo`` (plumb_bob, 5 coefficients, ``p = [K | 0]``)."""
    from sensor_msgs.msg import CameraInfo

    msg = CameraInfo()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = frame_id
    msg.width, msg.height = intr.width, intr.height
    msg.distortion_model = "plumb_bob"
    msg.d = [float(c) for c in intr.coeffs]
    msg.k = [intr.fx, 0.0, intr.ppx, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [intr.fx, 0.0, intr.ppx, 0.0, 0.0, intr.fy, intr.ppy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg
