"""Serialized ROS 2 messages for the recorder's tests: built with our own converters
(``bridge.ros.msgs``) and serialized by rclpy, so the bytes are exactly what a raw subscription
receives from our camera node and runner (no DDS needed)."""

from __future__ import annotations

import numpy as np

from pointlab.benchmark.records import dumps_json
from pointlab.bridge.ros.msgs import TOPICS, depth_to_image, intrinsics_to_camera_info, rgb_to_image
from pointlab.perception.frame import CAMERA_OPTICAL_FRAME, Intrinsics


def _ser(msg) -> bytes:
    from rclpy.serialization import serialize_message

    return serialize_message(msg)


def color(rgb: np.ndarray, stamp_ns: int) -> bytes:
    return _ser(rgb_to_image(rgb, stamp_ns, CAMERA_OPTICAL_FRAME))


def color_jpeg(rgb: np.ndarray, stamp_ns: int, quality: int = 80) -> tuple[bytes, bytes]:
    """The camera node's ``compressed`` colour message: ``(cdr, jpeg bytes)``."""
    from pointlab.bridge.ros.msgs import compressed_image
    from pointlab.perception.image_codecs import encode_color

    fmt, data = encode_color(rgb, quality)
    return _ser(compressed_image(fmt, data, stamp_ns, CAMERA_OPTICAL_FRAME)), data


def depth(depth_mm: np.ndarray, stamp_ns: int) -> bytes:
    return _ser(depth_to_image(depth_mm, stamp_ns, CAMERA_OPTICAL_FRAME))


def info(intr: Intrinsics, stamp_ns: int) -> bytes:
    return _ser(intrinsics_to_camera_info(intr, stamp_ns, CAMERA_OPTICAL_FRAME))


def string(payload) -> bytes:
    """A ``std_msgs/String`` holding a payload model (or any JSON value) as the nodes publish it."""
    from std_msgs.msg import String

    return _ser(String(data=dumps_json(payload, compact=True)))


def capture(rgb, depth_mm, intr, stamp_ns: int, *, jpeg: bool = False) -> list[tuple[str, bytes]]:
    """One camera-node capture, in its publishing order: camera_info, depth, colour (one stamp);
    ``jpeg``: the colour as the camera's ``compressed`` message instead of raw."""
    col = (
        (TOPICS["color_compressed"], color_jpeg(rgb, stamp_ns)[0]) if jpeg else (TOPICS["color"], color(rgb, stamp_ns))
    )
    return [(TOPICS["camera_info"], info(intr, stamp_ns)), (TOPICS["depth"], depth(depth_mm, stamp_ns)), col]
