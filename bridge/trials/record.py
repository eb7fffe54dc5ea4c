"""A Point-Act trial's record.

PointArena sec. 3.4 / 4.1: a participant types an instruction, a blinded agent returns point(s) on
the live colour image, the robot picks (gripper empty) or places (gripper holding) at the point,
and the participant judges success. ``TrialResult`` is the record of one trial, filled in by the
trial machine (``bridge.trials.machine``); the store's ``trials`` table and the results CSV are
derived from its fields (``bridge.study.store``, ``bridge.study.results``), so a field is written
down once, here.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pointlab.benchmark.points import PointEntry
from pointlab.robot.arm import MotionReport
from pointlab.bridge.trials.outcomes import (
    ROBOT_OUTCOMES,
    Abort,
    AbortCode,
    AutoCheck,
    FailureStage,
    Refusal,
    RobotErrorInfo,
    RobotOutcome,
    TrialOutcome,
)
from pointlab.bridge.trials.targeting import Target

__all__ = ["TrialResult", "ROBOT_OUTCOMES", "text_problem", "unfinished_trial"]


class TrialResult(BaseModel):
    """One trial, as stored and as printed by ``pointlab act trials``.

    Attributes:
        trial_id: unique id (uuid4 hex).
        agent: the agent's config name (never sent to a participant's browser).
        instruction: the typed instruction.
        action: ``pick`` or ``place`` (chosen from the gripper state before the trial).
        raw_answer: the agent's raw text.
        points: every point as the model gave it, in order, invalid entries included with their reason.
        points_px: the valid points, original-image pixels ``[[u, v], ...]``.
        parse_error: why the answer could not be parsed, or ``None``.
        frame_index: index of the frame the agent saw; image size ``[width, height]`` in ``frame_size``.
        target: the 3D target or the refusal (``bridge.trials.targeting.Target``), ``None`` before targeting.
        robot_outcome: what the robot did (``bridge.trials.outcomes.RobotOutcome``).
        refusal: why nothing moved when ``robot_outcome`` is ``refused`` (targeting's or the arm's).
        robot_error: the typed error when ``robot_outcome`` is ``robot_failure`` or ``stopped``.
        agent_error: why the agent gave no answer when ``robot_outcome`` is ``agent_failure`` (network,
            HTTP error, timeout after retries; may name the model, so never shown to a participant).
        motion: what was commanded when a motion was sent (``robot.arm.MotionReport``).
        sim_success: the simulator's own judgement (``None`` when not known, e.g. a real robot).
        sim_detail: what the simulator saw (object held, where it landed).
        timings_s: ``agent``, ``targeting``, ``motion``, ``total`` (and loop latencies) in seconds.
        expected: scripted expectation (headless runs): ``{"action", "object", "container"|"on"|"near"}``.
        outcome: how the trial ended (``succeeded``, ``failed``, ``aborted``); ``None`` until judged.
        abort: why it was aborted (an aborted trial is not a judgement of the agent).
        failure_stage: where a failed (or aborted) trial failed (``bridge.trials.attribution``).
        point_on_target: whether the first point lies on the intended object's mask (the sim's
            segmentation, or the operator's click on real frames); ``None`` when unknown.
        auto_check: the automatic outcome check (``bridge.trials.autocheck``): the sim's physics state when
            there is a simulator, else the depth check.
        depth_check: the depth check (``bridge.trials.autocheck.depth_check``), whenever it could be read.
        after_frame_index: index of the frame taken after the arm stopped (the judgement's "after").
        recording: the trial's MCAP and clip (paths relative to the recordings folder), if recorded.
        station: the robot station that ran it (``pointlab act station --name``), ``None`` in a
            single-process session (docs/stations.md).
    """

    model_config = ConfigDict(validate_assignment=True)

    trial_id: str
    agent: str
    instruction: str
    action: Literal["pick", "place"]
    raw_answer: str = ""
    points: list[PointEntry] = Field(default_factory=list)
    points_px: list[tuple[float, float]] = Field(default_factory=list)
    parse_error: str | None = None
    frame_index: int | None = None
    frame_size: tuple[int, int] | None = None
    target: Target | None = None
    robot_outcome: RobotOutcome = "refused"
    refusal: Refusal | None = None
    robot_error: RobotErrorInfo | None = None
    agent_error: str | None = None
    motion: MotionReport | None = None
    sim_success: bool | None = None
    sim_detail: str | None = None
    timings_s: dict[str, float] = Field(default_factory=dict)
    expected: dict[str, Any] | None = None
    outcome: TrialOutcome | None = None
    abort: Abort | None = None
    failure_stage: FailureStage | None = None
    point_on_target: bool | None = None
    auto_check: AutoCheck | None = None
    depth_check: AutoCheck | None = None
    after_frame_index: int | None = None
    recording: dict[str, Any] | None = None
    station: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON values of every field (strict: no NaN)."""
        from pointlab.benchmark.records import finite_json

        return finite_json(self)


def unfinished_trial(
    trial_id: str, *, agent: str, instruction: str, action: str, code: AbortCode, detail: str, **fields: Any
) -> TrialResult:
    """The record of a trial whose end nobody saw (its session killed: ``interrupted``; its station
    lost by the study server: ``station_lost``): ``aborted`` with ``code`` and ``detail``, and
    ``robot_outcome = "interrupted"`` (what the arm did is not known). Not charged to the agent
    (docs/trials.md, "Aborts"). ``fields``: more ``TrialResult`` fields (recording, answer, station)."""
    return TrialResult(
        trial_id=trial_id,
        agent=agent,
        instruction=instruction,
        action=action,
        robot_outcome="interrupted",
        outcome="aborted",
        failure_stage="aborted",
        abort=Abort(code=code, detail=detail),
        **fields,
    )


def text_problem(text: str) -> str | None:
    """Why ``text`` (an instruction, a label) cannot be stored, or ``None`` when it can.

    JSON can carry a lone UTF-16 surrogate (``"\\ud800"``), which is not UTF-8: SQLite (and a ROS
    string) cannot take it, so a trial with it would run and then fail to be saved. Control
    characters other than tab/newline (NUL, terminal escapes) are refused too.
    """
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Cs":
            return "it contains an invalid character (a lone UTF-16 surrogate)"
        if cat == "Cc" and ch not in "\t\n\r":
            return f"it contains the control character U+{ord(ch):04X}"
    return None
