"""The trial recorder's engine (bridge.recording.recorder) on the bytes a raw subscription receives (rclpy
serialization of our own messages, real uoc_tabletop frames), read back with the reference MCAP
reader (mcap + mcap-ros2-support), rosbags, PyAV, and the camera registry."""

from __future__ import annotations

import math
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from pointlab.benchmark.points import PointEntry
from pointlab.bridge.recording.recorder import Recorder
from pointlab.bridge.recording.layout import RecordingConfig, RecordingLayout, recording_of
from pointlab.bridge.ros.msgs import TOPICS
from pointlab.bridge.ros.payloads import ArmCommand, ArmResult, PointAnswer, PointFrame
from pointlab.perception import CameraSourceError, make_camera

from tests.bridge.recording import cdr

FPS = 25  # 40 ms exactly: the 5 fps (bag) and 10 fps (clip) windows hold whole captures
PERIOD_NS = 1_000_000_000 // FPS
T0 = 1_700_000_000_000_000_000  # a whole second: windows start at captures 0, 5, 10...
FIRST, SECOND = (200.4, 150.6), (420.0, 300.0)  # the agent's points, pixels


@pytest.fixture(scope="module")
def stream_2s(real_frames):
    return list(trial_stream(real_frames, 2.0, T0))


@pytest.fixture(scope="module")
def recorded_2s(tmp_path_factory, stream_2s):
    """One 2 s trial recorded (shared by the tests that only read it), every kept colour frame's depth
    kept too (``depth_fps=None``; the default's 1 fps depth: ``test_depth_is_kept_at_most_at_the_colour_rate``)."""
    root = tmp_path_factory.mktemp("recordings")
    return root, record(root, stream_2s, depth_fps=None)


def feed(rec: Recorder, items, deadline_s: float = 60.0) -> None:
    """Offer ``(topic, cdr)`` items as a raw subscription would, letting the engine keep up."""
    deadline = time.monotonic() + deadline_s
    for topic, data in items:
        while rec.queued >= rec.config.max_queued // 2:
            assert time.monotonic() < deadline, "the engine did not keep up"
            time.sleep(0.002)
        rec.offer(topic, time.time_ns(), data)


def trial_stream(frames, seconds: float, t0_ns: int, *, answer_at_s: float = 1.0, request_id: str = "req1"):
    """A camera at 25 fps cycling ``frames``; the answer after ``answer_at_s``, the arm command
    0.1 s later and its result at the end."""
    n = int(seconds * FPS)
    i_answer = int(answer_at_s * FPS)
    ans = PointAnswer(
        request_id=request_id,
        raw_answer="<points/>",
        width=640,
        height=480,
        points=[PointEntry(u_px=FIRST[0], v_px=FIRST[1]), PointEntry(u_px=SECOND[0], v_px=SECOND[1])],
        points_px=[FIRST, SECOND],
    )
    for i in range(n):
        f = frames[i % len(frames)]
        yield from cdr.capture(f.color, f.depth, f.intrinsics, t0_ns + i * PERIOD_NS)
        if i == i_answer:
            yield TOPICS["point_answer"], cdr.string(ans)
        if i == i_answer + 3:
            yield (
                TOPICS["arm_command"],
                cdr.string(
                    ArmCommand(request_id=request_id, action="pick", target_base_m=(0.3, 0.0, 0.02), session="s")
                ),
            )
    yield TOPICS["arm_result"], cdr.string(ArmResult(request_id=request_id, action="pick", outcome="done"))


def record(root: Path, items, trial_id: str = "trial1", **config):
    rec = Recorder(root, RecordingConfig(**{"min_free_mb": 0, **config}))
    try:
        rec.begin(trial_id, request_id="req1")
        feed(rec, items)
        return rec.end(trial_id)
    finally:
        rec.close()


def one_capture(rec: Recorder, trial_id: str, f):
    """Record one capture of frame ``f`` as trial ``trial_id``, then close ``rec``; the Recording."""
    try:
        rec.begin(trial_id)
        feed(rec, cdr.capture(f.color, f.depth, f.intrinsics, T0))
        return rec.end(trial_id)
    finally:
        rec.close()


