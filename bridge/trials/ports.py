"""The ports of the trial machine: how a trial talks to the world, and the data that crosses them.

The machine (``bridge.trials.machine``) holds the rules; the driver (``bridge.trials.driver``) carries
out its commands through these ports and turns what comes back into events. Each port is a small
protocol with one job, so the ROS node set (``bridge.ros.trial_ports``), the scripted test station
(``sim_mock.scripted_station``) and a station over a network can each provide it:

=============  =====================================================================================
port           job
=============  =====================================================================================
``agent``      ask an agent to point on a fresh colour frame; the reply holds that frame
``targeting``  the reply's first point -> a base-frame target or a refusal
``arm``        run one arm action and say how it ended; halt (controlled), emergency stop, readiness
``camera``     a frame taken after now (the judgement's "after"), the live view's latest JPEG
``scene``      the simulator's reading of an instruction, the intended object's mask, the physics
               evidence after the motion (``None`` answers on real hardware)
``storage``    free bytes where the trial and its recording go
``recorder``   begin and end a trial's recording
``store``      save the finished trial with its frames
``clock``      monotonic seconds and sleeping (a fake clock in tests)
=============  =====================================================================================

Units: times in seconds from a monotonic clock; pixels in original-image pixels; positions in metres
in the robot's base frame; depth ``(H, W)`` uint16 aligned to colour, ``depth_scale_m`` m per unit.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from pointlab.benchmark.points import PointEntry
from pointlab.bridge.trials.outcomes import Refusal, RobotErrorInfo
from pointlab.bridge.trials.targeting import Target

__all__ = [
    "TrialFrame",
    "AgentReply",
    "TargetReply",
    "ArmReply",
    "ArmReadiness",
    "SceneEvidence",
    "Slot",
    "AgentPort",
    "TargetingPort",
    "ArmPort",
    "CameraPort",
    "ScenePort",
    "StoragePort",
    "RecorderPort",
    "StorePort",
    "HumanRelayPort",
    "Clock",
    "MonotonicClock",
    "ArmReplyOutcome",
    "Ports",
]


@dataclass(frozen=True)
class TrialFrame:
    """One camera frame as a trial keeps it.

    Attributes:
        index: the camera's frame index (a replay folder's file number), ``None`` when unknown.
        stamp_ns: the frame's header stamp, nanoseconds.
        jpeg: the colour image as JPEG bytes (what the participant and the results page show).
        depth: aligned depth ``(H, W)`` uint16 (0 = no data), ``None`` when the frame has none.
        depth_scale_m: metres per depth unit.
        size: ``(width, height)`` in pixels.
    """

    index: int | None
    stamp_ns: int = 0
    jpeg: bytes | None = None
    depth: np.ndarray | None = None
    depth_scale_m: float | None = None
    size: tuple[int, int] | None = None


@dataclass(frozen=True)
class AgentReply:
    """An agent's answer to one request.

    Attributes:
        raw_answer: the agent's raw text.
        points: every point as the agent gave it, in order (invalid ones with their reason).
        points_px: the valid points, original-image pixels.
        parse_error: why the raw answer could not be read, or ``None``.
        error: why there is no answer (network, HTTP error, no frame); may name a model: operator only.
        error_kind: ``agent`` or ``camera`` when ``error`` is set.
        frame: the frame the agent saw (``None`` when the port could not keep it).
        latency_s: the model call's own wall time.
        answered_ns: wall time the answer was published (loop latencies), 0 when unknown.
    """

    raw_answer: str = ""
    points: tuple[PointEntry, ...] = ()
    points_px: tuple[tuple[float, float], ...] = ()
    parse_error: str | None = None
    error: str | None = None
    error_kind: Literal["agent", "camera"] | None = None
    frame: TrialFrame | None = None
    latency_s: float | None = None
    answered_ns: int = 0


@dataclass(frozen=True)
class TargetReply:
    """Targeting's result: a valid base-frame target or a refusal (``target.refusal``)."""

    target: Target
    published_ns: int = 0


ArmReplyOutcome = Literal["done", "refused", "halted", "stopped", "robot_failure"]


@dataclass(frozen=True)
class ArmReply:
    """How one arm action ended.

    Attributes:
        outcome: ``done``; ``refused`` (nothing sent: ``refusal``); ``halted`` (the controlled stop
            asked by ``ArmPort.halt``); ``stopped`` (emergency stop); ``robot_failure`` (a fault,
            a lost connection: ``error``).
        motion: what was commanded (``robot.arm.MotionReport`` as JSON values), when anything was.
        command_rx_ns: wall time the arm received the command (loop latency), ``None`` when unknown.
    """

    outcome: ArmReplyOutcome
    refusal: Refusal | None = None
    error: RobotErrorInfo | None = None
    motion: dict[str, Any] | None = None
    command_rx_ns: int | None = None


@dataclass(frozen=True)
class ArmReadiness:
    """Whether the arm can take a motion now: ``problem`` is ``estop``, ``fault`` or
    ``disconnected`` when it cannot (``detail`` says what the arm reported)."""

    ready: bool
    problem: Literal["estop", "fault", "disconnected"] | None = None
    detail: str = ""


