"""Refuse to start a Point-Act node set on a ROS graph where another one already runs.

Two sessions in one ROS domain cross-talk: one session's agent sees the other's camera frames, and
an arm node executes every command on ``/pointlab/arm/command`` whoever sent it (a second session
would move the first one's robot). So before the arm is connected, the session waits for DDS
discovery and looks for endpoints that are not its own:

- any foreign *publisher* on the node set's topics (cameras, requests, answers, targets, commands,
  results, e-stop, halt, reset);
- a foreign *subscriber* to the arm commands that is another pointlab arm node (same node name).

Other foreign subscribers (``ros2 topic echo``, rviz, a recorder) are welcome.
"""

from __future__ import annotations

import os
import time
from collections import Counter

from pointlab.bridge.ros.msgs import TOPICS
from pointlab.bridge.errors import BridgeError

__all__ = ["GraphClash", "find_clashes", "wait_for_clashes"]

_GUARDED = (
    "color",
    "depth",
    "camera_info",
    "point_request",
    "point_answer",
    "point_frame",
    "target",
    "target_result",
    "arm_command",
    "arm_result",
    "arm_estop",
    "arm_halt",
    "arm_reset",
)


class GraphClash(BridgeError, RuntimeError):
    """Another participant of the ROS graph would cross-talk with this session."""


def find_clashes(nodes: list) -> list[str]:
    """Foreign endpoints on the guarded topics, as readable lines (empty: alone on the graph)."""
    if not nodes:
        return []
    own_pubs = Counter(p.topic_name for n in nodes for p in n.publishers)
    own_subs = Counter(s.topic_name for n in nodes for s in n.subscriptions)
    own_names = {n.get_name() for n in nodes}
    probe = nodes[0]
    out = []
    for key in _GUARDED:
        topic = TOPICS[key]
        pubs = probe.get_publishers_info_by_topic(topic)
        if len(pubs) > own_pubs[topic]:
            others = sorted({p.node_name for p in pubs})
            out.append(f"{len(pubs) - own_pubs[topic]} other publisher(s) on {topic} (nodes: {', '.join(others)})")
        if key == "arm_command":
            subs = probe.get_subscriptions_info_by_topic(topic)
            arms = [s for s in subs if s.node_name in own_names]
            if len(arms) > own_subs[topic]:
                out.append(f"another pointlab arm node subscribes to {topic}")
    return out


def wait_for_clashes(nodes: list, wait_s: float = 1.0, poll_s: float = 0.1) -> None:
    """Poll ``find_clashes`` for ``wait_s`` seconds (DDS discovery takes a moment).

    Raises:
        GraphClash: a foreign endpoint was seen; the message says which and what to do.
    """
    deadline = time.monotonic() + wait_s
    while True:
        clashes = find_clashes(nodes)
        if clashes:
            domain = os.environ.get("ROS_DOMAIN_ID", "0")
            raise GraphClash(
                "another Point-Act session or ROS 2 driver is on this ROS graph (ROS_DOMAIN_ID="
                + domain
                + "): "
                + "; ".join(clashes)
                + ". Stop it, or run this session with a different ROS_DOMAIN_ID "
                "(e.g. ROS_DOMAIN_ID=42 pointlab act ...); see docs/ros.md"
            )
        if time.monotonic() >= deadline:
            return
        time.sleep(poll_s)