def read_mcap(path: Path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        profile = reader.get_header().profile
        msgs = [
            (ch.topic, m.log_time, m.publish_time, dec)
            for _schema, ch, m, dec in reader.iter_decoded_messages(log_time_order=False)
        ]
    return profile, msgs


def decode_clip(path: Path):
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        frames = []
        for f in c.decode(s):
            assert f.pts is not None and f.time_base is not None  # an MP4's frames are stamped
            frames.append((float(f.pts * f.time_base), f.to_ndarray(format="rgb24")))
        return s.codec_context.name, (s.width, s.height), frames


def is_magenta(px) -> bool:
    r, g, b = (int(x) for x in px)
    return r > 200 and g < 90 and b > 200


def is_cyan(px) -> bool:
    r, g, b = (int(x) for x in px)
    return r < 90 and g > 200 and b > 200


def stamp(m) -> int:
    return m.header.stamp.sec * 10**9 + m.header.stamp.nanosec


COLOR_Z, DEPTH_Z = TOPICS["color"] + "/compressed", TOPICS["depth"] + "/compressedDepth"


def psnr(a, b) -> float:
    return 10 * math.log10(255**2 / np.mean((a.astype(float) - b.astype(float)) ** 2))


def test_recording_opens_with_the_mcap_reader_in_time_order(recorded_2s, real_frames):
    import cv2

    root, r = recorded_2s
    assert r.complete and r.ended_by == "end" and r.errors == [], r.errors
    assert (r.bag, r.mcap, r.clip) == ("trial1", "trial1/trial1.mcap", "trial1.mp4")
    profile, msgs = read_mcap(root / r.mcap)
    assert profile == "ros2"
    # by default images are stored as image_transport's compressed forms, on its topic names
    assert not {TOPICS["color"], TOPICS["depth"]} & {t for t, *_ in msgs}
    colour = [m for topic, _l, _p, m in msgs if topic == COLOR_Z]
    depth = [m for topic, _l, _p, m in msgs if topic == DEPTH_Z]
    # 2 s of captures at 25 fps kept at 5 fps by stamp: the first of every 200 ms, captures 0, 5, ... 45
    assert len(colour) == r.color_frames == 10 and len(depth) == r.depth_frames == 10
    assert [stamp(m) for m in colour] == [T0 + 5 * k * PERIOD_NS for k in range(10)]  # the publisher's stamps
    assert [stamp(m) for m in depth] == [stamp(m) for m in colour]  # depth kept with its own colour frame
    assert colour[0].format == "rgb8; jpeg compressed bgr8" and depth[0].format == "16UC1; compressedDepth png"
    assert colour[0].header.frame_id == "camera_color_optical_frame"
    # plain OpenCV decodes them: the JPEG directly, the depth PNG after image_transport's 12-byte header
    bgr = cv2.imdecode(np.frombuffer(bytes(colour[1].data), np.uint8), cv2.IMREAD_COLOR)
    assert bgr.shape == (480, 640, 3) and psnr(bgr[:, :, ::-1], real_frames[5].color) > 30.0
    d = cv2.imdecode(np.frombuffer(bytes(depth[1].data)[12:], np.uint8), cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(d, real_frames[5].depth)  # lossless
    # log times are reception times, in file order; every camera_info (25 fps) kept
    logs = [log for _t, log, _p, _m in msgs]
    assert logs == sorted(logs) and logs[0] >= r.started_unix_ns
    assert sum(t == TOPICS["camera_info"] for t, *_ in msgs) == 50
    order = [t for t, *_ in msgs if t in (TOPICS["point_answer"], TOPICS["arm_command"], TOPICS["arm_result"])]
    assert order == [TOPICS["point_answer"], TOPICS["arm_command"], TOPICS["arm_result"]]
    cmd = next(m for t, _l, _p, m in msgs if t == TOPICS["arm_command"])
    assert ArmCommand.model_validate_json(cmd.data).target_base_m == (0.3, 0.0, 0.02)
    assert r.messages[TOPICS["arm_command"]] == 1
    assert r.mcap_bytes == sum(p.stat().st_size for p in (root / r.bag).iterdir())


def test_rosbags_reads_the_bag_folder_and_the_record_beside_it(recorded_2s):
    from rosbags.highlevel import AnyReader

    root, r = recorded_2s
    with AnyReader([root / r.bag]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        types = {c.topic: c.msgtype for c in reader.connections}
    assert counts[COLOR_Z] == r.color_frames == 10 and counts[DEPTH_Z] == r.depth_frames == 10
    assert types[COLOR_Z] == types[DEPTH_Z] == "sensor_msgs/msg/CompressedImage"
    assert types[TOPICS["joint_states"]] == "sensor_msgs/msg/JointState"
    assert counts[TOPICS["joint_states"]] == 0  # registered, silent in this trial
    layout = RecordingLayout(root)
    assert layout.load("trial1") == r
    assert recording_of({"id": 3, "trial_uid": "trial1"}, layout) == r  # a row without the column
    assert recording_of({"id": 3, "trial_uid": "x", "recording": r.model_dump()}, layout) == r


def test_raw_images_are_the_bytes_that_arrived_and_ten_times_larger(tmp_path, stream_2s, recorded_2s, real_frames):
    root, compressed = recorded_2s
    r = record(tmp_path, stream_2s, images="raw", depth_fps=None)
    _profile, msgs = read_mcap(tmp_path / r.mcap)
    colour = [m for topic, _l, _p, m in msgs if topic == TOPICS["color"]]
    assert len(colour) == r.color_frames == 10 and colour[0].encoding == "rgb8"
    np.testing.assert_array_equal(np.frombuffer(colour[1].data, np.uint8).reshape(480, 640, 3), real_frames[5].color)
    # the same 2 s (10 colour + 10 depth frames of a real, noisy RealSense scene; raw is already
    # zstd-chunked): JPEG colour alone is about 8x smaller, lossless depth about 3x, so the whole bag
    # at least 4x (measured: 7.9 MB -> 1.6 MB; per sim trial, docs/recording.md)
    print(f"raw {r.mcap_bytes / 1e6:.2f} MB, compressed {compressed.mcap_bytes / 1e6:.2f} MB")
    assert compressed.mcap_bytes * 4 <= r.mcap_bytes


def test_clip_decodes_with_the_points_drawn_after_the_answer(recorded_2s):
    root, r = recorded_2s
    codec, size, frames = decode_clip(root / r.clip)
    assert codec == "h264" and size == (640, 480)
    assert len(frames) == r.clip_frames == 20  # 2 s at 10 fps
    # paced by the stamps: the first capture (every 40 ms) of each 100 ms window, 0, 120, 200, 320... ms
    assert [t for t, _ in frames] == pytest.approx([math.ceil(100 * k / 40) * 0.040 for k in range(20)], abs=1e-3)
    assert r.points_drawn
    u, v = round(FIRST[0]), round(FIRST[1])
    u2, v2 = round(SECOND[0]), round(SECOND[1])
    for t, img in frames:
        if t < 0.99:  # before the answer arrived (after capture 25, at 1.0 s)
            assert not is_magenta(img[v, u]) and not is_cyan(img[v2, u2]), t
        elif t > 1.05:
            assert is_magenta(img[v, u]) and is_cyan(img[v2, u2]), (t, img[v, u], img[v2, u2])
            assert is_magenta(img[v + 7, u]) and not is_magenta(img[v, u + 16])  # disc of 9 px, rings to 13


@pytest.mark.slow  # two playbacks of 10 frame pairs: about 3 s on a loaded machine
def test_the_recording_plays_back_through_the_camera_registry(recorded_2s, real_frames):
    root, r = recorded_2s
    for spec in (f"bag:{root / r.bag}#rate=max,loop=0", f"bag:{root / r.mcap}#rate=max,loop=0"):
        got = []
        with make_camera(spec) as cam:
            with pytest.raises(CameraSourceError, match="end of recording"):
                while True:
                    got.append(cam.read())
        assert len(got) == r.color_frames == 10
        for k, f in enumerate(got):
            src = real_frames[(5 * k) % len(real_frames)]
            assert f.stamp_ns == T0 + 5 * k * PERIOD_NS and f.index == k
            assert psnr(f.color, src.color) > 30.0  # JPEG: lossy, within the visually lossless bar
            np.testing.assert_array_equal(f.depth, src.depth)  # millimetres both
            assert f.depth_scale_m == 0.001 and f.intrinsics == src.intrinsics


def test_answers_of_other_requests_are_not_drawn(tmp_path, real_frames):
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0))
    try:
        rec.begin("t2", request_id="mine")
        feed(rec, trial_stream(real_frames, 1.0, T0, answer_at_s=0.2, request_id="other"))
        r = rec.end("t2")
    finally:
        rec.close()
    assert not r.points_drawn and r.complete
    _, _, frames = decode_clip(tmp_path / r.clip)
    assert not any(is_magenta(img[round(FIRST[1]), round(FIRST[0])]) for _, img in frames)


def test_corrupt_messages_give_an_incomplete_recording_and_no_crash(tmp_path, real_frames):
    from rclpy.serialization import serialize_message

    from pointlab.bridge.ros.msgs import rgb_to_image

    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0))
    t0 = T0
    f = real_frames[0]
    good = cdr.color(f.color, t0)
    lying = rgb_to_image(f.color[:10], t0 + 400_000_000, "camera_color_optical_frame")
    lying.height = 480  # says 480 rows of 1920 bytes; the buffer holds 10
    try:
        rec.begin("t3")
        feed(
            rec,
            [
                (TOPICS["camera_info"], cdr.info(f.intrinsics, t0)),
                (TOPICS["depth"], cdr.depth(f.depth, t0)),
                (TOPICS["color"], good),
                (TOPICS["color"], cdr.color(f.color, t0 + 200_000_000)[:1000]),  # truncated CDR
                (TOPICS["color"], serialize_message(lying)),  # decodes, but the buffer does not match
                (TOPICS["arm_command"], b"\x00\x01\x00\x00\xff\xff"),  # garbage
                (TOPICS["arm_command"], cdr.string({"request_id": "x", "action": "home"})),
            ],
        )
        r = rec.end("t3")
        # the engine lives on: the next trial records normally
        rec.begin("t4")
        feed(rec, cdr.capture(f.color, f.depth, f.intrinsics, t0 + 10**9))
        r4 = rec.end("t4")
    finally:
        rec.close()
    assert not r.complete and r.ended_by == "end"
    assert any("2 message(s) on /camera/camera/color/image_raw" in e for e in r.errors), r.errors
    assert any("/pointlab/arm/command" in e for e in r.errors)
    assert r.color_frames == 1 and r.messages[TOPICS["arm_command"]] == 1  # the good ones are kept
    _, msgs = read_mcap(tmp_path / r.mcap)  # and the file is whole
    assert sum(t == COLOR_Z for t, *_ in msgs) == 1
    assert r4.complete and r4.color_frames == 1


