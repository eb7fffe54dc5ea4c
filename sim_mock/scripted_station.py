"""A scripted world for the web app's tests: every port of the trial machine in one in-process object.

The web app's unit tests need trials that run in milliseconds without ROS or MuJoCo. They run the
real station and the real trial machine (``bridge.trials.station``, ``bridge.trials.machine``: no rule
is copied here); only the world is scripted:

- the camera is a synthetic 320x240 view (a red disc at (100, 80) and a frame counter, 30 frames/s);
- an agent answers a fixed point per name after ``trial_delay_s`` (``None``: an unparseable answer),
  a human agent waits for the operator's ``answer``/``decline``;
- targeting turns the first point into a target at (0.3, 0.0, 0.02) m, as the real rule refuses an
  invalid first point;
- the arm takes ``motion_s`` per action, can be halted (controlled) or e-stopped, and a pick holds the
  object when ``grasps`` says so (default: every pick holds);
- the scene's evidence is what the arm holds; ``restore`` counts and empties the tool;
- free space is ``free_bytes`` (default: plenty).

Attributes recorded for assertions: ``calls`` (agent, instruction), ``commands`` (arm actions in
order), ``stops``, ``resets``, ``releases``, ``homes``, ``halts``, ``scene_restores``.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from collections.abc import Iterable

import cv2
import numpy as np

from pointlab.bridge.study.trial_store import StudyStorePort
from pointlab.bridge.trials.ports import (
    AgentReply,
    ArmReadiness,
    ArmReply,
    Ports,
    SceneEvidence,
    TargetReply,
    TrialFrame,
)
from pointlab.bridge.trials.station import PointActParts, Station
from pointlab.bridge.trials.targeting import Target, entries_from_points, first_point

__all__ = ["ScriptedWorld"]

TARGET_M = (0.3, 0.0, 0.02)


class ScriptedWorld:
    """Agents, camera, targeting, arm, scene and storage as one scripted object (module docstring).

    Args:
        agent_points: agent name -> the point it answers (``None``: an unparseable answer).
        human_agents: names answered by the operator (``answer``/``decline``).
        trial_delay_s: how long an agent takes to answer.
        motion_s: how long each arm action takes.
        raw_text: the start of every scripted raw answer (it names no agent a participant may see).
        automatic_scene: ``True``: ``restore`` puts the scene back (a simulator); ``False``: a person does.
        grasps: whether each successive pick holds the object (then every pick holds).
        free_bytes: what the storage port reports.
    """

    def __init__(
        self,
        agent_points: dict[str, tuple[float, float] | None] | None = None,
        human_agents: tuple[str, ...] = ("human",),
        width: int = 320,
        height: int = 240,
        trial_delay_s: float = 0.05,
        motion_s: float = 0.05,
        raw_text: str = "As model-x I point at",
        automatic_scene: bool = True,
        grasps: Iterable[bool] = (),
        free_bytes: int | None = 10**12,
    ) -> None:
        self.agent_points = dict(
            agent_points if agent_points is not None else {"sim-oracle": (100.0, 80.0), "sim-noisy": (30.0, 200.0)}
        )
        self.human_agents = tuple(human_agents)
        self.agent_names = list(self.agent_points) + list(self.human_agents)
        self.width, self.height = width, height
        self.trial_delay_s, self.motion_s, self.raw_text = trial_delay_s, motion_s, raw_text
        self.automatic = automatic_scene
        self._grasps = list(grasps)
        self.free_bytes_value = free_bytes
        self.held: str | None = None
        self.tool_closed = False
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._requests: dict[str, dict] = {}
        self._futures: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}
        self._halt = threading.Event()
        self._estop = threading.Event()
        self.camera_ok = True  # False: the pointing side has no frame to show (a camera error)
        self.next_arm_reply: ArmReply | None = None  # the next pick/place ends so (a fault, a refusal)
        self.last_station: Station | None = None
        self.calls: list[tuple[str, str]] = []
        self.commands: list[str] = []
        self.stops = self.resets = self.releases = self.homes = self.halts = self.scene_restores = 0
        self.restored_at_index = -1

    # -- building --------------------------------------------------------------------------------
    def station(self, store=None, **kw) -> Station:
        """A real station over this world (``store``: the study store its trials are saved in)."""
        ports = Ports(
            agent=self,
            targeting=self,
            arm=self,
            camera=self,
            storage=self,
            scene=self,
            store=None if store is None else StudyStorePort(store),
        )
        return Station(ports, self.agent_names, human_agents=self.human_agents, **kw)

    def parts(self, store=None, **kw) -> PointActParts:
        """The web app's parts: a station over this world (kept as ``last_station``), and this world as
        the human relay."""
        self.last_station = self.station(store, **kw)
        return PointActParts(self.last_station, self)

    # -- camera ----------------------------------------------------------------------------------
    def _image(self, index: int) -> np.ndarray:
        img = np.full((self.height, self.width, 3), (40, 120, 60), np.uint8)
        cv2.circle(img, (100, 80), 12, (230, 40, 40), -1)
        cv2.putText(img, str(index), (10, self.height - 10), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1)
        return img

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        index = int((time.monotonic() - self._t0) * 30)  # a 30 fps camera
        ok, buf = cv2.imencode(".jpg", cv2.cvtColor(self._image(index), cv2.COLOR_RGB2BGR))
        return (buf.tobytes(), index) if ok else None

    def _frame(self) -> TrialFrame:
        got = self.latest_jpeg()
        if got is None:
            raise RuntimeError("cv2.imencode failed on the scripted frame")
        jpeg, index = got
        return TrialFrame(index=index, stamp_ns=time.time_ns(), jpeg=jpeg, size=(self.width, self.height))

    async def frame_after(self, timeout_s: float) -> TrialFrame | None:
        await asyncio.sleep(0.04)  # a frame exposed after now
        return self._frame()

    # -- agent -----------------------------------------------------------------------------------
    async def point(self, request_id: str, agent: str, instruction: str) -> AgentReply:
        self.calls.append((agent, instruction))
        if not self.camera_ok:
            return AgentReply(error="no_frame: no colour frame", error_kind="camera")
        frame = self._frame()
        if agent in self.human_agents:
            return await self._ask_human(request_id, instruction, frame)
        await asyncio.sleep(self.trial_delay_s)
        if agent not in self.agent_points:
            return AgentReply(error=f"unknown agent {agent}", error_kind="agent", frame=frame)
        point = self.agent_points[agent]
        raw = f"{self.raw_text} {point} (agent {agent})"
        if point is None:
            return AgentReply(raw_answer=raw, parse_error=f"unparseable answer from {agent}", frame=frame)
        entries = tuple(entries_from_points([point]))
        return AgentReply(
            raw_answer=raw,
            points=entries,
            points_px=tuple(px for e in entries if (px := e.pixel) is not None),
            frame=frame,
            answered_ns=time.time_ns(),
        )

    async def _ask_human(self, request_id: str, instruction: str, frame: TrialFrame) -> AgentReply:
        fut = asyncio.get_running_loop().create_future()
        with self._lock:
            self._requests[request_id] = {
                "request_id": request_id,
                "instruction": instruction,
                "width": self.width,
                "height": self.height,
                "jpeg_b64": base64.b64encode(frame.jpeg or b"").decode(),  # (_frame's has one)
            }
            self._futures[request_id] = (asyncio.get_running_loop(), fut)
        try:
            clicked = await fut
        finally:
            with self._lock:
                self._requests.pop(request_id, None)
                self._futures.pop(request_id, None)
        if clicked is None:
            return AgentReply(frame=frame, answered_ns=time.time_ns())
        entries = tuple(entries_from_points([clicked]))
        return AgentReply(
            raw_answer=f"[{clicked[0]}, {clicked[1]}]",
            points=entries,
            points_px=tuple((u, v) for e in entries if (u := e.u_px) is not None and (v := e.v_px) is not None),
            frame=frame,
            answered_ns=time.time_ns(),
        )

    # HumanRelayPort (the operator console)
    def pending(self, with_images: bool = True) -> list[dict]:
        with self._lock:
            return [
                dict(r) if with_images else {k: v for k, v in r.items() if k != "jpeg_b64"}
                for r in self._requests.values()
            ]

    def _resolve(self, request_id: str, value) -> bool:
        with self._lock:
            entry = self._futures.get(request_id)
        if entry is None or entry[1].done():
            return False
        loop, fut = entry

        # called from a worker thread (a sync FastAPI route): hand the result to the trial's loop
        def settle() -> None:
            if not fut.done():
                fut.set_result(value)

        loop.call_soon_threadsafe(settle)
        return True

    def answer(self, request_id: str, u: float, v: float) -> bool:
        return self._resolve(request_id, (float(u), float(v)))

    def decline(self, request_id: str) -> bool:
        return self._resolve(request_id, None)

    # -- targeting -------------------------------------------------------------------------------
    async def target(self, request_id: str, reply: AgentReply) -> TargetReply:
        pixel, refusal = first_point(reply.points)
        if refusal is not None:  # the real rule: an invalid or missing first point moves nothing
            return TargetReply(Target(valid=False, refusal=refusal))
        return TargetReply(Target(valid=True, pixel=pixel, point_base_m=TARGET_M, depth_m=0.5))

    # -- arm -------------------------------------------------------------------------------------
    async def run(self, request_id: str, action: str, target_m=None) -> ArmReply:
        self.commands.append(action)
        if self._estop.is_set():
            return ArmReply("stopped")
        self.homes += action == "home"
        self.releases += action == "release"
        deadline = time.monotonic() + self.motion_s
        while time.monotonic() < deadline:  # a motion: interrupted by a halt or an e-stop
            if self._estop.is_set():
                return ArmReply("stopped")
            if self._halt.is_set():
                self._halt.clear()
                return ArmReply("halted", motion={"action": action, "target_m": list(target_m or [])})
            await asyncio.sleep(0.005)
        if action in ("pick", "place") and self.next_arm_reply is not None:
            reply, self.next_arm_reply = self.next_arm_reply, None
            return reply
        if action == "pick":
            self.tool_closed = True
            self.held = "ball" if (self._grasps.pop(0) if self._grasps else True) else None
        elif action in ("place", "release"):
            self.tool_closed, self.held = False, None
        return ArmReply(
            "done",
            motion={"action": action, "target_m": list(target_m or []), "duration_s": self.motion_s},
            command_rx_ns=time.time_ns(),
        )

    def halt(self) -> None:
        self.halts += 1
        self._halt.set()

    def emergency_stop(self) -> None:
        self.stops += 1
        self._estop.set()

    def reset(self) -> None:
        self.resets += 1
        self._estop.clear()
        self._halt.clear()

    def readiness(self) -> ArmReadiness:
        return ArmReadiness(False, "estop", "emergency stop") if self._estop.is_set() else ArmReadiness(True)

    def state(self) -> dict:
        return {
            "connected": True,
            "estopped": self._estop.is_set(),
            "fault": None,
            "tool_closed": self.tool_closed,
            "holding": self.held is not None,
        }

    # -- scene and storage -----------------------------------------------------------------------
    def restore(self) -> None:
        self.scene_restores += 1
        self.held, self.tool_closed = None, False
        # the camera's frame index at the restore: a starting frame must come after it
        self.restored_at_index = int((time.monotonic() - self._t0) * 30)

    def infer_expected(self, instruction: str, action: str) -> dict | None:
        return None

    def intended_mask(self, expected: dict):
        return None

    def evidence(self, expected: dict | None) -> SceneEvidence:
        return SceneEvidence(held=self.held)

    def free_bytes(self) -> int | None:
        return self.free_bytes_value
