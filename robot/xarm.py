"""The UFACTORY Lite 6 (xArm 6 Lite) driver over ``xarm-python-sdk`` (``xarm.wrapper.XArmAPI``).

Bring-up (docs/robot.md; UFACTORY's xArm-Python-SDK API reference and examples): ``clean_warn``, ``clean_error``,
``motion_enable(True)``, ``set_mode(0)``, ``set_state(0)``, the tool's TCP offset, ``set_state(0)``
again (the offset leaves state 5), then a short wait (a motion sent within ~0.1 s of a state change
can be ignored by the controller). The driver then checks that the arm really is ready.

Units: ``pointlab.robot.arm`` speaks metres, m/s, m/s^2 and roll/pitch/yaw degrees; the SDK's
``set_position``/``get_position`` speak millimetres and degrees (``is_radian=False``); joints are read
in radians. Every non-zero SDK return code raises a typed error (``ArmFaultError`` with the code and
the controller's error text, ``ArmConnectionError`` when the connection is gone, ``ArmTimeoutError``
when no reply came).

Connection details that matter (read from the SDK 1.18.4 source):

- The SDK has no port argument: it always connects to ``XCONF.SocketConf.TCP_CONTROL_PORT`` (502).
  For another port (the controller emulator: 502 is privileged) the driver sets that constant for
  the duration of ``XArmAPI.connect()`` and restores it (under a lock; nothing reads it later).
- The report stream is required: ``set_position`` waits in ``__wait_sync`` until a report has
  arrived, so with ``enable_report=False`` it never returns. The driver uses ``report_type="normal"``
  (port 30001 of the controller's IP).
- ``forbid_uds=True``: otherwise the SDK first tries a Unix socket ``/tmp/xarmcontroller_uds_<port>``
  (present only on the control box itself) and would talk to whatever owns that path instead of
  the IP we were given.
- The SDK prints to stdout (and its loggers write there); the driver routes both to stderr so that
  ``pointlab`` commands keep stdout for their JSON.
- The SDK can raise instead of returning a code (an ``IndexError`` when a reply carries no data):
  every SDK call goes through ``_GuardedApi``, which turns any exception into ``ArmProtocolError``
  (or ``ArmConnectionError`` when the session is gone).
- A real Lite 6 goes on executing the motions it has accepted when its client disappears
  (docs/robot.md, "Connection loss"): when the connection is lost, the driver opens a new session
  within ``reconnect_timeout_s`` and sends the stop before it reports the ``ArmConnectionError``.
- The controlled stop (``halt``) and the emergency stop send the same command, ``set_state(4)``:
  the difference is what follows (docs/robot.md, "Halt vs emergency stop"). A ``set_position(wait=True)``
  that the stop ends returns ``APIState.EMERGENCY_STOP`` (-9: ``wait_move`` in ``xarm/x3/base.py``
  sees state 4); while halting that is ``MotionHaltedError``, and ``clear_halt`` is ``set_state(0)``
  and the settle wait, without the rest of the bring-up.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import math
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from .arm import TOOLS, ArmDriver, TcpPose, Tool
from .errors import (
    ArmConnectionError,
    ArmFaultError,
    ArmNotConnectedError,
    ArmProtocolError,
    ArmTimeoutError,
    MotionHaltedError,
    RobotError,
    UnreachableTargetError,
    UnsafeTargetError,
)
from .xarm_codes import (
    API_EXCEPTION,
    CONNECTION_CODES,
    POSE_NOT_REACHED,
    TIMEOUT_CODES,
    api_code_text,
    controller_error_text,
)

__all__ = ["Lite6Config", "XArmDriver", "DEFAULT_PORT", "REPORT_PORTS", "LITE6_JOINT_LIMITS_DEG"]

log = logging.getLogger(__name__)

DEFAULT_PORT = 502
REPORT_PORTS = range(30000, 30004)  # the SDK's report ports: never a command port
LITE6_AXIS, LITE6_TYPE = 6, 9
# Lite 6 joint ranges J1..J6, degrees (UFACTORY Lite 6 specification; the same as the lite6 URDF of
# xarm_ros2): a joint solution outside them is unreachable.
LITE6_JOINT_LIMITS_DEG = (
    (-360.0, 360.0),
    (-150.0, 150.0),
    (-3.5, 300.0),
    (-360.0, 360.0),
    (-124.0, 124.0),
    (-360.0, 360.0),
)

_PORT_LOCK = threading.Lock()
# What a motion call answers when a halt (state 4) ended it or came just before it: the SDK's
# APIState.EMERGENCY_STOP from wait_move, APIState.NOT_READY, and the controller's "not ready" flag.
HALT_CODES = frozenset({-9, -2, 9})


@dataclass(frozen=True)
class Lite6Config:
    """How to reach and drive one Lite 6.

    Attributes:
        ip: controller IPv4 address (lab default 192.168.1.xxx; the emulator: a 127.x address).
        port: command port (502 on a real controller).
        tool: ``lite_gripper`` or ``lite_vacuum`` (its TCP offset is set at bring-up).
        max_speed_mm_s: TCP speed clamp, mm/s (Lite 6 limit 500).
        max_acc_mm_s2: TCP acceleration clamp, mm/s^2.
        cmd_timeout_s: how long the SDK waits for the reply to one command.
        motion_timeout_s: how long a linear motion may take to finish.
        state_settle_s: wait after the last ``set_state(0)`` before any motion.
        reach_tolerance_mm: after a motion the TCP must be this close to the target, else the
            motion is reported as not done (a silently dropped command would otherwise pass).
        vacuum_hardware_version: the SDK's ``hardware_version`` of the Lite vacuum (1: TO0/TO1).
        reach_check_step_mm: spacing of the inverse-kinematics checks along each straight segment
            before a sequence (``check_reachable``), mm; at most ``reach_check_max_points`` interior
            points per segment are checked besides its goal.
        reach_check_max_points: cap on the interior points checked per segment.
        reconnect_timeout_s: after a lost connection, how long the driver keeps trying to open a new
            session to send the stop (docs/robot.md, "Connection loss").

    Raises:
        ValueError: bad address, port, tool or limit.
    """

    ip: str
    port: int = DEFAULT_PORT
    tool: str = "lite_gripper"
    max_speed_mm_s: float = 500.0
    max_acc_mm_s2: float = 5000.0
    cmd_timeout_s: float = 2.0
    motion_timeout_s: float = 60.0
    state_settle_s: float = 0.1
    reach_tolerance_mm: float = 2.0
    vacuum_hardware_version: int = 1
    reach_check_step_mm: float = 50.0
    reach_check_max_points: int = 4
    reconnect_timeout_s: float = 2.0

    def __post_init__(self) -> None:
        try:
            ipaddress.IPv4Address(self.ip)
        except ValueError as e:
            raise ValueError(f"xarm: {self.ip!r} is not an IPv4 address") from e
        if not 0 < int(self.port) < 65536 or int(self.port) in REPORT_PORTS:
            raise ValueError(
                f"xarm: bad command port {self.port} (502 on a real controller; 30000-30003 are report ports)"
            )
        if self.tool not in TOOLS:
            raise ValueError(f"xarm: unknown tool {self.tool!r}; known: {', '.join(sorted(TOOLS))}")
        if not (0 < self.max_speed_mm_s <= 500.0):
            raise ValueError("xarm: max_speed_mm_s must be in (0, 500] (Lite 6 TCP speed limit)")
        if self.reach_check_max_points < 0:
            raise ValueError("xarm: reach_check_max_points must be >= 0")
        for name in (
            "max_acc_mm_s2",
            "cmd_timeout_s",
            "motion_timeout_s",
            "reach_tolerance_mm",
            "reach_check_step_mm",
            "reconnect_timeout_s",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"xarm: {name} must be positive")
        if self.state_settle_s < 0:
            raise ValueError("xarm: state_settle_s must be >= 0")

    @property
    def tcp_offset_mm(self) -> float:
        return TOOLS[self.tool].tcp_offset_m * 1000.0


def _sdk_to_stderr():
    """Import the SDK with its stdout chatter (prints, stream handlers) sent to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        import xarm.wrapper  # noqa: F401  (prints SDK_VERSION on first import)
        from xarm.core.utils.log import logger as sdk_logger, origin_logger
    for lg in (sdk_logger, origin_logger):
        for h in lg.handlers:
            if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) in (sys.stdout, sys.__stdout__):
                h.setStream(sys.stderr)
    return xarm.wrapper.XArmAPI


