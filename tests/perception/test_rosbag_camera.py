"""``bag:PATH`` on ROS 2 bags of the realsense-ros topics that pointlab did not write: an ``.mcap``
written by the reference writer (mcap-ros2-support, schemas from the ROS message files the wheels
install) and a sqlite3 rosbag2 folder (``ros2 bag record``'s default storage before Jazzy) written by
rosbags, both from real uoc_tabletop frames, in the orders realsense-ros may publish them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pointlab.perception import CameraSourceError, EndOfRecording, make_camera
from pointlab.perception.image_msgs import REALSENSE_TOPICS
from pointlab.perception.replay import list_frame_ids, load_rgbd_frame
from pointlab.perception.rosbag_camera import RosbagCamera

PERIOD_NS = 33_333_333
T0 = 1_700_000_000_000_000_000

# the ROS 2 message files the wheels install (sys.prefix/share/<package>/msg) and their dependencies
_DEPS = {
    "sensor_msgs/msg/Image": ["std_msgs/msg/Header", "builtin_interfaces/msg/Time"],
    "sensor_msgs/msg/CameraInfo": [
        "std_msgs/msg/Header",
        "builtin_interfaces/msg/Time",
        "sensor_msgs/msg/RegionOfInterest",
    ],
}


def ros2_msgdef(ros_type: str) -> str:
    """The concatenated definition rosbag2 stores for ``ros_type`` (``ros2msg`` encoding)."""

    def text(t):
        pkg, _, name = t.split("/")
        return (Path(sys.prefix) / "share" / pkg / "msg" / f"{name}.msg").read_text()

    parts = [text(ros_type)]
    for dep in _DEPS[ros_type]:
        pkg, _, name = dep.split("/")
        parts.append("=" * 80 + f"\nMSG: {pkg}/{name}\n" + text(dep))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def frames(uoc_tabletop):
    return [load_rgbd_frame(uoc_tabletop, i) for i in list_frame_ids(uoc_tabletop)[:4]]


def header(stamp_ns):
    return {"stamp": {"sec": stamp_ns // 10**9, "nanosec": stamp_ns % 10**9}, "frame_id": "camera_color_optical_frame"}


def image(arr, encoding, stamp_ns):
    return {
        "header": header(stamp_ns),
        "height": arr.shape[0],
        "width": arr.shape[1],
        "encoding": encoding,
        "is_bigendian": 0,
        "step": arr.strides[0],
        "data": arr.tobytes(),
    }


def info(intr, stamp_ns):
    return {
        "header": header(stamp_ns),
        "height": intr.height,
        "width": intr.width,
        "distortion_model": "plumb_bob",
        "d": [0.0] * 5,
        "k": [intr.fx, 0, intr.ppx, 0, intr.fy, intr.ppy, 0, 0, 1],
        "r": [1.0, 0, 0, 0, 1, 0, 0, 0, 1],
        "p": [intr.fx, 0, intr.ppx, 0, 0, intr.fy, intr.ppy, 0, 0, 0, 1, 0],
        "binning_x": 0,
        "binning_y": 0,
        "roi": {"x_offset": 0, "y_offset": 0, "height": 0, "width": 0, "do_rectify": False},
    }


def write_mcap(path: Path, events) -> None:
    """``events``: ``(topic key, log_ns, message dict)`` in file order."""
    from mcap_ros2.writer import Writer

    with open(path, "wb") as f:
        w = Writer(f)
        schemas = {t: w.register_msgdef(t, ros2_msgdef(t)) for t in _DEPS}
        types = {
            "color": "sensor_msgs/msg/Image",
            "depth": "sensor_msgs/msg/Image",
            "camera_info": "sensor_msgs/msg/CameraInfo",
        }
        for key, log_ns, msg in events:
            w.write_message(REALSENSE_TOPICS[key], schemas[types[key]], msg, log_time=log_ns, publish_time=log_ns)
        w.finish()


def realsense_ros_events(frames, *, depth_first_every=2, metres=False, period_ns=PERIOD_NS, stamped=True):
    """Captures every ``period_ns`` (30 fps) as realsense-ros publishes them: the colour and aligned-depth
    threads race, so depth comes before colour on some captures and after on others; camera_info with
    each colour. ``stamped=False``: every header stamp 0 (a publisher that never stamps)."""
    out = []
    for i, f in enumerate(frames):
        s = T0 + i * period_ns
        d = (
            (f.depth.astype("<f4") * np.float32(f.depth_scale_m), "32FC1")
            if metres
            else (f.depth.astype("<u2"), "16UC1")
        )
        h = s if stamped else 0
        c_ev = [("camera_info", s + 1000, info(f.intrinsics, h)), ("color", s + 2000, image(f.color, "rgb8", h))]
        d_ev = [("depth", s + 1500 if i % depth_first_every == 0 else s + 9000, image(d[0], d[1], h))]
        out += sorted(c_ev + d_ev, key=lambda e: e[1])
    return out


def play(spec: str):
    """Every frame of ``spec`` played once, unpaced (``#rate=max,loop=0``), and the camera."""
    got = []
    with make_camera(f"{spec}#rate=max,loop=0") as cam:
        with pytest.raises(CameraSourceError, match="end of recording"):
            while True:
                got.append(cam.read())
    return got, cam


def test_an_mcap_of_realsense_ros_topics_plays_back_frame_for_frame(tmp_path, frames):
    path = tmp_path / "lab.mcap"
    write_mcap(path, realsense_ros_events(frames))
    got, cam = play(f"bag:{path}")
    assert isinstance(cam, RosbagCamera) and cam.skipped == 0 and cam.bad_messages == 0
    assert [f.index for f in got] == [0, 1, 2, 3]
    for f, src, i in zip(got, frames, range(4)):
        assert f.stamp_ns == T0 + i * PERIOD_NS
        np.testing.assert_array_equal(f.color, src.color)
        np.testing.assert_array_equal(f.depth, src.depth)  # the files are millimetres, the topic too
        assert f.depth_scale_m == 0.001
        assert (f.intrinsics.fx, f.intrinsics.ppy) == (pytest.approx(612.937), pytest.approx(248.158))


def test_depth_in_metres_is_served_in_millimetres(tmp_path, frames):
    path = tmp_path / "metres.mcap"
    write_mcap(path, realsense_ros_events(frames[:2], metres=True))
    got, _ = play(f"bag:{path}")
    # 0.6 m -> 600 mm, exactly as stored (the float32 metres of whole millimetres round back)
    np.testing.assert_array_equal(got[0].depth, frames[0].depth)


def test_a_colour_frame_without_depth_is_skipped_not_served(tmp_path, frames):
    ev = realsense_ros_events(frames)
    lost = T0 + 2 * PERIOD_NS  # capture 2's depth was not recorded
    ev = [e for e in ev if not (e[0] == "depth" and e[2]["header"]["stamp"]["nanosec"] == lost % 10**9)]
    path = tmp_path / "gap.mcap"
    write_mcap(path, ev)
    got, cam = play(f"bag:{path}")
    assert [f.stamp_ns for f in got] == [T0, T0 + PERIOD_NS, T0 + 3 * PERIOD_NS] and cam.skipped == 1
    np.testing.assert_array_equal(got[2].color, frames[3].color)


def test_frames_before_the_first_camera_info_wait_for_it(tmp_path, frames):
    ev = realsense_ros_events(frames[:3])
    ev.remove(next(e for e in ev if e[0] == "camera_info"))  # capture 0's colour comes before any camera_info
    path = tmp_path / "late-info.mcap"
    write_mcap(path, ev)
    got, _ = play(f"bag:{path}")
    assert len(got) == 3 and got[0].intrinsics.fx == pytest.approx(612.937)


def test_a_sqlite3_rosbag2_folder_plays_too(tmp_path, frames):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)  # a Humble lab's bag
    T = ts.types

    def to_msg(key, d):
        hdr = T["std_msgs/msg/Header"](
            stamp=T["builtin_interfaces/msg/Time"](**d["header"]["stamp"]), frame_id=d["header"]["frame_id"]
        )
        if key == "camera_info":
            roi = T["sensor_msgs/msg/RegionOfInterest"](**d["roi"])
            return T["sensor_msgs/msg/CameraInfo"](
                header=hdr,
                height=d["height"],
                width=d["width"],
                distortion_model=d["distortion_model"],
                d=np.array(d["d"], float),
                k=np.array(d["k"], float),
                r=np.array(d["r"], float),
                p=np.array(d["p"], float),
                binning_x=0,
                binning_y=0,
                roi=roi,
            ), "sensor_msgs/msg/CameraInfo"
        return T["sensor_msgs/msg/Image"](
            header=hdr,
            height=d["height"],
            width=d["width"],
            encoding=d["encoding"],
            is_bigendian=0,
            step=d["step"],
            data=np.frombuffer(d["data"], np.uint8),
        ), "sensor_msgs/msg/Image"

    bag = tmp_path / "humble_bag"
    with Writer(bag, version=8, storage_plugin=StoragePlugin.SQLITE3) as w:
        conns = {}
        for key, log_ns, d in realsense_ros_events(frames[:2]):
            msg, typ = to_msg(key, d)
            if key not in conns:
                conns[key] = w.add_connection(REALSENSE_TOPICS[key], typ, typestore=ts)
            w.write(conns[key], log_ns, ts.serialize_cdr(msg, typ))
    got, _ = play(f"bag:{bag}")
    assert len(got) == 2
    np.testing.assert_array_equal(got[1].color, frames[1].color)
    np.testing.assert_array_equal(got[1].depth, frames[1].depth)
    # the .db3 alone holds the realsense-ros topics: it plays as a ROS 2 bag, not through pyrealsense2
    got, cam = play(f"bag:{next(bag.glob('*.db3'))}")
    assert isinstance(cam, RosbagCamera) and len(got) == 2


