"""The arm interface: home, pick at a base-frame point, place at a base-frame point, release, stop, state.

Two layers, so that the pick/place logic is written (and tested) once:

- ``ArmDriver``: the primitives a controller offers (linear Cartesian move of the TCP, tool on/off,
  emergency stop, read pose). ``pointlab.robot.xarm.XArmDriver`` implements it with
  ``xarm-python-sdk``; ``pointlab.sim_mock.arm.SimArmDriver`` with the simulated Lite 6.
- ``Arm``: pick and place as checked waypoint sequences over a driver (approach above the target,
  descend, grip, lift). Every waypoint is checked against the ``Workspace`` *before the first command
  is sent*, so an unsafe target produces no motion at all.

Two ways to stop a sequence (docs/robot.md, "Halt vs emergency stop"): ``Arm.stop()``, the emergency
stop, latches and refuses motion until ``reset()``; ``Arm.halt()``, the operator's controlled stop
(abort a trial), ends the sequence with ``MotionHaltedError`` and leaves the arm ready.

Units: positions in metres in the base frame (``link_base``, z up); orientations as xArm-style
fixed-axis roll, pitch, yaw in **degrees** (``(180, 0, 0)`` points the tool straight down);
speeds in m/s, accelerations in m/s^2. Drivers convert to their controller's units (xArm: mm, deg).
"""

from __future__ import annotations

import logging
import math
import pkgutil
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_serializer
from pydantic.dataclasses import dataclass as pydantic_dataclass

from .errors import (
    ArmConnectionError,
    ArmNotConnectedError,
    ArmTimeoutError,
    EmergencyStopError,
    MotionHaltedError,
    ReachRefusedError,
    RobotError,
    UnreachableTargetError,
    UnsafeTargetError,
)
from .workspace import Workspace

__all__ = [
    "TcpPose",
    "Tool",
    "TOOLS",
    "MotionConfig",
    "ArmState",
    "MotionReport",
    "ArmDriver",
    "Arm",
    "ARM_DRIVERS",
    "ENTRY_POINT_GROUP",
    "arm_drivers",
    "make_arm",
    "TOOL_DOWN_RPY_DEG",
]

log = logging.getLogger(__name__)

TOOL_DOWN_RPY_DEG = (180.0, 0.0, 0.0)


@pydantic_dataclass(frozen=True)
class TcpPose:
    """TCP pose in the base frame: ``position_m`` ``(3,)`` metres, ``rpy_deg`` roll/pitch/yaw degrees.

    A frozen dataclass validated by pydantic (a list or an array becomes a tuple of floats), so it is
    hashable, compares by value and takes its fields by position (``TcpPose((x, y, z))``) as before, and a
    pydantic model (``MotionReport``, ``ArmState``) holds it as a field. Its JSON (and ``to_dict``) rounds
    positions to 1e-6 m and angles to 1e-4 degrees.

    Raises:
        pydantic.ValidationError: a position or an orientation that is not three numbers.
    """

    position_m: tuple[float, float, float]
    rpy_deg: tuple[float, float, float] = TOOL_DOWN_RPY_DEG

    @classmethod
    def at(cls, point_m, rpy_deg=TOOL_DOWN_RPY_DEG) -> "TcpPose":
        """The pose at ``point_m`` (three numbers, metres, any sequence or array) with ``rpy_deg``."""
        p = np.asarray(point_m, dtype=np.float64).reshape(3)
        rpy = tuple(float(a) for a in rpy_deg)
        return cls((float(p[0]), float(p[1]), float(p[2])), rpy)  # type: ignore[arg-type]  # pydantic checks: three

    @property
    def xyz(self) -> np.ndarray:
        """``position_m`` as a ``(3,)`` float64 array, metres."""
        return np.array(self.position_m, dtype=np.float64)

    @model_serializer(when_used="json")
    def to_dict(self) -> dict:
        """JSON values: ``{"position_m": [x, y, z], "rpy_deg": [r, p, y]}``, rounded (class docstring)."""
        return {"position_m": [round(c, 6) for c in self.position_m], "rpy_deg": [round(a, 4) for a in self.rpy_deg]}


