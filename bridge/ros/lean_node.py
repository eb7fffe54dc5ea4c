"""``LeanNode``: an ``rclpy.node.Node`` whose publishers and subscriptions get no QoS event
handlers unless a call asks for them.

rclpy gives every publisher and subscription default event handlers (they log an incompatible QoS
or type), and every one is a waitable that the executor adds to its wait set and polls in Python on
every wake-up. The session wakes a few hundred times a second (four camera topics at 30 frames/s to
several subscribers, the arm state at 10 Hz), so with about 35 entities these handlers were a large
share of the session's GIL time: `pointlab perf loop --browsers 5` went from 24-26 to 28-29 camera
frames/s published and the pages from 12.4-13.6 to 12.7-14.1 frames/s with them off (docs/ros.md,
"Executor cost"). They stay on where a lab's own driver plugs in: the subscriptions to the camera's
topics (``camera_events()``), where realsense-ros with another QoS must be reported.
"""

from __future__ import annotations

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node

__all__ = ["LeanNode", "camera_events"]


def camera_events() -> SubscriptionEventCallbacks:
    """``event_callbacks`` of a subscription to a camera topic: rclpy's default handlers (an
    incompatible QoS or type from a swapped-in camera driver is logged)."""
    return SubscriptionEventCallbacks()


class LeanNode(Node):
    """``Node`` whose ``create_publisher`` / ``create_subscription`` default to no event handlers
    (module docstring); pass ``event_callbacks`` to get them."""

    def create_publisher(self, *args, event_callbacks=None, **kwargs):
        return super().create_publisher(
            *args, event_callbacks=event_callbacks or PublisherEventCallbacks(use_default_callbacks=False), **kwargs)

    def create_subscription(self, *args, event_callbacks=None, **kwargs):
        return super().create_subscription(
            *args, event_callbacks=event_callbacks or SubscriptionEventCallbacks(use_default_callbacks=False),
            **kwargs)
