"""What a UFACTORY Lite 6 controller does with each register: states, modes, the command cache,
errors and the TCP frame, over an ``ArmBackend`` that performs the motions.

Semantics (UFACTORY "Private TCP protocol" manual and user manual; xarm-python-sdk 1.18 source;
docs/robot.md, "Emulator fidelity", is the table):

- **States.** 1 moving, 2 ready (no cached command), 3 paused, 4 stopped (power-on), 5 "system
  reset" (after enabling, a mode change, a TCP offset, payload or sensitivity change: motion stops
  and the cache is cleared, as in state 4). ``set_state(0)`` starts (ready; resumes a pause),
  ``set_state(3)`` pauses (the motion stops where it is and resumes from there), ``set_state(4)``
  stops and clears the cache. A motion received less than ``state_settle_s`` after ``set_state(0)``
  may be acknowledged but dropped, as a real controller sometimes does (xArm-Python-SDK issue 59):
  with probability ``settle_drop_probability``, 0 by default (a fault one switches on; always
  dropping broke UFACTORY's own example scripts, which do not wait).
- **Motion commands are cached** and executed in order (``cmd_num`` counts them): linear moves
  (21, 22, 28, 92, 83 Cartesian), joint moves (23, 24, 83 joint), home (25: all joints to zero),
  pauses (26) and the counter (74, 75). Each one is planned when it starts, from where the arm is:
  no joint solution on the line is error **C21**, a joint target outside the limits **C23**, a
  line that would need a joint faster than 180 deg/s (near a singularity) **C24**. An error stops
  the arm and clears the cache; every later motion is refused with the error flag until
  ``clean_err`` and ``set_state(0)``.
- Replies carry the state byte: 0x40 error, 0x20 warning, 0x10 not ready (motors off or state 4/5).
  A command refused because the cache is full sets warning 11; an unknown register warning 13
  ("User command control code does not exist"); a register the emulator knows but does not
  model is answered with the 0x08 "invalid" bit (SDK code 10), never a silent success.

The caller serialises access (``lock``); ``tick()`` advances the cache and is called on every
request, every report frame and by the emulator's clock thread.
"""

from __future__ import annotations

import collections
import logging
import math
import random
import struct
import threading
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from .arm_backend import ArmBackend, KINEMATIC_ERROR, PlanningError
from .xarm_protocol import (
    POSE_KEYS,
    REG,
    STATE_FLAG_ERROR,
    STATE_FLAG_INVALID,
    STATE_FLAG_NOT_READY,
    STATE_FLAG_WARN,
    TGPIO_DIGITAL_IN,
    TGPIO_DIGITAL_OUT,
    TGPIO_OUTPUT_STATE,
    Request,
)
from .xarm_reports import ReportSnapshot

__all__ = [
    "Lite6ControllerModel",
    "LITE6_VERSION",
    "STATE_MOVING",
    "STATE_READY",
    "STATE_PAUSED",
    "STATE_STOPPED",
    "STATE_CONFIG",
    "LITE6_MAX_TCP_SPEED_MM_S",
    "LITE6_MAX_JOINT_SPEED_RAD_S",
    "CACHE_FULL_WARNING",
    "UNKNOWN_COMMAND_WARNING",
]

log = logging.getLogger(__name__)

LITE6_VERSION = "6,9,LI1003,DL1000,v2.0.0"  # axis 6, type 9 (Lite 6), robot SN, box SN, firmware
STATE_MOVING, STATE_READY, STATE_PAUSED, STATE_STOPPED, STATE_CONFIG = 1, 2, 3, 4, 5
LITE6_MAX_TCP_SPEED_MM_S = 500.0  # Lite 6 specification: TCP speed up to 500 mm/s
LITE6_MAX_TCP_ACC_MM_S2 = 50000.0
LITE6_MAX_JOINT_SPEED_RAD_S = math.pi  # 180 deg/s
LITE6_MAX_JOINT_ACC_RAD_S2 = 20.0
CACHE_FULL_WARNING = 11  # "Current controller cache is full"
UNKNOWN_COMMAND_WARNING = 13  # "User command control code does not exist"
CACHE_SIZE = 1024  # the SDK's XCONF.MAX_CMD_NUM
ALL_AXES = 8  # motion_en / set_brake axis id meaning "every joint"
AXES_MASK = 0x3F  # six joints

