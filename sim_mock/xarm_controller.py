"""A UFACTORY Lite 6 controller emulator that the unmodified ``xarm-python-sdk`` connects to.

What it serves (see ``xarm_protocol`` for the frames):

- the command socket on ``host:port`` (``port=0`` picks a free port; ``.port`` is the bound one);
- the "normal" report stream on ``host:report_port`` (default 30001, the SDK's fixed report port).
  ``XArmAPI.set_position`` waits in ``__wait_sync`` until a report has arrived, so an SDK session
  without the report stream cannot move (``enable_report=False`` is not a usable path in SDK 1.18.4).
  Because the SDK always connects the report to port 30001 of the controller's IP, two emulators
  that run at once need two loopback addresses (``127.0.0.2``, ...); ``host`` must be loopback.

Behaviour (a small model of the real controller, documented in docs/robot.md):

- power-on: motors disabled, state 4. ``motion_en`` enables, ``set_mode``, ``set_tcp_offset`` and the
  other configuration registers leave state 5; ``set_state(0)`` makes the arm ready (state 2). A
  motion received less than ``state_settle_s`` after that is acknowledged but ignored, as on the
  real controller.
- ``move_line`` (register 21): the TCP target (mm, rad) in the current TCP frame is solved with
  ``Lite6Kinematics.ik``; no solution within the joint limits sets controller error **21** (Kinematic
  Error) and refuses the motion. The motion takes the time of a trapezoidal profile at the
  commanded speed and acceleration, times ``time_scale`` (state 1 while moving, then 2).
- ``get_ik`` (register 43): the joint angles (rad, 7 floats, the 7th 0) that put the TCP, in the current
  TCP frame, at the requested pose, from ``Lite6Kinematics.ik`` seeded with the reference angles
  when the client sends them, else the current joints; wrapped to (-pi, pi] unless the client sent
  ``limited=0``. No solution within the joint limits: the reply carries the ``0x08`` "invalid"
  state bit (the SDK returns code 10) and 28 zero bytes; no controller error is set, nothing moves
  (it is a query, see docs/robot.md).
- an error state (error code != 0) flags every reply with ``0x40`` and refuses motion until
  ``clean_err`` and ``set_state(0)``; ``set_state(4)`` (emergency stop) freezes the arm at once.
- tool GPIO (registers 127/128, end-effector host id 9): outputs TO0/TO1 drive the Lite gripper
  (TO0=1, TO1=0 open; TO0=0, TO1=1 close; both 0 stop) or the Lite vacuum (TO0=1, TO1=0 on; TO0=0,
  TO1=1 off); input TI0 reads 1 while the vacuum is on and ``vacuum_contact`` is true.

Every request goes to ``log`` (a list of dicts: ``register``, ``name``, ``params`` in protocol units,
``result``, ``duration_s`` of an accepted motion, and ``fault`` when one was injected). Faults:
``inject("drop" | "error" | "stall", on_register=...)``.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import socket
import struct
import threading
import time
from dataclasses import dataclass

import numpy as np

from .xarm_protocol import (
    REG, STATE_FLAG_ERROR, STATE_FLAG_INVALID, STATE_FLAG_NOT_READY, STATE_FLAG_WARN, TGPIO_DIGITAL_IN, TGPIO_DIGITAL_OUT,
    TGPIO_OUTPUT_STATE, FrameReader, Request, build_normal_report, build_reply, decode_params,
)

__all__ = ["XArmControllerEmulator", "Fault", "LITE6_VERSION", "KINEMATIC_ERROR", "DEFAULT_FAULT_CODE"]

log = logging.getLogger(__name__)

LITE6_VERSION = "6,9,LI1003,DL1000,v2.0.0"  # axis 6, type 9 (Lite 6), robot SN, box SN, firmware
KINEMATIC_ERROR = 21  # controller error C21 "Kinematic Error": no joint solution for the target
DEFAULT_FAULT_CODE = 31  # C31 "Collision Caused Abnormal Current": a plausible spontaneous fault
STATE_MOVING, STATE_READY, STATE_PAUSED, STATE_STOPPED, STATE_CONFIG = 1, 2, 3, 4, 5
MIN_MOTION_S = 0.1  # so that a client polling the state sees "moving" even for tiny or scaled motions
CONFIG_REGISTERS = {REG["set_mode"], REG["set_tcp_offset"], REG["set_load_param"], REG["set_collis_sens"],
                    REG["set_teach_sens"]}
MOTION_REGISTERS = {REG["move_line"], REG["move_joint"], REG["move_home"]}
POSE_KEYS = ("x_mm", "y_mm", "z_mm", "roll_rad", "pitch_rad", "yaw_rad")


@dataclass
class Fault:
    """An injected fault: ``kind`` in ``drop``, ``error``, ``stall``; fires on the next request to
    ``on_register`` (any register when ``None``) ``count`` times; ``code`` is the controller error
    code an ``error`` fault sets."""

    kind: str
    on_register: int | None = None
    code: int = DEFAULT_FAULT_CODE
    count: int = 1


def _rpy_matrix(rpy_rad) -> np.ndarray:
    # xArm fixed-axis roll/pitch/yaw: R = Rz(yaw) Ry(pitch) Rx(roll)
    from scipy.spatial.transform import Rotation

    return Rotation.from_euler("xyz", rpy_rad).as_matrix()


def _pose_to_T(pose_mm_rad) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = _rpy_matrix(pose_mm_rad[3:6])
    T[:3, 3] = np.asarray(pose_mm_rad[:3], dtype=np.float64) / 1000.0
    return T


def _T_to_pose(T: np.ndarray) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    rpy = Rotation.from_matrix(T[:3, :3]).as_euler("xyz")
    return np.concatenate([T[:3, 3] * 1000.0, rpy])


def _profile_time_s(distance: float, speed: float, acc: float) -> float:
    """Duration of a trapezoidal (or triangular) velocity profile over ``distance``."""
    if distance <= 0:
        return 0.0
    speed, acc = max(speed, 1e-6), max(acc, 1e-6)
    if distance >= speed * speed / acc:
        return distance / speed + speed / acc
    return 2.0 * math.sqrt(distance / acc)


class XArmControllerEmulator:
    """A TCP server speaking the xArm protocol, backed by the simulated Lite 6 kinematics.

    Args:
        host: a loopback address to bind (``127.0.0.1``; another ``127.x.y.z`` to run two at once).
        port: command port; 0 picks a free one (see ``.port``).
        report_port: port of the "normal" report stream (the SDK's is 30001; 0 picks a free one,
            which only a client configured for it can use).
        time_scale: multiplies every motion duration (1.0 realistic; tests use ~0.05).
        tool: the mounted tool, ``lite_gripper`` or ``lite_vacuum`` (how TO0/TO1 are read).
        version: the string answered to register 1.
        state_settle_s: a motion within this time of ``set_state(0)`` is ignored.
        report_interval_s: period of the report frames.
        kinematics: a ``Lite6Kinematics``-like object (``fk``, ``ik``, ``joint_limits_rad``); by
            default ``pointlab.sim_mock.kinematics.Lite6Kinematics()``.

    Raises:
        ValueError: ``host`` is not a loopback address.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, report_port: int = 30001, *,
                 time_scale: float = 1.0, tool: str = "lite_gripper", version: str = LITE6_VERSION,
                 state_settle_s: float = 0.1, report_interval_s: float = 0.05, kinematics=None) -> None:
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the emulator binds loopback addresses only, not {host!r}")
        if tool not in ("lite_gripper", "lite_vacuum"):
            raise ValueError(f"unknown tool {tool!r}")
        self.host, self._want_port, self._want_report_port = host, port, report_port
        self.time_scale, self.tool, self.version = float(time_scale), tool, version
        self.state_settle_s, self.report_interval_s = state_settle_s, report_interval_s
        if kinematics is None:
            from pointlab.sim_mock.kinematics import Lite6Kinematics

            kinematics = Lite6Kinematics()
        self.kin = kinematics
        self.log: list[dict] = []
        self.vacuum_contact = True
        self._lock = threading.RLock()
        self._faults: list[Fault] = []
        self._stop = threading.Event()
        self._servers: list[socket.socket] = []
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self.port = self.report_port = 0
        self._power_on()

    # -- controller model --------------------------------------------------------------------
    def _power_on(self) -> None:
        self.state, self.mode, self.enabled = STATE_STOPPED, 0, False
        self.error_code = self.warn_code = 0
        self.tcp_offset = np.zeros(6)  # mm, rad
        self.tool_outputs = [0, 0]  # TO0, TO1
        self._ready_at = 0.0
        self._motion: dict | None = None
        seed = getattr(self.kin, "TOOL_DOWN_SEED_RAD", np.zeros(6))
        self._joints = np.asarray(seed, dtype=np.float64).reshape(6).copy()
        self._pose = self._pose_from_joints(self._joints)

    def _pose_from_joints(self, joints) -> np.ndarray:
        return _T_to_pose(self.kin.fk(joints, tool=None) @ _pose_to_T(self.tcp_offset))

    def _settle(self, now: float | None = None) -> None:
        """Advance a running motion to time ``now`` (call with the lock held)."""
        m = self._motion
        if m is None:
            return
        now = time.monotonic() if now is None else now
        s = min(1.0, max(0.0, (now - m["t0"]) / m["dur"]))
        self._pose = m["p0"] + s * (m["p1"] - m["p0"])
        self._pose[3:] = m["p1"][3:] if s >= 1.0 else self._slerp_rpy(m, s)
        self._joints = m["q0"] + s * (m["q1"] - m["q0"])
        if s >= 1.0:
            self._motion = None
            if self.state == STATE_MOVING:
                self.state = STATE_READY

    @staticmethod
    def _slerp_rpy(m: dict, s: float) -> np.ndarray:
        from scipy.spatial.transform import Rotation, Slerp

        rots = Rotation.from_euler("xyz", [m["p0"][3:], m["p1"][3:]])
        return Slerp([0.0, 1.0], rots)([s]).as_euler("xyz")[0]

    @property
    def moving(self) -> bool:
        with self._lock:
            self._settle()
            return self._motion is not None

    @property
    def pose_mm_rad(self) -> list[float]:
        """Current TCP pose ``[x, y, z]`` mm and ``[roll, pitch, yaw]`` rad (in the current TCP frame)."""
        with self._lock:
            self._settle()
            return [float(v) for v in self._pose]

    @property
    def joints_rad(self) -> list[float]:
        with self._lock:
            self._settle()
            return [float(v) for v in self._joints]

    @property
    def tool_closed(self) -> bool:
        """Gripper closed / vacuum on, from the tool outputs."""
        return self.tool_outputs == [0, 1] if self.tool == "lite_gripper" else self.tool_outputs == [1, 0]

    def _flags(self) -> int:
        flags = 0
        if self.error_code:
            flags |= STATE_FLAG_ERROR
        if self.warn_code:
            flags |= STATE_FLAG_WARN
        if not self.enabled or self.state not in (0, STATE_MOVING, STATE_READY):
            flags |= STATE_FLAG_NOT_READY
        return flags

    def _stop_motion(self, state: int) -> None:
        self._settle()
        self._motion = None
        self.state = state

    # -- register handlers (lock held); return (result, data) ---------------------------------
    def _handle(self, req: Request, params: dict) -> tuple[str, bytes]:
        reg = req.register
        self._settle()
        if reg == REG["get_version"]:
            return "ok", self.version.encode("ascii")[:39].ljust(40, b"\0")
        if reg == REG["get_robot_sn"]:
            sn = self.version.split(",")[2] if self.version.count(",") >= 3 else "LI1003"
            return "ok", (sn.encode() + b"\0" + b"DL1000").ljust(40, b"\0")
        if reg == REG["get_state"]:
            return "ok", bytes([self.state])
        if reg == REG["get_cmdnum"]:
            return "ok", struct.pack(">H", 1 if self._motion else 0)
        if reg == REG["get_error"]:
            return "ok", bytes([self.error_code, self.warn_code])
        if reg == REG["clean_err"]:
            self.error_code = 0  # the state stays stopped: set_state(0) is still needed
            return "ok", b""
        if reg == REG["clean_war"]:
            self.warn_code = 0
            return "ok", b""
        if reg == REG["motion_en"]:
            self.enabled = bool(params.get("enable"))
            self._stop_motion(STATE_CONFIG if self.enabled else STATE_STOPPED)
            return "ok", b""
        if reg == REG["set_state"]:
            return self._set_state(int(params.get("value", 0))), b""
        if reg in CONFIG_REGISTERS:
            if reg == REG["set_mode"]:
                self.mode = int(params["mode"])
            if reg == REG["set_tcp_offset"]:
                self.tcp_offset = np.array([params[k] for k in POSE_KEYS])
                self._pose = self._pose_from_joints(self._joints)
            self._stop_motion(STATE_CONFIG if self.enabled else STATE_STOPPED)
            return "ok", b""
        if reg == REG["get_tcp_pose"]:
            return "ok", struct.pack("<6f", *self._pose)
        if reg == REG["get_joint_pos"]:
            return "ok", struct.pack("<7f", *self._joints, 0.0)
        if reg == REG["move_line"]:
            return self._move_line(params), b"\0\0\0"
        if reg == REG["get_ik"]:
            return self._get_ik(params)
        if reg == REG["tgpio_w16b"]:
            return self._tgpio_write(params), b""
        if reg == REG["tgpio_r16b"]:
            return self._tgpio_read(params)
        if reg in (REG["set_tcp_jerk"], REG["set_tcp_maxacc"], REG["set_brake"], REG["system_control"]):
            return "ok", b""
        if reg in MOTION_REGISTERS:
            return "unsupported", b""
        log.warning("xarm emulator: unknown register %d %s", reg, params)
        return "unknown", b""

    def _set_state(self, value: int) -> str:
        if value == 0:
            if self.error_code or not self.enabled:
                return "not_ready"
            if self.state != STATE_MOVING:
                self.state = STATE_READY
                self._ready_at = time.monotonic() + self.state_settle_s
            return "ok"
        if value == 4:
            self._stop_motion(STATE_STOPPED)
            return "ok"
        if value == 3:
            self._stop_motion(STATE_PAUSED)
            return "ok"
        return "invalid"

    def _move_line(self, params: dict) -> str:
        if self.error_code:
            return "refused_error"
        if not self.enabled or self.state not in (STATE_MOVING, STATE_READY) or self.mode != 0:
            return "not_ready"
        if time.monotonic() < self._ready_at:
            return "ignored"  # acknowledged but dropped: sent too soon after a state change
        if self._motion is not None:
            return "busy"  # this model has no command queue; our driver always waits for each move
        target = np.array([params[k] for k in POSE_KEYS])
        if not np.all(np.isfinite(target)):
            self.error_code = KINEMATIC_ERROR
            self._stop_motion(STATE_STOPPED)
            return "unreachable"
        flange = _pose_to_T(target) @ np.linalg.inv(_pose_to_T(self.tcp_offset))
        q1 = self.kin.ik(flange[:3, 3], np.degrees(_T_to_pose(flange)[3:]), seed_rad=self._joints, tool=None)
        if q1 is None:
            self.error_code = KINEMATIC_ERROR
            self._stop_motion(STATE_STOPPED)
            return "unreachable"
        dist = float(np.linalg.norm(target[:3] - self._pose[:3]))
        dur = max(MIN_MOTION_S, _profile_time_s(dist, params["speed_mm_s"], params["acc_mm_s2"]) * self.time_scale)
        self._motion = {"t0": time.monotonic(), "dur": dur, "p0": self._pose.copy(), "p1": target,
                        "q0": self._joints.copy(), "q1": np.asarray(q1, dtype=np.float64)}
        self.state = STATE_MOVING
        return "ok"

    def _get_ik(self, params: dict) -> tuple[str, bytes]:
        no_solution = "no_solution", bytes(28)
        if "raw" in params:
            return no_solution
        target = np.array([params[k] for k in POSE_KEYS])
        if not np.all(np.isfinite(target)):
            return no_solution
        seed = np.asarray(params["ref_rad"][:6]) if "ref_rad" in params else self._joints
        flange = _pose_to_T(target) @ np.linalg.inv(_pose_to_T(self.tcp_offset))
        q = self.kin.ik(flange[:3, 3], np.degrees(_T_to_pose(flange)[3:]), seed_rad=seed, tool=None)
        if q is None:
            return no_solution
        q = np.asarray(q, dtype=np.float64)
        if params.get("limited", 1):
            q = -((-q + math.pi) % (2 * math.pi) - math.pi)  # into (-pi, pi]
        return "ok", struct.pack("<7f", *q, 0.0)

    def _tgpio_write(self, params: dict) -> str:
        if params.get("addr") != TGPIO_DIGITAL_OUT:
            return "ok"
        value = int(round(params["value"]))
        # high byte: which outputs to write (0x01 TO0, 0x02 TO1), low byte: their values
        for bit, idx in ((0x01, 0), (0x02, 1)):
            if value & (bit << 8):
                self.tool_outputs[idx] = 1 if value & bit else 0
        return "ok"

    def _tgpio_read(self, params: dict) -> tuple[str, bytes]:
        addr = params.get("addr")
        if addr == TGPIO_DIGITAL_IN:
            holding = self.tool == "lite_vacuum" and self.tool_outputs == [1, 0] and self.vacuum_contact
            return "ok", struct.pack(">i", 1 if holding else 0)
        if addr == TGPIO_OUTPUT_STATE:
            return "ok", struct.pack(">i", self.tool_outputs[0] | (self.tool_outputs[1] << 1))
        return "ok", struct.pack(">i", 0)

    # -- faults --------------------------------------------------------------------------------
    def inject(self, kind: str, on_register: int | str | None = None, *, code: int = DEFAULT_FAULT_CODE,
               count: int = 1) -> None:
        """Arm a fault for the next request to ``on_register`` (number or name, e.g. ``"move_line"``;
        ``None`` = any register).

        - ``drop``: close every client connection (command and report) without answering;
        - ``error``: answer with the error flag and set controller error ``code``; nothing is executed;
        - ``stall``: never answer (nor execute) that request.

        Raises:
            ValueError: unknown kind or register name.
        """
        if kind not in ("drop", "error", "stall"):
            raise ValueError(f"unknown fault {kind!r}: drop, error or stall")
        if isinstance(on_register, str):
            if on_register not in REG:
                raise ValueError(f"unknown register name {on_register!r}")
            on_register = REG[on_register]
        with self._lock:
            self._faults.append(Fault(kind, on_register, code, count))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, reg: int) -> Fault | None:
        for f in self._faults:
            if f.on_register is None or f.on_register == reg:
                f.count -= 1
                if f.count <= 0:
                    self._faults.remove(f)
                return f
        return None

    # -- log helpers ---------------------------------------------------------------------------
    def entries(self, name: str | None = None) -> list[dict]:
        """A copy of the log, optionally only the entries of register ``name`` (e.g. ``"move_line"``)."""
        with self._lock:
            return [dict(e) for e in self.log if name is None or e["name"] == name]

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    # -- serving -------------------------------------------------------------------------------
    def start(self) -> "XArmControllerEmulator":
        """Bind and serve in background threads. Raises ``OSError`` if a port is taken."""
        cmd = self._listen(self._want_port)
        try:
            rep = self._listen(self._want_report_port)
        except OSError:
            cmd.close()
            raise
        self.port, self.report_port = cmd.getsockname()[1], rep.getsockname()[1]
        self._servers = [cmd, rep]
        for target, sock in ((self._serve_commands, cmd), (self._serve_reports, rep)):
            t = threading.Thread(target=self._accept_loop, args=(sock, target), daemon=True,
                                 name=f"xarm-emulator-{sock.getsockname()[1]}")
            t.start()
            self._threads.append(t)
        log.info("xArm controller emulator on %s:%d (report %d)", self.host, self.port, self.report_port)
        return self

    def _listen(self, port: int) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, port))
        s.listen(4)
        s.settimeout(0.2)
        return s

    def stop(self) -> None:
        """Close every socket and stop the threads."""
        self._stop.set()
        self.drop_connections()
        for s in self._servers:
            try:
                s.close()
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=2)
        self._threads.clear()

    def __enter__(self) -> "XArmControllerEmulator":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def drop_connections(self) -> None:
        """Close every client connection (the server keeps listening)."""
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                c.close()
            except OSError:
                pass

    def _accept_loop(self, server: socket.socket, handler) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            # The SDK sets a process-wide default socket timeout of 1 s; poll with our own.
            conn.settimeout(0.2)
            with self._lock:
                self._conns.add(conn)
            t = threading.Thread(target=handler, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _alive(self, conn: socket.socket) -> bool:
        with self._lock:
            return conn in self._conns and not self._stop.is_set()

    def _serve_commands(self, conn: socket.socket) -> None:
        reader = FrameReader()
        while self._alive(conn):
            try:
                data = conn.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            for req in reader.feed(data):
                reply = self._process(req)
                if reply == b"drop":
                    self.drop_connections()
                    return
                if reply:
                    try:
                        conn.sendall(reply)
                    except OSError:
                        break
        self._forget(conn)

    def _forget(self, conn: socket.socket) -> None:
        """Drop a client connection that has ended (control or report)."""
        with self._lock:
            self._conns.discard(conn)
        try:
            conn.close()
        except OSError:
            pass

    def _process(self, req: Request) -> bytes:
        params = decode_params(req)
        with self._lock:
            entry = {"t": time.monotonic(), "register": req.register, "name": req.name, "params": params,
                     "trans_id": req.trans_id, "protocol": req.protocol}
            self.log.append(entry)
            fault = self._take_fault(req.register)
            if fault is not None:
                entry["fault"] = fault.kind
                if fault.kind == "drop":
                    entry["result"] = "dropped"
                    return b"drop"
                if fault.kind == "stall":
                    entry["result"] = "stalled"
                    return b""
                self.error_code = fault.code
                self._stop_motion(STATE_STOPPED)
                entry["result"] = "error"
                data = b"\0\0\0" if req.register == REG["move_line"] else b""
                return build_reply(req, self._flags(), data)
            result, data = self._handle(req, params)
            entry["result"] = result
            if req.register == REG["move_line"] and result == "ok":
                entry["duration_s"] = self._motion["dur"]
            invalid = STATE_FLAG_INVALID if result == "no_solution" else 0
            return build_reply(req, self._flags() | invalid, data)

    def _serve_reports(self, conn: socket.socket) -> None:
        while self._alive(conn):
            with self._lock:
                self._settle()
                frame = build_normal_report(
                    state=self.state, mode=self.mode, cmd_num=1 if self._motion else 0, joints_rad=self._joints,
                    pose_mm_rad=self._pose, error_code=self.error_code, warn_code=self.warn_code,
                    enabled=self.enabled, tcp_offset_mm_rad=self.tcp_offset)
            try:
                conn.sendall(frame)
            except OSError:
                break
            self._stop.wait(self.report_interval_s)
        self._forget(conn)
