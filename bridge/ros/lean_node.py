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

For the same reason a ``LeanNode`` has **no parameter services and no type-description service**
unless it asks (``services=True``): rclpy gives every node seven services (six for parameters, one
for type descriptions), and the executor walks each of them on every wake-up. Five session nodes made
35 of the 65 entities of the session's wait set, and ``Executor._wait_for_ready_callbacks`` was
31 % of the process's GIL time in ``pointlab perf loop --browsers 5`` (py-spy ``--gil``). Only the
camera node has parameters (``depth_scale_m``, as realsense-ros has), so only it keeps them.
"""

from __future__ import annotations

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.node import Node

__all__ = ["LeanNode", "camera_events"]


def camera_events(watch: bool = True) -> SubscriptionEventCallbacks | None:
    """``event_callbacks`` of a subscription to a camera topic: rclpy's default handlers (an
    incompatible QoS or type from a swapped-in camera driver is logged), or ``None`` (no handlers)
    when ``watch`` is false: in ``pointlab act``'s session the camera node is the session's own,
    whose QoS is known, and the ten handlers were a fifth of the executor's wake-up cost."""
    return SubscriptionEventCallbacks() if watch else None


class LeanNode(Node):
    """``Node`` whose ``create_publisher`` / ``create_subscription`` default to no event handlers
    (module docstring); pass ``event_callbacks`` to get them.

    Args:
        node_name: the ROS node name.
        services: keep rclpy's parameter and type-description services (a node with parameters
            that outside tools read, e.g. ``ros2 param get``); ``False`` (default): neither.
        **kwargs: ``rclpy.node.Node`` keyword arguments (``context``, ``namespace``, ...).
    """

    def __init__(self, node_name: str, *, services: bool = False, **kwargs) -> None:
        if not services:
            from rclpy.parameter import Parameter
            from rclpy.type_description_service import START_TYPE_DESCRIPTION_SERVICE_PARAM

            kwargs.setdefault("start_parameter_services", False)
            kwargs["parameter_overrides"] = [
                *kwargs.get("parameter_overrides", []),
                Parameter(START_TYPE_DESCRIPTION_SERVICE_PARAM, value=False),
            ]
        super().__init__(node_name, **kwargs)

    def create_publisher(self, *args, event_callbacks=None, **kwargs):
        return super().create_publisher(
            *args, event_callbacks=event_callbacks or PublisherEventCallbacks(use_default_callbacks=False), **kwargs
        )

    def create_subscription(self, *args, event_callbacks=None, **kwargs):
        return super().create_subscription(
            *args, event_callbacks=event_callbacks or SubscriptionEventCallbacks(use_default_callbacks=False), **kwargs
        )