# Registers that are a "system reset": motion stops, the cache is cleared, state 5 when enabled.
RESET_REGISTERS = {
    REG[n] for n in ("set_mode", "set_tcp_offset", "set_load_param", "set_collis_sens", "set_teach_sens", "clean_conf")
}
# Registers the emulator knows but does not model: refused with the invalid bit (SDK code 10).
UNMODELED = {
    REG[n]
    for n in (
        "move_circle",
        "move_servoj",
        "move_servo_cart",
        "vc_set_jointv",
        "vc_set_cartv",
        "move_servo_cart_aa",
        "rs485_rtu",
        "check_verify",
        "get_tcp_rotation_radius",
    )
}


def _rpy_matrix(rpy_rad) -> np.ndarray:
    # xArm fixed-axis roll/pitch/yaw: R = Rz(yaw) Ry(pitch) Rx(roll)
    return Rotation.from_euler("xyz", np.asarray(rpy_rad, dtype=np.float64)).as_matrix()


def pose_to_T(pose_mm_rad, axis_angle: bool = False) -> np.ndarray:
    """``[x, y, z mm, roll, pitch, yaw rad]`` (or ``[.., rx, ry, rz]`` axis-angle) -> 4x4, metres."""
    p = np.asarray(pose_mm_rad, dtype=np.float64)
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec(p[3:6]).as_matrix() if axis_angle else _rpy_matrix(p[3:6])
    T[:3, 3] = p[:3] / 1000.0
    return T


def T_to_pose(T: np.ndarray) -> np.ndarray:
    """4x4 (metres) -> ``[x, y, z mm, roll, pitch, yaw rad]``."""
    rpy = Rotation.from_matrix(T[:3, :3]).as_euler("xyz")
    return np.concatenate([T[:3, 3] * 1000.0, rpy])


@dataclass
class _Command:
    """One cached command: ``kind`` line, joint, home, relative, sleep, counter_reset, counter_plus."""

    kind: str
    params: dict
    entry: dict
    target: np.ndarray | None = None  # resolved at the first start: (tcp_T) or joints, kept across a pause
    remaining_s: float | None = None  # a sleep's time left (kept across a pause)
    until: float = 0.0


@dataclass
class _Settings:
    tcp_offset: np.ndarray = field(default_factory=lambda: np.zeros(6))  # mm, rad
    tcp_load: tuple = (0.0, 0.0, 0.0, 0.0)
    collis_sens: int = 3
    teach_sens: int = 3
    gravity: tuple = (0.0, 0.0, -1.0)
    world_offset: tuple = (0.0,) * 6
    tcp_jerk: float = 1000.0
    tcp_maxacc: float = LITE6_MAX_TCP_ACC_MM_S2
    joint_jerk: float = 20.0
    joint_maxacc: float = LITE6_MAX_JOINT_ACC_RAD_S2
    report_tau_or_i: int = 0


