"""Our nodes' publishers and subscriptions carry no rclpy QoS event handlers (each one is polled on
every executor wake-up, docs/ros.md "Executor cost"), except the subscriptions to the camera's
topics, where a swapped-in realsense-ros with another QoS must still be reported."""

from __future__ import annotations

import pytest

from pointlab.bridge.ros.frames import RecentFrames
from pointlab.bridge.ros.host import RosHost
from pointlab.bridge.ros.lean_node import LeanNode, camera_events
from pointlab.bridge.ros.msgs import TOPICS

pytestmark = [pytest.mark.ros]


def test_event_handlers_only_where_a_camera_driver_plugs_in():
    from rclpy.node import Node
    from std_msgs.msg import String

    host = RosHost()
    try:
        plain = Node("plain", context=host.context)  # rclpy's default, for comparison
        lean = LeanNode("lean", context=host.context)
        assert len(plain.create_publisher(String, "/t", 10).event_handlers) >= 1
        assert len(plain.create_subscription(String, "/t", lambda _m: None, 10).event_handlers) >= 1
        assert lean.create_publisher(String, "/t", 10).event_handlers == []
        assert lean.create_subscription(String, "/t", lambda _m: None, 10).event_handlers == []
        asked = lean.create_subscription(String, "/u", lambda _m: None, 10, event_callbacks=camera_events())
        assert len(asked.event_handlers) >= 1

        RecentFrames(lean)  # the runner's frames: colour and depth from the camera, frame_meta of ours
        by_topic = {s.topic_name: len(s.event_handlers) for s in lean.subscriptions}
        assert by_topic[TOPICS["color"]] >= 1 and by_topic[TOPICS["depth"]] >= 1
        assert by_topic[TOPICS["frame_meta"]] == 0
        plain.destroy_node()
        lean.destroy_node()
    finally:
        host.close()
