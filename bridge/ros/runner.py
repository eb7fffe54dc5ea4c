"""``RosTrialRunner``: the ``bridge.trial.TrialRunner`` of the web app and ``pointlab act trials``,
driving the ROS 2 node set over its topics.

One trial (PointArena sec. 3.4 / 4.1):

1. the action is chosen from the gripper state: ``pick`` when the arm holds nothing, else ``place``;
2. ``/pointlab/point_request`` -> the pointing node asks the agent on the latest colour frame ->
   ``/pointlab/point_answer``;
3. the targeting node turns the first point into a base-frame target on the depth of that same
   frame -> ``/pointlab/target_result`` (valid, or a refusal with its reason);
4. only for a valid target, ``/pointlab/arm/command`` -> the arm node -> ``/pointlab/arm/result``;
5. with a sim world and an ``expected`` dict, the simulator's own judgement.

Every failure (no answer in time, agent error, refusal, robot fault, e-stop) becomes a recorded
``robot_outcome``; ``run_trial`` does not raise for them. Trials are serialised (one arm).

Threading: ROS callbacks run on the executor's threads; each awaited message resolves an asyncio
future of the caller's loop through ``loop.call_soon_threadsafe``, so ``run_trial`` may be awaited
from any event loop (uvicorn's, or ``asyncio.run`` in the CLI). The live view is JPEG-encoded on a
thread of its own, only while someone asked for it in the last few seconds.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Callable

from .msgs import TOPICS, image_qos, image_to_rgb, json_msg, parse_json_msg, stamp_to_ns
from ..trial import TrialResult

__all__ = ["RosTrialRunner", "RunnerTimeouts", "encode_jpeg"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunnerTimeouts:
    """How long each stage may take, seconds.

    Attributes:
        answer_s: a model agent's answer (the agent's own timeout and retries come first).
        human_answer_s: the human reference (an operator must click).
        target_s: the targeting node's result after the answer.
        motion_s: the arm's result after the command (a sequence at 0.15 m/s takes a few seconds).
        state_s: waiting for a first arm state at the start of a trial.
    """

    answer_s: float = 180.0
    human_answer_s: float = 900.0
    target_s: float = 10.0
    motion_s: float = 120.0
    state_s: float = 5.0


def encode_jpeg(rgb, quality: int = 80) -> bytes:
    """``(H, W, 3)`` uint8 RGB -> JPEG bytes (OpenCV)."""
    import cv2

    ok, buf = cv2.imencode(".jpg", rgb[:, :, ::-1], [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return buf.tobytes()


class RosTrialRunner:
    """Implements ``bridge.trial.TrialRunner`` over the node set's topics.

    Args:
        host: the ``RosHost`` whose executor spins this runner's node (the nodes themselves may live
            in this process or elsewhere on the ROS graph).
        agent_names: the agents the pointing node knows (config names; never shown to participants).
        judge: ``judge(expected) -> (bool, str)`` of a sim world, or ``None`` (real robot).
        infer_expected: ``(instruction, action) -> expected | None`` of a sim world, used when a trial
            has no scripted expectation (typed in the browser).
        human: the human reference agent (``pending()``, ``answer(request_id, u, v)``), or ``None``.
        human_agent_names: names of agents answered by a person (longer answer timeout).
        timeouts: per-stage timeouts.
        live_max_fps: upper bound of the live view's encoding rate.
    """

    def __init__(self, host, agent_names: list[str], *, judge: Callable[[dict], tuple[bool, str]] | None = None,
                 infer_expected: Callable[[str, str], dict | None] | None = None, human=None,
                 human_agent_names=(), timeouts: RunnerTimeouts = RunnerTimeouts(),
                 live_max_fps: float = 30.0, jpeg_quality: int = 80) -> None:
        from rclpy.node import Node
        from sensor_msgs.msg import Image
        from std_msgs.msg import Empty, String

        from pointlab.bridge.ros.arm_node import STATE_QOS

        self.agent_names = list(agent_names)
        self.judge, self.human = judge, human
        self.infer_expected = infer_expected
        self.human_agent_names = set(human_agent_names)
        self.timeouts = timeouts
        self.jpeg_quality = jpeg_quality
        self.live_max_fps = live_max_fps
        self._lock = threading.Lock()
        self._trial_lock = threading.Lock()
        self._waiters: dict[tuple[str, str], tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}
        self._armed: dict[str, str] = {}  # request_id -> action, for a trial that may still command the arm
        self._commanded: set[str] = set()  # request_ids whose command was published
        self._state: dict | None = None
        self._state_event = threading.Event()
        self._holding = False
        self._motions_done = -1
        self._frames: deque = deque(maxlen=30)  # recent colour msgs (stamp_ns, msg): ~1 s, 0.9 MB each
        self._index_by_stamp: OrderedDict[int, int] = OrderedDict()
        self._frame_count = 0
        self._request_frames: dict[str, object] = {}
        self._trial_jpegs: OrderedDict[str, bytes] = OrderedDict()
        self._human_jpegs: dict[str, str] = {}
        self._jpeg: tuple[bytes, int] | None = None
        self._jpeg_stamp = None
        self._viewer_t = 0.0
        self._new_frame = threading.Event()
        self._closed = threading.Event()

        self.node = Node("pointlab_runner", context=host.context)
        self._pub_request = self.node.create_publisher(String, TOPICS["point_request"], 50)
        self._pub_command = self.node.create_publisher(String, TOPICS["arm_command"], 50)
        self._pub_estop = self.node.create_publisher(Empty, TOPICS["arm_estop"], 10)
        self._pub_reset = self.node.create_publisher(Empty, TOPICS["arm_reset"], 10)
        sub = self.node.create_subscription
        sub(String, TOPICS["point_answer"], lambda m: self._deliver("answer", m), 50)
        sub(String, TOPICS["target_result"], self._on_target_result, 50)
        sub(String, TOPICS["arm_result"], self._on_arm_result, 50)
        sub(String, TOPICS["arm_state"], self._on_arm_state, STATE_QOS)
        sub(String, TOPICS["point_frame"], self._on_point_frame, 50)
        sub(String, TOPICS["frame_meta"], self._on_frame_meta, 50)
        sub(Image, TOPICS["color"], self._on_color, image_qos(2))
        host.add(self.node)
        self._encoder = threading.Thread(target=self._encode_loop, name="pointlab-liveview", daemon=True)
        self._encoder.start()

    # -- ROS side (executor threads) ------------------------------------------------------------
    def _deliver(self, kind: str, msg_or_payload) -> None:
        payload = msg_or_payload if isinstance(msg_or_payload, dict) else parse_json_msg(msg_or_payload)
        if not payload or "request_id" not in payload:
            return
        with self._lock:
            waiter = self._waiters.pop((kind, str(payload["request_id"])), None)
        if waiter is None:
            return
        loop, fut = waiter
        try:
            loop.call_soon_threadsafe(_resolve, fut, payload)
        except RuntimeError:  # the caller's loop is closed: nobody waits any more
            pass

    def _on_target_result(self, msg) -> None:
        d = parse_json_msg(msg)
        if not d or "request_id" not in d:
            return
        rid = str(d["request_id"])
        target = d.get("target") if isinstance(d.get("target"), dict) else {}
        # The arm is commanded here, on the executor thread, rather than after a hop back to the
        # trial's event loop: the point-to-command latency is the loop's headline number. Only a
        # valid target of a trial still waiting for it (popped atomically) is ever commanded.
        with self._lock:
            action = self._armed.pop(rid, None) if target.get("valid") else None
            if action is not None:
                self._commanded.add(rid)
        if action is not None:
            self._pub_command.publish(json_msg({"request_id": rid, "action": action,
                                                "target_base_m": target.get("point_base_m")}))
        self._deliver("target", d)

    def _on_arm_result(self, msg) -> None:
        d = parse_json_msg(msg)
        if not d:
            return
        with self._lock:
            if isinstance(d.get("motions_done"), int) and d["motions_done"] >= self._motions_done:
                self._motions_done = d["motions_done"]
                self._holding = bool(d.get("holding"))
        self._deliver("arm", d)

    def _on_arm_state(self, msg) -> None:
        d = parse_json_msg(msg)
        if not d:
            return
        with self._lock:
            self._state = d
            # a state read before the last motion finished must not undo what its result said
            if isinstance(d.get("motions_done"), int) and d["motions_done"] >= self._motions_done:
                self._motions_done = d["motions_done"]
                self._holding = bool(d.get("holding"))
        self._state_event.set()

    def _on_color(self, msg) -> None:
        stamp = stamp_to_ns(msg.header.stamp)
        with self._lock:
            self._frames.append((stamp, msg))
            self._frame_count += 1
            if stamp not in self._index_by_stamp:  # no frame_meta (e.g. realsense-ros): count frames
                self._index_by_stamp[stamp] = self._frame_count - 1
            while len(self._index_by_stamp) > 600:
                self._index_by_stamp.popitem(last=False)
        self._new_frame.set()

    def _on_frame_meta(self, msg) -> None:
        d = parse_json_msg(msg)
        if d and isinstance(d.get("stamp_ns"), int) and isinstance(d.get("index"), int):
            with self._lock:
                self._index_by_stamp[d["stamp_ns"]] = d["index"]

    def _on_point_frame(self, msg) -> None:
        d = parse_json_msg(msg)
        if not d or not isinstance(d.get("stamp_ns"), int):
            return
        with self._lock:
            for stamp, m in reversed(self._frames):
                if stamp == d["stamp_ns"]:
                    self._request_frames[str(d.get("request_id"))] = m
                    break
            while len(self._request_frames) > 50:
                self._request_frames.pop(next(iter(self._request_frames)))

    # -- live view ------------------------------------------------------------------------------
    def _encode_loop(self) -> None:
        min_period = 1.0 / self.live_max_fps if self.live_max_fps > 0 else 0.0
        while not self._closed.is_set():
            if not self._new_frame.wait(0.5):
                continue
            self._new_frame.clear()
            if time.monotonic() - self._viewer_t > 3.0:  # nobody watches: do not spend the CPU
                continue
            t0 = time.monotonic()
            self._encode_latest()
            time.sleep(max(0.0, min_period - (time.monotonic() - t0)))

    def _encode_latest(self) -> None:
        with self._lock:
            if not self._frames:
                return
            stamp, msg = self._frames[-1]
            if stamp == self._jpeg_stamp:
                return
            index = self._index_by_stamp.get(stamp, self._frame_count - 1)
        try:
            jpeg = encode_jpeg(image_to_rgb(msg), self.jpeg_quality)
        except ValueError as e:
            log.warning("live view frame dropped: %s", e)
            return
        with self._lock:
            self._jpeg, self._jpeg_stamp = (jpeg, index), stamp

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        """The latest colour frame as JPEG and its frame index, or ``None`` before the first frame.

        Non-blocking once the live view runs: frames are encoded on a background thread while this
        was called within the last 3 s (the first call encodes one frame itself)."""
        self._viewer_t = time.monotonic()
        if self._jpeg is None:
            self._encode_latest()
        return self._jpeg

    def trial_jpeg(self, trial_id: str) -> bytes | None:
        """JPEG of the frame the agent saw in trial ``trial_id`` (the last 50 trials), or ``None``."""
        return self._trial_jpegs.get(trial_id)

    # -- arm ------------------------------------------------------------------------------------
    def holding(self) -> bool:
        with self._lock:
            return self._holding

    def ready(self) -> bool:
        """A colour frame and an arm state have arrived (the session can run trials)."""
        return self._frame_count > 0 and self._state_event.is_set()

    def arm_state(self) -> dict:
        """The arm node's latest state (``ArmState.to_dict()`` + ``motions_done``), ``{}`` before any."""
        with self._lock:
            return dict(self._state or {})

    def emergency_stop(self) -> None:
        from std_msgs.msg import Empty

        self._pub_estop.publish(Empty())

    def reset(self) -> None:
        from std_msgs.msg import Empty

        self._pub_reset.publish(Empty())

    async def release(self) -> dict:
        """Open the gripper where the arm is and clear ``holding`` (the operator's fix for a wrong
        belief: the Lite gripper has no sensor). Waits for running trials to end, then for the arm
        node's result (``motion_s``).

        Returns:
            ``{"outcome", "error", "holding"}``: ``outcome`` is the arm node's (``done``, ``stopped``
            when e-stopped or faulted, ``robot_failure``) or ``robot_failure`` when no result came in
            time. Never raises for them.
        """
        while not self._trial_lock.acquire(blocking=False):  # never between a trial's answer and motion
            await asyncio.sleep(0.01)
        rid = uuid.uuid4().hex
        try:
            fut = self._expect("arm", rid)
            self._pub_command.publish(json_msg({"request_id": rid, "action": "release"}))
            res = await self._wait(fut, self.timeouts.motion_s)
        finally:
            self._forget(rid)
            self._trial_lock.release()
        if res is None:
            return {"outcome": "robot_failure", "holding": self.holding(),
                    "error": f"the arm gave no result within {self.timeouts.motion_s:.0f} s"}
        return {"outcome": res.get("outcome"), "error": res.get("error"), "holding": self.holding()}

    # -- human reference ------------------------------------------------------------------------
    def pending_human_requests(self) -> list[dict]:
        """``[{"request_id", "instruction", "jpeg_b64", "width", "height"}]`` of the human agent."""
        if self.human is None:
            return []
        out = []
        pending = self.human.pending()
        for req in pending:
            get = req.get if isinstance(req, dict) else (lambda k, r=req: getattr(r, k, None))
            image = get("image_rgb") if get("image_rgb") is not None else get("image")
            jpeg_b64 = get("jpeg_b64") or self._human_jpegs.get(get("request_id"))
            if jpeg_b64 is None and image is not None:  # encoded once per request: the UI polls this
                jpeg_b64 = base64.b64encode(encode_jpeg(image, self.jpeg_quality)).decode("ascii")
                self._human_jpegs[get("request_id")] = jpeg_b64
            width = get("width") if get("width") is not None else (image.shape[1] if image is not None else None)
            height = get("height") if get("height") is not None else (image.shape[0] if image is not None else None)
            out.append({"request_id": get("request_id"), "instruction": get("instruction"), "jpeg_b64": jpeg_b64,
                        "width": width, "height": height})
        open_ids = {r["request_id"] for r in out}
        for rid in list(self._human_jpegs):  # list(): a snapshot even if another thread adds one
            if rid not in open_ids:
                self._human_jpegs.pop(rid, None)
        return out

    def answer_human_request(self, request_id: str, u: float, v: float) -> bool:
        if self.human is None:
            return False
        return bool(self.human.answer(request_id, u, v))

    # -- trials ---------------------------------------------------------------------------------
    def _expect(self, kind: str, rid: str) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._lock:
            self._waiters[(kind, rid)] = (loop, fut)
        return fut

    def _forget(self, rid: str) -> None:
        with self._lock:
            for kind in ("answer", "target", "arm"):
                self._waiters.pop((kind, rid), None)
            self._request_frames.pop(rid, None)
            self._armed.pop(rid, None)
            self._commanded.discard(rid)

    def _disarm(self, rid: str) -> bool:
        """From now on the target callback cannot command the arm for ``rid``; returns whether it did."""
        with self._lock:
            self._armed.pop(rid, None)
            return rid in self._commanded

    async def _wait(self, fut: asyncio.Future, timeout_s: float) -> dict | None:
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            return None

    async def run_trial(self, agent: str, instruction: str, *, expected: dict | None = None) -> TrialResult:
        """Run one trial (see the module docstring). Never raises for an agent, targeting or robot
        failure; raises ``ValueError`` only for an agent name this runner does not know."""
        if agent not in self.agent_names:
            raise ValueError(f"unknown agent {agent!r}")
        while not self._trial_lock.acquire(blocking=False):  # one trial at a time, from any loop
            await asyncio.sleep(0.01)
        try:
            return await self._run_trial(agent, instruction, expected)
        finally:
            self._trial_lock.release()

    async def _run_trial(self, agent: str, instruction: str, expected: dict | None) -> TrialResult:
        t_start = time.monotonic()
        if not self._state_event.is_set():
            await asyncio.to_thread(self._state_event.wait, self.timeouts.state_s)
        action = "place" if self.holding() else "pick"
        if expected is None and self.infer_expected is not None:
            # a typed instruction has no script: the sim reads what it asks for before anything moves
            expected = self.infer_expected(instruction, action)
        rid = uuid.uuid4().hex
        res = TrialResult(trial_id=rid, agent=agent, instruction=instruction, action=action, expected=expected)
        f_answer, f_target, f_arm = self._expect("answer", rid), self._expect("target", rid), self._expect("arm", rid)
        with self._lock:
            self._armed[rid] = action
        try:
            self._pub_request.publish(json_msg({"request_id": rid, "agent": agent, "instruction": instruction}))
            timeout = self.timeouts.human_answer_s if agent in self.human_agent_names else self.timeouts.answer_s
            ans = await self._wait(f_answer, timeout)
            t_answer = time.monotonic()
            res.timings_s["agent"] = round(t_answer - t_start, 4)
            if ans is None:
                res.robot_outcome, res.agent_error = "agent_failure", f"no answer within {timeout:.0f} s"
                if self._disarm(rid):  # a target slipped in as the wait timed out: never leave it moving
                    self.emergency_stop()
                    res.robot_error = "a late target reached the arm after the agent timed out; emergency stop sent"
                return res
            self._record_answer(res, ans)
            tgt = await self._wait(f_target, self.timeouts.target_s)
            t_target = time.monotonic()
            commanded = self._disarm(rid)
            res.timings_s["targeting"] = round(t_target - t_answer, 4)
            res.target = None if tgt is None else tgt.get("target")
            if tgt is not None and isinstance(tgt.get("published_ns"), int) and isinstance(ans.get("answered_ns"), int):
                res.timings_s["point_to_target"] = round((tgt["published_ns"] - ans["answered_ns"]) / 1e9, 6)
            if not commanded:
                if ans.get("error"):
                    # the model call itself failed (network, timeout after retries): no point to act on
                    res.robot_outcome, res.agent_error = "agent_failure", str(ans["error"])
                elif tgt is None:
                    res.robot_outcome = "refused"
                    res.target = {"valid": False,
                                  "reason": f"no_target: targeting gave no result within {self.timeouts.target_s:.0f} s"}
                else:
                    res.robot_outcome = "refused"
                return res
            arm = await self._wait(f_arm, self.timeouts.motion_s)
            t_arm = time.monotonic()
            res.timings_s["motion"] = round(t_arm - t_target, 4)
            if arm is None:
                self.emergency_stop()  # an arm that does not report must not go on moving
                res.robot_outcome = "robot_failure"
                res.robot_error = f"the arm gave no result within {self.timeouts.motion_s:.0f} s; emergency stop sent"
                return res
            self._record_arm(res, ans, arm)
            return res
        finally:
            self._forget_after(res, rid)
            if expected is not None and self.judge is not None:
                try:
                    ok, detail = await asyncio.to_thread(self.judge, expected)
                    # a trial whose motion did not complete is never a success, even if the scene
                    # already looked as asked (a refused "put it next to X" with it already there)
                    done = res.robot_outcome == "done"
                    res.sim_success = bool(ok) and done
                    res.sim_detail = detail if done else f"no completed motion ({res.robot_outcome}); {detail}"
                except Exception as e:  # the judgement is a record, not a reason to lose the trial
                    log.exception("sim judgement failed")
                    res.sim_detail = f"judge failed: {type(e).__name__}: {e}"
            res.timings_s["total"] = round(time.monotonic() - t_start, 4)

    def _forget_after(self, res: TrialResult, rid: str) -> None:
        with self._lock:
            msg = self._request_frames.get(rid)
        if msg is not None:
            try:
                self._trial_jpegs[res.trial_id] = encode_jpeg(image_to_rgb(msg), self.jpeg_quality)
                while len(self._trial_jpegs) > 50:
                    self._trial_jpegs.popitem(last=False)
            except ValueError:
                pass
        self._forget(rid)

    def _record_answer(self, res: TrialResult, ans: dict) -> None:
        res.raw_answer = ans.get("raw_answer") or ""
        res.points_px = [[float(c) for c in p] for p in (ans.get("points_px") or [])]
        res.parse_error = ans.get("parse_error")
        if ans.get("width") and ans.get("height"):
            res.frame_size = [int(ans["width"]), int(ans["height"])]
        stamp = ans.get("stamp_ns")
        if isinstance(stamp, int):
            with self._lock:
                res.frame_index = self._index_by_stamp.get(stamp)
        if ans.get("latency_s") is not None:
            res.timings_s["agent_model"] = round(float(ans["latency_s"]), 4)

    def _record_arm(self, res: TrialResult, ans: dict, arm: dict) -> None:
        outcome = arm.get("outcome")
        res.robot_outcome = outcome if outcome in ("done", "refused", "robot_failure", "stopped") else "robot_failure"
        res.motion = arm.get("motion")
        if outcome != "done":
            res.robot_error = arm.get("error")
        if isinstance(arm.get("command_rx_ns"), int) and isinstance(ans.get("answered_ns"), int):
            # the loop's own latency: answer published -> command received by the arm (no model call)
            res.timings_s["point_to_command"] = round((arm["command_rx_ns"] - ans["answered_ns"]) / 1e9, 6)

    def close(self) -> None:
        """Stop the live-view thread (the host destroys the node)."""
        self._closed.set()
        self._new_frame.set()
        self._encoder.join(timeout=2.0)


def _resolve(fut: asyncio.Future, payload: Any) -> None:
    if not fut.done():
        fut.set_result(payload)