class Lite6ControllerModel:
    """The controller of one Lite 6.

    Args:
        backend: the arm (``ArmBackend``).
        tool: ``lite_gripper`` or ``lite_vacuum`` (how TO0/TO1 are read).
        version: the string answered to register 1.
        state_settle_s: the window after ``set_state(0)`` in which a motion may be dropped.
        settle_drop_probability: the chance (0-1) that a motion in that window is dropped; 0: never.
        time_scale: multiplies pause instructions (register 26), as the backend scales motions.
        seed: seed of the drop draws (``None``: unseeded).
    """

    def __init__(
        self,
        backend: ArmBackend,
        *,
        tool: str = "lite_gripper",
        version: str = LITE6_VERSION,
        state_settle_s: float = 0.1,
        settle_drop_probability: float = 0.0,
        time_scale: float = 1.0,
        seed: int | None = None,
    ) -> None:
        if not 0.0 <= settle_drop_probability <= 1.0:
            raise ValueError(f"settle_drop_probability must be 0-1, got {settle_drop_probability}")
        self.settle_drop_probability = float(settle_drop_probability)
        self._drop_rng = random.Random(seed)
        if tool not in ("lite_gripper", "lite_vacuum"):
            raise ValueError(f"unknown tool {tool!r}")
        self.backend, self.tool, self.version = backend, tool, version
        self.state_settle_s, self.time_scale = float(state_settle_s), float(time_scale)
        self.lock = threading.RLock()
        self.clock = getattr(backend, "clock", time.monotonic)  # the arm's time (a physics world's own)
        self.state, self.mode = STATE_STOPPED, 0
        self.enabled_mask = self.brake_mask = 0
        self.error_code = self.warn_code = 0
        self.counter = 0
        self.tool_outputs = [0, 0]  # TO0, TO1
        self.settings = _Settings()
        self._queue: collections.deque[_Command] = collections.deque()
        self._current: _Command | None = None
        self._ready_at = 0.0
        self._target_speed = (0.0, (0.0,) * 7)

    # -- derived state -------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.enabled_mask & AXES_MASK == AXES_MASK and self.brake_mask & AXES_MASK == AXES_MASK

    @property
    def cmd_num(self) -> int:
        return len(self._queue) + (self._current is not None)

    @property
    def tool_T(self) -> np.ndarray:
        return pose_to_T(self.settings.tcp_offset)

    def tcp_T(self, joints=None) -> np.ndarray:
        q = self.backend.joints_rad() if joints is None else joints
        return self.backend.fk(q) @ self.tool_T

    def pose_mm_rad(self) -> np.ndarray:
        return T_to_pose(self.tcp_T())

    def flags(self) -> int:
        f = 0
        if self.error_code:
            f |= STATE_FLAG_ERROR
        if self.warn_code:
            f |= STATE_FLAG_WARN
        if not self.enabled or self.state in (STATE_STOPPED, STATE_CONFIG):
            f |= STATE_FLAG_NOT_READY
        return f

    @property
    def moving(self) -> bool:
        return self.backend.moving()

    # -- the cache -----------------------------------------------------------------------------
    def tick(self, now: float | None = None) -> None:
        """Finish the running command when it is done and start the next ones (lock held)."""
        now = self.clock() if now is None else now
        cur = self._current
        if cur is not None:
            done = now >= cur.until if cur.kind == "sleep" else not self.backend.moving()
            if not done:
                return
            self._current = None
            self._target_speed = (0.0, (0.0,) * 7)
        while (
            self._current is None
            and self._queue
            and self.state in (STATE_MOVING, STATE_READY)
            and not self.error_code
            and self.enabled
        ):
            self._start(self._queue.popleft(), now)
        if self._current is None and self.state == STATE_MOVING:
            self.state = STATE_READY

    def _start(self, cmd: _Command, now: float) -> None:
        kind = cmd.kind
        if kind == "counter_reset":
            self.counter = 0
            return
        if kind == "counter_plus":
            self.counter += 1
            return
        if kind == "sleep":
            left = cmd.remaining_s if cmd.remaining_s is not None else max(0.0, cmd.params["seconds"]) * self.time_scale
            cmd.until = now + left
            self._current, self.state = cmd, STATE_MOVING
            return
        try:
            dur = self._execute(cmd)
        except PlanningError as e:
            cmd.entry["result"] = {21: "unreachable", 23: "joint_limit", 24: "speed_limit"}.get(e.code, "error")
            cmd.entry["error"] = str(e)
            log.info("xarm emulator: %s refused: %s", cmd.entry.get("name"), e)
            self.fault(e.code)
            return
        cmd.entry.setdefault("duration_s", dur)
        self._current, self.state = cmd, STATE_MOVING

    def _execute(self, cmd: _Command) -> float:
        p, be = cmd.params, self.backend
        if cmd.kind in ("joint", "home") or (cmd.kind == "relative" and p.get("is_joint_motion")):
            if cmd.target is None:
                cmd.target = self._joint_target(cmd)
            speed = min(max(p["speed_rad_s"], 1e-4), LITE6_MAX_JOINT_SPEED_RAD_S)
            acc = min(max(p["acc_rad_s2"], 0.01), self.settings.joint_maxacc)
            self._target_speed = (0.0, (speed,) * 6 + (0.0,))
            return be.move_joints(cmd.target, speed, acc)
        if cmd.target is None:
            cmd.target = self._line_target(cmd)
        speed = min(max(p["speed_mm_s"], 0.1), LITE6_MAX_TCP_SPEED_MM_S)
        acc = min(max(p["acc_mm_s2"], 1.0), self.settings.tcp_maxacc)
        self._target_speed = (speed, (0.0,) * 7)
        return be.move_linear(cmd.target, self.tool_T, speed / 1000.0, acc / 1000.0)

    def _joint_target(self, cmd: _Command) -> np.ndarray:
        q_now = self.backend.joints_rad()
        if cmd.kind == "home":
            return np.zeros(6)
        if cmd.kind == "relative":
            return q_now + np.asarray(cmd.params["delta"][:6], dtype=np.float64)
        q = np.asarray(cmd.params["joints_rad"][:6], dtype=np.float64)
        return np.where(np.isinf(q), q_now, q)  # inf keeps a joint (firmware >= 2.4.101 convention)

    def _line_target(self, cmd: _Command) -> np.ndarray:
        """The TCP goal (4x4, m) of a Cartesian command, from where the TCP is now."""
        p, now_T = cmd.params, self.tcp_T()
        if cmd.kind == "relative":
            d = np.asarray(p["delta"][:6], dtype=np.float64)
            goal = now_T.copy()
            goal[:3, 3] += d[:3] / 1000.0
            if p.get("is_angle_axis"):  # a rotation in the base frame
                goal[:3, :3] = Rotation.from_rotvec(d[3:6]).as_matrix() @ now_T[:3, :3]
            else:  # roll, pitch, yaw added to the current ones
                goal[:3, :3] = _rpy_matrix(T_to_pose(now_T)[3:] + d[3:6])
            return goal
        vals = np.array([p[k] for k in POSE_KEYS], dtype=np.float64)
        axis_angle = bool(p.get("is_axis_angle"))
        if p.get("coord") == 1:  # in the tool frame, relative to the current TCP
            return now_T @ pose_to_T(vals, axis_angle)
        if p.get("relative"):  # move_line_aa relative in the base frame
            goal = now_T.copy()
            goal[:3, 3] += vals[:3] / 1000.0
            goal[:3, :3] = Rotation.from_rotvec(vals[3:6]).as_matrix() @ now_T[:3, :3]
            return goal
        current = T_to_pose(now_T)
        if axis_angle:
            current[3:] = Rotation.from_matrix(now_T[:3, :3]).as_rotvec()
        vals = np.where(np.isinf(vals), current, vals)  # inf keeps a coordinate (firmware >= 2.4.101)
        return pose_to_T(vals, axis_angle)

    def fault(self, code: int) -> None:
        """Enter controller error ``code``: the arm stops where it is, the cache is cleared."""
        self.error_code = int(code)
        self._stop(STATE_STOPPED)

    def _stop(self, state: int) -> None:
        self.backend.stop()
        for cmd in self._queue:
            cmd.entry["result"] = "discarded"  # cached, never started: cleared by the stop
        self._queue.clear()
        self._current = None
        self._target_speed = (0.0, (0.0,) * 7)
        self.state = state

    def _pause(self) -> None:
        cur = self._current
        if cur is not None:
            if cur.kind == "sleep":
                cur.remaining_s = max(0.0, cur.until - self.clock())
            self.backend.stop()
            self._queue.appendleft(cur)  # resumes from where the arm stopped (the goal is kept)
            self._current = None
        self.state = STATE_PAUSED

    # -- requests ------------------------------------------------------------------------------
    def handle(self, req: Request, params: dict, entry: dict) -> tuple[str, int, bytes]:
        """Execute one request (lock held): ``(result, extra state flags, reply data)``."""
        self.tick()
        reg, name = req.register, req.name
        if params.get("malformed"):
            return "malformed", STATE_FLAG_INVALID, b""
        handler = _HANDLERS.get(name)
        if handler is not None:
            return handler(self, params, entry)
        if reg in UNMODELED:
            log.warning("xarm emulator: register %d (%s) is not modelled; answered invalid", reg, name)
            return "unsupported", STATE_FLAG_INVALID, b""
        if reg in RESET_REGISTERS:
            return self._configure(reg, params)
        log.warning("xarm emulator: unknown register %d %s", reg, params)
        self.warn_code = UNKNOWN_COMMAND_WARNING
        return "unknown", 0, b""

    def _configure(self, reg: int, params: dict) -> tuple[str, int, bytes]:
        s = self.settings
        if reg == REG["set_mode"]:
            self.mode = int(params["mode"])
        elif reg == REG["set_tcp_offset"]:
            s.tcp_offset = np.array([params[k] for k in POSE_KEYS], dtype=np.float64)
        elif reg == REG["set_load_param"]:
            s.tcp_load = (params["mass_kg"], *params["com_mm"])
        elif reg == REG["set_collis_sens"]:
            s.collis_sens = int(params["value"])
        elif reg == REG["set_teach_sens"]:
            s.teach_sens = int(params["value"])
        elif reg == REG["clean_conf"]:
            self.settings = _Settings()
        if reg != REG["set_mode"]:
            self.mode = 0  # "a system reset ... going to mode 0 and setting state to 5" (UFACTORY, SDK issue 107)
        self._stop(STATE_CONFIG if self.enabled else STATE_STOPPED)
        return "ok", 0, b""

    # motion commands ----------------------------------------------------------------------------
    def _accept(self, kind: str, params: dict, entry: dict, reply: bytes | None) -> tuple[str, int, bytes]:
        """Put a motion command in the cache (or refuse it). The reply has the register's data shape
        either way: ``reply``, or (``None``) the cached-command count as u16."""
        result, flags = self._admit(kind, params, entry)
        data = struct.pack(">H", self.cmd_num & 0xFFFF) if reply is None else reply
        return result, flags, data

    def _admit(self, kind: str, params: dict, entry: dict) -> tuple[str, int]:
        if params.get("only_check_type"):
            return "unsupported", STATE_FLAG_INVALID  # "only check" planning is not modelled
        if self.error_code:
            return "refused_error", 0
        if not self.enabled or self.state in (STATE_STOPPED, STATE_CONFIG) or self.mode != 0:
            return "not_ready", STATE_FLAG_NOT_READY
        if self.clock() < self._ready_at and self._drop_rng.random() < self.settle_drop_probability:
            return "ignored", 0  # acknowledged but dropped: sent too soon after a state change
        if self.cmd_num >= CACHE_SIZE:
            self.warn_code = CACHE_FULL_WARNING
            return "cache_full", 0
        values = [v for v in params.values() if isinstance(v, float)] + [
            v for k in ("delta", "joints_rad") for v in params.get(k, [])
        ]
        if any(math.isnan(v) for v in values):
            self.fault(KINEMATIC_ERROR)
            return "unreachable", 0
        entry["result"] = "ok"
        self._queue.append(_Command(kind, params, entry))
        self.tick()  # starts it now when the arm is idle; a plan that fails sets the error at once
        return entry["result"], 0

    def _move_line(self, params, entry):
        return self._accept("line", params, entry, b"\0\0\0" if params.get("common") else None)

    def _move_line_aa(self, params, entry):
        p = dict(params, is_axis_angle=1)
        return self._accept("line", p, entry, bytes([1]))

    def _move_line_tool(self, params, entry):
        return self._accept("line", dict(params, coord=1), entry, None)

    def _move_joint(self, params, entry):
        return self._accept("joint", params, entry, None)

    def _move_home(self, params, entry):
        return self._accept("home", params, entry, None)

    def _move_relative(self, params, entry):
        p = dict(params)
        if p.get("is_joint_motion"):
            p.update(speed_rad_s=p["speed"], acc_rad_s2=p["acc"])
        else:
            p.update(speed_mm_s=p["speed"], acc_mm_s2=p["acc"])
        return self._accept("relative", p, entry, b"")

    def _sleep(self, params, entry):
        return self._accept("sleep", params, entry, None)

    # state and configuration --------------------------------------------------------------------
    def _motion_en(self, params, entry):
        axis, on = int(params["axis"]), bool(params.get("enable", 1))
        bits = AXES_MASK if axis == ALL_AXES else (1 << (axis - 1)) & AXES_MASK
        if on:
            self.enabled_mask |= bits
            self.brake_mask |= bits  # an enabled motor holds the joint: brake released
        else:
            self.enabled_mask &= ~bits
            self.brake_mask &= ~bits
        self._stop(STATE_CONFIG if self.enabled else STATE_STOPPED)
        return "ok", 0, b""

    def _set_brake(self, params, entry):
        # UFACTORY: 0 disable the joint (brake on), 1 unlock it (motor off, brake released: a
        # "detached" joint that can be moved by hand). Either way the joint is not driven.
        axis = int(params["axis"])
        bits = AXES_MASK if axis == ALL_AXES else (1 << (axis - 1)) & AXES_MASK
        self.enabled_mask &= ~bits
        if params.get("enable", 0):
            self.brake_mask |= bits
        else:
            self.brake_mask &= ~bits
        self._stop(STATE_STOPPED)
        return "ok", 0, b""

    def _set_state(self, params, entry):
        value = int(params.get("value", 0))
        if value == 0:
            if self.error_code or not self.enabled:
                return "not_ready", 0, b""
            if self.state == STATE_PAUSED:
                self.state = STATE_READY
                self.tick()
                return "ok", 0, b""
            if self.state not in (STATE_MOVING,):
                self.state = STATE_READY
                self._ready_at = self.clock() + self.state_settle_s
            return "ok", 0, b""
        if value == 3:
            if self.state in (STATE_MOVING, STATE_READY):
                self._pause()
            return "ok", 0, b""
        if value == 4:
            self._stop(STATE_STOPPED)
            return "ok", 0, b""
        return "invalid", STATE_FLAG_INVALID, b""

    def _clean_err(self, params, entry):
        self.error_code = 0
        if self.state in (STATE_MOVING, STATE_READY, STATE_PAUSED):
            self._stop(STATE_CONFIG)  # a system reset; after an error the arm is already stopped (4)
        return "ok", 0, b""

    def _clean_war(self, params, entry):
        self.warn_code = 0
        return "ok", 0, b""

    # queries ------------------------------------------------------------------------------------
    def _get_version(self, params, entry):
        return "ok", 0, self.version.encode("ascii")[:39].ljust(40, b"\0")

    def _get_robot_sn(self, params, entry):
        parts = self.version.split(",")
        sn, box = (parts[2], parts[3]) if len(parts) >= 4 else ("LI1003", "DL1000")
        return "ok", 0, (sn.encode() + b"\0" + box.encode()).ljust(40, b"\0")

    def _get_state(self, params, entry):
        return "ok", 0, bytes([self.state])

    def _get_cmdnum(self, params, entry):
        return "ok", 0, struct.pack(">H", self.cmd_num)

    def _get_error(self, params, entry):
        return "ok", 0, bytes([self.error_code & 0xFF, self.warn_code & 0xFF])

    def _get_tcp_pose(self, params, entry):
        return "ok", 0, struct.pack("<6f", *self.pose_mm_rad())

    def _get_tcp_pose_aa(self, params, entry):
        T = self.tcp_T()
        return "ok", 0, struct.pack("<6f", *(T[:3, 3] * 1000.0), *Rotation.from_matrix(T[:3, :3]).as_rotvec())

    def _get_joint_pos(self, params, entry):
        q = [*self.backend.joints_rad(), 0.0]
        blocks = params.get("num", 1) & 0x0F  # get_joint_states: positions, velocities, efforts
        data = struct.pack("<7f", *q) + bytes(28 * (max(blocks, 1) - 1))
        return "ok", 0, data

    def _get_joint_tau(self, params, entry):
        return "ok", 0, struct.pack("<7f", *[0.0] * 7)

    def _get_ik(self, params, entry):
        no_solution = "no_solution", STATE_FLAG_INVALID, bytes(28)
        target = np.array([params[k] for k in POSE_KEYS], dtype=np.float64)
        if not np.all(np.isfinite(target)):
            return no_solution
        seed = np.asarray(params["ref_rad"][:6]) if "ref_rad" in params else self.backend.joints_rad()
        q = self.backend.ik(pose_to_T(target) @ np.linalg.inv(self.tool_T), seed)
        if q is None:
            return no_solution
        if params.get("limited", 1):
            q = -((-q + math.pi) % (2 * math.pi) - math.pi)  # into (-pi, pi]
        return "ok", 0, struct.pack("<7f", *q, 0.0)

    def _get_fk(self, params, entry):
        q = np.asarray(params["joints_rad"][:6], dtype=np.float64)
        if not np.all(np.isfinite(q)):
            return "invalid", STATE_FLAG_INVALID, bytes(24)
        return "ok", 0, struct.pack("<6f", *T_to_pose(self.tcp_T(q)))

    def _is_joint_limit(self, params, entry):
        q = np.asarray(params["joints_rad"][:6], dtype=np.float64)
        lo, hi = self.backend.joint_limits_rad[:, 0], self.backend.joint_limits_rad[:, 1]
        inside = bool(np.all(np.isfinite(q)) and np.all(q >= lo - 1e-6) and np.all(q <= hi + 1e-6))
        return "ok", 0, bytes([0 if inside else 1])

    def _is_tcp_limit(self, params, entry):
        _, flags, data = self._get_ik(params, entry)
        return "ok", 0, bytes([1 if flags & STATE_FLAG_INVALID else 0])

    # tool GPIO ----------------------------------------------------------------------------------
    def _tgpio_write(self, params, entry):
        if params.get("addr") != TGPIO_DIGITAL_OUT:
            return "ok", 0, b""
        value = int(round(params["value"]))
        # high byte: which outputs to write (0x01 TO0, 0x02 TO1), low byte: their values
        for bit, idx in ((0x01, 0), (0x02, 1)):
            if value & (bit << 8):
                self.tool_outputs[idx] = 1 if value & bit else 0
        self.backend.set_tool(self._tool_command())
        return "ok", 0, b""

    def _tool_command(self) -> bool | None:
        to = (self.tool_outputs[0], self.tool_outputs[1])
        if self.tool == "lite_gripper":  # TO0=1, TO1=0 open; TO0=0, TO1=1 close; both 0 stop
            return {(1, 0): False, (0, 1): True}.get(to)
        return to == (1, 0)  # vacuum: TO0=1, TO1=0 on; TO0=0, TO1=1 off

    @property
    def tool_closed(self) -> bool:
        """Gripper closed / vacuum on, from the tool outputs."""
        return self._tool_command() is True

    def _tgpio_read(self, params, entry):
        addr = params.get("addr")
        if addr == TGPIO_DIGITAL_IN:  # TI0: the vacuum's "holding" input
            return "ok", 0, struct.pack(">i", 1 if self.tool == "lite_vacuum" and self.backend.tool_holding() else 0)
        if addr == TGPIO_OUTPUT_STATE:
            return "ok", 0, struct.pack(">i", self.tool_outputs[0] | (self.tool_outputs[1] << 1))
        return "ok", 0, struct.pack(">i", 0)

    # reports ------------------------------------------------------------------------------------
    def snapshot(self) -> ReportSnapshot:
        """The state a report frame carries (lock held)."""
        self.tick()
        q = self.backend.joints_rad()
        T = self.tcp_T(q)
        s = self.settings
        tcp_speed, joint_speeds = self._target_speed
        return ReportSnapshot(
            state=self.state,
            mode=self.mode,
            cmd_num=self.cmd_num,
            joints_rad=tuple(q),
            pose_mm_rad=tuple(T_to_pose(T)),
            error_code=self.error_code,
            warn_code=self.warn_code,
            enabled_mask=self.enabled_mask,
            brake_mask=self.brake_mask,
            tcp_offset_mm_rad=tuple(s.tcp_offset),
            tcp_load=tuple(s.tcp_load),
            collision_sens=s.collis_sens,
            teach_sens=s.teach_sens,
            gravity_direction=tuple(s.gravity),
            firmware=self.version.split(",")[-1],
            tcp_jerk=s.tcp_jerk,
            tcp_acc_limits=(1.0, s.tcp_maxacc),
            tcp_speed_limits=(0.1, LITE6_MAX_TCP_SPEED_MM_S),
            joint_jerk=s.joint_jerk,
            joint_acc_limits=(0.01, s.joint_maxacc),
            joint_speed_limits=(0.0001, LITE6_MAX_JOINT_SPEED_RAD_S),
            target_tcp_speed=tcp_speed,
            target_joint_speeds=joint_speeds,
            counter=self.counter,
            world_offset_mm_rad=tuple(s.world_offset),
            axis_angle_rad=tuple(Rotation.from_matrix(T[:3, :3]).as_rotvec()),
            joint_limits_rad=tuple(map(tuple, self.backend.joint_limits_rad)),
        )


