"""The pointing node over ROS: an agent's non-finite points never go out as usable points, and the
model's own order is kept, invalid entries included (the first point is the point)."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from tests.bridge.ros.helpers import string_msg
from pointlab.benchmark.agents import AgentAnswer
from pointlab.bridge.ros.pointing_node import PointingNode
from pointlab.bridge.ros.host import RosHost
from pointlab.bridge.ros.msgs import TOPICS, rgb_to_image

pytestmark = [pytest.mark.ros]


class _NanAgent:
    async def point(self, image_rgb, instruction):
        return AgentAnswer(points_px=np.array([[np.nan, 3.0], [12.0, 7.5], [np.inf, 1.0]]), raw_text="?")


def test_non_finite_points_are_kept_as_invalid_entries(ros_env):
    # A NaN point published as JSON is a bare NaN (not JSON for most readers) and a target nobody can
    # reach: only the finite point (12, 7.5) is a usable point, but the answer keeps all three in
    # order, so targeting sees that the FIRST point is invalid (issue 14, finding 4).
    from rclpy.node import Node
    from std_msgs.msg import String

    host = RosHost()
    node = host.add(PointingNode({"nan": _NanAgent()}, context=host.context, fresh_frame=False))
    probe = host.add(Node("probe", context=host.context))
    got, cond = [], threading.Condition()

    def on_answer(m):
        with cond:
            got.append(json.loads(m.data))
            cond.notify_all()

    probe.create_subscription(String, TOPICS["point_answer"], on_answer, 10)
    pub_img = probe.create_publisher(type(rgb_to_image(np.zeros((2, 2, 3), np.uint8), 0, "f")), TOPICS["color"], 5)
    pub_req = probe.create_publisher(String, TOPICS["point_request"], 10)
    host.start()
    try:
        deadline = time.monotonic() + 5
        while (
            node.count_subscribers(TOPICS["point_request"]) < 1 or probe.count_subscribers(TOPICS["point_answer"]) < 1
        ):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        pub_img.publish(rgb_to_image(np.zeros((24, 32, 3), np.uint8), time.time_ns(), "camera_color_optical_frame"))
        while node._latest is None:  # the frame has arrived (the request waits for a fresh one anyway)
            assert time.monotonic() < deadline + 5
            time.sleep(0.01)
        pub_req.publish(string_msg({"request_id": "r1", "agent": "nan", "instruction": "pick"}))
        with cond:
            assert cond.wait_for(lambda: got, timeout=5), "no answer"
        assert got[0]["request_id"] == "r1" and got[0]["points_px"] == [[12.0, 7.5]]
        assert [(e["valid"], e["u_px"], e["v_px"]) for e in got[0]["points"]] == [
            (False, None, 3.0),
            (True, 12.0, 7.5),
            (False, None, 1.0),
        ]
        assert "NaN" not in json.dumps(got[0])
    finally:
        host.close()
