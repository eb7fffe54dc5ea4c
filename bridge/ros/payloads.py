"""One pydantic model per internal topic payload, used by the publisher and the subscriber.

The pointlab topics carry ``std_msgs/String`` holding one JSON object (custom ``.msg`` types would
need a colcon build, and the PyPI rclpy wheels ship only the standard interfaces; docs/ros.md).
``to_msg(model)`` writes it as strict JSON
(``benchmark.records.dumps_json``); ``from_msg(Model, msg)`` validates it and returns ``None`` (and logs
why) for anything that is not a valid payload of that topic, so a malformed or foreign message on
the graph is dropped at the edge instead of being checked field by field inside each node.

==========================  ======================  =============================================
topic (``msgs.TOPICS``)      payload                 publisher -> subscriber
==========================  ======================  =============================================
``point_request``           ``PointRequest``        runner -> pointing node
``point_frame``             ``PointFrame``          pointing node -> targeting node, runner
``point_answer``            ``PointAnswer``         pointing node -> targeting node, runner
``target_result``           ``TargetResult``        targeting node -> runner
``arm_command``             ``ArmCommand``          runner -> arm node
``arm_result``              ``ArmResult``           arm node -> runner
``arm_state``               ``robot.ArmState``      arm node -> runner (latched)
``frame_meta``              ``FrameMeta``           camera node -> runner
==========================  ======================  =============================================

The arm state is the arm's own type, ``robot.arm.ArmState`` (it ignores unknown fields on read, as
``Payload`` does); every other payload is defined here.
"""

from __future__ import annotations

import logging
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pointlab.benchmark.points import PointEntry
from pointlab.benchmark.records import dumps_json

from pointlab.bridge.trials.outcomes import Refusal, RobotErrorInfo, RobotOutcome
from pointlab.bridge.trials.targeting import Target

__all__ = [
    "Payload",
    "PointRequest",
    "PointFrame",
    "PointAnswer",
    "TargetResult",
    "ArmCommand",
    "ArmResult",
    "FrameMeta",
    "ArmAction",
    "to_msg",
    "from_msg",
]

log = logging.getLogger(__name__)

ArmAction = Literal["pick", "place", "home", "release"]


class Payload(BaseModel):
    """Base of every topic payload: unknown fields are ignored (a newer publisher may add some)."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class PointRequest(Payload):
    """Ask ``agent`` to point for ``instruction`` on the next colour frame."""

    request_id: str = Field(min_length=1)
    agent: str
    instruction: str


class PointFrame(Payload):
    """The frame (by header stamp, ns) the pointing node showed the agent for ``request_id``."""

    request_id: str = Field(min_length=1)
    stamp_ns: int


class PointAnswer(Payload):
    """The agent's answer.

    Attributes:
        points: every point as the model gave it, in order, invalid ones included (``PointEntry``).
        points_px: the valid points, original-image pixels ``[[u, v], ...]``.
        parse_error: why the raw answer could not be parsed, or ``None``.
        error: why the agent gave no answer (network, HTTP error, timeout; may name the model).
        error_kind: whose failure ``error`` is: ``agent`` (the model call), ``camera`` (no usable frame
            to show the agent) or ``request`` (a malformed request, an unknown agent). A publisher that
            sends none (an older pointing node) is read as ``agent``.
        stamp_ns: header stamp of the frame the agent saw; ``width``/``height`` its size in pixels.
        latency_s: the model call's wall time; ``answered_ns`` wall time of publication.
    """

    request_id: str = Field(min_length=1)
    raw_answer: str = ""
    points: list[PointEntry] = Field(default_factory=list)
    points_px: list[tuple[float, float]] = Field(default_factory=list)
    parse_error: str | None = None
    error: str | None = None
    error_kind: Literal["agent", "camera", "request"] | None = None
    stamp_ns: int | None = None
    width: int | None = None
    height: int | None = None
    latency_s: float | None = None
    answered_ns: int = 0

    @model_validator(mode="before")
    @classmethod
    def _entries_from_bare_points(cls, data: Any) -> Any:
        # a publisher that sends only points_px (an older or a lab's own pointing node): those
        # are the points as given, in order
        if isinstance(data, dict) and not data.get("points") and data.get("points_px"):
            data = {
                **data,
                "points": [
                    {"u_px": p[0], "v_px": p[1]}
                    for p in data["points_px"]
                    if isinstance(p, (list, tuple)) and len(p) == 2
                ],
            }
        return data


class TargetResult(Payload):
    """Targeting's result for ``request_id``: a valid base-frame target or a refusal."""

    request_id: str = Field(min_length=1)
    stamp_ns: int | None = None
    target: Target
    answer_rx_ns: int | None = None
    published_ns: int = 0


class ArmCommand(Payload):
    """One arm action; ``target_base_m`` ``[x, y, z]`` metres in ``link_base`` for pick and place.
    ``session`` is the nonce of the session that started the arm node: any other is refused."""

    request_id: str = Field(min_length=1)
    action: ArmAction
    target_base_m: tuple[float, float, float] | None = None
    session: str = ""


class ArmResult(Payload):
    """How an arm command ended (``outcome``), with its refusal or typed error, the motion sent, and
    the arm's belief afterwards (``holding``, ``motions_done``)."""

    request_id: str
    action: str | None = None
    outcome: RobotOutcome
    refusal: Refusal | None = None
    error: RobotErrorInfo | None = None
    motion: dict[str, Any] | None = None
    holding: bool = False
    motions_done: int = 0
    command_rx_ns: int | None = None
    finished_ns: int = 0


class FrameMeta(Payload):
    """The camera node's frame index for the colour frame stamped ``stamp_ns`` (the source's own
    index: a replay folder's file), and the source's depth scale beside the topic's (m per unit)."""

    stamp_ns: int
    index: int
    device_depth_scale_m: float | None = None
    depth_scale_m: float | None = None


P = TypeVar("P", bound=BaseModel)


def to_msg(payload: BaseModel):
    """A ``std_msgs/String`` holding ``payload`` (a ``Payload``, or ``robot.ArmState``) as strict JSON."""
    from std_msgs.msg import String

    return String(data=dumps_json(payload, compact=True))


def from_msg(model: type[P], msg) -> P | None:
    """``msg.data`` validated as ``model``, or ``None`` (logged) when it is not one."""
    try:
        return model.model_validate_json(msg.data)
    except ValidationError as e:
        first = e.errors()[0]
        log.warning(
            "dropping a %s that is not valid (%s: %s): %r",
            model.__name__,
            ".".join(str(x) for x in first["loc"]) or "message",
            first["msg"],
            str(msg.data)[:200],
        )
        return None