def _queued(kind: str):
    """Handler of a cached non-motion command (the counter)."""
    return lambda model, params, entry: model._accept(kind, params, entry, b"")


def _setting(attr: str, key: str = "value"):
    """Handler that stores a parameter in the controller settings (reported, not otherwise used)."""

    def handler(model, params, entry):
        v = params[key]
        setattr(model.settings, attr, tuple(v) if isinstance(v, list) else v)
        return "ok", 0, b""

    return handler


def _byte_answer(value_of):
    return lambda model, params, entry: ("ok", 0, bytes([value_of(model) & 0xFF]))


def _ok(model, params, entry):
    return "ok", 0, b""


_M = Lite6ControllerModel
_HANDLERS = {
    "get_version": _M._get_version,
    "get_robot_sn": _M._get_robot_sn,
    "get_state": _M._get_state,
    "get_cmdnum": _M._get_cmdnum,
    "get_error": _M._get_error,
    "clean_err": _M._clean_err,
    "clean_war": _M._clean_war,
    "motion_en": _M._motion_en,
    "set_brake": _M._set_brake,
    "set_state": _M._set_state,
    "move_line": _M._move_line,
    "move_lineb": _M._move_line,
    "move_line_aa": _M._move_line_aa,
    "move_line_tool": _M._move_line_tool,
    "move_joint": _M._move_joint,
    "move_jointb": _M._move_joint,
    "move_home": _M._move_home,
    "move_relative": _M._move_relative,
    "sleep_instt": _M._sleep,
    "cnter_reset": _queued("counter_reset"),
    "cnter_plus": _queued("counter_plus"),
    "set_tcp_jerk": _setting("tcp_jerk"),
    "set_tcp_maxacc": _setting("tcp_maxacc"),
    "set_joint_jerk": _setting("joint_jerk"),
    "set_joint_maxacc": _setting("joint_maxacc"),
    "set_gravity_dir": _setting("gravity", "direction"),
    "set_world_offset": lambda m, p, e: _setting("world_offset", "pose")(m, {"pose": [p[k] for k in POSE_KEYS]}, e),
    "report_tau_or_i": _setting("report_tau_or_i"),
    "save_conf": _ok,
    "reload_dynamics": _ok,
    "system_control": _ok,
    "get_tcp_pose": _M._get_tcp_pose,
    "get_tcp_pose_aa": _M._get_tcp_pose_aa,
    "get_joint_pos": _M._get_joint_pos,
    "get_joint_tau": _M._get_joint_tau,
    "get_ik": _M._get_ik,
    "get_fk": _M._get_fk,
    "is_joint_limit": _M._is_joint_limit,
    "is_tcp_limit": _M._is_tcp_limit,
    "get_report_tau_or_i": _byte_answer(lambda m: m.settings.report_tau_or_i),
    "get_allow_approx_motion": _byte_answer(lambda m: 0),
    "tgpio_w16b": _M._tgpio_write,
    "tgpio_w32b": _M._tgpio_write,
    "tgpio_r16b": _M._tgpio_read,
    "tgpio_r32b": _M._tgpio_read,
}