def test_an_unwritable_folder_gives_an_incomplete_recording_and_no_crash(tmp_path, real_frames):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    r = one_capture(Recorder(blocker / "recordings", RecordingConfig(min_free_mb=0)), "t5", real_frames[0])
    assert not r.complete and r.ended_by == "failed" and r.mcap is None and r.clip is None
    assert "cannot be made" in r.errors[0]


def test_a_full_disk_gives_an_incomplete_recording_and_no_crash(tmp_path, stream_2s):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        (mnt / "store.sqlite").write_bytes(b"")  # the store beside the recordings
        r = record(mnt / "recordings", stream_2s, depth_fps=None)  # 10 colour + depth pairs: ~1.6 MB bag, 0.4 MB clip
        left = sorted(p.name for p in (mnt / "recordings").iterdir())
        (mnt / "store.sqlite").write_bytes(b"x" * 100_000)  # the space went back to the store
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert not r.complete and r.mcap is None, r
    assert any("No space left" in e or "Errno 28" in e for e in r.errors), r.errors
    assert "trial1" not in left  # the partial bag was removed


def test_below_the_free_space_floor_nothing_is_recorded(tmp_path, real_frames):
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=1e12))  # an exabyte
    try:
        rec.begin("t6")
        r = rec.end("t6")
    finally:
        rec.close()
    assert r.ended_by == "disk_floor" and not r.complete and "below the floor" in r.errors[0]
    assert not (tmp_path / "t6").exists()


