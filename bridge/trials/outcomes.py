"""The typed vocabulary of what happened in a trial: refusals, robot errors, how a trial ends (the
point entries are ``benchmark.points.PointEntry``).

Shared by the targeting rule, the ROS payloads, the trial record, the store and the pages, so a
refusal is a ``code`` with a ``detail`` everywhere (never a ``"kind: detail"`` string to split).

Refusals (nothing moved; PointArena sec. 3.4 acts only on a valid target) and the stage each one
belongs to (the failure attribution of docs/trials.md):

=================  ===========  ===============================================================
code               stage        when
=================  ===========  ===============================================================
``no_point``       no_point     the answer holds no point at all (unparseable, empty)
``invalid_point``  pointing     the **first** point is not a usable number (NaN, inf, overflow)
``outside_image``  pointing     the first point is outside the image area [-0.5, W-0.5)
``no_depth``       depth        no valid depth near the point (holes, no frame, no camera_info)
``workspace``      reach        the target is outside the workspace envelope
``unreachable``    reach        the arm's inverse kinematics has no solution along the path
``no_target``      targeting    targeting gave no result in time
``bad_command``    arm          the arm node refused a malformed command
=================  ===========  ===============================================================
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, computed_field

__all__ = [
    "RefusalCode",
    "RefusalStage",
    "Refusal",
    "REFUSAL_STAGES",
    "RobotOutcome",
    "ROBOT_OUTCOMES",
    "RobotErrorInfo",
    "TrialOutcome",
    "AbortCode",
    "ABORT_CODES",
    "Abort",
    "FailureStage",
    "FAILURE_STAGES",
    "AutoCheck",
]

RefusalCode = Literal[
    "no_point", "invalid_point", "outside_image", "no_depth", "workspace", "unreachable", "no_target", "bad_command"
]
RefusalStage = Literal["no_point", "pointing", "depth", "reach", "targeting", "arm"]

REFUSAL_STAGES: dict[str, RefusalStage] = {
    "no_point": "no_point",
    "invalid_point": "pointing",
    "outside_image": "pointing",
    "no_depth": "depth",
    "workspace": "reach",
    "unreachable": "reach",
    "no_target": "targeting",
    "bad_command": "arm",
}

# done: the motion sequence completed; refused: nothing was sent to the arm (see ``Refusal``);
# halted: the operator's abort stopped the sequence in a controlled way (no fault, no e-stop);
# robot_failure: the arm faulted, lost its connection or timed out, and was stopped;
# stopped: emergency stop; agent_failure: the agent or the camera gave no answer;
# not_moved: the trial ended before the arm was asked anything (an abort before the motion);
# interrupted: the session stopped during the trial (killed, crashed): what the arm did is not known.
RobotOutcome = Literal[
    "done", "refused", "halted", "robot_failure", "stopped", "agent_failure", "not_moved", "interrupted"
]
ROBOT_OUTCOMES: tuple[str, ...] = get_args(RobotOutcome)


class Refusal(BaseModel):
    """Why nothing moved: a ``code`` from the table above and a human-readable ``detail``."""

    model_config = ConfigDict(frozen=True)

    code: RefusalCode
    detail: str = ""

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator over @property; pydantic's documented form
    @property
    def stage(self) -> RefusalStage:
        """The pipeline stage the refusal belongs to (module docstring)."""
        return REFUSAL_STAGES[self.code]

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}" if self.detail else self.code


class RobotErrorInfo(BaseModel):
    """A typed robot error as recorded: the error class (``ArmFaultError``...), the controller's code
    when there is one (e.g. 31 for C31), and the message."""

    model_config = ConfigDict(frozen=True)

    type: str
    detail: str
    code: int | None = None

    def __str__(self) -> str:
        return f"{self.type}: {self.detail}"


# -- how a trial ends (docs/trials.md) ------------------------------------------------------------
# succeeded / failed: judged (by the participant, or by the sim or the automatic check in headless
# runs); aborted: the trial could not be a fair test of the agent (left out of success rates and
# offered again). Why (docs/trials.md "Aborts"):
#   operator_abort  the operator's *Abort trial* (a controlled stop, never an e-stop)
#   estop           an emergency stop (the console's button, or the arm reported one)
#   robot_fault     the arm faulted or lost its connection
#   agent_error     the agent's call failed (network, HTTP error, its own timeout after retries)
#   camera_error    the pointing node had no usable frame to show the agent
#   timeout         a stage of the pipeline gave no result in time (answer, target, motion, halt)
#   no_storage      the store or the recordings folder fell below the study's free-space floor
#   system_error    the system refused its own command (a malformed arm command)
#   interrupted     the session stopped during the trial; stored when the next one started
#                   (``bridge.study.interrupted``)
#   station_lost    the study server lost the station running the trial (killed, network cut); stored
#                   by the server (``bridge.stations``, docs/stations.md)
TrialOutcome = Literal["succeeded", "failed", "aborted"]
AbortCode = Literal[
    "operator_abort",
    "estop",
    "robot_fault",
    "agent_error",
    "camera_error",
    "timeout",
    "no_storage",
    "system_error",
    "interrupted",
    "station_lost",
]
ABORT_CODES: tuple[str, ...] = get_args(AbortCode)

# Which stage a failed trial failed at (PointArena's Point-Act asks whether pointing or execution
# failed): the first point outside the intended object (pointing), no point at all (no_point), no
# depth (depth), not reachable (reach), the pick did not hold it (grasp), the place did not put it
# there (place), or the trial was aborted (aborted).
FailureStage = Literal["pointing", "no_point", "depth", "reach", "grasp", "place", "aborted"]
FAILURE_STAGES: tuple[str, ...] = get_args(FailureStage)


class Abort(BaseModel):
    """Why a trial was aborted: ``code`` (``AbortCode``) and a detail (may name a model: operator only)."""

    model_config = ConfigDict(frozen=True)

    code: AbortCode
    detail: str = ""


class AutoCheck(BaseModel):
    """The automatic outcome check beside the participant's judgement (``bridge.trials.autocheck``).

    Attributes:
        success: what the check concludes, ``None`` when it cannot tell (no frames, occluded).
        method: ``physics`` (the simulator's own state) or ``depth`` (the scene's depth before and
            after the action around the target pixel).
        detail: what was measured (e.g. ``"median depth +31 mm in 24 px around the target"``).
        depth_change_mm: the measured change (after - before, millimetres; positive = farther).
    """

    model_config = ConfigDict(frozen=True)

    success: bool | None
    method: Literal["physics", "depth"]
    detail: str = ""
    depth_change_mm: float | None = None
