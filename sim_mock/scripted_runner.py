"""A scripted Point-Act system (every part of :class:`pointlab.bridge.trials.record.PointActParts` in one
object) as a test double for the web app's unit tests.

No ROS, no arm: a synthetic 320x240 colour view (a frame counter drawn on it), agents whose
answers are fixed per name, and a human reference that waits for ``answer``. The
real runner is ``pointlab.bridge.ros.runner.RosTrialRunner`` (through ``bridge.session``).
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid

import cv2
import numpy as np

from pointlab.bridge.trials.outcomes import Abort, Refusal
from pointlab.bridge.trials.targeting import Target, entries_from_points, first_point
from pointlab.bridge.trials.record import PointActParts, TrialResult

__all__ = ["ScriptedRunner"]


class ScriptedRunner:
    """Agents: ``agent_points`` maps a name to the point it answers (``None``: unparseable answer,
    refused); ``human_agents`` wait for the operator. A ``done`` trial toggles holding (pick -> place).

    Attributes recorded for assertions: ``calls`` (agent, instruction), ``reveal_floors``, ``stops``,
    ``resets``, ``releases``, ``aborts``.
    """

    def __init__(self, agent_points: dict[str, tuple[float, float] | None] | None = None,
                 human_agents: tuple[str, ...] = ("human",), width: int = 320, height: int = 240,
                 trial_delay_s: float = 0.05, raw_text: str = "As model-x I point at",
                 automatic_scene: bool = True) -> None:
        self.agent_points = dict(agent_points if agent_points is not None else
                                 {"sim-oracle": (100.0, 80.0), "sim-noisy": (30.0, 200.0)})
        self.human_agents = tuple(human_agents)
        self.agent_names = list(self.agent_points) + list(self.human_agents)
        self.width, self.height = width, height
        self.trial_delay_s = trial_delay_s
        self.raw_text = raw_text
        self._holding = False
        self._t0 = time.monotonic()
        self._requests: dict[str, dict] = {}
        self._futures: dict[str, asyncio.Future] = {}
        self._trial_jpegs: dict[tuple[str, str], bytes] = {}  # (trial_id, before|after) -> JPEG
        self._abort: asyncio.Future | None = None
        self.reveal_floors: list[float] = []
        self.aborts = 0
        self.recordings_ended: list[str] = []
        self.automatic = automatic_scene
        self.scene_restores = 0
        self.homes = 0
        self.calls: list[tuple[str, str]] = []
        self.stops = 0
        self.resets = 0
        self.releases = 0

    def _image(self, index: int) -> np.ndarray:
        img = np.full((self.height, self.width, 3), (40, 120, 60), np.uint8)
        cv2.circle(img, (100, 80), 12, (230, 40, 40), -1)
        cv2.putText(img, str(index), (10, self.height - 10), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1)
        return img

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        index = int((time.monotonic() - self._t0) * 30)  # a 30 fps camera
        ok, buf = cv2.imencode(".jpg", cv2.cvtColor(self._image(index), cv2.COLOR_RGB2BGR))
        return (buf.tobytes(), index) if ok else None

    async def run_trial(self, agent: str, instruction: str, *, expected: dict | None = None,
                        reveal_floor_s: float = 0.0, keep_recording: bool = False) -> TrialResult:
        self.calls.append((agent, instruction))
        self.reveal_floors.append(reveal_floor_s)
        self._abort = asyncio.get_running_loop().create_future()
        try:
            return await self._run(agent, instruction, expected)
        finally:
            self._abort = None

    async def _run(self, agent: str, instruction: str, expected: dict | None) -> TrialResult:
        action = "place" if self._holding else "pick"
        frame = self.latest_jpeg()
        res = TrialResult(trial_id=uuid.uuid4().hex, agent=agent, instruction=instruction, action=action,
                          frame_index=frame[1], frame_size=(self.width, self.height), expected=expected)
        self._trial_jpegs[(res.trial_id, "before")] = frame[0]
        if agent in self.human_agents:
            rid = uuid.uuid4().hex
            jpeg = frame[0]
            self._requests[rid] = {"request_id": rid, "instruction": instruction, "width": self.width,
                                   "height": self.height, "jpeg_b64": base64.b64encode(jpeg).decode()}
            fut = asyncio.get_running_loop().create_future()
            self._futures[rid] = fut
            try:
                done, _ = await asyncio.wait({fut, self._abort}, return_when=asyncio.FIRST_COMPLETED)
                if fut not in done:  # the operator aborted while the human reference had not clicked
                    res.robot_outcome, res.abort, res.outcome = "stopped", Abort(code="operator_abort"), "aborted"
                    res.failure_stage = "aborted"
                    return res
                u, v = fut.result()
            finally:
                self._requests.pop(rid, None)
                self._futures.pop(rid, None)
            point = (u, v)
            res.raw_answer = f"[{u}, {v}]"
        elif agent in self.agent_points:
            point = self.agent_points[agent]
            res.raw_answer = f"{self.raw_text} {point} (agent {agent})"
        else:
            res.robot_outcome = "agent_failure"
            res.agent_error = f"unknown agent {agent}"
            res.abort, res.outcome, res.failure_stage = Abort(code="agent_error"), "aborted", "aborted"
            return res
        await asyncio.sleep(self.trial_delay_s)
        if point is None:
            res.parse_error = f"unparseable answer from {agent}"
            res.refusal = Refusal(code="no_point", detail="the agent gave no parseable point")
            res.target = Target(valid=False, refusal=res.refusal)
            res.robot_outcome = "refused"
            return res
        res.points = entries_from_points([point])
        res.points_px = [(e.u_px, e.v_px) for e in res.points if e.usable]
        pixel, refusal = first_point(res.points)
        if refusal is not None:  # as targeting: an invalid first point moves nothing
            res.refusal, res.target, res.robot_outcome = refusal, Target(valid=False, refusal=refusal), "refused"
            return res
        res.target = Target(valid=True, pixel=pixel, point_base_m=(0.3, 0.0, 0.02))
        res.robot_outcome = "done"
        res.sim_success = True
        res.timings_s = {"agent": 0.0, "targeting": 0.0, "motion": self.trial_delay_s, "total": self.trial_delay_s}
        self._holding = not self._holding
        after = self.latest_jpeg()
        res.after_frame_index = after[1]
        self._trial_jpegs[(res.trial_id, "after")] = after[0]
        return res

    async def end_recording(self, trial_id: str) -> dict | None:
        self.recordings_ended.append(trial_id)
        return None

    def abort_current(self) -> bool:
        if self._abort is None or self._abort.done():
            return False
        self._abort.set_result(True)
        self.aborts += 1
        return True

    def trial_jpeg(self, trial_id: str, which: str = "before") -> bytes | None:
        """The ``before``/``after`` frame of trial ``trial_id`` as JPEG (as ``RosTrialRunner.trial_jpeg``)."""
        return self._trial_jpegs.get((trial_id, which))

    def parts(self) -> PointActParts:
        """This one object as every part (trials, live view, human relay, arm, scene) of the web app."""
        return PointActParts(trials=self, live_view=self, human=self, arm=self, scene=self)

    # SceneControl: restores "exactly" (counts the calls) unless built with automatic_scene=False
    def restore(self) -> None:
        self.scene_restores += 1
        self._holding = False

    async def home(self) -> dict:
        self.homes += 1
        return {"outcome": "done", "error": None, "holding": self._holding}

    def pending(self, with_images: bool = True) -> list[dict]:
        return [dict(r) for r in self._requests.values()]

    def answer(self, request_id: str, u: float, v: float) -> bool:
        fut = self._futures.get(request_id)
        if fut is None or fut.done():
            return False
        # May be called from a worker thread (sync FastAPI route): hand the result to the loop.
        fut.get_loop().call_soon_threadsafe(lambda: fut.done() or fut.set_result((float(u), float(v))))
        return True

    def holding(self) -> bool:
        return self._holding

    def emergency_stop(self) -> None:
        self.stops += 1

    def reset(self) -> None:
        self.resets += 1
        self._holding = False

    async def release(self) -> dict:
        self.releases += 1
        self._holding = False
        return {"outcome": "done", "error": None, "holding": False}

    def state(self) -> dict:
        return {"holding": self._holding, "stops": self.stops}
