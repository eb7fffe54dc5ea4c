"""The targeting node uses the depth of the very frame the agent saw (by stamp), holds it while the
model thinks (pin), and refuses when that frame's depth is gone. Real depth from uoc_tabletop."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from tests.bridge.ros.helpers import string_msg
from pointlab.bridge.ros.host import RosHost
from pointlab.bridge.ros.msgs import TOPICS, depth_to_image, intrinsics_to_camera_info
from pointlab.bridge.ros.targeting_node import TargetingNode
from pointlab.perception.extrinsics import Calibration, RigidTransform
from pointlab.perception.replay import load_rgbd_frame

pytestmark = [pytest.mark.ros]

T_TEST = np.array([[1.0, 0.0, 0.0, 0.13], [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.80], [0.0, 0.0, 0.0, 1.0]])
STAMP_A, STAMP_B = 1_000_000_000_000, 1_050_000_000_000  # 1000 s and 1050 s: 50 s apart


@pytest.fixture
def graph(ros_env, uoc_tabletop):
    from geometry_msgs.msg import PointStamped
    from rclpy.node import Node
    from std_msgs.msg import String

    host = RosHost()
    node = host.add(TargetingNode(Calibration(RigidTransform(T_TEST)), context=host.context, buffer_s=1.0))
    probe = host.add(Node("probe", context=host.context))
    results, targets, cond = [], [], threading.Condition()

    def on_result(m):
        with cond:
            results.append(json.loads(m.data))
            cond.notify_all()

    probe.create_subscription(String, TOPICS["target_result"], on_result, 10)
    probe.create_subscription(PointStamped, TOPICS["target"], targets.append, 10)
    pubs = {k: probe.create_publisher(t, TOPICS[k], 10) for k, t in (("point_answer", String), ("point_frame", String))}
    from sensor_msgs.msg import CameraInfo, Image

    pubs["depth"] = probe.create_publisher(Image, TOPICS["depth"], 10)
    pubs["camera_info"] = probe.create_publisher(CameraInfo, TOPICS["camera_info"], 10)
    host.start()
    deadline = time.monotonic() + 5
    while node.count_publishers(TOPICS["depth"]) < 1 or probe.count_subscribers(TOPICS["target_result"]) < 1:
        assert time.monotonic() < deadline, "graph did not connect"
        time.sleep(0.02)

    def wait_result(n):
        with cond:
            assert cond.wait_for(lambda: len(results) >= n, timeout=5), "no target result"
        return results[n - 1]

    f3 = load_rgbd_frame(uoc_tabletop, 3, stamp_ns=0)
    f5 = load_rgbd_frame(uoc_tabletop, 5, stamp_ns=0)
    yield node, pubs, wait_result, targets, f3, f5
    host.close()


def _send_depth(pubs, frame, stamp):
    pubs["camera_info"].publish(intrinsics_to_camera_info(frame.intrinsics, stamp, frame.frame_id))
    pubs["depth"].publish(depth_to_image(frame.depth, stamp, frame.frame_id))


def _wait_buffered(node, stamp):
    deadline = time.monotonic() + 5
    while stamp not in node._depth:
        assert time.monotonic() < deadline, "depth never arrived"
        time.sleep(0.01)


def test_depth_of_the_same_frame_is_used(graph):
    node, pubs, wait_result, targets, f3, f5 = graph
    # two different real depth frames, 50 ms of stamps apart; the agent saw frame A (000003)
    _send_depth(pubs, f3, STAMP_A)
    _send_depth(pubs, f5, STAMP_A + 50_000_000)
    _wait_buffered(node, STAMP_A + 50_000_000)
    pubs["point_answer"].publish(string_msg({"request_id": "a", "points_px": [[458, 250]], "stamp_ns": STAMP_A}))
    r = wait_result(1)
    # frame 000003 at (458, 250): 774 mm (hand-worked in test_targeting.py); frame 000005 differs there
    assert f5.depth[250, 458] != 774
    assert r["request_id"] == "a" and r["stamp_ns"] == STAMP_A
    assert r["target"]["valid"] and r["target"]["depth_m"] == pytest.approx(0.774)
    np.testing.assert_allclose(r["target"]["point_base_m"], [0.301044, -0.0023252, 0.026], atol=2e-6)
    deadline = time.monotonic() + 2
    while not targets and time.monotonic() < deadline:
        time.sleep(0.01)
    (p,) = targets
    assert p.header.frame_id == "link_base" and p.header.stamp.sec == STAMP_A // 10**9
    assert (p.point.x, p.point.y, p.point.z) == pytest.approx((0.301044, -0.0023252, 0.026), abs=2e-6)


def test_pinned_depth_survives_a_slow_model_and_unknown_stamps_are_refused(graph):
    node, pubs, wait_result, targets, f3, f5 = graph
    _send_depth(pubs, f3, STAMP_A)
    _wait_buffered(node, STAMP_A)
    pubs["point_frame"].publish(string_msg({"request_id": "slow", "stamp_ns": STAMP_A}))
    deadline = time.monotonic() + 5
    while "slow" not in node._pins:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    # 50 s of newer frames push frame A out of the 1 s buffer while the model "thinks"
    _send_depth(pubs, f5, STAMP_B)
    _wait_buffered(node, STAMP_B)
    assert STAMP_A not in node._depth
    pubs["point_answer"].publish(string_msg({"request_id": "slow", "points_px": [[458, 250]], "stamp_ns": STAMP_A}))
    r = wait_result(1)
    assert r["target"]["valid"] and r["target"]["depth_m"] == pytest.approx(0.774)
    assert "slow" not in node._pins  # released once used
    # an answer for a frame whose depth was neither pinned nor buffered: refused, not guessed
    pubs["point_answer"].publish(string_msg({"request_id": "lost", "points_px": [[458, 250]], "stamp_ns": STAMP_A}))
    r = wait_result(2)
    assert r["request_id"] == "lost" and not r["target"]["valid"]
    assert r["target"]["refusal"]["code"] == "no_depth"
    # a malformed answer (not JSON) is ignored; the next good one is still answered
    from std_msgs.msg import String

    pubs["point_answer"].publish(String(data="{not json"))
    pubs["point_answer"].publish(string_msg({"request_id": "np", "points_px": [], "stamp_ns": STAMP_B}))
    r = wait_result(3)
    assert r["request_id"] == "np" and r["target"]["refusal"]["code"] == "no_point"


def test_a_pin_asked_before_its_depth_arrives_is_kept(graph):
    node, pubs, wait_result, targets, f3, f5 = graph
    # the pointing node may announce the frame before the targeting node has its depth
    pubs["point_frame"].publish(string_msg({"request_id": "early", "stamp_ns": STAMP_A}))
    deadline = time.monotonic() + 5
    while "early" not in node._wanted:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    _send_depth(pubs, f3, STAMP_A)
    while "early" not in node._pins:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    _send_depth(pubs, f5, STAMP_B)  # frame A leaves the buffer
    _wait_buffered(node, STAMP_B)
    pubs["point_answer"].publish(string_msg({"request_id": "early", "points_px": [[458, 250]], "stamp_ns": STAMP_A}))
    r = wait_result(1)
    assert r["target"]["valid"] and r["target"]["depth_m"] == pytest.approx(0.774)