def test_a_recording_nobody_ends_stops_at_the_maximum_duration(tmp_path, real_frames):
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0, max_duration_s=0.3))
    f = real_frames[0]
    try:
        rec.begin("t7")
        feed(rec, cdr.capture(f.color, f.depth, f.intrinsics, T0))
        deadline = time.monotonic() + 10
        while rec.recording("t7") is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert not rec.recording_now
        late = rec.end("t7")
    finally:
        rec.close()
    assert late.ended_by == "max_duration" and late.duration_s == pytest.approx(0.3, abs=1e-3)
    assert not late.complete and "0.3 s" in late.errors[0] and late.color_frames == 1


def test_a_full_queue_drops_messages_instead_of_waiting(tmp_path, real_frames):
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0, max_queued=4))
    f = real_frames[0]
    items = [m for i in range(100) for m in cdr.capture(f.color, f.depth, f.intrinsics, i * PERIOD_NS)]
    try:
        rec.begin("t8")
        for topic, data in items:  # as fast as the callbacks can: nothing waits for the engine
            rec.offer(topic, time.time_ns(), data)
        r = rec.end("t8")
    finally:
        rec.close()
    assert r.dropped > 0 and r.complete


def test_bad_ids_and_repeats_are_refused(tmp_path):
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0))
    try:
        for bad in ("../x", "a/b", "", "a.b"):
            with pytest.raises(ValueError):
                rec.begin(bad)
        rec.begin("t9")
        with pytest.raises(ValueError, match="already"):
            rec.begin("t9")
        assert rec.end("never-begun") is None
        rec.end("t9")
    finally:
        rec.close()
    with pytest.raises(RuntimeError, match="closed"):
        rec.begin("t10")


