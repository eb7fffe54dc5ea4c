"""The trial machine's ports over the ROS 2 node set: the adapters between ``bridge.trials`` and the topics.

One rclpy node (``pointlab_runner``) carries them all:

- ``RosPointing`` is the agent and the targeting port: it publishes ``PointRequest`` on
  ``/pointlab/point_request``; the pointing node answers on ``/pointlab/point_answer`` (after telling
  which frame it showed the agent on ``/pointlab/point_frame``), and the targeting node turns that
  answer into ``/pointlab/target_result`` by itself. Both results are expected from the moment the
  request goes out, so a target that arrives before the machine asks for it is not lost.
- ``RosArmPort`` is the arm port over ``ArmClient`` (``/pointlab/arm/command`` -> ``/pointlab/arm/result``,
  the halt, the e-stop and the reset, the latched state).
- ``RosCameraPort`` is the camera port over the recent frames the node keeps (the live view, the
  frame after the arm stopped).

Every message is one pydantic payload of ``bridge.ros.payloads`` (an invalid one is dropped at the
edge). Futures resolve on the event loop of the trial that waits (``Waiters``): a trial may run on
any loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Literal

from pointlab.bridge.ros.arm_client import ArmClient
from pointlab.bridge.ros.frames import RecentFrames
from pointlab.bridge.ros.human_relay import HumanRelay
from pointlab.bridge.ros.live_view import RosLiveView
from pointlab.bridge.ros.msgs import TOPICS, image_to_depth
from pointlab.bridge.ros.payloads import (
    ArmResult,
    PointAnswer,
    PointFrame,
    PointRequest,
    TargetResult,
    from_msg,
    to_msg,
)
from pointlab.bridge.ros.waiters import Waiters
from pointlab.bridge.trials.ports import AgentReply, ArmReadiness, ArmReply, TargetReply, TrialFrame

__all__ = ["RosTrialPorts", "RosPointing", "RosArmPort", "RosCameraPort", "RosRecorderPort"]

log = logging.getLogger(__name__)

_KEEP_REQUEST_FRAMES = 50
# How long an answer waits for the runner to receive the frame it names (normally there already).
_FRAME_WAIT_S = 5.0


def _trial_frame(live_view: RosLiveView, color, depth, index: int | None) -> TrialFrame:
    """A ``TrialFrame`` of a colour message (JPEG-encoded) and its aligned depth message (or ``None``)."""
    from pointlab.bridge.ros.msgs import stamp_to_ns

    d, scale = (None, None)
    if depth is not None:
        try:
            d, scale = image_to_depth(depth)
        except ValueError as e:  # a depth image that does not decode: the frame has no depth
            log.warning("depth frame skipped: %s", e)
    return TrialFrame(
        index=index,
        stamp_ns=stamp_to_ns(color.header.stamp),
        jpeg=live_view.jpeg_of(color),
        depth=d,
        depth_scale_m=scale,
        size=(int(color.width), int(color.height)),
    )


class RosPointing:
    """The agent port and the targeting port over the pointing and targeting nodes' topics.

    Args:
        node: the runner's rclpy node.
        waiters: where answers and targets are delivered (kinds ``answer``, ``target``).
        frames: the recent frames (the frame the agent saw is looked up by its stamp).
        live_view: encodes the frame the agent saw as JPEG.
        human: the human reference agent (``cancel_all``), or ``None``.
        human_agent_names: agents answered by a person (their open request is withdrawn on cancel).
    """

    def __init__(
        self, node, waiters: Waiters, frames: RecentFrames, live_view: RosLiveView, *, human=None, human_agent_names=()
    ) -> None:
        from std_msgs.msg import String

        self.waiters, self.frames, self.live_view = waiters, frames, live_view
        self.human, self.human_agent_names = human, set(human_agent_names)
        self._lock = threading.Lock()
        self._request_frames: dict[str, tuple] = {}  # request_id -> (colour msg, depth msg) the agent saw
        self._targets: dict[str, asyncio.Future] = {}
        self._pub_request = node.create_publisher(String, TOPICS["point_request"], 50)
        node.create_subscription(String, TOPICS["point_answer"], self._on_answer, 50)
        node.create_subscription(String, TOPICS["target_result"], self._on_target, 50)
        node.create_subscription(String, TOPICS["point_frame"], self._on_point_frame, 50)

    # -- ROS side (executor threads) -------------------------------------------------------------
    def _on_answer(self, msg) -> None:
        ans = from_msg(PointAnswer, msg)
        if ans is not None:
            self.waiters.deliver("answer", ans.request_id, ans)

    def _on_target(self, msg) -> None:
        res = from_msg(TargetResult, msg)
        if res is not None:
            self.waiters.deliver("target", res.request_id, res)

    def _on_point_frame(self, msg) -> None:
        pf = from_msg(PointFrame, msg)
        if pf is None:
            return
        color = self.frames.by_stamp(pf.stamp_ns)  # kept now: the recent frames hold about a second
        if color is None:
            return
        with self._lock:
            self._request_frames[pf.request_id] = (color, self.frames.depth_by_stamp(pf.stamp_ns))
            while len(self._request_frames) > _KEEP_REQUEST_FRAMES:
                self._request_frames.pop(next(iter(self._request_frames)))

    # -- AgentPort -------------------------------------------------------------------------------
    async def point(self, request_id: str, agent: str, instruction: str) -> AgentReply:
        """Publish the request and wait for the answer (the machine's timer bounds the wait)."""
        f_answer = self.waiters.expect("answer", request_id)
        with self._lock:
            self._targets[request_id] = self.waiters.expect("target", request_id)
        self._pub_request.publish(to_msg(PointRequest(request_id=request_id, agent=agent, instruction=instruction)))
        try:
            ans: PointAnswer = await f_answer
        except asyncio.CancelledError:
            self.waiters.forget(request_id, ("answer", "target"))
            with self._lock:
                self._targets.pop(request_id, None)
            if agent in self.human_agent_names and self.human is not None:
                self.human.cancel_all()  # the console's open request is withdrawn with the trial
            raise
        with self._lock:
            seen = self._request_frames.pop(request_id, None)
        if seen is None and ans.stamp_ns is not None:
            # point_frame is published before the answer, but it is another topic: its callback can run
            # after the answer's (a fast agent answers at once), or before this runner received the
            # image. The answer names the frame too: it is looked up by its stamp among the recent
            # frames, waiting while it has not arrived yet.
            color = await asyncio.to_thread(self.frames.wait_by_stamp, ans.stamp_ns, _FRAME_WAIT_S)
            if color is not None:
                seen = (color, self.frames.depth_by_stamp(ans.stamp_ns))
        frame = None
        if seen is not None:
            frame = await asyncio.to_thread(
                _trial_frame,
                self.live_view,
                seen[0],
                seen[1],
                self.frames.index_of(ans.stamp_ns) if ans.stamp_ns is not None else None,
            )
        kind: Literal["camera", "agent"] | None = (
            None if not ans.error else ("camera" if ans.error_kind == "camera" else "agent")
        )
        return AgentReply(
            raw_answer=ans.raw_answer,
            points=tuple(ans.points),
            points_px=tuple(ans.points_px),
            parse_error=ans.parse_error,
            error=ans.error,
            error_kind=kind,
            frame=frame,
            latency_s=ans.latency_s,
            answered_ns=ans.answered_ns,
        )

    # -- TargetingPort ---------------------------------------------------------------------------
    async def target(self, request_id: str, reply: AgentReply) -> TargetReply:
        """The targeting node's result for the request (it computed it from the answer by itself)."""
        with self._lock:
            fut = self._targets.pop(request_id, None)
        if fut is None:
            fut = self.waiters.expect("target", request_id)
        try:
            res: TargetResult = await fut
        finally:
            self.waiters.forget(request_id, ("target",))
        return TargetReply(target=res.target, published_ns=res.published_ns)


class RosArmPort:
    """The arm port over the arm node's topics (``ArmClient``)."""

    def __init__(self, client: ArmClient, waiters: Waiters) -> None:
        self.client, self.waiters = client, waiters

    async def run(self, request_id: str, action: str, target_m=None) -> ArmReply:
        fut = self.waiters.expect("arm", request_id)
        try:
            self.client.command(request_id, action, target_m)
            res: ArmResult = await fut
        finally:
            self.waiters.forget(request_id, ("arm",))
        outcome = res.outcome if res.outcome in ("done", "refused", "halted", "stopped") else "robot_failure"
        return ArmReply(
            outcome, refusal=res.refusal, error=res.error, motion=res.motion, command_rx_ns=res.command_rx_ns
        )

    def halt(self) -> None:
        self.client.halt()

    def emergency_stop(self) -> None:
        self.client.emergency_stop()

    def reset(self) -> None:
        self.client.reset()

    def state(self) -> dict:
        return self.client.state()

    def readiness(self) -> ArmReadiness:
        """From the arm node's latched state: e-stopped, faulted (or a controller error), not connected."""
        st = self.client.state()
        if not st:
            return ArmReadiness(False, "disconnected", "no arm state yet")
        if st.get("estopped"):
            return ArmReadiness(False, "estop", "the arm is emergency-stopped")
        if st.get("fault") or st.get("error_code"):
            return ArmReadiness(False, "fault", st.get("fault") or f"controller error {st.get('error_code')}")
        if not st.get("connected"):
            return ArmReadiness(False, "disconnected", "the arm is not connected")
        return ArmReadiness(True)


class RosCameraPort:
    """The camera port over the recent frames: the live view, and a frame after the arm stopped."""

    def __init__(self, frames: RecentFrames, live_view: RosLiveView) -> None:
        self.frames, self.live_view = frames, live_view

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        return self.live_view.latest_jpeg()

    async def frame_after(self, timeout_s: float) -> TrialFrame | None:
        count = self.frames.count
        # two new frames: the first may have been rendered or exposed before the arm stopped
        if not await asyncio.to_thread(self.frames.wait_newer, count + 1, timeout_s):
            return None
        latest = self.frames.latest()
        if latest is None:
            return None
        stamp, color, index = latest
        return await asyncio.to_thread(_trial_frame, self.live_view, color, self.frames.depth_by_stamp(stamp), index)


class RosTrialPorts:
    """The agent, targeting, arm and camera ports on one node of ``host`` (module docstring), plus the
    live view and the human reference's relay that the web app shows.

    Args:
        host: the ``RosHost`` whose executor spins the node.
        session: this session's nonce, sent in every arm command (the arm node refuses others).
        human: the human reference agent, or ``None``.
        human_agent_names: names of agents answered by a person.
        jpeg_quality: JPEG quality of a trial frame the camera did not encode (the camera node's own
            ``jpeg_quality`` sets the live view's).
        watch_camera_qos: log a camera publisher whose QoS or type does not match (``camera_events``).
    """

    def __init__(
        self,
        host,
        *,
        session: str = "",
        human=None,
        human_agent_names=(),
        jpeg_quality: int = 80,
        watch_camera_qos: bool = True,
    ) -> None:
        from pointlab.bridge.ros.lean_node import LeanNode

        self.node = LeanNode("pointlab_runner", context=host.context)
        self.waiters = Waiters()
        self.frames = RecentFrames(self.node, watch_camera_qos=watch_camera_qos)
        self.live_view = RosLiveView(self.node, self.frames, jpeg_quality=jpeg_quality)
        self.human = HumanRelay(human, jpeg_quality=jpeg_quality)
        self.arm_client = ArmClient(self.node, self.waiters, session=session)
        self.pointing = RosPointing(
            self.node, self.waiters, self.frames, self.live_view, human=human, human_agent_names=human_agent_names
        )
        self.arm = RosArmPort(self.arm_client, self.waiters)
        self.camera = RosCameraPort(self.frames, self.live_view)
        host.add(self.node)

    def ready(self) -> bool:
        """A colour frame and an arm state have arrived (trials can run)."""
        return self.frames.count > 0 and self.arm_client.ready()

    def wait_arm_ready(self, timeout_s: float) -> bool:
        """Block until the arm's latched state says it is ready (after a reset), ``False`` on timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.arm.readiness().ready:
                return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        """Stop the live-view thread (the host destroys the node)."""
        self.live_view.close()


class RosRecorderPort:
    """The recorder port over ``bridge.ros.recorder.TrialRecorder`` (the trial's request id is its id)."""

    def __init__(self, recorder) -> None:
        self.recorder = recorder

    def begin(self, trial_id: str) -> None:
        self.recorder.begin(trial_id, request_id=trial_id)

    async def end(self, trial_id: str) -> dict | None:
        rec = await self.recorder.end_async(trial_id)
        return None if rec is None else rec.model_dump(mode="json")