def test_a_bag_without_the_camera_topics_is_refused_with_what_it_has(tmp_path, frames):
    path = tmp_path / "colour-only.mcap"
    write_mcap(path, [e for e in realsense_ros_events(frames[:1]) if e[0] == "color"])
    with pytest.raises(
        CameraSourceError, match="lacks .*aligned_depth_to_color.*it has: /camera/camera/color/image_raw"
    ):
        make_camera(f"bag:{path}").connect()


def test_missing_and_unknown_bag_paths(tmp_path):
    with pytest.raises(CameraSourceError, match="not found"):
        make_camera(f"bag:{tmp_path / 'none.mcap'}").connect()
    with pytest.raises(CameraSourceError, match="expected a rosbag2 folder"):
        make_camera(f"bag:{tmp_path / 'clip.mp4'}")
    garbage = tmp_path / "garbage.mcap"
    garbage.write_bytes(b"not an mcap")
    with pytest.raises(CameraSourceError, match="cannot read ROS 2 bag"):
        make_camera(f"bag:{garbage}").connect()


# -- pacing, looping, the end ------------------------------------------------------------------------
def timed_reads(cam, n):
    """``n`` frames read from ``cam`` and a monotonic time (s) for each: when frame 0's read was
    called, and when each later read returned. Pacing counts from the moment frame 0 is served,
    which lies between the two: taking the call time for frame 0 makes "none early" hold however
    late a loaded machine returns the first read (its return time let a late frame 0 look like an
    early frame 1)."""
    t_call = time.monotonic()
    got = [(cam.read(), t_call)]
    for _ in range(n - 1):
        got.append((cam.read(), time.monotonic()))
    return got


