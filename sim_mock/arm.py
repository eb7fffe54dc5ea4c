"""``SimArmDriver``: the ``ArmDriver`` primitives on the simulated Lite 6 of a ``SimWorld``.

A thin controller layer over ``world.lite6`` (``lite6_sim.SimLite6``, the MuJoCo arm): what the
real controller adds around motion, so that the pick/place logic and the trial loop meet the same
behaviour as on a Lite 6:

- **Reach and joint limits**: a linear move is refused with ``UnreachableTargetError`` before
  anything moves when IK fails at its goal or anywhere along the line (``check_reachable`` does the
  same for a whole sequence without moving).
- **Motion** with the controller's trapezoidal timing; ``time_scale`` makes simulated seconds take
  ``time_scale`` wall seconds (tests use a small one). ``emergency_stop()`` from another thread
  halts a move where it is; so does ``halt()``, the controlled stop, which leaves no error state:
  the move in progress raises ``MotionHaltedError`` and ``clear_halt()`` makes the arm ready again.
- **Grasping by physics**: ``set_tool(True)`` closes the fingers (or switches the vacuum on);
  whether anything is held is what the contacts say (``SimWorld.held``).
- **Controller faults**: an injected fault (``world.inject_fault``) or an emergency stop leaves an
  error state that refuses motion until ``connect()`` runs the bring-up again, as on the xArm.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from pointlab.robot.arm import TOOLS, ArmDriver, TcpPose
from pointlab.robot.errors import (
    ArmConnectionError,
    ArmFaultError,
    ArmNotConnectedError,
    EmergencyStopError,
    MotionHaltedError,
    UnreachableTargetError,
)

from .lite6_sim import MotionStopped
from .trapezoid import trapezoid_duration_s
from .world import SimWorld, default_world

__all__ = ["SimArmDriver", "trapezoid_duration_s", "OUT_OF_RANGE_CODE", "HAS_ERROR_CODE"]

log = logging.getLogger(__name__)

OUT_OF_RANGE_CODE = -8  # xarm APIState.OUT_OF_RANGE: a parameter out of range
HAS_ERROR_CODE = 1  # xarm APIState.HAS_ERROR: the controller has an uncleared error


class SimArmDriver(ArmDriver):
    """The Lite 6 in a ``SimWorld``.

    Args:
        world: the world to act in (default: the process-wide ``default_world()``).
        tool: ``lite_gripper`` or ``lite_vacuum``; the world's tool is set to it (a different tool
            rebuilds the world's model, which starts over at the initial scene).
        time_scale: wall seconds per simulated second of motion (0 = as fast as the physics runs).
        step_m: spacing of the IK checks along a linear move, metres.
    """

    def __init__(
        self,
        world: SimWorld | None = None,
        tool: str = "lite_gripper",
        time_scale: float = 1.0,
        step_m: float = 0.02,
        **_ignored,
    ) -> None:
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}")
        if not (math.isfinite(time_scale) and time_scale >= 0) or step_m <= 0:
            raise ValueError("time_scale must be >= 0 and step_m > 0")
        self.world = world or default_world()
        self.tool = TOOLS[tool]
        self.world.set_tool(tool)
        self.lite6 = self.world.lite6
        self.lite6.time_scale, self.lite6.step_m = float(time_scale), float(step_m)
        self._halting = False  # guarded by world.lock, like world.arm.estopped

    @property
    def time_scale(self) -> float:
        return self.lite6.time_scale

    @classmethod
    def from_spec(
        cls,
        arg: str | None,
        *,
        world: SimWorld | None = None,
        tool: str = "lite_gripper",
        time_scale: float = 1.0,
        **kw,
    ) -> "SimArmDriver":
        """Build from the ``make_arm`` spec ``sim`` or ``sim:TOOL`` (``sim:lite_vacuum``)."""
        if arg:
            tool = arg
        return cls(world=world, tool=tool, time_scale=time_scale, **kw)

    # -- session -------------------------------------------------------------------------------------
    def connect(self) -> None:
        """Bring-up: clears the error code and the emergency stop (``clean_error``, ``motion_enable``,
        ``set_state(0)`` on the real arm).

        Raises:
            ArmConnectionError: an injected ``connect`` fault.
        """
        w = self.world
        if w.take_fault("connect") is not None:
            raise ArmConnectionError("sim controller refused the connection (injected fault)")
        with w.lock:
            w.arm.connected = True
            w.arm.error_code = 0
            w.arm.estopped = False
            self._halting = False
            self.lite6.clear_stop()

    def disconnect(self) -> None:
        with self.world.lock:
            self.world.arm.connected = False

    def _require_ready(self, call: str) -> None:
        a = self.world.arm
        if not a.connected:
            raise ArmNotConnectedError("sim arm is not connected")
        if a.estopped:
            raise EmergencyStopError("sim arm is emergency-stopped; connect() again to clear it")
        if self._halting:
            raise MotionHaltedError(f"{call}: the sim arm is halted; clear_halt() makes it ready")
        if a.error_code:
            raise ArmFaultError(call, HAS_ERROR_CODE, f"controller error {a.error_code} not cleared; connect() again")

    def _fault(self, kind: str, call: str) -> None:
        code = self.world.take_fault(kind)
        if code is None:
            return
        if kind == "disconnect_next_move":
            with self.world.lock:
                self.world.arm.connected = False
            raise ArmConnectionError("sim controller dropped the connection (injected fault)")
        with self.world.lock:
            self.world.arm.error_code = code
        raise ArmFaultError(call, code, "injected fault")

    # -- motion ------------------------------------------------------------------------------------
    def check_reachable(self, poses: list[TcpPose]) -> None:
        """IK along every straight segment from the current TCP through ``poses``, without moving.

        Raises:
            UnreachableTargetError: a segment leaves the joint limits (nothing moves).
        """
        start_m, start_rpy = self.lite6.commanded_pose()
        seed = self.lite6._commanded_joints()
        for pose in poses:
            _, _, path = self.lite6.plan_linear(start_m, start_rpy, seed, pose.xyz, pose.rpy_deg)
            start_m, start_rpy, seed = pose.xyz, np.asarray(pose.rpy_deg, dtype=np.float64), path[-1]

    def move_linear(self, pose: TcpPose, speed_m_s: float, acc_m_s2: float) -> None:
        """Move the TCP in a straight line to ``pose`` (metres, degrees) and return when it is there.

        Raises:
            ArmNotConnectedError: not connected.
            EmergencyStopError: stopped before or during the move (the arm stays where it stopped).
            MotionHaltedError: halted (``halt()``) before or during the move (the arm stays where it
                stopped, ready once ``clear_halt()`` ran).
            ArmFaultError: an uncleared error, an injected fault, or a non-positive/non-finite speed or
                acceleration (code -8, nothing moves).
            ArmConnectionError: an injected connection drop.
            UnreachableTargetError: no IK solution at the goal or along the line (nothing moves).
        """
        with self.world.lock:
            self._require_ready("set_position")
        if not (math.isfinite(speed_m_s) and math.isfinite(acc_m_s2) and speed_m_s > 0 and acc_m_s2 > 0):
            raise ArmFaultError("set_position", OUT_OF_RANGE_CODE, f"speed {speed_m_s} m/s, acc {acc_m_s2} m/s^2")
        if not (np.all(np.isfinite(pose.xyz)) and np.all(np.isfinite(pose.rpy_deg))):
            raise UnreachableTargetError(f"pose is not finite: {pose}")
        self._fault("disconnect_next_move", "set_position")
        self._fault("next_move", "set_position")
        try:
            self.lite6.move_linear(pose.xyz, pose.rpy_deg, speed_m_s, acc_m_s2)
        except MotionStopped as e:
            raise self._stopped_error("a linear move", e) from None

    def set_tool(self, closed: bool) -> None:
        """Close (``True``) or open (``False``) the gripper, or switch the vacuum on or off; the
        physics decides what is held.

        Raises:
            ArmNotConnectedError, EmergencyStopError, MotionHaltedError, ArmFaultError: as
                ``move_linear`` (a stop while the tool acts leaves it as commanded).
        """
        with self.world.lock:
            self._require_ready("set_tool")
        self._fault("next_tool", "close_lite6_gripper" if closed else "open_lite6_gripper")
        if closed and self.world.take_fault("no_grip") is not None:
            return  # a gripper that did not close, and says nothing (no feedback on the Lite gripper)
        try:
            self.lite6.set_tool(bool(closed))
        except MotionStopped as e:
            raise self._stopped_error("the tool's action", e) from None

    def _stopped_error(self, during: str, e: MotionStopped) -> EmergencyStopError | MotionHaltedError:
        # The motion layer has one stop for both; the flags set before it say which one it was.
        with self.world.lock:
            halted = self._halting and not self.world.arm.estopped
        if halted:
            return MotionHaltedError(f"halted during {during}: {e}")
        return EmergencyStopError(f"emergency stop during {during}: {e}")

    def emergency_stop(self) -> None:
        """Stop now: a move in progress halts where it is; motion is refused until ``connect()``."""
        with self.world.lock:
            self.world.arm.estopped = True  # before the stop, so the moving thread reads it as one
        self.lite6.stop()

    def halt(self) -> None:
        """Controlled stop (``lite6.stop()``): a move or tool action in progress halts where it is and
        raises ``MotionHaltedError``; ``world.arm.estopped`` is not set and no error code either.
        Until ``clear_halt()`` every move and tool call raises ``MotionHaltedError``, so a motion that
        ended just before the stop cannot let the next one through. Never raises."""
        with self.world.lock:
            self._halting = True  # before the stop, so the moving thread reads it as a halt
            self.lite6.stop()

    def clear_halt(self) -> None:
        """Leave the halted state (``lite6.clear_stop()``); an emergency stop that came meanwhile
        stays (only ``connect()`` clears it)."""
        with self.world.lock:  # one step with the check: an emergency stop cannot slip in between
            self._halting = False
            if not self.world.arm.estopped:
                self.lite6.clear_stop()

    # -- state -------------------------------------------------------------------------------------
    def get_pose(self) -> TcpPose:
        """Current (measured) TCP pose (metres, degrees).

        Raises:
            ArmNotConnectedError: not connected.
        """
        if not self.world.arm.connected:
            raise ArmNotConnectedError("sim arm is not connected")
        p, rpy = self.lite6.tcp_pose()
        return TcpPose.at(p, tuple(float(a) for a in rpy))

    def get_joints_rad(self) -> list[float] | None:
        return [float(q) for q in self.lite6.joints_rad()]

    def error_code(self) -> int:
        with self.world.lock:
            return int(self.world.arm.error_code)

    def holding_sensor(self) -> bool | None:
        """The vacuum gripper reports a seal (``get_vacuum_gripper``); the Lite gripper has no sensor."""
        with self.world.lock:
            return self.world.tool_physics.holding_sensor()
