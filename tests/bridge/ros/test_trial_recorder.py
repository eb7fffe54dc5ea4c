"""TrialRecorder on a running sim session: real trials (sim-oracle through the OpenAI client, the
sim arm), recorded from the ROS graph, read back with the reference MCAP reader, PyAV and the camera
registry."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest

from tests.bridge.ros.helpers import run_trial

from pointlab.bridge.recording.recorder import LATCHED
from pointlab.bridge.recording.layout import RecordingConfig
from pointlab.bridge.ros.msgs import TOPICS
from pointlab.bridge.ros.payloads import ArmCommand, ArmResult, PointAnswer
from pointlab.bridge.ros.recorder import TrialRecorder
from pointlab.bridge.session import SessionConfig, start_session
from pointlab.perception import CameraSourceError, make_camera

from tests.bridge.recording.test_recorder import decode_clip, is_magenta, read_mcap, stamp

pytestmark = pytest.mark.slow


@pytest.fixture
def session(ros_env):
    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02)) as s:
        assert s.wait_ready(20)
        yield s


def recorded_trial(recorder, session, trial_id: str, instruction: str):
    recorder.begin(trial_id)
    res = run_trial(session, "sim-oracle", instruction)
    return res, recorder.end(trial_id)


def test_a_sim_trial_is_recorded_in_order_and_plays_back(session, tmp_path):
    # every kept colour frame's depth (the default keeps depth at 1 fps): each colour frame plays back
    recorder = TrialRecorder(session.host, RecordingConfig(dir=tmp_path, min_free_mb=0, depth_fps=None))
    try:
        assert recorder.wait_ready(20)
        deadline = time.monotonic() + 10
        while not all(recorder.engine.has_state(t) for t in LATCHED):  # the arm's 10 Hz state topics too
            assert time.monotonic() < deadline
            time.sleep(0.02)
        res, r = recorded_trial(recorder, session, "pick1", "pick up the red cube")
    finally:
        recorder.close()
    assert res.robot_outcome == "done", res
    assert r.complete, r.errors
    _, all_msgs = read_mcap(tmp_path / r.mcap)
    images = (TOPICS["color"] + "/compressed", TOPICS["depth"] + "/compressedDepth")
    # the capture the agent was shown is in the bag, colour and depth; it arrived before the request
    # and is written once its point_frame is seen, at its own reception time (out of file order)
    seen = [t for t, _l, _p, m in all_msgs if t in images and stamp(m) == r.agent_frame_ns]
    assert r.agent_frame_ns is not None and sorted(seen) == sorted(images), seen
    msgs = [x for x in all_msgs if not (x[0] in images and stamp(x[3]) == r.agent_frame_ns)]
    topics = [t for t, *_ in msgs]
    # the state the trial started from comes first (latched, received before the recording began),
    # with the newest depth when its capture's colour was still to come (depth goes out first)
    before = [t for t, log, _p, _m in msgs if log < r.started_unix_ns]
    assert topics[: len(before)] == before
    # (and the latched joint state's /tf, written with it)
    assert set(before) - {TOPICS["depth"] + "/compressedDepth", "/tf"} == set(LATCHED), before
    logs = [log for _t, log, _p, _m in msgs]
    assert logs == sorted(logs)
    colour = [m for t, _l, _p, m in msgs if t == TOPICS["color"] + "/compressed"]
    assert colour and colour[0].format == "rgb8; jpeg compressed bgr8"
    # the arm for a 3D viewer: its description once, and a /tf for every joint state of the arm node
    assert r.messages["/robot_description"] == 1 and r.messages["/tf"] == r.messages["/joint_states"] > 0
    assert r.messages["/camera/camera/aligned_depth_to_color/camera_info"] > 0
    # kept at 5 fps by stamp: at most one frame per 200 ms window (fewer when the machine is so
    # loaded that the camera or the recorder falls behind), in stamp order
    windows = [stamp(m) // 200_000_000 for m in colour]
    assert len(colour) >= 2 and windows == sorted(set(windows)), windows
    assert len(colour) <= 5 * r.duration_s + 2

    # the trial's own answer, command and result, in that order, with the commanded point
    def one(topic, model):
        found = [(log, model.model_validate_json(m.data)) for t, log, _p, m in msgs if t == TOPICS[topic]]
        found = [(log, p) for log, p in found if p.request_id == res.trial_id]
        assert len(found) == 1, (topic, found)
        return found[0]

    t_ans, ans = one("point_answer", PointAnswer)
    t_cmd, cmd = one("arm_command", ArmCommand)
    t_res, result = one("arm_result", ArmResult)
    assert t_ans < t_cmd < t_res and result.outcome == "done"
    np.testing.assert_allclose(cmd.target_base_m, res.target.point_base_m, atol=1e-12)
    assert [list(p) for p in ans.points_px] == [list(p) for p in res.points_px]
    assert r.messages[TOPICS["joint_states"]] > 1  # the arm's joints during the motion

    # the clip: 10 fps over the recording, 640x480, the first point drawn once the answer is known
    codec, size, frames = decode_clip(tmp_path / r.clip)
    assert codec == "h264" and size == (640, 480) and len(frames) == r.clip_frames
    assert 2 <= len(frames) <= 10 * r.duration_s + 2, (len(frames), r.duration_s)
    u, v = (round(c) for c in res.points_px[0])
    assert r.points_drawn and is_magenta(frames[-1][1][v, u])
    assert not is_magenta(frames[0][1][v, u])  # the agent has not answered at the first frame

    # playback through the camera registry: the MCAP's colour frames, in order
    got = []
    with make_camera(f"bag:{tmp_path / r.bag}#rate=max,loop=0") as cam:
        with pytest.raises(CameraSourceError, match="end of recording"):
            while True:
                got.append(cam.read())
    # a colour frame plays back when the bag has its aligned depth (within 20 ms, the reader's rule);
    # under load the recorder's reliable keep-last queue can lose one of a capture's two images
    # (the agent's capture included: it plays back at its place in log time, which is its stamp's place)
    depth_stamps = [stamp(m) for t, _l, _p, m in all_msgs if t == images[1]]
    colour_all = sorted((m for t, _l, _p, m in all_msgs if t == images[0]), key=stamp)
    paired = [m for m in colour_all if any(abs(stamp(m) - d) <= 20_000_000 for d in depth_stamps)]
    assert len(paired) >= len(colour_all) - 1 and paired, (len(paired), len(colour_all))
    assert [f.stamp_ns for f in got] == [stamp(m) for m in paired]
    for f, m in zip(got, paired):
        # the JPEG stored, decoded by plain OpenCV, is the frame that plays back
        bgr = cv2.imdecode(np.frombuffer(bytes(m.data), np.uint8), cv2.IMREAD_COLOR)
        np.testing.assert_array_equal(f.color, bgr[:, :, ::-1])
    assert got[0].depth_scale_m == 0.001 and int(np.count_nonzero(got[0].depth)) > 0


def test_the_bag_metadata_carries_the_live_type_hashes(session, tmp_path):
    from rosbags.rosbag2 import Reader
    from sensor_msgs.msg import CompressedImage

    recorder = TrialRecorder(session.host, RecordingConfig(dir=tmp_path, min_free_mb=0))
    try:
        assert recorder.wait_ready(20)
        recorder.begin("h1")
        r = recorder.end("h1")  # every topic is registered when the bag opens
        live = {
            t: recorder.node.get_publishers_info_by_topic(t)[0].topic_type_hash
            for t in (TOPICS["camera_info"], TOPICS["joint_states"], TOPICS["arm_state"])
        }
        # the images are stored as CompressedImage, which nobody here publishes: its live hash from a
        # publisher of our own
        probe = "/pointlab_test/compressed_probe"
        recorder.node.create_publisher(CompressedImage, probe, 1)
        deadline = time.monotonic() + 20
        while not recorder.node.get_publishers_info_by_topic(probe):
            assert time.monotonic() < deadline, "the probe publisher never showed in the graph"
            time.sleep(0.05)
        h = recorder.node.get_publishers_info_by_topic(probe)[0].topic_type_hash
        live[TOPICS["color"] + "/compressed"] = live[TOPICS["depth"] + "/compressedDepth"] = h
    finally:
        recorder.close()
    with Reader(tmp_path / r.bag) as reader:
        stored = {c.topic: c.digest for c in reader.connections}
    for topic, h in live.items():
        assert stored[topic] == str(h), topic  # ros2 bag play on Kilted finds the types it knows


def test_a_corrupt_image_on_the_graph_gives_an_incomplete_recording_and_the_session_goes_on(session, tmp_path):
    from sensor_msgs.msg import CompressedImage

    from pointlab.bridge.ros.msgs import compressed_image

    recorder = TrialRecorder(session.host, RecordingConfig(dir=tmp_path, min_free_mb=0))
    bad_pub = session.ports.node.create_publisher(CompressedImage, TOPICS["color_compressed"], 10)
    try:
        assert recorder.wait_ready(20)
        recorder.begin("pick2")
        # a JPEG cut after its first 100 bytes; an old stamp, so no camera frame shares its 200 ms window
        good = cv2.imencode(".jpg", np.zeros((480, 640, 3), np.uint8))[1].tobytes()
        bad_pub.publish(
            compressed_image("rgb8; jpeg compressed bgr8", good[:100], 1_000_000_000_000, "camera_color_optical_frame")
        )  # received after begin: in the recording
        res = run_trial(session, "sim-oracle", "pick up the red cube")
        r = recorder.end("pick2")
    finally:
        session.ports.node.destroy_publisher(bad_pub)
        recorder.close()
    assert not r.complete and any("/camera/camera/color/image_raw/compressed" in e for e in r.errors), r.errors
    assert res.robot_outcome == "done" and r.color_frames > 0 and r.clip_frames > 0  # nothing else was lost


def test_a_session_recording_carries_the_calibration_on_tf_static(ros_env, tmp_path):
    """The session's own recorder writes the calibration's camera pose on /tf_static; rebuilt here
    from the quaternion with the textbook formula (not the code's scipy), it is the calibration's
    T_base_camera to 1e-6."""
    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02, db_path=tmp_path / "s.sqlite")) as s:
        assert s.wait_ready(20)
        res = run_trial(s, "sim-oracle", "pick up the red cube")
        want = np.asarray(s.calibration.T_base_camera.matrix)
        root = s.recorder.root
    assert res.recording and res.recording["mcap"], res.recording
    _, msgs = read_mcap(root / res.recording["mcap"])
    (tf,) = [m for t, _l, _p, m in msgs if t == "/tf_static"]
    (ts,) = tf.transforms
    assert (ts.header.frame_id, ts.child_frame_id) == ("link_base", "camera_color_optical_frame")
    q, tr = ts.transform.rotation, ts.transform.translation
    x, y, z, w = q.x, q.y, q.z, q.w
    got = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w), tr.x],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w), tr.y],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y), tr.z],
            [0, 0, 0, 1],
        ]
    )
    np.testing.assert_allclose(got, want, atol=1e-6)
