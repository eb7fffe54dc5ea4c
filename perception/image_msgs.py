"""``sensor_msgs/Image`` and ``CameraInfo`` fields -> numpy and ``Intrinsics``, with no ROS import.

The functions read a message by its field names only (``height``, ``width``, ``step``, ``encoding``,
``is_bigendian``, ``data``; ``k``, ``d``; ``header.stamp.sec/nanosec``), so they work alike on an
rclpy message, on one deserialized by ``rosbags`` (``data`` a numpy array) and on one decoded by
``mcap-ros2-support`` (``data`` bytes). ``bridge.ros.msgs`` re-exports them beside the conversions
the other way (numpy -> rclpy messages), which need the ROS message packages.

Conventions are realsense-ros 4.x's and REP 118's, so a lab's own ``ros2 bag record`` of
realsense-ros reads like ours:

- colour ``rgb8`` (also ``bgr8``, ``rgba8``, ``bgra8``) -> ``(H, W, 3)`` uint8 RGB;
- aligned depth ``16UC1`` in **millimetres** (``DEPTH_TOPIC_SCALE_M`` = 0.001 m per unit), 0 = no
  data; ``32FC1`` in metres is converted to millimetres;
- ``CameraInfo``: ``k = [fx 0 ppx; 0 fy ppy; 0 0 1]``, ``d`` = Brown-Conrady coefficients (``plumb_bob``).
"""

from __future__ import annotations

import numpy as np

from .frame import Intrinsics
from .image_codecs import COMPRESSED_DEPTH_SUFFIX, COMPRESSED_SUFFIX, decode_color, decode_depth, is_compressed

__all__ = [
    "DEPTH_TOPIC_SCALE_M",
    "REALSENSE_TOPICS",
    "REALSENSE_COMPRESSED_TOPICS",
    "stamp_to_ns",
    "image_to_rgb",
    "image_to_depth",
    "camera_info_to_intrinsics",
]

# Metres per unit of the 16UC1 depth on the topic: millimetres, as realsense-ros publishes it.
DEPTH_TOPIC_SCALE_M = 0.001

# realsense-ros 4.x topic names (``rs_launch.py align_depth.enable:=true``, default namespace and name).
REALSENSE_TOPICS = {
    "color": "/camera/camera/color/image_raw",
    "depth": "/camera/camera/aligned_depth_to_color/image_raw",
    "camera_info": "/camera/camera/color/camera_info",
}
# The same streams through image_transport's compressed transports (``image_codecs``): what a lab
# records to keep bags small, and what our recorder writes.
REALSENSE_COMPRESSED_TOPICS = {
    "color": REALSENSE_TOPICS["color"] + COMPRESSED_SUFFIX,
    "depth": REALSENSE_TOPICS["depth"] + COMPRESSED_DEPTH_SUFFIX,
    "camera_info": REALSENSE_TOPICS["camera_info"],
}


def stamp_to_ns(stamp) -> int:
    """``builtin_interfaces/Time`` -> nanoseconds (int)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def image_to_rgb(msg) -> np.ndarray:
    """``sensor_msgs/Image`` (``rgb8``, ``bgr8``, ``rgba8``, ``bgra8``) -> ``(H, W, 3)`` uint8 RGB.

    A ``sensor_msgs/CompressedImage`` (image_transport's ``compressed``: JPEG or PNG) is decoded
    (``image_codecs.decode_color``).

    Raises:
        ValueError: another encoding or a buffer that does not match ``height * step``.
    """
    if is_compressed(msg):
        return decode_color(msg)
    enc = msg.encoding.lower()
    channels = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4}.get(enc)
    if channels is None:
        raise ValueError(f"unsupported colour encoding {msg.encoding!r}")
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    buf = np.frombuffer(msg.data, dtype=np.uint8)
    if buf.size != h * step or step < w * channels:
        raise ValueError(f"image buffer of {buf.size} bytes does not match {h} rows of {step} bytes")
    img = buf.reshape(h, step)[:, : w * channels].reshape(h, w, channels)
    if enc.startswith("bgr"):
        img = img[:, :, 2::-1]
    elif channels == 4:
        img = img[:, :, :3]
    return np.ascontiguousarray(img)


def image_to_depth(msg) -> tuple[np.ndarray, float]:
    """``sensor_msgs/Image`` depth -> ``((H, W) uint16, depth_scale_m)``.

    ``16UC1``/``mono16`` are taken as millimetres (realsense-ros, REP 118); ``32FC1`` as metres and
    converted to millimetres (non-finite or non-positive -> 0).

    A ``sensor_msgs/CompressedImage`` in image_transport's ``compressedDepth`` form is decoded
    (``image_codecs.decode_depth``).

    Raises:
        ValueError: another encoding or a buffer that does not match the size.
    """
    if is_compressed(msg):
        return decode_depth(msg), DEPTH_TOPIC_SCALE_M
    enc = msg.encoding.upper()
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    dt: np.dtype
    if enc in ("16UC1", "MONO16"):
        dt = np.dtype(">u2" if msg.is_bigendian else "<u2")
    elif enc == "32FC1":
        dt = np.dtype(">f4" if msg.is_bigendian else "<f4")
    else:
        raise ValueError(f"unsupported depth encoding {msg.encoding!r}")
    buf = np.frombuffer(msg.data, dtype=np.uint8)
    if buf.size != h * step or step < w * dt.itemsize:
        raise ValueError(f"depth buffer of {buf.size} bytes does not match {h} rows of {step} bytes")
    rows = buf.reshape(h, step)[:, : w * dt.itemsize]
    d = np.ascontiguousarray(rows).view(dt).reshape(h, w)
    if enc == "32FC1":
        m = np.where(np.isfinite(d) & (d > 0), d, 0.0)
        mm = np.rint(m / DEPTH_TOPIC_SCALE_M)
        mm[mm > 65535] = 0
        return mm.astype(np.uint16), DEPTH_TOPIC_SCALE_M
    return d.astype(np.uint16), DEPTH_TOPIC_SCALE_M


def camera_info_to_intrinsics(msg) -> Intrinsics:
    """``sensor_msgs/CameraInfo`` -> ``Intrinsics`` (first 5 distortion coefficients, zeros if fewer).

    Raises:
        ValueError: a zero size or focal length.
    """
    k = list(msg.k)
    d = [float(c) for c in list(msg.d)[:5]]
    d += [0.0] * (5 - len(d))
    return Intrinsics(int(msg.width), int(msg.height), float(k[0]), float(k[4]), float(k[2]), float(k[5]), tuple(d))