@dataclass(frozen=True)
class SceneEvidence:
    """What a simulator says after a trial (``ScenePort.evidence``).

    Attributes:
        sim_success: its judgement of ``expected`` (``None``: no expectation to judge).
        sim_detail: why, in words.
        held: the object the tool holds by physics, ``None`` when it holds nothing.
        sensor: the tool's holding sensor, ``None`` without one.
    """

    sim_success: bool | None = None
    sim_detail: str | None = None
    held: str | None = None
    sensor: bool | None = None


@dataclass(frozen=True)
class Slot:
    """Where a trial belongs in a study (``None`` fields: a headless run outside any study)."""

    study_id: int | None = None
    participant_id: int | None = None
    block: int | None = None


class AgentPort(Protocol):
    async def point(self, request_id: str, agent: str, instruction: str) -> AgentReply:
        """Ask ``agent`` to point for ``instruction`` on a colour frame taken now; never raises for the
        agent's failures (they are ``AgentReply.error``). Cancelled when the trial stops waiting."""
        ...


class TargetingPort(Protocol):
    async def target(self, request_id: str, reply: AgentReply) -> TargetReply:
        """The target of ``reply``'s first point on the depth of ``reply.frame``."""
        ...


class ArmPort(Protocol):
    async def run(self, request_id: str, action: str, target_m: tuple[float, float, float] | None = None) -> ArmReply:
        """Run ``action`` (``pick``/``place`` at ``target_m``, base frame, metres; ``home``; ``release``: open
        the tool where it is) and return how it ended. Cancelled when the trial stops waiting."""
        ...

    def halt(self) -> None:
        """Stop the running action in a controlled way (no fault, no e-stop); it ends ``halted``."""
        ...

    def emergency_stop(self) -> None: ...

    def reset(self) -> None: ...

    def readiness(self) -> ArmReadiness: ...

    def state(self) -> dict:
        """The arm's latest state as JSON values (``robot.arm.ArmState``), ``{}`` before any."""
        ...


class CameraPort(Protocol):
    async def frame_after(self, timeout_s: float) -> TrialFrame | None:
        """A frame exposed after this call (the arm is still by then), or ``None`` within ``timeout_s``."""
        ...

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        """The live view: the latest colour frame as JPEG and its index, ``None`` before the first."""
        ...


class ScenePort(Protocol):
    automatic: bool  # True: ``restore`` puts the starting scene back exactly (a simulator)

    def infer_expected(self, instruction: str, action: str) -> dict | None: ...

    def intended_mask(self, expected: dict) -> np.ndarray | None: ...

    def evidence(self, expected: dict | None) -> SceneEvidence | None:
        """The simulator's judgement and contact state now, ``None`` on real hardware."""
        ...

    def restore(self) -> None: ...


class StoragePort(Protocol):
    def free_bytes(self) -> int | None:
        """The smallest free space of the places a trial writes to (store, recordings), ``None`` when
        unknown."""
        ...


class RecorderPort(Protocol):
    def begin(self, trial_id: str) -> None: ...

    async def end(self, trial_id: str) -> dict | None:
        """End the recording; its ``bridge.recording.layout.Recording`` as JSON values, or ``None``."""
        ...


class StorePort(Protocol):
    def begin(self, trial_id: str, slot: Slot, *, agent: str, instruction: str, action: str) -> None:
        """Note that the trial has begun (``save`` removes the note): a note left when the process
        dies is an interrupted trial, stored at the next start (``bridge.study.interrupted``)."""
        ...

    def save(self, result: Any, slot: Slot, frames: dict[str, bytes]) -> int:
        """Store the finished trial (``TrialResult``) in ``slot`` with its ``before``/``after`` JPEGs;
        returns the stored trial's id."""
        ...

    def frame(self, trial_id: str, which: str) -> bytes | None: ...


class HumanRelayPort(Protocol):
    """The human reference's open requests, as the operator console shows them."""

    def pending(self, with_images: bool = True) -> list[dict]:
        """``[{"request_id", "instruction", "jpeg_b64", "width", "height"}]`` (``jpeg_b64`` only ``with_images``)."""
        ...

    def answer(self, request_id: str, u: float, v: float) -> bool:
        """The operator clicked ``(u, v)`` (original-image pixels); ``False`` when the request is unknown."""
        ...

    def decline(self, request_id: str) -> bool:
        """The operator gives no point (the same outcome as a model's answer without one)."""
        ...


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


@dataclass
class Ports:
    """Every port a station needs (``scene``, ``recorder`` and ``store`` may be ``None``: no
    simulator, nothing recorded, nothing stored)."""

    agent: AgentPort
    targeting: TargetingPort
    arm: ArmPort
    camera: CameraPort
    storage: StoragePort
    scene: ScenePort | None = None
    recorder: RecorderPort | None = None
    store: StorePort | None = None
    clock: Clock = field(default_factory=MonotonicClock)
