"""A Point-Act trial: what is recorded, and the runner interface the web side and the CLI drive.

PointArena sec. 3.4 / 4.1: a participant types an instruction, a blinded agent returns point(s) on
the live colour image, the robot picks (gripper empty) or places (gripper holding) at the point,
and the participant judges success. Everything below is stored per trial in SQLite.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["TrialResult", "TrialRunner", "ROBOT_OUTCOMES"]

# done: the motion sequence completed; refused: targeting refused (no motion sent);
# robot_failure: the driver raised (fault, connection lost, timeout) and the arm was stopped;
# agent_failure: the model call failed (network, timeout) after its retries; stopped: e-stop.
ROBOT_OUTCOMES = ("done", "refused", "robot_failure", "agent_failure", "stopped")


@dataclass
class TrialResult:
    """One trial, as stored and as printed by ``pointlab act trials``.

    Attributes:
        trial_id: unique id (uuid4 hex).
        agent: the agent's config name (never sent to a participant's browser).
        instruction: the typed instruction.
        action: ``pick`` or ``place`` (chosen from the gripper state before the trial).
        raw_answer: the agent's raw text.
        points_px: parsed points, original-image pixels ``[[u, v], ...]``.
        parse_error: why the answer could not be parsed, or ``None``.
        frame_index: index of the frame the agent saw; image size in ``frame_size``.
        target: ``bridge.targeting.Target.to_dict()`` (3D target or refusal with reason).
        robot_outcome: one of ``ROBOT_OUTCOMES``.
        robot_error: the typed error's message when ``robot_outcome`` is ``robot_failure`` or ``stopped``.
        agent_error: why the agent gave no answer when ``robot_outcome`` is ``agent_failure`` (network,
            HTTP error, timeout after retries; may name the model, so never shown to a participant).
        motion: ``robot.arm.MotionReport.to_dict()`` when a motion was sent.
        sim_success: the simulator's own judgement (``None`` when not known, e.g. a real robot).
        sim_detail: what the simulator saw (object held, where it landed).
        timings_s: ``agent``, ``targeting``, ``motion``, ``total`` in seconds.
        expected: scripted expectation (headless runs): ``{"action", "object", "container"}``.
    """

    trial_id: str
    agent: str
    instruction: str
    action: Literal["pick", "place"]
    raw_answer: str = ""
    points_px: list[list[float]] = field(default_factory=list)
    parse_error: str | None = None
    frame_index: int | None = None
    frame_size: list[int] | None = None
    target: dict[str, Any] | None = None
    robot_outcome: str = "refused"
    robot_error: str | None = None
    agent_error: str | None = None
    motion: dict[str, Any] | None = None
    sim_success: bool | None = None
    sim_detail: str | None = None
    timings_s: dict[str, float] = field(default_factory=dict)
    expected: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class TrialRunner(Protocol):
    """What the web app and ``pointlab act trials`` need from a running Point-Act system.

    ``pointlab.bridge.ros.runner.RosTrialRunner`` implements it over the ROS 2 node set.
    """

    agent_names: list[str]

    async def run_trial(self, agent: str, instruction: str, *, expected: dict | None = None) -> TrialResult:
        """Ask ``agent`` to point for ``instruction`` on the latest frame, target, and act.
        Never raises for a bad answer, a refusal or a robot fault: those are recorded outcomes."""
        ...

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        """The latest colour frame as JPEG bytes and its frame index (live view), or ``None``."""
        ...

    def trial_jpeg(self, trial_id: str) -> bytes | None:
        """The frame the agent saw in trial ``trial_id`` as JPEG bytes, or ``None`` when not kept."""
        ...

    def pending_human_requests(self) -> list[dict]:
        """Open requests for the human reference: ``[{"request_id", "instruction", "jpeg_b64", "width", "height"}]``."""
        ...

    def answer_human_request(self, request_id: str, u: float, v: float) -> bool:
        """The operator clicked ``(u, v)`` (original-image pixels). False when the request is unknown."""
        ...

    def holding(self) -> bool:
        """Whether the arm holds something (the next action is a place)."""
        ...

    def emergency_stop(self) -> None: ...

    def reset(self) -> None: ...

    async def release(self) -> dict:
        """Open the gripper where the arm is and clear ``holding`` (no arm motion); after any trial
        that is running. Returns ``{"outcome", "error", "holding"}`` (``outcome`` as ``ROBOT_OUTCOMES``:
        ``done``, ``stopped`` when e-stopped or faulted, ``robot_failure``); never raises for them."""
        ...

    def arm_state(self) -> dict: ...