def test_tf_static_carries_the_calibrations_camera_pose(tmp_path, real_frames):
    """A camera 0.5 m in front of the base and 0.6 m up, looking straight down: its optical frame is
    the base frame turned 180 degrees about x (z down, y flipped), whose unit quaternion is
    (x, y, z, w) = (1, 0, 0, 0) by hand (angle pi about x: (sin(pi/2), 0, 0, cos(pi/2)))."""
    from pointlab.bridge.recording.static_tf import StaticTransform

    T = np.array([[1.0, 0, 0, 0.5], [0, -1.0, 0, 0.0], [0, 0, -1.0, 0.6], [0, 0, 0, 1]])
    rec = Recorder(
        tmp_path,
        RecordingConfig(min_free_mb=0),
        static_transforms=[StaticTransform("link_base", "camera_color_optical_frame", T)],
    )
    r = one_capture(rec, "tf1", real_frames[0])
    _, msgs = read_mcap(tmp_path / r.mcap)
    (tf,) = [m for t, _l, _p, m in msgs if t == "/tf_static"]
    (ts,) = tf.transforms
    assert (ts.header.frame_id, ts.child_frame_id) == ("link_base", "camera_color_optical_frame")
    tr, q = ts.transform.translation, ts.transform.rotation
    assert [tr.x, tr.y, tr.z] == pytest.approx([0.5, 0.0, 0.6], abs=1e-6)
    sign = 1 if q.x > 0 else -1  # q and -q are the same rotation
    assert [sign * q.x, sign * q.y, sign * q.z, sign * q.w] == pytest.approx([1, 0, 0, 0], abs=1e-6)
    assert r.messages["/tf_static"] == 1
    # the bag says /tf_static was offered latched, as tf2's static broadcaster does: ros2 bag play
    # then republishes it transient local, so a late tf2 listener still gets it
    from rosbags.interfaces import QosDurability
    from rosbags.rosbag2 import Reader

    with Reader(tmp_path / r.bag) as reader:
        qos = {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
    assert [q.durability for q in qos["/tf_static"]] == [QosDurability.TRANSIENT_LOCAL]
    assert qos["/camera/camera/color/camera_info"] == []


def test_a_static_transform_that_is_not_rigid_is_refused_up_front(tmp_path):
    from pointlab.bridge.recording.static_tf import StaticTransform

    scaled = np.diag([2.0, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="not proper"):
        Recorder(tmp_path, RecordingConfig(min_free_mb=0), static_transforms=[StaticTransform("a", "b", scaled)])


def test_a_recording_that_begins_between_a_captures_depth_and_colour_keeps_them_together(tmp_path, real_frames):
    """The camera publishes a capture's depth, then its colour: a recording that begins between the
    two still has that capture's depth beside its colour (playback skips a colour frame without
    depth); a recording that begins between two captures starts with no lone depth."""
    f = real_frames[0]
    info, depth, colour = cdr.capture(f.color, f.depth, f.intrinsics, T0)
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0))
    try:
        rec.offer(*info[:1], time.time_ns(), info[1])
        rec.offer(depth[0], time.time_ns(), depth[1])
        rec.begin("mid")  # after the depth, before the colour
        feed(rec, [colour])
        mid = rec.end("mid")
        rec.begin("between")  # the capture is complete: its depth must not open the next recording
        nxt = cdr.capture(f.color, f.depth, f.intrinsics, T0 + 10**9)
        feed(rec, nxt)
        between = rec.end("between")
    finally:
        rec.close()
    _, msgs = read_mcap(tmp_path / mid.mcap)
    stamps = {t: [stamp(m) for tt, _l, _p, m in msgs if tt == t] for t in (COLOR_Z, DEPTH_Z)}
    assert stamps[COLOR_Z] == stamps[DEPTH_Z] == [T0]
    _, msgs = read_mcap(tmp_path / between.mcap)
    assert [stamp(m) for t, _l, _p, m in msgs if t == DEPTH_Z] == [T0 + 10**9]


def test_the_cameras_jpeg_is_stored_as_it_arrived_and_feeds_the_clip(tmp_path, real_frames):
    # encode once: the camera's compressed colour is written byte for byte (a second encoding of
    # a decoded JPEG never gives the same bytes), its raw twin of the same capture is not kept a
    # second time, and the clip still gets its frames (decoded from the JPEG)
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0, depth_fps=None))
    sent = {}
    items = []
    for i in range(10):  # 0.4 s at 25 fps: bag windows of 200 ms hold captures 0 and 5
        f, s = real_frames[i % len(real_frames)], T0 + i * PERIOD_NS
        jpeg_cdr, sent[s] = cdr.color_jpeg(f.color, s)
        items += cdr.capture(f.color, f.depth, f.intrinsics, s)[:2]
        items += [(TOPICS["color_compressed"], jpeg_cdr), (TOPICS["color"], cdr.color(f.color, s))]
    try:
        rec.begin("jpeg1")
        feed(rec, items)
        r = rec.end("jpeg1")
    finally:
        rec.close()
    assert r.complete and r.color_frames == 2 and r.depth_frames == 2 and r.clip_frames == 4
    _profile, msgs = read_mcap(tmp_path / r.mcap)
    stored = [
        (m.header.stamp.sec * 10**9 + m.header.stamp.nanosec, bytes(m.data))
        for topic, _l, _p, m in msgs
        if topic == TOPICS["color_compressed"]
    ]
    assert [s for s, _ in stored] == [T0, T0 + 5 * PERIOD_NS]
    assert all(data == sent[s] for s, data in stored)
    assert not [t for t, *_ in msgs if t == TOPICS["color"]]


def test_a_raw_recording_keeps_the_raw_colour_only(tmp_path, real_frames):
    f = real_frames[0]
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0, images="raw"))
    try:
        rec.begin("raw1")
        feed(
            rec,
            cdr.capture(f.color, f.depth, f.intrinsics, T0)
            + [(TOPICS["color_compressed"], cdr.color_jpeg(f.color, T0 + 1)[0])],
        )
        r = rec.end("raw1")
    finally:
        rec.close()
    _profile, msgs = read_mcap(tmp_path / r.mcap)
    assert [t for t, *_ in msgs if "image_raw" in t] == [TOPICS["depth"], TOPICS["color"]]


