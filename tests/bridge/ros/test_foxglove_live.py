"""``pointlab act --foxglove``: a sim session's topics over the Foxglove WebSocket protocol, read by a
plain websocket client that speaks the protocol (subprotocol ``foxglove.sdk.v1``, the only one
foxglove-sdk 0.30 accepts: ``foxglove.websocket.v1`` gets HTTP 400; ``advertise`` JSON, then
binary message frames: opcode 1, uint32 subscription id, uint64 log time, CDR payload), decoded with
rosbags from the schema text the server advertised."""

from __future__ import annotations

import json
import struct
import time
from typing import Any

import numpy as np
import pytest

from pointlab.bridge.session import SessionConfig, SessionError, start_session

pytestmark = [pytest.mark.ros]

WANT = ("/joint_states", "/tf", "/robot_description", "/tf_static", "/camera/camera/color/image_raw/compressed")


def _read(port: int, topics, timeout_s: float = 60.0, *, every: dict | None = None, until=None) -> tuple[dict, dict]:
    """Subscribe to ``topics``; ``({topic: channel}, {topic: first payload})``. With ``every``, every
    payload is appended to ``every[topic]`` and reading goes on until ``until()`` is true."""
    from websockets.sync.client import connect
    from websockets.typing import Subprotocol

    with connect(f"ws://127.0.0.1:{port}", subprotocols=[Subprotocol("foxglove.sdk.v1")], max_size=None) as ws:
        channels: dict[str, Any] = {}
        subs: dict[int, str] = {}
        got: dict[str, Any] = {}
        deadline = time.monotonic() + timeout_s
        while len(got) < len(topics) or (until is not None and not until()):
            assert time.monotonic() < deadline, (sorted(channels), sorted(got))
            try:
                raw = ws.recv(timeout=1.0)
            except TimeoutError:
                continue
            if isinstance(raw, str):
                m = json.loads(raw)
                if m.get("op") == "advertise":
                    new = [c for c in m["channels"] if c["topic"] in topics and c["topic"] not in channels]
                    for c in new:
                        channels[c["topic"]] = c
                        subs[len(subs) + 1] = c["topic"]
                    if new:
                        ws.send(
                            json.dumps(
                                {
                                    "op": "subscribe",
                                    "subscriptions": [
                                        {"id": sid, "channelId": channels[t]["id"]}
                                        for sid, t in subs.items()
                                        if t in {c["topic"] for c in new}
                                    ],
                                }
                            )
                        )
            elif raw[0] == 1:  # message data
                sid, _log_ns = struct.unpack_from("<IQ", raw, 1)
                got.setdefault(subs[sid], bytes(raw[13:]))
                if every is not None:
                    every.setdefault(subs[sid], []).append(bytes(raw[13:]))
    return channels, got


def test_the_session_serves_its_topics_and_the_arm_to_foxglove(ros_env):
    from rosbags.typesys import get_types_from_msg
    from scipy.spatial.transform import Rotation

    from pointlab.bridge.recording.trial_bag import typestore
    from pointlab.sim_mock.kinematics import Lite6Kinematics

    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02, foxglove_port=0)) as s:
        assert s.wait_ready(20)
        channels, got = _read(s.foxglove.port, WANT)
    store = typestore()
    for topic, c in channels.items():  # the advertised schema is the ROS 2 definition rosbags knows
        assert c["encoding"] == "cdr" and c["schemaEncoding"] == "ros2msg"
        assert get_types_from_msg(c["schema"].split("\n=====")[0], c["schemaName"])
    js = store.deserialize_cdr(got["/joint_states"], "sensor_msgs/msg/JointState")
    assert list(js.name) == [f"joint{i}" for i in range(1, 7)]
    assert "package://xarm_description" in store.deserialize_cdr(got["/robot_description"], "std_msgs/msg/String").data
    (cam,) = store.deserialize_cdr(got["/tf_static"], "tf2_msgs/msg/TFMessage").transforms
    assert cam.child_frame_id == "camera_color_optical_frame"
    tf = store.deserialize_cdr(got["/tf"], "tf2_msgs/msg/TFMessage").transforms
    assert [t.child_frame_id for t in tf] == [f"link{i}" for i in range(1, 7)]
    T = np.eye(4)
    for t in tf:
        M = np.eye(4)
        r = t.transform.rotation
        M[:3, :3] = Rotation.from_quat([r.x, r.y, r.z, r.w]).as_matrix()
        M[:3, 3] = [t.transform.translation.x, t.transform.translation.y, t.transform.translation.z]
        T = T @ M
    # the arm is at rest at home: the /tf chain is ikpy's flange pose for any joint state it sent
    assert T == pytest.approx(Lite6Kinematics().fk(np.asarray(js.position)), abs=1e-3)
    jpeg = store.deserialize_cdr(got["/camera/camera/color/image_raw/compressed"], "sensor_msgs/msg/CompressedImage")
    assert jpeg.format == "rgb8; jpeg compressed bgr8" and bytes(jpeg.data[:2]) == b"\xff\xd8"


def test_a_taken_port_is_a_session_error(ros_env):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SessionError, match="Foxglove"):
            start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02, foxglove_port=port))


def test_the_agent_s_points_and_the_target_are_drawn_live(ros_env):
    """A trial's answer arrives as ``foxglove_msgs/ImageAnnotations`` (the first point large, at the
    pixel + 0.5 of Foxglove's corner origin) and its target as a sphere marker in the base frame.
    The two topics are not latched: trials run until the reader has one of each from a trial whose
    result is known (no wait on the subscription itself)."""
    import threading

    from pointlab.bridge.recording.trial_bag import typestore
    from tests.bridge.ros.helpers import run_trial

    store = typestore()
    every: dict = {}
    done = threading.Event()
    topics = ("/pointlab/points/annotations", "/pointlab/markers")
    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02, foxglove_port=0)) as s:
        assert s.wait_ready(20)
        reader = threading.Thread(
            target=_read,
            args=(s.foxglove.port, topics),
            kwargs={"timeout_s": 240, "every": every, "until": done.is_set},
            daemon=True,
        )
        reader.start()
        results = []
        deadline = time.monotonic() + 180
        while not all(every.get(t) for t in topics):
            assert time.monotonic() < deadline, (len(results), {t: len(v) for t, v in every.items()})
            results.append(run_trial(s, "sim-oracle", "pick up the red cube"))
            s.world.reset()  # the cube back on the table for the next pick
            t_wait = time.monotonic() + 10
            while not all(every.get(t) for t in topics) and time.monotonic() < t_wait:
                time.sleep(0.05)
        done.set()
        reader.join(timeout=30)
    anns = [store.deserialize_cdr(b, "foxglove_msgs/msg/ImageAnnotations") for b in every[topics[0]]]
    drawn = {(c.position.x, c.position.y) for a in anns for c in a.circles if c.diameter == 18.0}
    # the last trial's first point is drawn large, at its pixel + 0.5
    u, v = results[-1].points_px[0]
    assert any(abs(x - (u + 0.5)) < 1e-6 and abs(y - (v + 0.5)) < 1e-6 for x, y in drawn), (drawn, (u, v))
    spheres = [
        m for b in every[topics[1]] for m in store.deserialize_cdr(b, "visualization_msgs/msg/MarkerArray").markers
    ]
    assert spheres and all(m.header.frame_id == "link_base" and m.type == 2 for m in spheres)
    last = spheres[-1].pose.position
    assert [last.x, last.y, last.z] == pytest.approx(list(results[-1].target.point_base_m), abs=1e-6)
