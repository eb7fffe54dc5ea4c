"""The arm interface, the workspace envelope, and the UFACTORY Lite 6 driver."""

from .arm import ARM_DRIVERS, TOOLS, Arm, ArmDriver, ArmState, MotionConfig, MotionReport, TcpPose, Tool, make_arm
from .errors import (
    ArmConnectionError,
    ArmFaultError,
    ArmNotConnectedError,
    ArmProtocolError,
    ArmTimeoutError,
    EmergencyStopError,
    MotionRefusedError,
    ReachRefusedError,
    RobotError,
    UnreachableTargetError,
    UnsafeTargetError,
)
from .workspace import Workspace

__all__ = [
    "ARM_DRIVERS",
    "TOOLS",
    "Arm",
    "ArmDriver",
    "ArmState",
    "MotionConfig",
    "MotionReport",
    "TcpPose",
    "Tool",
    "make_arm",
    "ArmConnectionError",
    "ArmFaultError",
    "ArmNotConnectedError",
    "ArmProtocolError",
    "ArmTimeoutError",
    "EmergencyStopError",
    "MotionRefusedError",
    "ReachRefusedError",
    "RobotError",
    "UnreachableTargetError",
    "UnsafeTargetError",
    "Workspace",
]