def test_the_arm_is_in_the_recording_as_robot_state_publisher_would_put_it(tmp_path, real_frames):
    """``/robot_description`` once (latched) and one ``/tf`` per ``/joint_states`` whose six
    transforms chain to the flange pose the sim's ikpy kinematics gives for those joints."""
    from rosbags.interfaces import QosDurability
    from rosbags.rosbag2 import Reader
    from scipy.spatial.transform import Rotation
    from sensor_msgs.msg import JointState

    from pointlab.bridge.ros.msgs import ns_to_stamp
    from pointlab.sim_mock.kinematics import Lite6Kinematics

    q = [0.1, 0.4, 1.2, -0.3, 0.8, 0.5]
    # velocity and effort filled: rclpy's serialize_message appends 8 stray bytes after two empty
    # trailing sequences, which rosbags refuses (bytes from a DDS subscription are exact)
    js = JointState(name=[f"joint{i}" for i in range(1, 7)], position=q, velocity=[0.0] * 6, effort=[0.0] * 6)
    js.header.stamp = ns_to_stamp(T0 + 20_000_000)
    other = JointState(name=["finger"], position=[0.01], velocity=[0.0], effort=[0.0])  # not the arm's: no /tf
    f = real_frames[0]
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0))
    try:
        rec.begin("arm1")
        feed(
            rec,
            cdr.capture(f.color, f.depth, f.intrinsics, T0)
            + [(TOPICS["joint_states"], cdr._ser(js)), (TOPICS["joint_states"], cdr._ser(other))],
        )
        r = rec.end("arm1")
    finally:
        rec.close()
    _, msgs = read_mcap(tmp_path / r.mcap)
    (desc,) = [m for t, _l, _p, m in msgs if t == "/robot_description"]
    assert '<robot name="lite6">' in desc.data and "package://xarm_description/meshes/lite6" in desc.data
    (tf,) = [m for t, _l, _p, m in msgs if t == "/tf"]
    assert [(ts.header.frame_id, ts.child_frame_id) for ts in tf.transforms][0] == ("link_base", "link1")
    assert all(ts.header.stamp.nanosec == 20_000_000 for ts in tf.transforms)
    T = np.eye(4)
    for ts in tf.transforms:
        M = np.eye(4)
        r_ = ts.transform.rotation
        M[:3, :3] = Rotation.from_quat([r_.x, r_.y, r_.z, r_.w]).as_matrix()
        M[:3, 3] = [ts.transform.translation.x, ts.transform.translation.y, ts.transform.translation.z]
        T = T @ M
    assert T == pytest.approx(Lite6Kinematics().fk(q), abs=1e-6)
    with Reader(tmp_path / r.bag) as reader:
        qos = {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
    assert [p.durability for p in qos["/robot_description"]] == [QosDurability.TRANSIENT_LOCAL]


def test_the_foxglove_layout_names_only_topics_a_recording_holds():
    """docs/foxglove/pointlab_trial_layout.json: valid JSON, every panel in the layout tree is
    configured, and every topic it names is written by the recorder (a renamed topic fails here)."""
    import json
    import re

    from pointlab.bridge.recording.recorder import bag_topics
    from pointlab.bridge.recording.robot_tf import ROBOT_DESCRIPTION, TF

    layout = json.loads((Path(__file__).parents[3] / "docs" / "foxglove" / "pointlab_trial_layout.json").read_text())

    def leaves(node):
        return [node] if isinstance(node, str) else leaves(node["first"]) + leaves(node["second"])

    assert sorted(leaves(layout["layout"])) == sorted(layout["configById"])
    named = set(re.findall(r'"(/[A-Za-z_/]+?)(?:\.[^"]*)?"', json.dumps(layout["configById"])))
    recorded = set(bag_topics(RecordingConfig())) | {TF, ROBOT_DESCRIPTION, "/tf_static"}
    assert named and named <= recorded, named - recorded


def test_the_points_and_the_target_are_drawn_for_a_viewer(tmp_path, real_frames):
    """The trial's answer becomes ``foxglove_msgs/ImageAnnotations`` circles over the colour image
    (Foxglove's pixel origin is the corner of the first pixel: ours + 0.5), the first point large
    and magenta, stamped with the frame the agent saw; the target ``PointStamped`` becomes a 2 cm
    sphere ``Marker`` in its frame. Read back by mcap-ros2-support (from the schemas in the file)
    and by rosbags' AnyReader."""
    from geometry_msgs.msg import PointStamped
    from rosbags.highlevel import AnyReader

    from pointlab.bridge.ros.msgs import ns_to_stamp

    seen_ns = T0 + 40_000_000
    ans = PointAnswer(
        request_id="req1",
        width=640,
        height=480,
        stamp_ns=seen_ns,
        points=[PointEntry(u_px=FIRST[0], v_px=FIRST[1]), PointEntry(u_px=SECOND[0], v_px=SECOND[1])],
        points_px=[FIRST, SECOND],
    )
    tgt = PointStamped()
    tgt.header.stamp, tgt.header.frame_id = ns_to_stamp(seen_ns), "link_base"
    tgt.point.x, tgt.point.y, tgt.point.z = 0.31, -0.05, 0.025
    f = real_frames[0]
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0))
    try:
        rec.begin("ann1", request_id="req1")
        feed(
            rec,
            cdr.capture(f.color, f.depth, f.intrinsics, T0)
            + [(TOPICS["point_answer"], cdr.string(ans)), (TOPICS["target"], cdr._ser(tgt))],
        )
        r = rec.end("ann1")
    finally:
        rec.close()
    assert r.complete, r
    _, msgs = read_mcap(tmp_path / r.mcap)
    (ann,) = [m for t, _l, _p, m in msgs if t == "/pointlab/points/annotations"]
    got = sorted(
        (c.diameter, c.position.x, c.position.y, (c.fill_color.r, c.fill_color.g, c.fill_color.b)) for c in ann.circles
    )
    assert got == [(8.0, 420.5, 300.5, (0.0, 1.0, 1.0)), (18.0, 200.9, 151.1, (1.0, 0.0, 1.0))]
    assert ann.circles[-1].diameter == 18.0  # the first point drawn last, on top
    assert {(c.timestamp.sec, c.timestamp.nanosec) for c in ann.circles} == {(1_700_000_000, 40_000_000)}
    (mk,) = [m for t, _l, _p, m in msgs if t == "/pointlab/markers"]
    (sphere,) = mk.markers
    assert sphere.type == 2 and sphere.action == 0 and sphere.header.frame_id == "link_base"  # SPHERE, ADD
    assert (sphere.pose.position.x, sphere.pose.position.y, sphere.pose.position.z) == (0.31, -0.05, 0.025)
    assert (sphere.scale.x, sphere.scale.y, sphere.scale.z) == (0.02, 0.02, 0.02)
    with AnyReader([tmp_path / r.bag]) as reader:
        conns = [c for c in reader.connections if c.topic in ("/pointlab/points/annotations", "/pointlab/markers")]
        assert {c.msgtype for c in conns} == {
            "foxglove_msgs/msg/ImageAnnotations",
            "visualization_msgs/msg/MarkerArray",
        }
        decoded = {c.topic: reader.deserialize(raw, c.msgtype) for c, _t, raw in reader.messages(connections=conns)}
    assert len(decoded["/pointlab/points/annotations"].circles) == 2
    assert decoded["/pointlab/markers"].markers[0].pose.position.x == 0.31


