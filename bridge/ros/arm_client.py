"""The arm client: the runner's side of the arm node's topics.

It publishes commands, the controlled stop (halt), the emergency stop and the reset, caches the arm's latched state, and keeps
the holding belief in order: an arm state read before the last motion finished must not undo what
that motion's result said, so both carry ``motions_done`` and only a count at least as new wins.
"""

from __future__ import annotations

import asyncio
import threading
import uuid

from pointlab.benchmark.records import finite_json

from pointlab.bridge.ros.msgs import TOPICS, state_qos
from pointlab.bridge.ros.payloads import ArmCommand, ArmResult, ArmStateMsg, from_msg, to_msg
from pointlab.bridge.ros.waiters import Waiters

__all__ = ["ArmClient"]


class ArmClient:
    """``bridge.trials.record.ArmControl`` over the arm node's topics.

    Args:
        node: the runner's rclpy node.
        waiters: where ``arm`` results are delivered (kind ``"arm"``, by request id).
        motion_lock: held by whoever may move the arm (a trial, a release): one motion at a time.
        session: this session's nonce, sent in every command (the arm node refuses others).
        motion_timeout_s: how long ``release`` waits for the arm's result.
    """

    def __init__(self, node, waiters: Waiters, motion_lock: threading.Lock, *, session: str = "",
                 motion_timeout_s: float = 120.0) -> None:
        from std_msgs.msg import Empty, String

        self.waiters, self.motion_lock, self.session = waiters, motion_lock, session
        self.motion_timeout_s = motion_timeout_s
        self._lock = threading.Lock()
        self._state: ArmStateMsg | None = None
        self.state_event = threading.Event()
        self._holding = False
        self._motions_done = -1
        self._pub_command = node.create_publisher(String, TOPICS["arm_command"], 50)
        self._pub_estop = node.create_publisher(Empty, TOPICS["arm_estop"], 10)
        self._pub_halt = node.create_publisher(Empty, TOPICS["arm_halt"], 10)
        self._pub_reset = node.create_publisher(Empty, TOPICS["arm_reset"], 10)
        node.create_subscription(String, TOPICS["arm_result"], self._on_result, 50)
        node.create_subscription(String, TOPICS["arm_state"], self._on_state, state_qos())

    # -- ROS side -------------------------------------------------------------------------------
    def _advance(self, motions_done: int, holding: bool) -> None:
        if motions_done >= self._motions_done:
            self._motions_done, self._holding = motions_done, holding

    def _on_result(self, msg) -> None:
        res = from_msg(ArmResult, msg)
        if res is None:
            return
        with self._lock:
            self._advance(res.motions_done, res.holding)
        self.waiters.deliver("arm", res.request_id, res)

    def _on_state(self, msg) -> None:
        st = from_msg(ArmStateMsg, msg)
        if st is None:
            return
        with self._lock:
            self._state = st
            self._advance(st.motions_done, st.holding)
        self.state_event.set()

    # -- commands -------------------------------------------------------------------------------
    def command(self, request_id: str, action: str, target_base_m=None) -> None:
        """Publish one command (thread-safe; the result comes to ``waiters`` as ``("arm", request_id)``)."""
        self._pub_command.publish(to_msg(ArmCommand(request_id=request_id, action=action,
                                                    target_base_m=target_base_m, session=self.session)))

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

    async def run(self, action: str, target_base_m=None, *, timeout_s: float | None = None) -> ArmResult | None:
        """Run one action under the motion lock (after any trial that is running) and wait for its
        result; ``None`` when none came within ``timeout_s`` (default ``motion_timeout_s``)."""
        while not self.motion_lock.acquire(blocking=False):  # never between a trial's answer and motion
            await asyncio.sleep(0.01)
        rid = uuid.uuid4().hex
        try:
            fut = self.waiters.expect("arm", rid)
            self.command(rid, action, target_base_m)
            return await self.waiters.wait(fut, self.motion_timeout_s if timeout_s is None else timeout_s)
        finally:
            self.waiters.forget(rid, ("arm",))
            self.motion_lock.release()

    async def release(self) -> dict:
        """Open the gripper where the arm is and clear ``holding`` (the operator's fix for a wrong
        belief: the Lite gripper has no sensor).

        Returns:
            ``{"outcome", "error", "holding"}``: the arm node's outcome (``done``, ``stopped`` when
            e-stopped or faulted, ``halted`` when halted, ``robot_failure``), or ``robot_failure`` when no result came in time.
            Never raises for them.
        """
        return await self._simple("release")

    async def home(self) -> dict:
        """Move to the home pose; returns as ``release``."""
        return await self._simple("home")

    async def _simple(self, action: str) -> dict:
        res = await self.run(action)
        if res is None:
            return {"outcome": "robot_failure", "holding": self.holding(),
                    "error": f"the arm gave no result within {self.motion_timeout_s:.0f} s"}
        return {"outcome": res.outcome, "error": None if res.error is None else str(res.error),
                "holding": self.holding()}

    # -- state ----------------------------------------------------------------------------------
    def holding(self) -> bool:
        """Whether the arm holds something (the next action is a place)."""
        with self._lock:
            return self._holding

    def state(self) -> dict:
        """The arm node's latest state (``ArmStateMsg`` as JSON values), ``{}`` before any."""
        with self._lock:
            return {} if self._state is None else finite_json(self._state)

    def wait_state(self, timeout_s: float) -> bool:
        """Block until a first state arrived (``False`` on timeout)."""
        return self.state_event.wait(timeout_s)

    def ready(self) -> bool:
        return self.state_event.is_set()
