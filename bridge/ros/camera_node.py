"""The camera ROS 2 node: publishes a ``perception.Camera`` on the realsense-ros topic names.

Topics (``pointlab.bridge.ros.msgs.TOPICS``; a lab may run realsense-ros 4.x with
``align_depth.enable:=true`` instead, the consumers only need these three):

- ``/camera/camera/color/image_raw``: ``sensor_msgs/Image`` ``rgb8``;
- ``/camera/camera/aligned_depth_to_color/image_raw``: ``sensor_msgs/Image`` ``16UC1`` in
  **millimetres** (REP 118, realsense-ros); a source with another depth scale (D405: 0.1 mm/unit,
  the sim) is converted to millimetres before publishing;
- ``/camera/camera/color/camera_info``: ``sensor_msgs/CameraInfo`` of the colour stream, and the same
  on ``/camera/camera/aligned_depth_to_color/camera_info`` (the depth is aligned to the colour);
- ``/camera/camera/color/image_raw/compressed``: ``sensor_msgs/CompressedImage``, the colour as
  image_transport's ``compressed`` transport (JPEG, ``jpeg_quality``, format
  ``"rgb8; jpeg compressed bgr8"``; ``perception.image_codecs``), encoded **once** per frame here,
  only while something subscribes: the live view, the recorder and the clip use these bytes
  (realsense-ros publishes the same topic through image_transport's plugin);
- ``/pointlab/camera/frame_meta``: ``std_msgs/String`` JSON ``{"stamp_ns", "index",
  "device_depth_scale_m", "depth_scale_m"}`` per frame (our addition: the source's frame index, so a
  trial on a replay folder records which file the agent saw).

All of them share the header stamp of the frame (its capture time) and frame id
``camera_color_optical_frame``. The node's read-only parameter ``depth_scale_m`` (0.001) states the
scale of the depth topic; ``device_depth_scale_m`` the source's own.
"""

from __future__ import annotations

import logging
import threading
import time

from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from pointlab.perception.camera import Camera
from pointlab.perception.errors import EndOfRecording, PerceptionError

from pointlab.bridge.ros.lean_node import LeanNode
from pointlab.perception.image_codecs import encode_color

from pointlab.bridge.ros.msgs import (
    DEPTH_TOPIC_SCALE_M,
    TOPICS,
    compressed_image,
    depth_to_image,
    intrinsics_to_camera_info,
    rgb_to_image,
    to_depth_mm,
)
from pointlab.bridge.ros.payloads import FrameMeta, to_msg

__all__ = ["CameraNode", "IMAGE_PUB_QOS", "main"]

log = logging.getLogger(__name__)

# Reliable publishers match both reliable and best-effort subscribers (realsense-ros does the same).
IMAGE_PUB_QOS = QoSProfile(depth=2, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)