def test_the_capture_the_agent_saw_is_kept_whole_whatever_the_rates(tmp_path, real_frames):
    """The pointing node shows the agent the latest frame, which arrived before the request began the
    recording, or (a busy machine) arrives after its point_frame: either way its colour and its depth
    (lossless) are in the bag, at their own reception times, besides the 5 fps colour and the 1 fps
    depth (each kept depth is a kept colour's capture)."""
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0, image_fps=5, depth_fps=1))

    def captures(t0, idx):
        for i in idx:
            f = real_frames[i % len(real_frames)]
            yield from cdr.capture(f.color, f.depth, f.intrinsics, t0 + i * PERIOD_NS)

    t1 = T0 + 10 * 10**9
    seen_early, seen_late = T0 + 3 * PERIOD_NS, t1 + 7 * PERIOD_NS
    try:
        feed(rec, captures(T0, range(5)))  # no recording yet: captures 0-4 only pass by
        rec.begin("early", request_id="req1")
        feed(rec, [(TOPICS["point_frame"], cdr.string(PointFrame(request_id="req1", stamp_ns=seen_early)))])
        feed(rec, captures(T0, range(5, 55)))  # 0.2 s to 2.16 s
        early = rec.end("early")
        rec.begin("late", request_id="req2")
        feed(rec, [(TOPICS["point_frame"], cdr.string(PointFrame(request_id="req2", stamp_ns=seen_late)))])
        feed(rec, captures(t1, range(15)))
        late = rec.end("late")
    finally:
        rec.close()
    begin_ns = early.started_unix_ns

    def kept(r):
        _, msgs = read_mcap(tmp_path / r.mcap)
        return (
            {t: [(stamp(m), log) for tt, log, _p, m in msgs if tt == t] for t in (COLOR_Z, DEPTH_Z)},
            {stamp(m): m for tt, _l, _p, m in msgs if tt == DEPTH_Z},
        )

    (got, depths) = kept(early)
    # colour: 200 ms windows from capture 5 on (5, 10, ..., 50) and the agent's capture 3; depth: 1 s
    # windows (captures 5, 25, 50) and capture 3
    assert sorted(s for s, _ in got[COLOR_Z]) == [T0 + i * PERIOD_NS for i in (3, *range(5, 55, 5))]
    assert sorted(s for s, _ in got[DEPTH_Z]) == [T0 + i * PERIOD_NS for i in (3, 5, 25, 50)]
    assert early.color_frames == 11 and early.depth_frames == 4 and early.agent_frame_ns == seen_early
    # the agent's frames carry the time they arrived: before the recording began
    assert all(log < begin_ns for s, log in got[COLOR_Z] + got[DEPTH_Z] if s == seen_early)
    import cv2

    png = bytes(depths[seen_early].data)[12:]  # compressedDepth: 12-byte ConfigHeader, then the PNG
    np.testing.assert_array_equal(
        cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_UNCHANGED), real_frames[3].depth
    )

    (got, _) = kept(late)
    assert sorted(s for s, _ in got[COLOR_Z]) == [t1 + i * PERIOD_NS for i in (0, 5, 7, 10)]
    assert sorted(s for s, _ in got[DEPTH_Z]) == [t1 + i * PERIOD_NS for i in (0, 7)]
    assert late.agent_frame_ns == seen_late and late.complete