@dataclass(frozen=True)
class Tool:
    """An end effector.

    Attributes:
        name: ``lite_gripper`` or ``lite_vacuum``.
        tcp_offset_m: TCP distance past the flange along the flange z axis (UFACTORY model:
            gripper 0.0836 m, vacuum 0.061 m).
        grasp_depth_m: how far below the pointed (top) surface the TCP goes to grasp; the vacuum
            cup only needs to touch, the fingers need to reach around the object.
        release_height_m: TCP height above the pointed surface at which a held object is let go.
    """

    name: str
    tcp_offset_m: float
    grasp_depth_m: float
    release_height_m: float


TOOLS: dict[str, Tool] = {
    "lite_gripper": Tool("lite_gripper", 0.0836, grasp_depth_m=0.015, release_height_m=0.05),
    "lite_vacuum": Tool("lite_vacuum", 0.061, grasp_depth_m=0.0, release_height_m=0.05),
}


@dataclass(frozen=True)
class MotionConfig:
    """Speeds and heights of the pick/place sequences.

    Attributes:
        speed_m_s: TCP linear speed, m/s (clamped to ``max_speed_m_s``; Lite 6 tool limit 0.5 m/s).
        acc_m_s2: TCP linear acceleration, m/s^2.
        approach_height_m: height above the target of the approach and lift waypoints.
        grip_settle_s: wait after closing or opening the tool (the Lite gripper has no feedback).
        home: the home pose.
    """

    speed_m_s: float = 0.15
    acc_m_s2: float = 1.0
    max_speed_m_s: float = 0.5
    max_acc_m_s2: float = 5.0
    approach_height_m: float = 0.10
    grip_settle_s: float = 0.3
    home: TcpPose = TcpPose((0.20, 0.0, 0.25))

    def __post_init__(self) -> None:
        if not (0 < self.speed_m_s and 0 < self.acc_m_s2 and self.approach_height_m > 0):
            raise ValueError("speed, acceleration and approach height must be positive")

    @property
    def speed(self) -> float:
        return min(self.speed_m_s, self.max_speed_m_s)

    @property
    def acc(self) -> float:
        return min(self.acc_m_s2, self.max_acc_m_s2)


