"""The camera node publishes a real recorded frame on the realsense-ros topics: rgb8 colour, 16UC1
depth in millimetres (converted from a D405-like 0.1 mm/unit source), CameraInfo from
camera_params.json, one stamp for all, frame id camera_color_optical_frame."""

from __future__ import annotations

import json
import shutil
import threading
import time

import numpy as np
import pytest
from PIL import Image as PILImage

from pointlab.bridge.ros.host import RosHost
from pointlab.bridge.ros.msgs import TOPICS, stamp_to_ns
from pointlab.perception.camera import make_camera
from pointlab.bridge.ros.camera_node import CameraNode

pytestmark = [pytest.mark.ros]


@pytest.fixture
def d405_folder(uoc_tabletop, tmp_path):
    """Frame 000003 with its depth declared in 0.1 mm units (as a D405 reports)."""
    for name in ("000003-color.png", "000003-depth.png"):
        shutil.copy(uoc_tabletop / name, tmp_path / name)
    params = json.loads((uoc_tabletop / "camera_params.json").read_text())
    params["depth_scale"] = 0.0001
    (tmp_path / "camera_params.json").write_text(json.dumps(params))
    return tmp_path


def _collect(host, n_each=2, timeout_s=10.0):
    from rclpy.node import Node
    from sensor_msgs.msg import CameraInfo, Image
    from std_msgs.msg import String

    probe = host.add(Node("probe", context=host.context))
    got = {"color": [], "depth": [], "camera_info": [], "frame_meta": []}
    lock = threading.Lock()

    def keep(key):
        def cb(m):
            with lock:
                got[key].append(m)
        return cb

    for key, typ in (("color", Image), ("depth", Image), ("camera_info", CameraInfo), ("frame_meta", String)):
        probe.create_subscription(typ, TOPICS[key], keep(key), 10)
    deadline = time.monotonic() + timeout_s
    while any(len(v) < n_each for v in got.values()):
        assert time.monotonic() < deadline, {k: len(v) for k, v in got.items()}
        time.sleep(0.02)
    return got


def test_real_frame_on_realsense_topics_with_depth_in_mm(ros_env, d405_folder, uoc_tabletop):
    host = RosHost()
    cam = make_camera(f"replay:{d405_folder}")
    node = host.add(CameraNode(cam, context=host.context, max_fps=20))
    host.start()
    node.start()
    try:
        got = _collect(host)
        assert node.get_parameter("depth_scale_m").value == 0.001
        assert node.get_parameter("device_depth_scale_m").value == 0.0001
    finally:
        node.stop()
        host.close()

    color, depth, info = got["color"][0], got["depth"][0], got["camera_info"][0]
    assert color.encoding == "rgb8" and (color.width, color.height, color.step) == (640, 480, 1920)
    assert depth.encoding == "16UC1" and (depth.width, depth.height, depth.step) == (640, 480, 1280)
    for m in (color, depth, info):
        assert m.header.frame_id == "camera_color_optical_frame"
    # the three topics of one frame carry one stamp
    stamps_c = {stamp_to_ns(m.header.stamp) for m in got["color"]}
    stamps_d = {stamp_to_ns(m.header.stamp) for m in got["depth"]}
    assert stamps_c & stamps_d

    rgb = np.frombuffer(color.data, np.uint8).reshape(480, 640, 3)
    png = np.asarray(PILImage.open(uoc_tabletop / "000003-color.png").convert("RGB"))
    assert np.array_equal(rgb, png)

    # raw PNG value 774 at (458, 250) in 0.1 mm units = 77.4 mm -> 77 on the millimetre topic;
    # a hole (0) stays 0
    d = np.frombuffer(depth.data, "<u2").reshape(480, 640)
    assert d[250, 458] == 77 and d[102, 150] == 0

    # camera_params.json: fx 612.937, fy 613.173, x_offset 322.549, y_offset 248.158
    assert list(info.k) == pytest.approx([612.937, 0, 322.549, 0, 613.173, 248.158, 0, 0, 1])
    assert (info.width, info.height, info.distortion_model) == (640, 480, "plumb_bob")
    assert list(info.d) == [0.0] * 5

    meta = json.loads(got["frame_meta"][0].data)
    assert meta["index"] == 3 and meta["device_depth_scale_m"] == 0.0001 and meta["depth_scale_m"] == 0.001


def test_broken_frames_do_not_stop_the_node(ros_env, d405_folder):
    # a corrupt depth PNG makes every read fail; the node keeps running and counts the errors
    (d405_folder / "000003-depth.png").write_bytes(b"not a png")
    host = RosHost()
    node = host.add(CameraNode(make_camera(f"replay:{d405_folder}"), context=host.context))
    host.start()
    node.start()
    try:
        deadline = time.monotonic() + 5
        while node.read_errors < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert node.frames_published == 0 and node._thread.is_alive()
    finally:
        node.stop()
        host.close()


def test_an_unexpected_read_error_does_not_end_the_live_view(ros_env, uoc_tabletop):
    # A source that raises something other than PerceptionError (a driver's RuntimeError, cv2.error,
    # a bug) used to end the publishing thread silently: the live view froze for good.
    class Flaky:
        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def connect(self):
            self.inner.connect()

        def disconnect(self):
            self.inner.disconnect()

        def read(self):
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("Frame didn't arrive within 5000")
            return self.inner.read()

    host = RosHost()
    node = host.add(CameraNode(Flaky(make_camera(f"replay:{uoc_tabletop}#000003")), context=host.context))
    host.start()
    node.start()
    try:
        deadline = time.monotonic() + 5
        while node.frames_published < 2:
            assert time.monotonic() < deadline and node._thread.is_alive(), node.read_errors
            time.sleep(0.05)
        assert node.read_errors == 1
    finally:
        node.stop()
        host.close()
