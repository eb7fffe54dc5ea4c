"""``RawTap``: a node of raw subscriptions on an executor and thread of its own.

What the trial recorder and the live Foxglove server both need: every topic of a set delivered as the
CDR bytes that arrived (``raw=True``: nothing decoded), spun apart from the session's executor so the
trial loop's callbacks never wait for them. Images are reliable keep-last ``image_depth``; the arm
state is latched (``state_qos``: the state before the first trial arrives too); the rest keep 50.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable

from pointlab.bridge.ros.host import spin_executor
from pointlab.bridge.ros.msgs import TOPICS, image_qos, state_qos

__all__ = ["RawTap", "msg_class"]

log = logging.getLogger(__name__)

_IMAGE_TOPICS = (TOPICS["color"], TOPICS["color_compressed"], TOPICS["depth"])


def msg_class(ros_type: str):
    """``"sensor_msgs/msg/Image"`` -> the rclpy message class."""
    pkg, _, name = ros_type.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


class RawTap:
    """Raw subscriptions to ``topics`` (``{name: ROS type}``) on node ``name`` of ``host``'s context.

    Args:
        callback_of: ``topic -> (cdr bytes -> None)``, called on the tap's own thread.
        image_depth: history depth of the image subscriptions.

    Attributes:
        node: the rclpy node. subs: ``{topic: subscription}``.
    """

    def __init__(
        self,
        host,
        name: str,
        topics: dict[str, str],
        callback_of: Callable[[str], Callable[[bytes], None]],
        *,
        image_depth: int = 2,
    ) -> None:
        from rclpy.executors import SingleThreadedExecutor

        from pointlab.bridge.ros.lean_node import LeanNode

        self.name = name
        self.node = LeanNode(name, context=host.context)
        self.subs = {}
        for topic, ros_type in topics.items():
            qos = (
                image_qos(image_depth)
                if topic in _IMAGE_TOPICS
                else state_qos()
                if topic == TOPICS["arm_state"]
                else 50
            )
            self.subs[topic] = self.node.create_subscription(
                msg_class(ros_type), topic, callback_of(topic), qos, raw=True
            )
        self._executor = SingleThreadedExecutor(context=host.context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(
            target=spin_executor, args=(self._executor, f"{name} executor"), name=f"{name}-ros", daemon=True
        )
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        """Stop the executor and destroy the node. Idempotent; call before the host's context goes."""
        if self._closed:
            return
        self._closed = True
        try:
            self._executor.shutdown(timeout_sec=5.0)
        except Exception:
            log.exception("%s executor shutdown failed", self.name)
        self._thread.join(timeout=5.0)
        try:
            self.node.destroy_node()
        except Exception:
            log.exception("destroying node %s failed", self.name)