class ArmState(BaseModel):
    """What the arm reports (``Arm.state()``); the arm node publishes it as is on ``/pointlab/arm/state``.

    Attributes:
        connected: a controller session is open.
        tcp: current TCP pose (metres, degrees; ``None`` when unknown).
        joints_rad: joint angles in radians, 6 values (``None`` when unknown).
        tool_closed: whether the gripper is closed / the vacuum is on.
        holding: whether the last pick left something in the tool (the Lite gripper has no
            sensor; this is what the sequence believes, or the vacuum sensor when there is one).
        error_code: the controller's error code (0 = none).
        estopped: emergency stop is engaged.
        fault: the typed error that stopped the last sequence (motion refused until ``reset()``).
        motions_done: sequences this ``Arm`` completed (pick, place, home, release, move_to); read
            before the rest, so the pose is at least as new as the count (orders states against results).
        busy: a sequence or a reset is running.

    Unknown fields are ignored on validation (a newer publisher may add some).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    connected: bool = False
    tcp: TcpPose | None = None
    joints_rad: list[float] | None = None
    tool_closed: bool = False
    holding: bool = False
    error_code: int = 0
    estopped: bool = False
    fault: str | None = None
    motions_done: int = 0
    busy: bool = False

    def to_dict(self) -> dict:
        """JSON values of every field (the pose rounded as ``TcpPose`` does)."""
        return self.model_dump(mode="json")


class MotionReport(BaseModel):
    """What a pick or place actually commanded; a stored trial's ``motion`` (``bridge.trials.record``).

    Attributes:
        action: ``pick``, ``place``, ``home``, ``move`` or ``release``.
        target_m: the base-frame target, metres (empty for ``release``).
        waypoints: every TCP pose sent, in order.
        tool_commands: every tool command sent, ``"close"``/``"open"``, in order.
        duration_s: wall time of the sequence, seconds.

    Its JSON (and ``to_dict``) rounds ``target_m`` to 1e-6 m and ``duration_s`` to 1e-4 s (and the
    waypoints as ``TcpPose`` does).
    """

    action: str
    target_m: list[float] = Field(default_factory=list)
    waypoints: list[TcpPose] = Field(default_factory=list)
    tool_commands: list[str] = Field(default_factory=list)
    duration_s: float = 0.0

    @field_serializer("target_m", when_used="json")
    def _target_json(self, target_m: list[float]) -> list[float]:
        return [round(c, 6) for c in target_m]

    @field_serializer("duration_s", when_used="json")
    def _duration_json(self, duration_s: float) -> float:
        return round(duration_s, 4)

    def to_dict(self) -> dict:
        """JSON values of every field (rounded, class docstring)."""
        return self.model_dump(mode="json")


class ArmDriver(ABC):
    """Controller primitives in SI units. Implementations raise the typed errors of
    ``pointlab.robot.errors`` (``ArmFaultError`` for a non-zero controller code, ``ArmConnectionError``,
    ``ArmTimeoutError``, ``UnreachableTargetError``)."""

    tool: Tool

    @abstractmethod
    def connect(self) -> None:
        """Open the session and bring the arm up (clear warnings/errors, enable, position mode, ready)."""

    @abstractmethod
    def disconnect(self) -> None: ...

    @abstractmethod
    def move_linear(self, pose: TcpPose, speed_m_s: float, acc_m_s2: float) -> None:
        """Move the TCP in a straight line to ``pose`` and return when it is there."""

    @abstractmethod
    def set_tool(self, closed: bool) -> None:
        """Close the gripper / switch the vacuum on (``True``) or open / switch off (``False``)."""

    @abstractmethod
    def emergency_stop(self) -> None:
        """Stop all motion now. Must not raise when the connection is already gone."""

    def halt(self) -> None:
        """Controlled stop, from any thread: end the motion in progress (the move or tool call in
        progress then raises ``MotionHaltedError``) without a fault; every later move or tool call
        raises ``MotionHaltedError`` too, until ``clear_halt()``. Must not raise.

        Default, for a driver that cannot halt: ``emergency_stop()``; the call in progress then
        raises what this driver raises for an emergency stop (``Arm`` counts an
        ``EmergencyStopError`` during a halt as the halt), and ``clear_halt()`` must run the
        bring-up. ``SimArmDriver`` and ``XArmDriver`` override both."""
        self.emergency_stop()

    def clear_halt(self) -> None:
        """Make the arm ready again after ``halt()`` (``Arm`` calls it when a halted sequence ends).

        Default: ``connect()``, the bring-up, which clears the default halt's emergency stop.

        Raises:
            RobotError: the arm could not be made ready (``Arm`` then records a fault).
        """
        self.connect()

    @abstractmethod
    def get_pose(self) -> TcpPose: ...

    def get_joints_rad(self) -> list[float] | None:
        return None

    def error_code(self) -> int:
        return 0

    def holding_sensor(self) -> bool | None:
        """What a sensor says about the tool holding something, or ``None`` if there is no sensor."""
        return None

    def check_reachable(self, poses: list[TcpPose]) -> None:
        """Raise ``UnreachableTargetError`` if the straight-line path from the current pose through
        ``poses`` is known to leave the joint limits. Called before the first command of a sequence,
        so an unreachable target is refused without motion. Default: no check (the controller
        refuses at motion time instead)."""
        return None


class Arm:
    """Pick and place at base-frame points over an ``ArmDriver``, inside a ``Workspace``.

    Args:
        driver: the controller primitives.
        workspace: the envelope every waypoint is checked against before any command.
        motion: speeds, heights and the home pose.
    """

    def __init__(
        self, driver: ArmDriver, workspace: Workspace = Workspace(), motion: MotionConfig = MotionConfig()
    ) -> None:
        self.driver, self.workspace, self.motion = driver, workspace, motion
        self._connected = False
        self._holding = False
        self._tool_closed = False
        self._estopped = False
        self._fault: str | None = None
        self._state_read_error: RobotError | None = None  # the state read that set ``_fault``, if one did
        self._motions_done = 0
        # held for a whole sequence: reset() waits for a stopped sequence to end, so it can never
        # clear a stop that the moving thread has not seen yet (stop() itself never waits)
        self._motion_lock = threading.Lock()
        # Orders halt() against the start and end of a sequence, so that a halt either reaches the
        # running sequence (whose end then clears the driver's halt) or finds none and does nothing:
        # a driver halt left behind by a sequence that ended in between would stop the next one.
        # Held for flag changes and the driver's halt() only, never for a motion.
        self._halt_lock = threading.Lock()
        self._running = False
        self._halt_requested = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    def connect(self) -> "Arm":
        if not self._connected:
            self.driver.connect()
            self._connected = True
        return self

    def disconnect(self) -> None:
        if self._connected:
            self._connected = False
            self.driver.disconnect()

    def __enter__(self) -> "Arm":
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.disconnect()

    # -- planning (pure) -----------------------------------------------------------------------
    def plan(self, action: Literal["pick", "place"], target_m) -> list[tuple[str, TcpPose | bool]]:
        """The step list of a pick or place at ``target_m`` (base frame, metres), checked against the
        workspace. Steps are ``("move", TcpPose)`` or ``("tool", closed)``.

        Raises:
            UnsafeTargetError: the target or any waypoint is outside the envelope.
            ValueError: unknown action.
        """
        target = np.asarray(target_m, dtype=np.float64).reshape(-1)
        self.workspace.check(target, "target")
        above = TcpPose.at(target + [0.0, 0.0, self.motion.approach_height_m])
        floor = self.workspace.table_z_m + self.workspace.min_table_clearance_m
        tool = self.driver.tool
        steps: list[tuple[str, TcpPose | bool]]
        if action == "pick":
            down = TcpPose.at([target[0], target[1], max(target[2] - tool.grasp_depth_m, floor)])
            steps = [("tool", False), ("move", above), ("move", down), ("tool", True), ("move", above)]
        elif action == "place":
            down = TcpPose.at([target[0], target[1], max(target[2] + tool.release_height_m, floor)])
            steps = [("move", above), ("move", down), ("tool", False), ("move", above)]
        else:
            raise ValueError(f"unknown action {action!r}: pick or place")
        for _kind, step in steps:
            if isinstance(step, TcpPose):  # a "move"
                self.workspace.check(step.xyz, "waypoint")
        return steps

    # -- motion --------------------------------------------------------------------------------
    def _require_ready(self) -> None:
        if not self._connected:
            raise ArmNotConnectedError("arm is not connected")
        if self._estopped:
            raise EmergencyStopError("arm is emergency-stopped; reset it before moving")
        if self._fault is not None:
            # after a fault a person must look at the arm before it moves again
            raise EmergencyStopError(f"arm stopped after a fault ({self._fault}); reset it before moving")

    def _check_reachable(self, steps) -> None:
        # Before the first command: a "no" or no answer at all (a stalled IK query) means the arm
        # stays where it is and is fine, which is a refusal, not a fault of the arm.
        try:
            self.driver.check_reachable([step for kind, step in steps if kind == "move"])
        except UnreachableTargetError as e:
            raise ReachRefusedError(f"unreachable: {e}") from e
        except ArmTimeoutError as e:
            raise ReachRefusedError(f"the reach check did not answer: {e}") from e

    def _run(self, action: str, target_m, steps, *, check_reach: bool = False) -> MotionReport:
        with self._motion_lock:
            self._require_ready()  # again under the lock: a stop may have come while waiting for it
            self._begin_sequence()
            try:
                if check_reach:  # part of the sequence: a halt during the check stops it too
                    self._check_reachable(steps)
                return self._run_locked(action, target_m, steps)
            finally:
                self._end_sequence()

    def _run_locked(self, action: str, target_m, steps) -> MotionReport:
        report = MotionReport(action=action, target_m=[float(c) for c in np.asarray(target_m).reshape(-1)])
        t0 = time.monotonic()
        try:
            for kind, step in steps:
                self._check_not_stopped()
                if kind == "move":
                    report.waypoints.append(step)
                    self.driver.move_linear(step, self.motion.speed, self.motion.acc)
                else:
                    report.tool_commands.append("close" if step else "open")
                    self.driver.set_tool(bool(step))
                    self._tool_closed = bool(step)
                    self._halt_requested.wait(self.motion.grip_settle_s)  # a halt need not wait for the settle
        except RobotError as e:
            report.duration_s = time.monotonic() - t0
            if self._is_halt(e):
                if isinstance(e, MotionHaltedError):
                    e.report = report
                    raise
                raise MotionHaltedError(f"{action} halted on request ({e})", report) from e
            read_error = self._state_read_error
            if read_error is not None and not isinstance(e, type(read_error)):  # set with _fault, cleared with it
                # a state read that got no answer stopped the arm under this sequence, whose own
                # error is only the consequence (the stop): report the cause, with its type
                self._safe_halt()
                raise type(read_error)(f"{self._fault}; the arm was stopped during {action}") from e
            self._fault = f"{type(e).__name__}: {e}"
            self._safe_halt()
            raise
        report.duration_s = time.monotonic() - t0
        self._motions_done += 1
        return report

    def _check_not_stopped(self) -> None:
        # between steps: a stop or a halt that came while no driver call was running
        if self._estopped:
            raise EmergencyStopError("emergency stop during the sequence")
        if self._halt_requested.is_set():
            raise MotionHaltedError("halted on request before the next step")

    def _is_halt(self, e: RobotError) -> bool:
        # A driver halt shows up as MotionHaltedError; the default halt (a driver that cannot halt)
        # is its emergency stop, which shows up as EmergencyStopError. An emergency stop of ours
        # wins over a halt, and any other error during a halt is a fault.
        return (
            self._halt_requested.is_set()
            and not self._estopped
            and isinstance(e, (MotionHaltedError, EmergencyStopError))
        )

    def _begin_sequence(self) -> None:
        with self._halt_lock:
            self._halt_requested.clear()  # a stale request must not stop this sequence
            self._running = True

    def _end_sequence(self) -> None:
        with self._halt_lock:  # waits for a driver halt() in flight, so the clear comes after it
            self._running = False
            halted = self._halt_requested.is_set()
            self._halt_requested.clear()
        if halted and not self._estopped:  # after an emergency stop only reset() makes the arm ready
            self._clear_driver_halt()

    def _clear_driver_halt(self) -> None:
        try:
            self.driver.clear_halt()
        except RobotError as e:
            log.error("clearing the halt failed, the arm needs a reset: %s", e)
            self._fault = f"{type(e).__name__} after a halt: {e}"
            self._safe_halt()
            return
        if self._estopped:  # an emergency stop came during the clear: make sure the clear did not undo it
            self._safe_halt()

    def _safe_halt(self) -> None:
        # After a fault nothing more is sent but a stop: a half-done sequence must not continue.
        try:
            self.driver.emergency_stop()
        except Exception:  # the connection may be gone; the stop is best effort
            log.exception("emergency stop after a fault failed")

    def pick(self, target_m) -> MotionReport:
        """Pick at a base-frame point (metres, the top surface of the object): open, approach above,
        descend by the tool's grasp depth, close, lift.

        Raises:
            UnsafeTargetError: outside the envelope (nothing sent).
            ReachRefusedError: the driver's reach check says the path leaves the joint limits, or it did
                not answer (nothing sent).
            ArmNotConnectedError, EmergencyStopError: not ready (nothing sent).
            ArmFaultError, ArmConnectionError, ArmTimeoutError, UnreachableTargetError: from the driver;
                the arm is stopped before the error propagates.
            MotionHaltedError: ``halt()`` stopped the sequence: no fault, no emergency stop sent, the arm
                is ready; ``holding`` is unchanged from before the pick (it did not complete), and
                the error's ``report`` says what was sent.
        """
        steps = self.plan("pick", target_m)
        self._require_ready()
        report = self._run("pick", target_m, steps, check_reach=True)
        sensor = self.driver.holding_sensor()
        self._holding = True if sensor is None else bool(sensor)
        return report

    def place(self, target_m) -> MotionReport:
        """Place what the tool holds at a base-frame point (metres, the surface to put it on):
        approach above, descend to the tool's release height, open, lift. Raises as ``pick`` (after
        a halt ``holding`` is unchanged too)."""
        steps = self.plan("place", target_m)
        self._require_ready()
        report = self._run("place", target_m, steps, check_reach=True)
        self._holding = False
        return report

    def release(self) -> MotionReport:
        """Open the tool where the arm is (no arm motion) and forget any held object.

        The operator's fix for a wrong ``holding`` belief: the Lite gripper has no sensor, so after
        a crash mid-pick or an object taken out by hand only this says the tool is empty again.
        The report's ``action`` is ``release``, its ``target_m`` empty and ``waypoints`` empty.

        Raises:
            ArmNotConnectedError, EmergencyStopError: not ready (nothing sent; ``holding`` unchanged).
            ArmFaultError, ArmConnectionError, ArmTimeoutError: from the driver; the arm is stopped
                before the error propagates and ``holding`` is unchanged.
            MotionHaltedError: ``halt()`` stopped it (``holding`` unchanged), as in ``pick``.
        """
        self._require_ready()
        report = self._run("release", [], [("tool", False)])
        self._holding = False
        return report

    def home(self) -> MotionReport:
        """Move to the configured home pose (checked against the workspace). Raises as ``move_to``."""
        self.workspace.check(self.motion.home.xyz, "home")
        self._require_ready()
        return self._run("home", self.motion.home.position_m, [("move", self.motion.home)])

    def move_to(self, pose: TcpPose) -> MotionReport:
        """Move the TCP to ``pose`` in one linear motion (calibration poses, hovering for checks).

        Raises as ``pick``; the pose is checked against the workspace, and its orientation for three
        finite angles (``UnsafeTargetError`` "not_finite"), before anything is sent."""
        self.workspace.check(pose.xyz, "pose")
        if not all(math.isfinite(a) for a in pose.rpy_deg):
            raise UnsafeTargetError(f"not_finite: pose orientation {list(pose.rpy_deg)} is not three finite angles")
        self._require_ready()
        return self._run("move", pose.position_m, [("move", pose)])

    def stop(self) -> None:
        """Emergency stop: halts the driver and refuses motion until ``reset()``."""
        self._estopped = True
        self._safe_halt()

    def halt(self) -> bool:
        """Controlled stop (the operator's abort): when a sequence (pick, place, home, release,
        move_to) is running, ask the driver to halt (``ArmDriver.halt``) and stop the sequence at the
        next step boundary. The sequence raises ``MotionHaltedError`` (its ``report`` says what was
        sent); no fault is recorded, no emergency stop is sent, and when it ends the driver's
        ``clear_halt()`` makes the arm ready for the next command. A halt with nothing running does
        nothing, and never affects a later sequence. A sequence whose last step finished before the
        halt reached it returns normally.

        Safe from any thread and never waits for the sequence (like ``stop()``): it waits at most
        for the driver's halt call. A driver halt that raises is replaced by the emergency stop.

        Returns:
            Whether a sequence was running (and was asked to halt).
        """
        with self._halt_lock:
            if not self._running:
                return False
            self._halt_requested.set()
            try:
                self.driver.halt()
            except Exception:  # the motion may still be going: stop it the hard way
                log.exception("the driver's halt failed; sending the emergency stop")
                self.stop()
        return True

    def reset(self) -> None:
        """Leave the emergency-stopped or faulted state (the driver re-runs its bring-up).

        Waits until a sequence that is still running (stopping) in another thread has ended."""
        with self._motion_lock:
            self.driver.connect()
            self._estopped = False
            self._fault = None
            self._state_read_error = None

    def state(self) -> ArmState:
        """What the arm reports now (``ArmState``). A ``RobotError`` while reading the driver is not
        raised: what was not read yet (pose, joints, error code) is left unknown. A read that got no
        answer within the driver's deadline (``ArmTimeoutError``: the controller stalled) or over a
        lost link (``ArmConnectionError``) is a **fault**: the arm can no longer be watched, so it is
        stopped (the emergency stop, best effort), the running sequence ends with that reason, and
        nothing moves until ``reset()``. Any other read error is logged only."""
        done = self._motions_done  # before the pose: a newer pose with an older count is harmless
        read: dict = {}
        if self._connected:
            try:
                read["tcp"] = self.driver.get_pose()
                read["joints_rad"] = self.driver.get_joints_rad()
                read["error_code"] = self.driver.error_code()
            except (ArmTimeoutError, ArmConnectionError) as e:
                if self._fault is None:  # stop once: later reads (10 a second) must not repeat it
                    log.error("reading the arm state got no answer, stopping the arm: %s", e)
                    self._fault = f"{type(e).__name__}: the state read got no answer ({e})"
                    self._state_read_error = e
                    self._safe_halt()
                else:
                    log.warning("reading arm state failed (arm already faulted): %s", e)
            except RobotError as e:
                log.warning("reading arm state failed: %s", e)
        return ArmState(
            connected=self._connected,
            tool_closed=self._tool_closed,
            holding=self._holding,
            estopped=self._estopped,
            fault=self._fault,
            motions_done=done,
            busy=self._motion_lock.locked(),
            **read,
        )

    @property
    def holding(self) -> bool:
        return self._holding

    @property
    def motions_done(self) -> int:
        """Sequences completed so far (pick, place, home, release, move_to; not the refused or failed)."""
        return self._motions_done


# type string -> "module:factory"; the factory takes the text after the first ':' and keyword config.
ARM_DRIVERS: dict[str, str] = {
    "xarm": "pointlab.robot.xarm:XArmDriver.from_spec",
}
# Drivers of other packages (the sim's ``sim``, a lab's own) register under this entry-point group in
# their pyproject.toml; they are found in every process, whatever was imported.
ENTRY_POINT_GROUP = "pointlab.arm_drivers"


def arm_drivers() -> dict[str, str]:
    """Every known arm type -> its ``"module:factory"`` (built-ins win over entry points)."""
    from importlib.metadata import entry_points

    return {**{ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}, **ARM_DRIVERS}


def make_arm(
    spec: str, workspace: Workspace = Workspace(), motion: MotionConfig = MotionConfig(), **driver_kwargs
) -> Arm:
    """Build (not connect) the arm named by ``spec``: ``sim`` or ``xarm:IP[:PORT]``.

    Raises:
        ValueError: unknown arm type.
    """
    kind, sep, arg = spec.partition(":")
    drivers = arm_drivers()
    if kind not in drivers:
        raise ValueError(f"unknown robot {kind!r}; known: {', '.join(sorted(drivers))}")
    factory = pkgutil.resolve_name(drivers[kind])
    return Arm(factory(arg if sep else None, **driver_kwargs), workspace, motion)
