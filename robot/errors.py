"""Typed errors of the robot package. SDK return codes become ``ArmFaultError`` raised ``from`` the
original, so a trial records what the controller said."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pointlab.perception.errors import PointlabError

if TYPE_CHECKING:  # arm.py imports this module
    from .arm import MotionReport

__all__ = [
    "RobotError",
    "ArmNotConnectedError",
    "MotionRefusedError",
    "UnsafeTargetError",
    "ReachRefusedError",
    "UnreachableTargetError",
    "ArmFaultError",
    "ArmProtocolError",
    "ArmConnectionError",
    "ArmTimeoutError",
    "EmergencyStopError",
    "MotionHaltedError",
]


class RobotError(PointlabError):
    """Base class of robot errors."""


class ArmNotConnectedError(RobotError, ConnectionError):
    """A motion was asked of an arm that is not connected."""


class MotionRefusedError(RobotError):
    """A motion was refused before anything was sent to the arm: it did not move and it is fine.
    A trial records this as ``refused``, never as a robot failure."""


class UnsafeTargetError(MotionRefusedError):
    """A target or waypoint lies outside the workspace envelope. Raised before any command is sent.

    Attributes:
        reason: a short machine-readable reason (``outside_box``, ``below_table``, ``beyond_reach``,
            ``too_close_to_base``, ``not_finite``) followed by detail.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnreachableTargetError(RobotError):
    """No joint solution within the joint limits reaches the pose (inverse kinematics failed). From a
    driver in the middle of a sequence it is a fault (something moved); ``Arm`` turns one raised by the
    pre-check into ``ReachRefusedError``."""


class ReachRefusedError(MotionRefusedError):
    """The reach pre-check (the driver's inverse kinematics along the path, before the first command)
    found no solution, or did not answer in time: nothing was sent."""


class ArmFaultError(RobotError):
    """The controller answered a non-zero code or is in an error state.

    Attributes:
        code: the SDK/controller return code (xArm: ``0`` success; see docs/robot.md for the table).
        call: the SDK call that failed, e.g. ``"set_position"``.
    """

    def __init__(self, call: str, code: int, detail: str = "") -> None:
        msg = f"{call} returned code {code}" + (f": {detail}" if detail else "")
        super().__init__(msg)
        self.call, self.code, self.detail = call, code, detail


class ArmProtocolError(ArmFaultError):
    """The SDK raised instead of returning a code (a reply it could not read, e.g. an error reply
    without data): ``code`` is the SDK's ``API_EXCEPTION`` (-3), ``detail`` names the exception."""


class ArmConnectionError(RobotError, ConnectionError):
    """The connection to the controller was refused or dropped."""


class ArmTimeoutError(RobotError, TimeoutError):
    """The controller did not answer or a motion did not finish in time."""


class EmergencyStopError(RobotError):
    """The arm is emergency-stopped; motion is refused until it is reset."""


class MotionHaltedError(RobotError):
    """The sequence was stopped on request by ``Arm.halt()`` (the operator's controlled stop): no
    fault, no emergency stop, the arm stays ready and takes the next command at once.

    Attributes:
        report: what the halted sequence had sent (``robot.arm.MotionReport``), set by ``Arm``;
            ``None`` when raised by a driver.
    """

    def __init__(self, message: str, report: MotionReport | None = None) -> None:
        super().__init__(message)
        self.report = report