def test_depth_is_kept_at_most_at_the_colour_rate(tmp_path, real_frames, stream_2s):
    """By default colour at 5 fps and depth at 1 fps, each depth a kept colour frame's capture;
    depth_fps above image_fps keeps each kept colour frame's depth (a depth needs a new colour window
    too); image_fps=None keeps every colour frame and depth_fps still thins the depth."""
    default = record(tmp_path / "default", stream_2s)
    _, msgs = read_mcap(tmp_path / "default" / default.mcap)
    assert [stamp(m) for t, _l, _p, m in msgs if t == DEPTH_Z] == [T0, T0 + 25 * PERIOD_NS]
    assert default.color_frames == 10
    stream = [
        item
        for i in range(25)
        for item in cdr.capture(
            real_frames[i % len(real_frames)].color,
            real_frames[i % len(real_frames)].depth,
            real_frames[0].intrinsics,
            T0 + i * PERIOD_NS,
        )
    ]
    fast = record(tmp_path / "fast", stream, image_fps=5, depth_fps=20)  # 1 s at 25 fps
    every = record(tmp_path / "every", stream, image_fps=None, depth_fps=2)
    assert (fast.color_frames, fast.depth_frames) == (5, 5)
    assert (every.color_frames, every.depth_frames) == (25, 2)  # windows of 500 ms: captures 0 and 13


def test_the_agent_s_capture_is_the_own_request_s_and_pins_start_afresh_per_recording(tmp_path, real_frames):
    """Found by a breaking session: another request's point_frame must not name the recording's capture;
    two trials shown the same capture (a stalled camera) both keep it; a recording that begins between a
    capture's depth and colour right after another recording keeps the colour too; a flood of
    point_frames cannot queue frames past a small bound."""
    rec = Recorder(tmp_path, RecordingConfig(min_free_mb=0, depth_fps=None))

    def cap(i):
        f = real_frames[i % len(real_frames)]
        return cdr.capture(f.color, f.depth, f.intrinsics, T0 + i * PERIOD_NS)

    def frame(req, i):
        return TOPICS["point_frame"], cdr.string(PointFrame(request_id=req, stamp_ns=T0 + i * PERIOD_NS))

    try:
        feed(rec, [x for i in range(4) for x in cap(i)])
        rec.begin("own", request_id="r2")
        feed(rec, [frame("r1", 1), frame("r2", 3)])  # an older request's point_frame comes first
        feed(rec, [x for i in range(4, 7) for x in cap(i)])
        own = rec.end("own")
        info, depth, colour = cap(7)
        feed(rec, [info, depth])
        rec.begin("same", request_id="r3")  # between capture 7's depth and colour, right after "own"
        feed(rec, [colour, frame("r3", 3)])  # shown capture 3 again: the camera stalled
        same = rec.end("same")
        feed(rec, [x for i in range(9, 41) for x in cap(i)])  # the buffer holds captures 9-40 (64 frames)
        rec.begin("flood", request_id="r4")
        feed(rec, [frame("r4", 9 + k % 30) for k in range(300)])  # point_frames over 30 of them
        flood = rec.end("flood")
    finally:
        rec.close()
    assert own.agent_frame_ns == T0 + 3 * PERIOD_NS and own.complete
    _, msgs = read_mcap(tmp_path / same.mcap)
    kept = sorted(
        (t.rsplit("/", 1)[1], round((stamp(m) - T0) / PERIOD_NS)) for t, _l, _p, m in msgs if t in (COLOR_Z, DEPTH_Z)
    )
    assert kept == [("compressed", 3), ("compressed", 7), ("compressedDepth", 3), ("compressedDepth", 7)]
    assert same.agent_frame_ns == T0 + 3 * PERIOD_NS
    assert flood.color_frames == flood.depth_frames == 8  # 8 captures pinned at most per recording