def assert_none_early(got, rate):
    """Frame k came no earlier than ``(stamp_k - stamp_0) / rate`` after frame 0 (1 ms of slack for
    the clock starting just before the first read returned)."""
    (f0, t0) = got[0]
    for f, t in got[1:]:
        assert t - t0 >= (f.stamp_ns - f0.stamp_ns) / 1e9 / rate - 0.001, (f.index, t - t0)


@pytest.fixture(scope="module")
def span_bag(tmp_path_factory, frames):
    """7 captures of the real frames 250 ms apart: 1.5 s of header stamps."""
    path = tmp_path_factory.mktemp("span") / "span.mcap"
    write_mcap(path, realsense_ros_events([frames[i % len(frames)] for i in range(7)], period_ns=250_000_000))
    return path


@pytest.mark.slow  # plays 1.5 s at rate 1, then 0.75 s at rate 2
def test_a_bag_plays_at_the_recorded_rate_and_at_rate_2(span_bag):
    elapsed = {}
    for rate in ("1", "2", "max"):
        with make_camera(f"bag:{span_bag}#rate={rate},loop=0") as cam:
            got = timed_reads(cam, 7)
            with pytest.raises(EndOfRecording):
                cam.read()
        assert [f.stamp_ns for f, _ in got] == [T0 + i * 250_000_000 for i in range(7)]
        elapsed[rate] = got[-1][1] - got[0][1]
        if rate != "max":
            assert_none_early(got, float(rate))
    assert 1.0 <= elapsed["1"] <= 2.0, elapsed  # 1.5 s of stamps at rate 1
    assert 1.6 <= elapsed["1"] / elapsed["2"] <= 2.4, elapsed  # about half at rate 2
    assert elapsed["max"] < elapsed["1"] / 4, elapsed  # unpaced: as fast as it decodes


