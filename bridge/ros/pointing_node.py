"""The pointing ROS 2 node: on a request, ask an agent to point on the latest colour frame.

Topics:

- in ``/pointlab/point_request`` (``std_msgs/String`` JSON ``{"request_id", "agent", "instruction"}``);
- in ``/camera/camera/color/image_raw`` (``sensor_msgs/Image``; the latest frame is kept);
- out ``/pointlab/point_frame`` (String JSON ``{"request_id", "stamp_ns"}``), sent the moment the
  frame is taken, so the targeting node can hold the depth of that same frame while the model thinks;
- out ``/pointlab/point_answer`` (String JSON ``{"request_id", "raw_answer", "points_px",
  "parse_error", "error", "stamp_ns", "width", "height", "latency_s", "answered_ns"}``):
  ``points_px`` are original-image pixels ``[[u, v], ...]``, ``stamp_ns`` the stamp of the frame the
  agent saw, ``answered_ns`` wall time (ns) of publication.

The answer never carries the agent's name or model id (the runner knows which agent it asked);
agent calls run on an asyncio loop of their own so a slow model never blocks the ROS executor,
and several requests may be in flight.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from pointlab.benchmark.points import PointEntry
from pointlab.bridge.trials.targeting import entries_from_points
from pointlab.bridge.ros.lean_node import LeanNode, camera_events
from pointlab.bridge.ros.msgs import TOPICS, image_qos, image_to_rgb, stamp_to_ns
from pointlab.bridge.ros.payloads import PointAnswer, PointFrame, PointRequest, from_msg, to_msg

__all__ = ["PointingNode", "main"]

log = logging.getLogger(__name__)


class PointingNode(LeanNode):
    """Calls ``agents[name].point(image_rgb, instruction)`` for each request.

    Args:
        agents: agent name -> object with ``async point(image_rgb, instruction) -> AgentAnswer``
            (``pointlab.benchmark.agents``).
        context: the rclpy ``Context``.
        frame_timeout_s: how long a request waits for its colour frame before failing.
        fresh_frame: show the agent a frame *captured after* the request arrived (its header stamp
            is later than the request's arrival, wall clock; when the stamps are not on this
            machine's clock, more than 5 s off, a frame *received* after the request), so a scene
            just changed by the arm is never answered from an older image. Costs up to one frame
            period plus the camera's latency.
        max_frame_age_s: without ``fresh_frame``, a frame older than this is not shown (camera stalled).
        watch_camera_qos: log a camera publisher whose QoS or type does not match (``camera_events``).
    """

    def __init__(
        self,
        agents: dict[str, Any],
        *,
        context=None,
        frame_timeout_s: float = 5.0,
        fresh_frame: bool = True,
        max_frame_age_s: float = 2.0,
        node_name: str = "pointlab_pointing",
        watch_camera_qos: bool = True,
    ) -> None:
        super().__init__(node_name, context=context)
        from sensor_msgs.msg import Image
        from std_msgs.msg import String

        self.agents = dict(agents)
        self.frame_timeout_s = frame_timeout_s
        self.fresh_frame = fresh_frame
        self.max_frame_age_s = max_frame_age_s
        self._latest: tuple[Any, float, int] | None = None  # (Image msg, monotonic receive time, stamp_ns)
        self._frame_cond = threading.Condition()
        self._pub_answer = self.create_publisher(String, TOPICS["point_answer"], 50)
        self._pub_frame = self.create_publisher(String, TOPICS["point_frame"], 50)
        self.create_subscription(
            Image, TOPICS["color"], self._on_color, image_qos(2), event_callbacks=camera_events(watch_camera_qos)
        )
        self.create_subscription(String, TOPICS["point_request"], self._on_request, 50)
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever, name="pointlab-agents", daemon=True)
        self._loop_thread.start()

    # -- callbacks ------------------------------------------------------------------------------
    def _on_color(self, msg) -> None:
        with self._frame_cond:
            self._latest = (msg, time.monotonic(), stamp_to_ns(msg.header.stamp))
            self._frame_cond.notify_all()

    def _on_request(self, msg) -> None:
        req = from_msg(PointRequest, msg)
        if req is None:
            rid = _request_id_of(msg.data)
            if rid:  # say so to the waiting runner rather than let it time out
                self._publish_answer(
                    rid, error="bad_request: need request_id, agent, instruction", error_kind="request"
                )
            return
        agent = self.agents.get(req.agent)
        if agent is None:
            self._publish_answer(
                req.request_id, error="unknown_agent", error_kind="request"
            )  # the name stays out of the answer
            return
        # the frame is fetched on the agents' loop thread so waiting for it never blocks this
        # executor callback
        asyncio.run_coroutine_threadsafe(
            self._answer(req.request_id, agent, req.instruction, (time.monotonic(), time.time_ns())), self._loop
        )

    # -- work -----------------------------------------------------------------------------------
    def _take_frame(self, requested: tuple[float, int]):
        deadline = time.monotonic() + self.frame_timeout_s

        def usable() -> bool:
            if self._latest is None:
                return False
            if self.fresh_frame:
                _, rx_t, stamp_ns = self._latest
                if abs(time.time_ns() - stamp_ns) < 5_000_000_000:  # a stamp on our clock: compare capture times
                    return stamp_ns >= requested[1]
                return rx_t >= requested[0]
            return time.monotonic() - self._latest[1] <= self.max_frame_age_s

        with self._frame_cond:
            while not usable():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._frame_cond.wait(left)
            assert self._latest is not None  # usable() said so
            return self._latest[0]

    async def _answer(self, rid: str, agent, instruction: str, requested: tuple[float, int]) -> None:
        msg = await asyncio.to_thread(self._take_frame, requested)
        if msg is None:
            self._publish_answer(
                rid, error=f"no_frame: no colour frame within {self.frame_timeout_s:.1f} s", error_kind="camera"
            )
            return
        stamp_ns = stamp_to_ns(msg.header.stamp)
        self._pub_frame.publish(to_msg(PointFrame(request_id=rid, stamp_ns=stamp_ns)))
        try:
            image = image_to_rgb(msg)
        except ValueError as e:
            self._publish_answer(rid, error=f"bad_frame: {e}", error_kind="camera", stamp_ns=stamp_ns)
            return
        t0 = time.monotonic()
        try:
            ans = await agent.point(image, instruction)
        except Exception as e:  # agents should not raise; one that does is an agent failure
            log.exception("agent raised")
            self._publish_answer(
                rid,
                error=f"agent_error: {type(e).__name__}: {e}",
                error_kind="agent",
                stamp_ns=stamp_ns,
                width=image.shape[1],
                height=image.shape[0],
                latency_s=time.monotonic() - t0,
            )
            return
        # every point as the model gave it, invalid ones included: the first point is the point,
        # and a NaN first point must refuse the trial, not promote the second (bridge.trials.targeting)
        entries = getattr(ans, "entries", None)
        if entries is None:
            entries = entries_from_points(getattr(ans, "points_px", None))
        else:
            entries = [PointEntry.model_validate(e, from_attributes=True) for e in entries]
        latency = getattr(ans, "latency_s", None)
        error = getattr(ans, "error", None)
        self._publish_answer(
            rid,
            raw_answer=getattr(ans, "raw_text", "") or "",
            points=entries,
            parse_error=getattr(ans, "parse_error", None),
            error=error,
            error_kind="agent" if error else None,
            stamp_ns=stamp_ns,
            width=image.shape[1],
            height=image.shape[0],
            latency_s=float(latency) if latency is not None else time.monotonic() - t0,
        )

    def _publish_answer(
        self,
        rid: str,
        *,
        raw_answer: str = "",
        points=(),
        parse_error=None,
        error=None,
        error_kind: str | None = None,
        stamp_ns: int | None = None,
        width: int | None = None,
        height: int | None = None,
        latency_s: float | None = None,
    ) -> None:
        self._pub_answer.publish(
            to_msg(
                PointAnswer(
                    request_id=rid,
                    raw_answer=raw_answer,
                    points=list(points),
                    points_px=[(e.u_px, e.v_px) for e in points if e.usable],
                    parse_error=parse_error,
                    error=error,
                    error_kind=error_kind,
                    stamp_ns=stamp_ns,
                    width=width,
                    height=height,
                    latency_s=latency_s,
                    answered_ns=time.time_ns(),
                )
            )
        )

    def destroy_node(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join(timeout=5.0)
        super().destroy_node()


def _request_id_of(data: str) -> str:
    """The ``request_id`` of a malformed request when it has one (to answer it), else ``""``."""
    import json

    try:
        d = json.loads(data)
    except (ValueError, TypeError, RecursionError):
        return ""
    rid = d.get("request_id") if isinstance(d, dict) else None
    return rid if isinstance(rid, str) else ""


def main(agents_config: str | None = None) -> None:
    """Run the pointing node alone (``pointlab act node pointing --agents FILE``) until Ctrl-C."""
    from pointlab.bridge.ros.host import spin_alone
    from pointlab.benchmark.agents_config import load_agents

    agents = load_agents(agents_config)
    spin_alone(lambda: PointingNode(agents))
