"""The live view: the camera's own JPEG of the newest colour frame, never encoded here.

The camera node encodes each colour frame once, as image_transport's ``compressed`` topic
(``TOPICS["color_compressed"]``, ``bridge.ros.camera_node``); this class subscribes to it and hands
those bytes to the web app (``latest_jpeg``) and to the trial record (``jpeg_of``). So the web app's
process spends no time on JPEG while five pages watch, and the picture a page shows is byte for byte
the one the recording keeps. A camera that publishes no ``compressed`` topic (a realsense-ros without
image_transport's plugin) leaves the live view empty and ``jpeg_of`` encodes the trial frames itself.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from pointlab.perception.image_codecs import encode_color

from pointlab.bridge.ros.frames import RecentFrames
from pointlab.bridge.ros.msgs import TOPICS, image_qos, image_to_rgb, stamp_to_ns

__all__ = ["RosLiveView", "encode_jpeg"]

log = logging.getLogger(__name__)


def encode_jpeg(rgb, quality: int = 80) -> bytes:
    """``(H, W, 3)`` uint8 RGB -> JPEG bytes: the data of ``perception.image_codecs.encode_color``.

    Raises:
        ValueError: not an ``(H, W, 3)`` uint8 image, a quality outside 1-100, or the encoder refused it.
    """
    return encode_color(rgb, quality)[1]


class RosLiveView:
    """``bridge.trials.record.LiveView`` over the camera's ``compressed`` colour topic.

    Args:
        node: the rclpy node to subscribe on.
        frames: the recent raw frames (their camera frame index by stamp).
        jpeg_quality: 1-100, for a trial frame the camera did not encode (``jpeg_of``'s fallback).
        keep: how many recent JPEGs to hold (about a second at 30 fps, 20 kB each).

    Attributes:
        received: JPEG frames received so far.
    """

    def __init__(self, node, frames: RecentFrames, *, jpeg_quality: int = 80, keep: int = 30) -> None:
        from sensor_msgs.msg import CompressedImage

        self.frames, self.jpeg_quality = frames, jpeg_quality
        self._lock = threading.Lock()
        self._jpegs: deque = deque(maxlen=keep)  # (stamp_ns, bytes), oldest first
        self._last: tuple[bytes, int] | None = None
        self.received = 0
        node.create_subscription(CompressedImage, TOPICS["color_compressed"], self._on_jpeg, image_qos(2))

    def _on_jpeg(self, msg) -> None:
        if "jpeg" not in msg.format and "png" not in msg.format:
            return  # another transport's payload (say compressedDepth) on this topic: not a picture
        data = msg.data.tobytes() if hasattr(msg.data, "tobytes") else bytes(msg.data)
        with self._lock:
            self._jpegs.append((stamp_to_ns(msg.header.stamp), data))
            self.received += 1

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        """The newest colour frame as JPEG bytes and its camera frame index, or ``None`` before the
        first. Never blocks and never encodes. A frame is offered once its index is known (the
        camera's ``frame_meta`` or raw colour may arrive a moment after its JPEG), so indices only
        grow from one call to the next."""
        with self._lock:
            recent = list(self._jpegs)
        for stamp, data in reversed(recent):
            index = self.frames.index_of(stamp)
            if index is not None:
                if self._last is None or index > self._last[1]:
                    self._last = (data, index)
                break
        return self._last

    def jpeg_of(self, msg, quality: int | None = None) -> bytes | None:
        """The JPEG of one raw colour message (a trial frame): the camera's own bytes for its stamp
        when still held, else encoded here; ``None`` when it cannot be encoded."""
        stamp = stamp_to_ns(msg.header.stamp)
        if quality is None or quality == self.jpeg_quality:
            with self._lock:
                for s, data in reversed(self._jpegs):
                    if s == stamp:
                        return data
        try:
            return encode_jpeg(image_to_rgb(msg), quality or self.jpeg_quality)
        except ValueError:
            return None

    def close(self) -> None:
        """Nothing to stop (the node's owner destroys the subscription); kept for the port's contract."""
