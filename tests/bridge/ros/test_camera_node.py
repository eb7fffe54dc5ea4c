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


# -- a recording as the camera (bag:) ---------------------------------------------------------------
def _bag(tmp_path, uoc_tabletop, n, period_ns):
    """An MCAP of ``n`` captures of the real frames, ``period_ns`` apart, as realsense-ros records them."""
    from pointlab.perception.replay import list_frame_ids, load_rgbd_frame
    from tests.perception.test_rosbag_camera import realsense_ros_events, write_mcap

    frames = [load_rgbd_frame(uoc_tabletop, i) for i in list_frame_ids(uoc_tabletop)[:2]]
    path = tmp_path / "rec.mcap"
    write_mcap(path, realsense_ros_events([frames[i % 2] for i in range(n)], period_ns=period_ns))
    return path


def test_the_end_of_a_recording_stops_the_node_with_one_line(ros_env, tmp_path, uoc_tabletop, caplog):
    # The old node logged "camera read failed" every 0.5 s for ever after the last frame.
    path = _bag(tmp_path, uoc_tabletop, 3, 33_333_333)
    host = RosHost()
    node = host.add(CameraNode(make_camera(f"bag:{path}#rate=max,loop=0"), context=host.context))
    host.start()
    with caplog.at_level("INFO", logger="pointlab.bridge.ros.camera_node"):
        node.start()
        try:
            deadline = time.monotonic() + 10
            while node._thread.is_alive():
                assert time.monotonic() < deadline, node.frames_published
                time.sleep(0.02)
            assert node.ended and node.frames_published == 3 and node.read_errors == 0
        finally:
            node.stop()
            host.close()
    lines = [r for r in caplog.records if r.name == "pointlab.bridge.ros.camera_node"]
    assert len(lines) == 1 and lines[0].exc_info is None, [r.getMessage() for r in lines]
    assert "end of recording" in lines[0].getMessage() and "3 frames published" in lines[0].getMessage()


def test_a_looping_recording_is_published_at_its_pace_each_frame_once(ros_env, tmp_path, uoc_tabletop):
    from rclpy.node import Node
    from std_msgs.msg import String

    path = _bag(tmp_path, uoc_tabletop, 4, 100_000_000)  # 10 fps, 0.3 s a lap
    host = RosHost()
    node = host.add(CameraNode(make_camera(f"bag:{path}"), context=host.context, max_fps=30))
    probe = host.add(Node("probe", context=host.context))
    metas, lock = [], threading.Lock()

    def keep(m):
        with lock:
            metas.append(json.loads(m.data))

    probe.create_subscription(String, TOPICS["frame_meta"], keep, 50)
    host.start()
    node.start()
    try:
        deadline = time.monotonic() + 15
        while len(metas) < 10:  # across two wraps
            assert time.monotonic() < deadline, len(metas)
            time.sleep(0.02)
        t0, n0 = time.monotonic(), node.frames_published
        while time.monotonic() - t0 < 0.5:  # a counting window, not a wait for a condition
            time.sleep(0.02)
        published = node.frames_published - n0
    finally:
        node.stop()
        host.close()
    with lock:
        got = list(metas)
    stamps, indices = [m["stamp_ns"] for m in got], [m["index"] for m in got]
    assert all(b > a for a, b in zip(stamps, stamps[1:])), stamps  # never back in time, never twice
    assert indices == list(range(indices[0], indices[0] + len(indices))), indices
    assert all(b - a == 100_000_000 for a, b in zip(stamps, stamps[1:]))  # the wrap is one period too
    # paced by the recording: about 5 in 0.5 s at 10 fps; 15 at the node's own 30 fps ceiling
    assert 2 <= published <= 8, published


def test_a_bad_bag_option_is_one_error_line_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    r = CliRunner().invoke(app, ["act", "node", "camera", "--camera", f"bag:{tmp_path / 'a.mcap'}#rate=fast"])
    assert r.exit_code == 2, r.output
    assert "bag option rate" in r.output and "Traceback" not in r.output


def test_the_colour_is_jpeg_encoded_once_and_the_live_view_serves_those_bytes(ros_env, uoc_tabletop):
    import cv2
    from rclpy.node import Node
    from sensor_msgs.msg import CompressedImage, Image

    from pointlab.bridge.ros.frames import RecentFrames
    from pointlab.bridge.ros.live_view import RosLiveView

    host = RosHost()
    node = host.add(CameraNode(make_camera(f"replay:{uoc_tabletop}"), context=host.context, max_fps=10))
    viewer = host.add(Node("viewer", context=host.context))
    live = RosLiveView(viewer, RecentFrames(viewer))
    probe = host.add(Node("probe", context=host.context))
    jpegs, raws, lock = {}, {}, threading.Lock()

    def on_jpeg(m):
        with lock:
            jpegs[stamp_to_ns(m.header.stamp)] = (m.format, m.data.tobytes())

    def on_raw(m):
        with lock:
            raws[stamp_to_ns(m.header.stamp)] = np.frombuffer(m.data, np.uint8).reshape(480, 640, 3).copy()

    probe.create_subscription(CompressedImage, TOPICS["color_compressed"], on_jpeg, 10)
    probe.create_subscription(Image, TOPICS["color"], on_raw, 10)
    host.start()
    node.start()
    try:
        deadline = time.monotonic() + 20.0
        while True:
            got = live.latest_jpeg()
            with lock:
                seen = got is not None and any(got[0] == data for _f, data in jpegs.values())
                both = sorted(set(jpegs) & set(raws))
            if seen and len(both) >= 3:
                break
            assert time.monotonic() < deadline, (got is not None, len(jpegs), len(raws))
            time.sleep(0.05)
    finally:
        node.stop()
        host.close()
    assert TOPICS["color_compressed"] == "/camera/camera/color/image_raw/compressed"  # image_transport's name
    assert node.jpeg_encode_s > 0
    for s in both:  # the JPEG of a stamp is its raw frame, visually lossless
        fmt, data = jpegs[s]
        assert fmt == "rgb8; jpeg compressed bgr8"
        rgb = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)[:, :, ::-1]
        mse = np.mean((rgb.astype(float) - raws[s]) ** 2)
        assert 10 * np.log10(255**2 / mse) > 30