def test_the_default_is_paced_and_loops_with_stamps_moving_forward(tmp_path, frames):
    path = tmp_path / "short.mcap"
    write_mcap(path, realsense_ros_events(frames, period_ns=50_000_000))  # 4 captures, 150 ms
    with make_camera(f"bag:{path}") as cam:
        got = timed_reads(cam, 9)  # two laps and the first frame of a third
    assert [f.index for f, _ in got] == list(range(9))
    stamps = [f.stamp_ns for f, _ in got]
    # each lap continues one frame period (50 ms) after the last: time never goes back at the wrap
    assert stamps == [T0 + k * 50_000_000 for k in range(9)]
    for k, (f, _) in enumerate(got):
        np.testing.assert_array_equal(f.color, frames[k % 4].color)
    assert_none_early(got, 1.0)  # the wrap is paced too: 0.4 s for 8 periods
    assert got[-1][1] - got[0][1] >= 0.4 - 0.001


def test_without_loop_the_end_is_raised_after_the_last_frame_and_again(tmp_path, frames):
    path = tmp_path / "end.mcap"
    write_mcap(path, realsense_ros_events(frames[:2]))
    with make_camera(f"bag:{path}#rate=max,loop=0") as cam:
        assert [cam.read().index for _ in range(2)] == [0, 1]
        for _ in range(2):
            with pytest.raises(EndOfRecording, match=r"end of recording .*end\.mcap \(2 frames served\)"):
                cam.read()
    assert issubclass(EndOfRecording, CameraSourceError)  # callers of the old error still catch it


def test_a_looping_bag_with_no_playable_frame_ends_instead_of_spinning(tmp_path, frames):
    ev = [e for e in realsense_ros_events(frames[:2]) if e[0] != "depth"]  # no depth: nothing to serve
    path = tmp_path / "nodepth.mcap"
    write_mcap(path, ev + [("depth", T0 + 10**9, image(frames[0].depth.astype("<u2"), "16UC1", T0 + 10**9))])
    with make_camera(f"bag:{path}") as cam:
        with pytest.raises(EndOfRecording, match="0 frames served"):
            cam.read()


def test_unstamped_frames_are_paced_and_stamped_by_log_time(tmp_path, frames):
    path = tmp_path / "unstamped.mcap"
    write_mcap(path, realsense_ros_events(frames[:3], stamped=False, period_ns=40_000_000))
    with make_camera(f"bag:{path}#loop=0") as cam:
        got = timed_reads(cam, 3)
    # the colour messages' log times (capture + 2 us in realsense_ros_events)
    assert [f.stamp_ns for f, _ in got] == [T0 + k * 40_000_000 + 2000 for k in range(3)]
    assert_none_early(got, 1.0)


@pytest.mark.parametrize("suffix", [".mcap", ".bag"])
@pytest.mark.parametrize(
    "options, names",
    [
        ("rate=fast", "bag option rate"),
        ("rate=-2", "bag option rate"),
        ("loop=2", "bag option loop"),
        ("speed=2", "unknown bag option 'speed'"),
    ],
)
def test_a_bad_option_is_a_camera_source_error_naming_it(tmp_path, suffix, options, names):
    with pytest.raises(CameraSourceError, match=names):
        make_camera(f"bag:{tmp_path / ('rec' + suffix)}#{options}")


def test_options_reach_the_source_and_a_keyword_wins(tmp_path, frames):
    path = tmp_path / "opts.mcap"
    write_mcap(path, realsense_ros_events(frames[:1]))
    assert make_camera(f"bag:{path}").playback.rate == 1.0 and make_camera(f"bag:{path}").playback.loop
    cam = make_camera(f"bag:{path}#rate=max,loop=off")
    assert (cam.playback.rate, cam.playback.loop, cam.path) == (0.0, False, path)
    assert make_camera(f"bag:{path}#rate=2", rate=0.5).playback.rate == 0.5