@contextlib.contextmanager
def _sdk_control_port(port: int):
    """Point the SDK's (only) command-port constant at ``port`` while connecting."""
    from xarm.core.config.x_config import XCONF

    with _PORT_LOCK:
        old = XCONF.SocketConf.TCP_CONTROL_PORT
        XCONF.SocketConf.TCP_CONTROL_PORT = int(port)
        try:
            yield
        finally:
            XCONF.SocketConf.TCP_CONTROL_PORT = old


class _GuardedApi:
    """An ``XArmAPI`` whose methods raise typed robot errors instead of whatever the SDK raises.

    The SDK mostly returns codes, but some paths raise: ``get_state`` indexes the reply and raises
    ``IndexError`` when an error reply carries no data, ``connect`` raises a bare ``Exception``. A
    typed error is what a trial can record and what ``Arm`` stops the arm for. Attributes that are
    not methods (``connected``, ``axis``, ...) pass through.
    """

    def __init__(self, api) -> None:
        self._sdk = api

    def __getattr__(self, name: str):
        attr = getattr(self._sdk, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            try:
                return attr(*args, **kwargs)
            except RobotError:
                raise
            except Exception as e:  # anything the SDK raises becomes a robot error
                what = f"{type(e).__name__}: {e}"
                if not self._sdk.connected:
                    raise ArmConnectionError(f"{name}: connection to the xArm controller lost ({what})") from e
                raise ArmProtocolError(name, API_EXCEPTION, f"the SDK raised {what}") from e

        return call


class XArmDriver(ArmDriver):
    """``ArmDriver`` for the UFACTORY Lite 6 with the Lite gripper or the Lite vacuum.

    Args:
        config: address, tool and limits.
    """

    def __init__(self, config: Lite6Config) -> None:
        self.config = config
        self.tool: Tool = TOOLS[config.tool]
        self._api: _GuardedApi | None = None
        self._halting = False  # set by halt() (any thread), cleared by clear_halt() and the bring-up

    @classmethod
    def from_spec(cls, arg: str | None, *, tool: str = "lite_gripper", **kw) -> "XArmDriver":
        """Build from the ``make_arm`` spec ``xarm:IP[:PORT]`` (``arg`` is ``IP[:PORT]``, port 502 by
        default); ``kw`` are further ``Lite6Config`` fields.

        Raises:
            ValueError: missing or malformed address.
        """
        if not arg:
            raise ValueError("xarm needs an address: xarm:IP[:PORT], e.g. xarm:192.168.1.185")
        ip, sep, port = arg.partition(":")
        try:
            port_num = int(port) if sep else DEFAULT_PORT
        except ValueError as e:
            raise ValueError(f"xarm: bad port {port!r} in {arg!r}") from e
        return cls(Lite6Config(ip=ip, port=port_num, tool=tool, **kw))

    # -- session -------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._api is not None and bool(self._api.connected)

    def connect(self) -> None:
        """Open the session if needed and run the bring-up (also after an emergency stop).

        Raises:
            ArmConnectionError: refused, dropped, or the controller is not a Lite 6.
            ArmFaultError: a bring-up call failed or the arm is not ready afterwards (the controller
                error, e.g. C1 emergency stop button pressed, is in the message).
            ArmTimeoutError: no reply.
        """
        if not self.connected:
            self._open()
        with contextlib.redirect_stdout(sys.stderr):
            self._bring_up()
        self._halting = False

    def _open(self) -> None:
        cfg = self.config
        if self._api is not None:
            self.disconnect()
        self._api = api = self._new_session()
        log.info("connected to %s at %s:%d", api.version, cfg.ip, cfg.port)

    def _new_session(self) -> _GuardedApi:
        """A connected SDK session to a Lite 6 (no bring-up).

        Raises:
            ArmConnectionError: refused, dropped, or the controller is not a Lite 6.
        """
        cfg = self.config
        XArmAPI = _sdk_to_stderr()
        api = XArmAPI(
            cfg.ip, do_not_open=True, is_radian=False, enable_report=True, report_type="normal", forbid_uds=True
        )
        try:
            with contextlib.redirect_stdout(sys.stderr), _sdk_control_port(cfg.port):
                api.connect()
        except Exception as e:  # the SDK raises bare Exception for refused sockets and failed handshakes
            raise ArmConnectionError(f"cannot connect to the xArm controller at {cfg.ip}:{cfg.port}: {e}") from e
        if not api.connected:
            raise ArmConnectionError(f"cannot connect to the xArm controller at {cfg.ip}:{cfg.port}")
        api.set_timeout(cfg.cmd_timeout_s)
        if (api.axis, api.device_type) != (LITE6_AXIS, LITE6_TYPE):
            api.disconnect()
            raise ArmConnectionError(
                f"controller at {cfg.ip}:{cfg.port} reports axis {api.axis} type {api.device_type} "
                f"({api.version}), not a Lite 6 (axis 6, type 9)"
            )
        return _GuardedApi(api)

    def _bring_up(self) -> None:
        api, cfg = self._require_api(), self.config
        # With an error present clean_warn answers code 1 (error flag); clean_error comes next.
        self._check("clean_warn", api.clean_warn(), allow=(1,))
        self._check("clean_error", api.clean_error())
        self._check("motion_enable", api.motion_enable(True))
        self._check("set_mode", api.set_mode(0))
        self._check("set_state", api.set_state(0))
        self._check("set_tcp_offset", api.set_tcp_offset([0, 0, cfg.tcp_offset_mm, 0, 0, 0], wait=False))
        self._make_ready("bring-up")

    def _make_ready(self, after: str) -> None:
        """``set_state(0)``, the settle wait, and a read-back that the arm is ready."""
        api = self._require_api()
        self._check("set_state", api.set_state(0))
        time.sleep(self.config.state_settle_s)
        # set_state hides "not ready" (the SDK maps it to 0): ask the controller what it is now.
        code, state = api.get_state()
        self._check("get_state", code)
        code, (err, warn) = api.get_err_warn_code()
        self._check("get_err_warn_code", code)
        if err or state not in (0, 1, 2):
            raise ArmFaultError(
                "set_state",
                9,
                f"arm not ready after {after}: state {state}, {controller_error_text(err)}, warning {warn}",
            )

    def disconnect(self) -> None:
        api, self._api = self._api, None
        if api is not None:
            with contextlib.redirect_stdout(sys.stderr):
                try:
                    api.disconnect()
                except Exception:  # closing a dead session must not raise
                    log.exception("xarm disconnect failed")

    # -- errors --------------------------------------------------------------------------------
    def _require_api(self) -> _GuardedApi:
        if self._api is None:
            raise ArmNotConnectedError("xarm driver is not connected")
        return self._api

    def _check(self, call: str, code, allow: tuple[int, ...] = ()) -> None:
        """Raise the typed error for a non-zero SDK return ``code`` of ``call``."""
        code = int(code)
        if code == 0 or code in allow:
            return
        api = self._api
        if code in TIMEOUT_CODES and api is not None and api.connected:
            # A reply that never came because the socket died is a lost connection, not a slow
            # controller: the SDK notices the closed socket within about 0.5 s.
            deadline = time.monotonic() + 0.7
            while api.connected and time.monotonic() < deadline:
                time.sleep(0.05)
        if code in CONNECTION_CODES or (api is not None and not api.connected):
            raise self._connection_lost(f"{call}: connection to the xArm controller lost (SDK code {code})")
        if code in TIMEOUT_CODES:
            raise ArmTimeoutError(f"{call}: {api_code_text(code)} (SDK code {code})")
        detail = api_code_text(code)
        if api is not None and code in (1, 2, 9, -9, 100):
            try:
                c, (err, warn) = api.get_err_warn_code()
                if c == 0 and (err or warn):
                    detail += f"; {controller_error_text(err)}" + (f", warning {warn}" if warn else "")
            except Exception:  # the detail is best effort; the code is what matters
                log.debug("reading the controller error failed", exc_info=True)
        raise ArmFaultError(call, code, detail)

    # -- motion --------------------------------------------------------------------------------
    def move_linear(self, pose: TcpPose, speed_m_s: float, acc_m_s2: float) -> None:
        """Linear TCP motion to ``pose`` (metres, degrees) and wait until it is there.

        The SDK gets millimetres and degrees; speed is clamped to ``max_speed_mm_s`` (500 mm/s),
        acceleration to ``max_acc_mm_s2``.

        Raises:
            UnsafeTargetError: non-finite pose (nothing sent).
            ValueError: non-positive speed or acceleration (nothing sent).
            MotionHaltedError: ``halt()`` ended the motion, or came before it (nothing sent then).
            ArmFaultError, ArmConnectionError, ArmTimeoutError: from the controller; also
                ``ArmFaultError`` with code ``POSE_NOT_REACHED`` (-100) when the call succeeded but the
                TCP is not at the target afterwards.
            ArmNotConnectedError: not connected.
        """
        api, cfg = self._require_api(), self.config
        vals = [*pose.position_m, *pose.rpy_deg]
        if not all(math.isfinite(v) for v in vals):
            raise UnsafeTargetError(f"not_finite: pose {vals}")
        if not (speed_m_s > 0 and acc_m_s2 > 0):
            raise ValueError(f"speed and acceleration must be positive, got {speed_m_s} m/s, {acc_m_s2} m/s^2")
        x_mm, y_mm, z_mm = (c * 1000.0 for c in pose.position_m)
        roll_deg, pitch_deg, yaw_deg = pose.rpy_deg
        speed_mm_s = min(speed_m_s * 1000.0, cfg.max_speed_mm_s)
        acc_mm_s2 = min(acc_m_s2 * 1000.0, cfg.max_acc_mm_s2)
        self._refuse_if_halting("set_position")
        code = api.set_position(
            x_mm,
            y_mm,
            z_mm,
            roll_deg,
            pitch_deg,
            yaw_deg,
            speed=speed_mm_s,
            mvacc=acc_mm_s2,
            wait=True,
            timeout=cfg.motion_timeout_s,
        )
        self._check_halted("set_position", code)
        self._check("set_position", code)
        code, pos = api.get_position(is_radian=False)
        self._check("get_position", code)
        miss_mm = math.dist(pos[:3], (x_mm, y_mm, z_mm))
        if miss_mm > cfg.reach_tolerance_mm:
            self._check_halted("set_position", POSE_NOT_REACHED)  # the stop came as the wait ended
            raise ArmFaultError(
                "set_position", POSE_NOT_REACHED, f"TCP is {miss_mm:.1f} mm from the target after the motion"
            )

    def _refuse_if_halting(self, call: str) -> None:
        if self._halting:
            raise MotionHaltedError(f"{call}: the arm is halted; nothing sent until clear_halt()")

    def _check_halted(self, call: str, code: int) -> None:
        """While halting, a motion that the stop ended (``HALT_CODES``, or not at its target) is the halt."""
        if self._halting and (int(code) in HALT_CODES or int(code) == POSE_NOT_REACHED):
            raise MotionHaltedError(f"{call}: halted on request (SDK code {int(code)}: {api_code_text(code)})")

    def check_reachable(self, poses: list[TcpPose]) -> None:
        """Ask the controller's inverse kinematics (``get_inverse_kinematics``, register 43) for each
        goal in ``poses`` and for a few points on each straight segment from the current TCP pose,
        without moving. Points are spaced ``reach_check_step_mm`` (at most ``reach_check_max_points``
        interior points per segment); positions are interpolated linearly, orientations by slerp.
        Each query passes the previous solution as the reference angles, so the solutions follow
        one branch as the controller's linear motion would (ignored by firmware < 2.7.103).

        Raises:
            UnreachableTargetError: the controller answers a non-zero code (10: no solution) or joint
                angles outside ``LITE6_JOINT_LIMITS_DEG``; the pose (mm, degrees) is in the message.
            UnsafeTargetError: a non-finite pose (nothing sent).
            ArmConnectionError, ArmTimeoutError: the connection is lost / no reply.
            ArmNotConnectedError: not connected.
        """
        self._require_api()
        for pose in poses:
            vals = [*pose.position_m, *pose.rpy_deg]
            if not all(math.isfinite(v) for v in vals):
                raise UnsafeTargetError(f"not_finite: pose {vals}")
        start = self.get_pose()
        ref_deg = None
        for goal in poses:
            for point in self._segment_points(start, goal):
                ref_deg = self._ik_deg(point, goal, ref_deg)
            start = goal

    def _segment_points(self, start: TcpPose, goal: TcpPose) -> list[list[float]]:
        """Poses ``[x, y, z mm, roll, pitch, yaw deg]`` along the segment, goal last (start excluded)."""
        from scipy.spatial.transform import Rotation, Slerp

        cfg = self.config
        p0, p1 = (np.asarray(p.position_m, dtype=np.float64) * 1000.0 for p in (start, goal))
        length_mm = float(np.linalg.norm(p1 - p0))
        n_inner = min(cfg.reach_check_max_points, max(0, math.ceil(length_mm / cfg.reach_check_step_mm) - 1))
        fracs = np.linspace(0.0, 1.0, n_inner + 2)[1:]
        rots = Rotation.from_euler("xyz", [start.rpy_deg, goal.rpy_deg], degrees=True)
        rpys = Slerp([0.0, 1.0], rots)(fracs[:-1]).as_euler("xyz", degrees=True) if n_inner else []
        points = [[*(p0 + f * (p1 - p0)), *rpy] for f, rpy in zip(fracs[:-1], rpys)]
        # the goal itself exactly as move_linear will send it (no Euler round trip)
        return points + [[*p1, *goal.rpy_deg]]

    def _ik_deg(self, point: list[float], goal: TcpPose, ref_deg: list[float] | None) -> list[float]:
        api = self._require_api()
        code, angles = api.get_inverse_kinematics(
            point, input_is_radian=False, return_is_radian=False, ref_angles=ref_deg
        )
        code = int(code)
        where = (
            f"pose ({point[0]:.1f}, {point[1]:.1f}, {point[2]:.1f}) mm, rpy ({point[3]:.1f}, "
            f"{point[4]:.1f}, {point[5]:.1f}) deg on the way to {goal.to_dict()}"
        )
        if code in CONNECTION_CODES or code in TIMEOUT_CODES or not api.connected:
            self._check("get_inverse_kinematics", code if code else -1)
        if code != 0:
            raise UnreachableTargetError(
                f"unreachable: {where}: the controller has no joint solution "
                f"(get_inverse_kinematics code {code}: {api_code_text(code)})"
            )
        joints = [float(a) for a in angles[:6]]
        bad = [
            i + 1
            for i, (a, (lo, hi)) in enumerate(zip(joints, LITE6_JOINT_LIMITS_DEG))
            if not _within_limit_deg(a, lo, hi)
        ]
        if bad:
            raise UnreachableTargetError(
                f"unreachable: {where}: joint solution {[round(a, 1) for a in joints]} deg is outside "
                f"the Lite 6 limits of joint(s) {bad}"
            )
        return joints

    def set_tool(self, closed: bool) -> None:
        """Lite gripper: close / open (``close_lite6_gripper`` / ``open_lite6_gripper``). Lite vacuum:
        on / off (``set_vacuum_gripper`` without waiting for the sensor, which only reads 1 when
        something seals the cup).

        Raises:
            MotionHaltedError: the arm is halted (nothing sent).
            ArmFaultError, ArmConnectionError, ArmTimeoutError, ArmNotConnectedError.
        """
        api = self._require_api()
        self._refuse_if_halting("set_tool")
        if self.tool.name == "lite_vacuum":
            self._check(
                "set_vacuum_gripper",
                api.set_vacuum_gripper(bool(closed), wait=False, hardware_version=self.config.vacuum_hardware_version),
            )
        elif closed:
            self._check("close_lite6_gripper", api.close_lite6_gripper())
        else:
            self._check("open_lite6_gripper", api.open_lite6_gripper())

    def stop_tool(self) -> None:
        """Lite gripper: stop driving the fingers (``stop_lite6_gripper``); vacuum: switch off."""
        api = self._require_api()
        if self.tool.name == "lite_vacuum":
            self.set_tool(False)
        else:
            self._check("stop_lite6_gripper", api.stop_lite6_gripper())

    def emergency_stop(self) -> None:
        """``XArmAPI.emergency_stop()`` (state 4: the motion stops, the controller's command cache is
        cleared); does not clear errors. When the session was lost it first opens a new one (within
        ``reconnect_timeout_s``), because a Lite 6 that lost its client goes on moving; a driver that
        was never connected (or was disconnected) contacts nothing. Never raises: when the controller
        cannot be reached it logs that nothing was sent."""
        api = self._api
        if api is None:  # never connected, disconnected, or the reconnect already failed
            log.warning("emergency stop: no connection to the controller, nothing sent")
            return
        if not api.connected:  # a session that was lost: the arm may be moving
            self._reconnect_and_stop()
            return
        try:
            with contextlib.redirect_stdout(sys.stderr):
                api.emergency_stop()
        except Exception:
            log.exception("xarm emergency_stop failed")

    def halt(self) -> None:
        """Controlled stop: ``set_state(4)``, the controller's stop state (UFACTORY: it terminates the
        current motion and clears the command cache); no error is set and nothing else is sent. The
        pending ``set_position(wait=True)`` then returns -9 and ``move_linear`` raises
        ``MotionHaltedError``; so does every later move or tool call until ``clear_halt()``. When the
        stop cannot be sent (no session, a lost one, a refusal) it falls back to ``emergency_stop()``,
        which reconnects to send it. Never raises."""
        self._halting = True  # before the stop, so the moving thread reads its -9 as the halt
        api = self._api
        try:
            if api is not None and api.connected:
                with contextlib.redirect_stdout(sys.stderr):
                    if int(api.set_state(4)) == 0:
                        return
        except Exception:  # the fallback below sends the stop another way
            log.exception("xarm halt: set_state(4) failed")
        log.warning("xarm halt: the stop state was not set; sending the emergency stop instead")
        self.emergency_stop()

    def clear_halt(self) -> None:
        """Leave the stop state of ``halt()``: ``set_state(0)``, the ``state_settle_s`` wait (a motion
        within ~0.1 s of a state change can be dropped) and a read-back that the arm is ready.

        Raises:
            ArmFaultError: the arm is not ready afterwards (the controller error is in the message).
            ArmConnectionError, ArmTimeoutError, ArmNotConnectedError: from the controller.
        """
        self._require_api()
        with contextlib.redirect_stdout(sys.stderr):
            self._make_ready("a halt")
        self._halting = False

    def _connection_lost(self, message: str) -> ArmConnectionError:
        """The error to raise for a lost connection, after a new session has sent the stop."""
        sent = self._reconnect_and_stop()
        if sent:
            return ArmConnectionError(f"{message}; reconnected and sent the stop")
        return ArmConnectionError(
            f"{message}; could not reconnect within {self.config.reconnect_timeout_s:g} s "
            "to send the stop: the arm may still be moving, use the emergency stop button"
        )

    def _reconnect_and_stop(self) -> bool:
        """Open a new session (retrying for ``reconnect_timeout_s``) and send the stop; whether it
        was sent. Nothing else is sent: no bring-up, so an error stays for a person to look at."""
        old, self._api = self._api, None
        if old is not None:
            try:
                old.disconnect()
            except Exception:  # closing a dead session must not raise
                log.debug("closing the lost session failed", exc_info=True)
        deadline = time.monotonic() + self.config.reconnect_timeout_s
        while True:
            try:
                api = self._new_session()
                with contextlib.redirect_stdout(sys.stderr):
                    api.set_state(4)  # one frame, at once; emergency_stop() below makes sure
                    api.emergency_stop()
                self._api = api
                log.warning("connection to the controller lost: reconnected and sent the stop")
                return True
            except Exception as e:  # the SDK raises bare Exception; ours are typed: all mean "not yet"
                if time.monotonic() >= deadline:
                    log.critical(
                        "connection to the controller lost and not back within %.1f s (%s): the arm may "
                        "still be moving; use the emergency stop button",
                        self.config.reconnect_timeout_s,
                        e,
                    )
                    return False
                time.sleep(0.2)

    # -- reading -------------------------------------------------------------------------------
    def get_pose(self) -> TcpPose:
        """TCP pose (metres, degrees) from ``get_position`` (mm, degrees)."""
        api = self._require_api()
        code, pos = api.get_position(is_radian=False)
        self._check("get_position", code)
        return TcpPose(
            (pos[0] / 1000.0, pos[1] / 1000.0, pos[2] / 1000.0), (float(pos[3]), float(pos[4]), float(pos[5]))
        )

    def get_joints_rad(self) -> list[float]:
        """Six joint angles in radians (``get_servo_angle(is_radian=True)``)."""
        api = self._require_api()
        code, angles = api.get_servo_angle(is_radian=True)
        self._check("get_servo_angle", code)
        return [float(a) for a in angles[:6]]

    def error_code(self) -> int:
        """The controller error code (0 = none; C-codes in docs/robot.md)."""
        api = self._require_api()
        code, (err, _warn) = api.get_err_warn_code()
        self._check("get_err_warn_code", code)
        return int(err)

    def holding_sensor(self) -> bool | None:
        """Vacuum: ``get_vacuum_gripper()`` is 1 (-1 off, 0 nothing held, 1 holding); gripper: ``None`` (no sensor)."""
        if self.tool.name != "lite_vacuum":
            return None
        api = self._require_api()
        code, value = api.get_vacuum_gripper(hardware_version=self.config.vacuum_hardware_version)
        self._check("get_vacuum_gripper", code)
        return int(value) == 1


def _within_limit_deg(angle_deg: float, lo_deg: float, hi_deg: float) -> bool:
    """Whether a joint angle, or the same angle +-360 deg, is within ``[lo, hi]``: the controller
    answers angles wrapped to +-180 deg (``limited=True``), while J3 of the Lite 6 reaches 300 deg."""
    if not math.isfinite(angle_deg):
        return False
    return any(lo_deg - 1e-3 <= angle_deg + k * 360.0 <= hi_deg + 1e-3 for k in (-1, 0, 1))
