"""The arm client: the runner's side of the arm node's topics.

It publishes commands, the halt, the emergency stop and the reset, delivers results to the trial
that waits for them (``Waiters``, kind ``arm``) and caches the arm's latched state. What the arm
holds is not read from here: the trial's belief (``bridge.trials.belief``) follows the evidence.
"""

from __future__ import annotations

import threading

from pointlab.benchmark.records import finite_json
from pointlab.robot.arm import ArmState
from pointlab.bridge.ros.msgs import TOPICS, state_qos
from pointlab.bridge.ros.payloads import ArmCommand, ArmResult, from_msg, to_msg
from pointlab.bridge.ros.waiters import Waiters

__all__ = ["ArmClient"]


class ArmClient:
    """Publishers and subscriptions of the arm node's topics on the runner's node.

    Args:
        node: the runner's rclpy node.
        waiters: where ``arm`` results are delivered (kind ``"arm"``, by request id).
        session: this session's nonce, sent in every command (the arm node refuses others).
    """

    def __init__(self, node, waiters: Waiters, *, session: str = "") -> None:
        from std_msgs.msg import Empty, String

        self.waiters, self.session = waiters, session
        self._lock = threading.Lock()
        self._state: ArmState | None = None
        self.state_event = threading.Event()
        self._pub_command = node.create_publisher(String, TOPICS["arm_command"], 50)
        self._pub_estop = node.create_publisher(Empty, TOPICS["arm_estop"], 10)
        self._pub_reset = node.create_publisher(Empty, TOPICS["arm_reset"], 10)
        self._pub_halt = node.create_publisher(Empty, TOPICS["arm_halt"], 10)
        node.create_subscription(String, TOPICS["arm_result"], self._on_result, 50)
        node.create_subscription(String, TOPICS["arm_state"], self._on_state, state_qos())

    # -- ROS side -------------------------------------------------------------------------------
    def _on_result(self, msg) -> None:
        res = from_msg(ArmResult, msg)
        if res is not None:
            self.waiters.deliver("arm", res.request_id, res)

    def _on_state(self, msg) -> None:
        st = from_msg(ArmState, msg)
        if st is None:
            return
        with self._lock:
            self._state = st
        self.state_event.set()

    # -- commands -------------------------------------------------------------------------------
    def command(self, request_id: str, action: str, target_base_m=None) -> None:
        """Publish one command (thread-safe; the result comes to ``waiters`` as ``("arm", request_id)``)."""
        self._pub_command.publish(
            to_msg(ArmCommand(request_id=request_id, action=action, target_base_m=target_base_m, session=self.session))
        )

    def halt(self) -> None:
        """Publish the controlled stop (``/pointlab/arm/halt``): the running command ends ``halted``,
        queued ones are answered ``halted``; no fault, no e-stop, the arm stays ready."""
        from std_msgs.msg import Empty

        self._pub_halt.publish(Empty())

    def emergency_stop(self) -> None:
        from std_msgs.msg import Empty

        self._pub_estop.publish(Empty())

    def reset(self) -> None:
        from std_msgs.msg import Empty

        self._pub_reset.publish(Empty())

    # -- state ----------------------------------------------------------------------------------
    def state(self) -> dict:
        """The arm node's latest state (``robot.arm.ArmState`` as JSON values), ``{}`` before any."""
        with self._lock:
            return {} if self._state is None else finite_json(self._state)

    def wait_state(self, timeout_s: float) -> bool:
        """Block until a first state arrived (``False`` on timeout)."""
        return self.state_event.wait(timeout_s)

    def ready(self) -> bool:
        return self.state_event.is_set()