class CameraNode(LeanNode):
    """Reads ``camera`` in its own thread and publishes every frame it returns, once.

    Pacing is the source's: ``read()`` blocks until its next frame is due (a device's frame rate,
    ``replay:``'s fps, a ``bag:`` recording's recorded rate times ``rate``), so this node never polls
    and never publishes a frame twice. ``max_fps`` is only a ceiling: a source faster than it (say a
    30 fps bag at ``rate=2`` under the default 30) is read more slowly, not skipped, and plays slower
    than its ``rate``. A recording played without ``loop`` raises ``EndOfRecording`` after its last
    frame: the node logs one line and stops publishing (``ended`` is then true); any other read
    error is logged and retried after 0.5 s.

    Args:
        camera: a connected-or-not ``perception.Camera`` (connected on ``start()``).
        context: the rclpy ``Context`` (``None``: the global one).
        max_fps: upper bound on the publishing rate, frames/s (``0``: as fast as the source gives).
        node_name: ROS node name.
    """

    def __init__(
        self,
        camera: Camera,
        *,
        context=None,
        max_fps: float = 30.0,
        node_name: str = "pointlab_camera",
        jpeg_quality: int = 80,
    ) -> None:
        # parameters like realsense-ros's (depth_scale_m), readable with ros2 param get
        super().__init__(node_name, context=context, services=True)
        if not 1 <= int(jpeg_quality) <= 100:
            raise ValueError(f"jpeg_quality must be 1-100, got {jpeg_quality}")
        self.camera = camera
        self.max_fps = float(max_fps)
        self.jpeg_quality = int(jpeg_quality)
        self.jpeg_encode_s = 0.0  # wall seconds spent encoding the compressed colour (pointlab perf)
        self.frames_published = 0
        self.read_errors = 0
        self.ended = False  # the source's recording ended (EndOfRecording): nothing more is published
        self._pub_color = self.create_publisher(_image_type(), TOPICS["color"], IMAGE_PUB_QOS)
        self._pub_depth = self.create_publisher(_image_type(), TOPICS["depth"], IMAGE_PUB_QOS)
        self._pub_info = self.create_publisher(_info_type(), TOPICS["camera_info"], IMAGE_PUB_QOS)
        self._pub_depth_info = self.create_publisher(_info_type(), TOPICS["depth_camera_info"], IMAGE_PUB_QOS)
        self._pub_jpeg = self.create_publisher(_compressed_type(), TOPICS["color_compressed"], IMAGE_PUB_QOS)
        self._pub_meta = self.create_publisher(_string_type(), TOPICS["frame_meta"], 10)
        self.declare_parameter("depth_scale_m", DEPTH_TOPIC_SCALE_M)
        self.declare_parameter("device_depth_scale_m", 0.0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "CameraNode":
        """Connect the camera (raises ``CameraSourceError``) and start the publishing thread."""
        self.camera.connect()
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="pointlab-camera", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        self.camera.disconnect()

    def publish_frame(self, frame) -> None:
        """Publish one ``RGBDFrame`` on the node's topics (same stamp); the JPEG only when subscribed."""
        stamp, fid = frame.stamp_ns, frame.frame_id
        if self.frames_published == 0:
            self.set_parameters([Parameter("device_depth_scale_m", value=float(frame.depth_scale_m))])
        info = intrinsics_to_camera_info(frame.intrinsics, stamp, fid)
        self._pub_info.publish(info)
        self._pub_depth_info.publish(info)  # aligned to the colour: the same camera model
        # depth before colour: a consumer that reacts to a colour frame finds its depth already sent
        self._pub_depth.publish(depth_to_image(to_depth_mm(frame.depth, frame.depth_scale_m), stamp, fid))
        self._pub_meta.publish(
            to_msg(
                FrameMeta(
                    stamp_ns=stamp,
                    index=int(frame.index),
                    device_depth_scale_m=frame.depth_scale_m,
                    depth_scale_m=DEPTH_TOPIC_SCALE_M,
                )
            )
        )
        if self._pub_jpeg.get_subscription_count() > 0:
            self._publish_jpeg(frame, stamp, fid)
        self._pub_color.publish(rgb_to_image(frame.color, stamp, fid))
        self.frames_published += 1

    def _publish_jpeg(self, frame, stamp: int, fid: str) -> None:
        # OpenCV releases the GIL while it encodes: the web app's threads run meanwhile
        t0 = time.perf_counter()
        try:
            fmt, data = encode_color(frame.color, self.jpeg_quality)
        except ValueError as e:
            log.warning("camera: frame %s not JPEG-encoded: %s", frame.index, e)
            return
        self.jpeg_encode_s += time.perf_counter() - t0
        self._pub_jpeg.publish(compressed_image(fmt, data, stamp, fid))

    def _loop(self) -> None:
        period = 1.0 / self.max_fps if self.max_fps > 0 else 0.0
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                if hasattr(self.camera, "want_depth"):  # a source that can skip depth nobody reads
                    self.camera.want_depth = self._pub_depth.get_subscription_count() > 0
                frame = self.camera.read()
            except EndOfRecording as e:  # an expected end, not a failure to retry: say it once and stop
                self.ended = True
                log.warning(
                    "camera: %s; %d frames published, no more will be (loop=1 in the bag: spec plays it again)",
                    e,
                    self.frames_published,
                )
                return
            except PerceptionError as e:
                # a bad frame or a replugged camera must not end the node: log, back off, retry
                self.read_errors += 1
                log.warning("camera read failed (%d so far): %s", self.read_errors, e)
                self._stop.wait(0.5)
                continue
            except Exception:  # a driver's own error type or a bug: same, or the live view dies silently
                self.read_errors += 1
                log.exception("camera read failed unexpectedly (%d so far)", self.read_errors)
                self._stop.wait(0.5)
                continue
            try:
                self.publish_frame(frame)
            except Exception:  # the context is shutting down, or a malformed frame
                if self._stop.is_set():
                    break
                log.exception("publishing a frame failed")
            if period:
                next_t = max(next_t + period, time.monotonic() - period)
                self._stop.wait(max(0.0, next_t - time.monotonic()))


def _image_type():
    from sensor_msgs.msg import Image

    return Image


def _compressed_type():
    from sensor_msgs.msg import CompressedImage

    return CompressedImage


def _info_type():
    from sensor_msgs.msg import CameraInfo

    return CameraInfo


def _string_type():
    from std_msgs.msg import String

    return String


def main(camera_spec: str = "sim", max_fps: float = 30.0) -> None:
    """Run the camera node alone until Ctrl-C (``pointlab act node camera --camera SPEC``)."""
    from pointlab.bridge.ros.host import spin_alone

    from pointlab.perception.camera import make_camera

    camera = make_camera(camera_spec)  # a bad spec fails before ROS starts
    spin_alone(lambda: CameraNode(camera, max_fps=max_fps))
