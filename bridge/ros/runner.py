"""``RosTrialRunner``: trial orchestration over the ROS 2 node set, and the parts it is built from.

One trial (PointArena sec. 3.4 / 4.1):

1. the action is chosen from the gripper state: ``pick`` when the arm holds nothing, else ``place``;
2. ``/pointlab/point_request`` -> the pointing node asks the agent on the latest colour frame ->
   ``/pointlab/point_answer``;
3. the targeting node turns the first point into a base-frame target on the depth of that same
   frame -> ``/pointlab/target_result`` (valid, or a refusal with its code);
4. only for a valid target, ``/pointlab/arm/command`` -> the arm node -> ``/pointlab/arm/result``;
5. after a completed action the arm homes (so the camera sees the scene, not the arm), and a frame
   taken after it stopped is kept beside the one the agent saw (the participant judges from both);
6. the automatic outcome check (``bridge.trials.autocheck``: the sim's physics state, or depth before and
   after), whether the first point is on the intended object (failure attribution), and with a sim
   world and an ``expected`` dict the simulator's own judgement.

Every failure (no answer in time, agent error, refusal, robot fault, e-stop) becomes a recorded
``robot_outcome``; one that makes the trial no fair test of the agent (e-stop, robot fault, agent
or camera error, operator abort) also sets ``abort``. ``run_trial`` does not raise for them. Trials
are serialised (one arm). ``reveal_floor_s`` holds the arm command until that many seconds after
the request, whoever answered (blinding: a human reference is slower than a model).

The runner owns one rclpy node and builds the narrow parts on it: ``RecentFrames`` (recent frames),
``RosLiveView`` (JPEG live view), ``HumanRelay`` (human-reference requests), ``ArmClient`` (arm
state, commands, stop, reset, release); ``parts()`` hands them to the web app as
``bridge.trials.record.PointActParts``.

Threading: ROS callbacks run on the executor's threads; awaited messages resolve futures of the
caller's loop (``Waiters``), so ``run_trial`` may be awaited from any event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from pointlab.bridge.trials.attribution import point_in_mask
from pointlab.bridge.trials.autocheck import depth_check, physics_check
from pointlab.bridge.trials.outcomes import Abort, Refusal, RobotErrorInfo
from pointlab.bridge.trials.targeting import Target
from pointlab.bridge.trials.record import Motion, PointActParts, TrialResult
from pointlab.bridge.ros.arm_client import ArmClient
from pointlab.bridge.ros.frames import RecentFrames
from pointlab.bridge.ros.human_relay import HumanRelay
from pointlab.bridge.ros.live_view import RosLiveView
from pointlab.bridge.ros.msgs import TOPICS, image_to_depth
from pointlab.bridge.ros.payloads import ArmResult, PointAnswer, PointFrame, PointRequest, TargetResult, from_msg, to_msg
from pointlab.bridge.ros.waiters import Waiters

__all__ = ["RosTrialRunner", "RunnerTimeouts"]

log = logging.getLogger(__name__)

_KINDS = ("answer", "target", "arm")


@dataclass(frozen=True)
class RunnerTimeouts:
    """How long each stage may take, seconds.

    Attributes:
        answer_s: a model agent's answer (the agent's own timeout and retries come first).
        human_answer_s: the human reference (an operator must click).
        target_s: the targeting node's result after the answer.
        motion_s: the arm's result after the command (a sequence at 0.15 m/s takes a few seconds).
        state_s: waiting for a first arm state at the start of a trial.
        after_frame_s: waiting for a camera frame after the arm stopped.
    """

    answer_s: float = 180.0
    human_answer_s: float = 900.0
    target_s: float = 10.0
    motion_s: float = 120.0
    state_s: float = 5.0
    after_frame_s: float = 5.0


class RosTrialRunner:
    """``bridge.trials.record.TrialRunner`` over the node set's topics.

    Args:
        host: the ``RosHost`` whose executor spins this runner's node (the nodes themselves may live
            in this process or elsewhere on the ROS graph).
        agent_names: the agents the pointing node knows (config names; never shown to participants).
        judge: ``judge(expected) -> (bool, str)`` of a sim world, or ``None`` (real robot).
        infer_expected: ``(instruction, action) -> expected | None`` of a sim world, used when a trial
            has no scripted expectation (typed in the browser).
        intended_mask: ``expected -> (H, W) bool | None``: the intended object's mask on the current
            frame (a sim world's segmentation), for the failure attribution; ``None``: unknown.
        human: the human reference agent (``pending()``, ``answer(request_id, u, v)``), or ``None``.
        human_agent_names: names of agents answered by a person (longer answer timeout).
        timeouts: per-stage timeouts.
        live_max_fps: upper bound of the live view's encoding rate.
        session: this session's nonce, sent in every arm command.
        home_after: home the arm after every completed action (the "after" frame then shows the scene).
    """

    def __init__(self, host, agent_names: list[str], *, judge: Callable[[dict], tuple[bool, str]] | None = None,
                 infer_expected: Callable[[str, str], dict | None] | None = None,
                 intended_mask: Callable[[dict], np.ndarray | None] | None = None, human=None,
                 human_agent_names=(), timeouts: RunnerTimeouts = RunnerTimeouts(),
                 live_max_fps: float = 30.0, jpeg_quality: int = 80, session: str = "",
                 home_after: bool = True) -> None:
        from pointlab.bridge.ros.lean_node import LeanNode
        from std_msgs.msg import String

        self.agent_names = list(agent_names)
        self.judge, self.infer_expected, self.intended_mask = judge, infer_expected, intended_mask
        self.human_agent_names = set(human_agent_names)
        self.timeouts = timeouts
        self.home_after = home_after
        self._lock = threading.Lock()
        self._trial_lock = threading.Lock()  # one trial or release at a time, from any loop
        self.waiters = Waiters()
        self._armed: dict[str, str] = {}  # request_id -> action, for a trial that may still command the arm
        self._commanded: set[str] = set()  # request_ids whose command was published
        self._request_frames: dict[str, tuple] = {}  # request_id -> (colour msg, depth msg) the agent saw
        self._trial_jpegs: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._abort: tuple[asyncio.AbstractEventLoop, asyncio.Future] | None = None
        self.recorder = None  # a ros.recorder.TrialRecorder, set by the session when trials are recorded

        self.node = LeanNode("pointlab_runner", context=host.context)
        self.frames = RecentFrames(self.node)
        self.live_view = RosLiveView(self.frames, max_fps=live_max_fps, jpeg_quality=jpeg_quality)
        self.human = HumanRelay(human, jpeg_quality=jpeg_quality)
        self.arm = ArmClient(self.node, self.waiters, self._trial_lock, session=session,
                             motion_timeout_s=timeouts.motion_s)
        self._pub_request = self.node.create_publisher(String, TOPICS["point_request"], 50)
        sub = self.node.create_subscription
        sub(String, TOPICS["point_answer"], self._on_answer, 50)
        sub(String, TOPICS["target_result"], self._on_target_result, 50)
        sub(String, TOPICS["point_frame"], self._on_point_frame, 50)
        host.add(self.node)

    def parts(self, scene=None) -> PointActParts:
        """The parts the web app uses; ``scene`` is the session's ``SceneControl`` (default: manual)."""
        from pointlab.bridge.trials.scene import ManualScene

        return PointActParts(trials=self, live_view=self.live_view, human=self.human, arm=self.arm,
                             scene=scene or ManualScene())

    def ready(self) -> bool:
        """A colour frame and an arm state have arrived (the session can run trials)."""
        return self.frames.count > 0 and self.arm.ready()

    # -- ROS side (executor threads) ------------------------------------------------------------
    def _on_answer(self, msg) -> None:
        ans = from_msg(PointAnswer, msg)
        if ans is not None:
            self.waiters.deliver("answer", ans.request_id, ans)

    def _on_point_frame(self, msg) -> None:
        pf = from_msg(PointFrame, msg)
        if pf is None:
            return
        color = self.frames.by_stamp(pf.stamp_ns)  # kept now: the recent frames hold about a second
        if color is None:
            return
        with self._lock:
            self._request_frames[pf.request_id] = (color, self.frames.depth_by_stamp(pf.stamp_ns))
            while len(self._request_frames) > 50:
                self._request_frames.pop(next(iter(self._request_frames)))

    def _on_target_result(self, msg) -> None:
        res = from_msg(TargetResult, msg)
        if res is None:
            return
        rid, target = res.request_id, res.target
        # The arm is commanded here, on the executor thread, rather than after a hop back to the
        # trial's event loop: the point-to-command latency is the loop's headline number. Only a
        # valid target of a trial still waiting for it (popped atomically) is ever commanded.
        with self._lock:
            action = self._armed.pop(rid, None) if target.valid else None
            if action is not None:
                self._commanded.add(rid)
        if action is not None:
            self.arm.command(rid, action, target.point_base_m)
        self.waiters.deliver("target", rid, res)

    # -- trials ---------------------------------------------------------------------------------
    def trial_jpeg(self, trial_id: str, which: str = "before") -> bytes | None:
        """JPEG of the frame the agent saw (``before``) or of the frame after the arm stopped
        (``after``) in trial ``trial_id`` (the last 50 trials), or ``None``."""
        return self._trial_jpegs.get((trial_id, which))

    async def end_recording(self, trial_id: str) -> dict | None:
        """End trial ``trial_id``'s recording (kept running by ``keep_recording``); its ``Recording``
        as JSON values, or ``None`` (no recorder, nothing recorded)."""
        if self.recorder is None:
            return None
        rec = await self.recorder.end_async(trial_id)
        return None if rec is None else rec.model_dump(mode="json")

    async def _end_recording(self, res: TrialResult) -> None:
        try:
            res.recording = await self.end_recording(res.trial_id)
        except Exception:  # a recording is a record of the trial, never a reason to lose it
            log.exception("ending the recording of %s failed", res.trial_id)

    def abort_current(self) -> bool:
        """Abort the running trial (the operator's button); ``False`` when none runs."""
        with self._lock:
            pending = self._abort
        if pending is None:
            return False
        loop, fut = pending
        try:
            loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(True))
        except RuntimeError:
            return False
        return True

    def _disarm(self, rid: str) -> bool:
        """From now on the target callback cannot command the arm for ``rid``; returns whether it did."""
        with self._lock:
            self._armed.pop(rid, None)
            return rid in self._commanded

    async def _wait(self, fut: asyncio.Future, timeout_s: float):
        """``fut``'s result, ``None`` on timeout, or ``_ABORTED`` when the operator aborted first."""
        abort = self._abort[1] if self._abort is not None else None
        waiting = {fut} if abort is None else {fut, abort}
        done, _ = await asyncio.wait(waiting, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if fut in done:
            return fut.result()
        return _ABORTED if abort is not None and abort in done else None

    async def run_trial(self, agent: str, instruction: str, *, expected: dict | None = None,
                        reveal_floor_s: float = 0.0, keep_recording: bool = False) -> TrialResult:
        """Run one trial (see the module docstring). Never raises for an agent, targeting or robot
        failure; raises ``ValueError`` only for an agent name this runner does not know.

        With a recorder the trial is recorded from the request on; the recording ends with the trial,
        or, ``keep_recording``, when ``end_recording(trial_id)`` is called (the participant's
        judgement: the clip then runs from the instruction to the judgement), at the latest after
        the recorder's ``max_duration_s``."""
        if agent not in self.agent_names:
            raise ValueError(f"unknown agent {agent!r}")
        while not self._trial_lock.acquire(blocking=False):  # one trial at a time, from any loop
            await asyncio.sleep(0.01)
        loop = asyncio.get_running_loop()
        with self._lock:
            self._abort = (loop, loop.create_future())
        t0 = time.monotonic()
        try:
            res = await self._run_trial(agent, instruction, expected, reveal_floor_s)
            if not keep_recording or res.outcome == "aborted":
                await self._end_recording(res)
            left = reveal_floor_s - (time.monotonic() - t0)
            if left > 0 and res.outcome != "aborted":  # blinding: no result earlier than the floor either
                await asyncio.sleep(left)
                res.timings_s["total"] = round(time.monotonic() - t0, 4)
            return res
        finally:
            with self._lock:
                self._abort = None
            self._trial_lock.release()

    async def _run_trial(self, agent: str, instruction: str, expected: dict | None,
                         reveal_floor_s: float) -> TrialResult:
        t_start = time.monotonic()
        if not self.arm.ready():
            await asyncio.to_thread(self.arm.wait_state, self.timeouts.state_s)
        action = "place" if self.arm.holding() else "pick"
        if expected is None and self.infer_expected is not None:
            # a typed instruction has no script: the sim reads what it asks for before anything moves
            expected = self.infer_expected(instruction, action)
        intended = self._intended(expected)
        rid = uuid.uuid4().hex
        if self.recorder is not None:
            self.recorder.begin(rid, request_id=rid)
        res = TrialResult(trial_id=rid, agent=agent, instruction=instruction, action=action, expected=expected)
        f_answer, f_target, f_arm = (self.waiters.expect(k, rid) for k in _KINDS)
        floor = max(0.0, float(reveal_floor_s))
        if floor == 0.0:
            with self._lock:
                self._armed[rid] = action
        try:
            self._pub_request.publish(to_msg(PointRequest(request_id=rid, agent=agent, instruction=instruction)))
            timeout = self.timeouts.human_answer_s if agent in self.human_agent_names else self.timeouts.answer_s
            ans = await self._wait(f_answer, timeout)
            t_answer = time.monotonic()
            res.timings_s["agent"] = round(t_answer - t_start, 4)
            if ans is _ABORTED or ans is None:
                if ans is _ABORTED:
                    res.robot_outcome, res.abort = "stopped", Abort(code="operator_abort", detail="before the answer")
                else:
                    res.robot_outcome, res.agent_error = "agent_failure", f"no answer within {timeout:.0f} s"
                if self._disarm(rid):  # a target slipped in as the wait ended: never leave it moving
                    self.arm.emergency_stop()
                    res.robot_error = RobotErrorInfo(type="LateTarget", detail="a late target reached the arm "
                                                     "after the wait ended; emergency stop sent")
                return res
            self._record_answer(res, ans)
            res.point_on_target = self._on_target(intended, res)
            tgt = await self._wait(f_target, self.timeouts.target_s)
            t_target = time.monotonic()
            if tgt is _ABORTED:
                if self._disarm(rid):
                    self.arm.emergency_stop()
                res.robot_outcome, res.abort = "stopped", Abort(code="operator_abort", detail="before the motion")
                return res
            commanded = self._disarm(rid)
            res.timings_s["targeting"] = round(t_target - t_answer, 4)
            res.target = None if tgt is None else tgt.target
            if tgt is not None and ans.answered_ns:
                res.timings_s["point_to_target"] = round((tgt.published_ns - ans.answered_ns) / 1e9, 6)
            if not commanded and tgt is not None and tgt.target.valid and not ans.error and floor > 0:
                # blinding: the arm moves no earlier than the floor, whoever answered
                left = t_start + floor - time.monotonic()
                if left > 0 and await self._wait(asyncio.ensure_future(asyncio.sleep(left)), left + 1) is _ABORTED:
                    res.robot_outcome, res.abort = "stopped", Abort(code="operator_abort", detail="before the motion")
                    return res
                with self._lock:
                    self._commanded.add(rid)
                self.arm.command(rid, action, tgt.target.point_base_m)
                commanded = True
            if not commanded:
                if ans.error:
                    # the model call itself failed (network, timeout after retries): no point to act on
                    res.robot_outcome, res.agent_error = "agent_failure", ans.error
                elif tgt is None:
                    res.robot_outcome = "refused"
                    res.refusal = Refusal(code="no_target",
                                          detail=f"targeting gave no result within {self.timeouts.target_s:.0f} s")
                    res.target = Target(valid=False, refusal=res.refusal)
                else:
                    res.robot_outcome, res.refusal = "refused", tgt.target.refusal
                return res
            arm = await self._wait(f_arm, self.timeouts.motion_s)
            res.timings_s["motion"] = round(time.monotonic() - t_target, 4)
            if arm is _ABORTED:
                self.arm.emergency_stop()
                res.robot_outcome, res.abort = "stopped", Abort(code="operator_abort", detail="during the motion")
                return res
            if arm is None:
                self.arm.emergency_stop()  # an arm that does not report must not go on moving
                res.robot_outcome = "robot_failure"
                res.robot_error = RobotErrorInfo(type="ArmTimeoutError", detail=f"the arm gave no result within "
                                                 f"{self.timeouts.motion_s:.0f} s; emergency stop sent")
                return res
            self._record_arm(res, ans, arm)
            if res.robot_outcome == "done":
                await self._home_and_look(res)
            return res
        finally:
            self.waiters.forget(rid, _KINDS)
            with self._lock:
                self._armed.pop(rid, None)
                self._commanded.discard(rid)
            self._keep_before_frame(res, rid)
            _abort_of(res)
            await self._judge(res, expected)
            res.timings_s["total"] = round(time.monotonic() - t_start, 4)

    def _intended(self, expected: dict | None) -> np.ndarray | None:
        if expected is None or self.intended_mask is None:
            return None
        try:
            return self.intended_mask(expected)
        except Exception:  # attribution is a record; its failure must not lose the trial
            log.exception("intended mask failed")
            return None

    @staticmethod
    def _on_target(mask: np.ndarray | None, res: TrialResult) -> bool | None:
        first = res.points[0] if res.points else None
        if mask is None or first is None or not first.usable:
            return None
        return point_in_mask(mask, first.u_px, first.v_px)

    async def _home_and_look(self, res: TrialResult) -> None:
        """Home the arm out of the view (inside the trial: no other command can come between), then
        keep the first frame taken after it stopped and the depth check."""
        if self.home_after:
            hrid = uuid.uuid4().hex
            f_home = self.waiters.expect("arm", hrid)
            try:
                self.arm.command(hrid, "home")
                home = await self._wait(f_home, self.timeouts.motion_s)
            finally:
                self.waiters.forget(hrid, ("arm",))
            if home is _ABORTED or home is None or home.outcome != "done":
                if home is _ABORTED or home is None:
                    self.arm.emergency_stop()
                res.robot_error = home.error if isinstance(home, ArmResult) else RobotErrorInfo(
                    type="ArmTimeoutError", detail="homing after the action gave no result; emergency stop sent")
                res.abort = Abort(code="operator_abort" if home is _ABORTED else "robot_fault",
                                  detail="homing after the action did not complete")
                return
        count = self.frames.count
        # two new frames: the first may have been rendered or exposed before the arm stopped
        if not await asyncio.to_thread(self.frames.wait_newer, count + 1, self.timeouts.after_frame_s):
            return
        latest = self.frames.latest()
        if latest is None:
            return
        stamp, color, index = latest
        res.after_frame_index = index
        jpeg = self.live_view.jpeg_of(color)
        if jpeg is not None:
            self._keep_jpeg(res.trial_id, "after", jpeg)
        before = self._request_frames_of(res.trial_id)
        after_depth = self.frames.depth_by_stamp(stamp)
        if before is None or before[1] is None or after_depth is None or res.target is None or res.target.pixel is None:
            return
        try:
            d0, scale = image_to_depth(before[1])
            d1, _ = image_to_depth(after_depth)
            res.depth_check = depth_check(res.action, res.target.pixel, d0, d1, scale)
        except ValueError as e:
            log.warning("depth check skipped: %s", e)

    def _request_frames_of(self, rid: str):
        with self._lock:
            return self._request_frames.get(rid)

    def _keep_jpeg(self, trial_id: str, which: str, jpeg: bytes) -> None:
        self._trial_jpegs[(trial_id, which)] = jpeg
        while len(self._trial_jpegs) > 100:
            self._trial_jpegs.popitem(last=False)

    def _keep_before_frame(self, res: TrialResult, rid: str) -> None:
        with self._lock:
            frames = self._request_frames.pop(rid, None)
        jpeg = None if frames is None else self.live_view.jpeg_of(frames[0])
        if jpeg is not None:
            self._keep_jpeg(res.trial_id, "before", jpeg)

    async def _judge(self, res: TrialResult, expected: dict | None) -> None:
        if expected is None or self.judge is None:
            res.auto_check = res.depth_check
            return
        try:
            ok, detail = await asyncio.to_thread(self.judge, expected)
        except Exception as e:  # the judgement is a record, not a reason to lose the trial
            log.exception("sim judgement failed")
            res.sim_detail = f"judge failed: {type(e).__name__}: {e}"
            res.auto_check = res.depth_check
            return
        # a trial whose motion did not complete is never a success, even if the scene already
        # looked as asked (a refused "put it next to X" with it already there)
        done = res.robot_outcome == "done"
        res.sim_success = bool(ok) and done
        res.sim_detail = detail if done else f"no completed motion ({res.robot_outcome}); {detail}"
        res.auto_check = physics_check(res.sim_success, res.sim_detail)

    def _record_answer(self, res: TrialResult, ans: PointAnswer) -> None:
        res.raw_answer = ans.raw_answer
        res.points = list(ans.points)
        res.points_px = list(ans.points_px)
        res.parse_error = ans.parse_error
        if ans.width and ans.height:
            res.frame_size = (ans.width, ans.height)
        if ans.stamp_ns is not None:
            res.frame_index = self.frames.index_of(ans.stamp_ns)
        if ans.latency_s is not None:
            res.timings_s["agent_model"] = round(ans.latency_s, 4)

    def _record_arm(self, res: TrialResult, ans: PointAnswer, arm: ArmResult) -> None:
        res.robot_outcome = arm.outcome
        res.refusal = arm.refusal
        res.motion = None if arm.motion is None else Motion.model_validate(arm.motion)
        if arm.outcome != "done":
            res.robot_error = arm.error
        if arm.command_rx_ns is not None and ans.answered_ns:
            # the loop's own latency: answer published -> command received by the arm (no model call)
            res.timings_s["point_to_command"] = round((arm.command_rx_ns - ans.answered_ns) / 1e9, 6)

    def close(self) -> None:
        """Stop the live-view thread (the host destroys the node)."""
        self.live_view.close()


_ABORTED = object()  # a wait ended by the operator's abort
_CAMERA_ERRORS = ("no_frame", "bad_frame")


def _abort_of(res: TrialResult) -> None:
    """Set ``abort`` (and ``outcome``) for outcomes that make a trial no test of the agent."""
    if res.abort is None:
        if res.robot_outcome == "stopped":
            res.abort = Abort(code="estop", detail=str(res.robot_error) if res.robot_error else "emergency stop")
        elif res.robot_outcome == "robot_failure":
            res.abort = Abort(code="robot_fault", detail=str(res.robot_error) if res.robot_error else "")
        elif res.robot_outcome == "agent_failure":
            err = res.agent_error or ""
            res.abort = Abort(code="camera_error" if err.startswith(_CAMERA_ERRORS) else "agent_error", detail=err)
        elif res.robot_outcome == "refused" and res.refusal is not None and res.refusal.code in ("no_target",
                                                                                                  "bad_command"):
            res.abort = Abort(code="system_error", detail=str(res.refusal))
    if res.abort is not None:
        res.outcome = "aborted"
        res.failure_stage = "aborted"
