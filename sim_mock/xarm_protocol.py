"""The xArm controller's TCP wire protocol, as the controller side sees it (for the emulator).

Read from ``xarm-python-sdk`` 1.18.4 (``xarm/core/wrapper/uxbus_cmd*.py``, ``xarm/core/comm/*.py``,
``xarm/x3/base.py``), written independently here so the emulator checks the SDK rather than
reusing it.

Command socket (port 502 on a real controller), "private Modbus-TCP" frames:

- request: ``trans_id u16 BE | protocol u16 BE | length u16 BE | register u8 | params``;
  ``length`` counts the register byte and the params. The protocol is 2, or 3 once the SDK's report
  thread has switched it (firmware >= 1.8.6); the controller echoes what the client sent.
- reply: ``trans_id | protocol | length | register u8 | state u8 | data``; ``length`` = 2 + data.
  State bits: ``0x40`` the controller has an error, ``0x20`` a warning, ``0x10`` not ready to move
  (the SDK turns it into code 9 for motion commands), ``0x08`` the command was invalid.
- ``get_ik`` (43): request TCP pose x, y, z mm and roll, pitch, yaw rad (6 floats), optionally a
  ``limited`` byte and 7 reference joint angles (rad); reply 7 joint angles (rad). No solution:
  state bit ``0x08`` (the SDK's code 10, "the result is invalid").
- parameters: floats are little-endian fp32, 16-bit register addresses and counters big-endian,
  bytes as bytes. Lengths in **mm**, angles in **radians**, speeds mm/s, accelerations mm/s^2.

Report socket ("normal" report, port 30001): the controller pushes fixed 145-byte frames, see
``build_normal_report``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = [
    "Request", "REGISTERS", "REG", "FrameReader", "build_reply", "decode_params", "build_normal_report",
    "STATE_FLAG_ERROR", "STATE_FLAG_WARN", "STATE_FLAG_NOT_READY", "STATE_FLAG_INVALID", "NORMAL_REPORT_SIZE",
    "TGPIO_DIGITAL_IN", "TGPIO_DIGITAL_OUT", "TGPIO_OUTPUT_STATE",
]

STATE_FLAG_ERROR = 0x40
STATE_FLAG_WARN = 0x20
STATE_FLAG_NOT_READY = 0x10
STATE_FLAG_INVALID = 0x08

# Tool GPIO addresses behind registers 127/128 (end-effector board, host id 9).
TGPIO_DIGITAL_IN = 0x0A14
TGPIO_DIGITAL_OUT = 0x0A15
TGPIO_OUTPUT_STATE = 0x0A18

NORMAL_REPORT_SIZE = 145

# register number -> name (the SDK's XCONF.UxbusReg names, lower case)
REGISTERS: dict[int, str] = {
    1: "get_version", 2: "get_robot_sn", 10: "system_control", 11: "motion_en", 12: "set_state",
    13: "get_state", 14: "get_cmdnum", 15: "get_error", 16: "clean_err", 17: "clean_war",
    18: "set_brake", 19: "set_mode", 21: "move_line", 23: "move_joint", 25: "move_home",
    31: "set_tcp_jerk", 32: "set_tcp_maxacc", 35: "set_tcp_offset", 36: "set_load_param",
    37: "set_collis_sens", 38: "set_teach_sens", 41: "get_tcp_pose", 42: "get_joint_pos",
    43: "get_ik", 44: "get_fk", 127: "tgpio_w16b", 128: "tgpio_r16b", 129: "tgpio_w32b", 130: "tgpio_r32b",
}
REG = {name: num for num, name in REGISTERS.items()}


@dataclass(frozen=True)
class Request:
    """One decoded request frame."""

    trans_id: int
    protocol: int
    register: int
    payload: bytes

    @property
    def name(self) -> str:
        return REGISTERS.get(self.register, f"unknown_{self.register}")


class FrameReader:
    """Splits a TCP byte stream into request frames (frames may arrive split or coalesced)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[Request]:
        self._buf += data
        out: list[Request] = []
        while len(self._buf) >= 6:
            trans_id, protocol, length = struct.unpack(">HHH", self._buf[:6])
            if len(self._buf) < 6 + length:
                break
            body, self._buf = self._buf[6:6 + length], self._buf[6 + length:]
            if length == 0:
                continue
            out.append(Request(trans_id, protocol, body[0], bytes(body[1:])))
        return out


def build_reply(req: Request, state_flags: int, data: bytes = b"") -> bytes:
    """The reply frame to ``req`` with the state byte ``state_flags`` and ``data``."""
    return struct.pack(">HHHBB", req.trans_id, req.protocol, 2 + len(data), req.register, state_flags) + data


def _floats(payload: bytes, n: int) -> list[float]:
    return list(struct.unpack(f"<{n}f", payload[:4 * n]))


_POSE_KEYS = ("x_mm", "y_mm", "z_mm", "roll_rad", "pitch_rad", "yaw_rad")


def decode_params(req: Request) -> dict:
    """The request's parameters as named values in protocol units (mm, rad, mm/s, mm/s^2).

    Unknown registers and short payloads give ``{"raw": hex}`` so that nothing is lost from the log.
    """
    p, reg = req.payload, req.register
    try:
        if reg == REG["motion_en"]:
            return {"axis": p[0], "enable": p[1]}
        if reg in (REG["set_state"], REG["set_collis_sens"], REG["set_teach_sens"], REG["system_control"]):
            return {"value": p[0]}
        if reg == REG["set_mode"]:
            return {"mode": p[0], **({"detection_param": p[1]} if len(p) > 1 else {})}
        if reg == REG["set_brake"]:
            return {"axis": p[0], "enable": p[1]}
        if reg == REG["move_line"]:
            n = 10 if len(p) >= 43 else 9  # move_line_common (fw >= 1.11.100) or the legacy 9-float form
            vals = _floats(p, n)
            out = dict(zip(_POSE_KEYS, vals[:6]))
            out.update(speed_mm_s=vals[6], acc_mm_s2=vals[7], mvtime_s=vals[8])
            if n == 10:
                out["radius_mm"] = vals[9]
            tail = p[4 * n:]
            for key, b in zip(("coord", "is_axis_angle", "only_check_type", "motion_type"), tail):
                out[key] = b
            return out
        if reg == REG["set_tcp_offset"]:
            return dict(zip(_POSE_KEYS, _floats(p, 6)))
        if reg == REG["get_ik"]:
            # 6 floats; firmware >= 2.7.103 may add a "limited" byte and 7 reference joint angles (rad)
            out = dict(zip(_POSE_KEYS, _floats(p, 6)))
            if len(p) > 24:
                out["limited"] = p[24]
            if len(p) >= 25 + 28:
                out["ref_rad"] = _floats(p[25:], 7)
            return out
        if reg in (REG["set_tcp_jerk"], REG["set_tcp_maxacc"]):
            return {"value": _floats(p, 1)[0]}
        if reg == REG["set_load_param"]:
            vals = _floats(p, 4)
            return {"mass_kg": vals[0], "com_mm": vals[1:]}
        if reg in (REG["tgpio_w16b"], REG["tgpio_w32b"]):
            out = {"host_id": p[0], "addr": struct.unpack(">H", p[1:3])[0], "value": _floats(p[3:7], 1)[0]}
            if len(p) > 7:
                out["sync"] = p[7]
            return out
        if reg in (REG["tgpio_r16b"], REG["tgpio_r32b"]):
            return {"host_id": p[0], "addr": struct.unpack(">H", p[1:3])[0]}
    except (IndexError, struct.error):
        return {"raw": p.hex(), "malformed": True}
    return {"raw": p.hex()} if p else {}


def build_normal_report(*, state: int, mode: int, cmd_num: int, joints_rad, pose_mm_rad, error_code: int,
                        warn_code: int, enabled: bool, tcp_offset_mm_rad, collis_sens: int = 3,
                        teach_sens: int = 3) -> bytes:
    """One 145-byte "normal" report frame (port 30001), the layout ``XArm._handle_report_data``
    parses: size u32 BE, state|mode<<4, cmd_num u16 BE, 7 joint angles (rad), TCP pose (mm, rad),
    7 joint torques, brake and enable bit masks, error and warning codes, TCP offset, TCP load
    (4 floats), collision and teach sensitivity, gravity direction (3 floats). Floats little-endian.
    """
    joints = list(joints_rad)[:7] + [0.0] * (7 - len(list(joints_rad)[:7]))
    mask = 0xFF if enabled else 0x00  # the SDK needs brake & enable bits set for every axis to be "ready"
    data = struct.pack(">I", NORMAL_REPORT_SIZE)
    data += bytes([(state & 0x0F) | ((mode & 0x0F) << 4)])
    data += struct.pack(">H", cmd_num & 0xFFFF)
    data += struct.pack("<7f", *joints)
    data += struct.pack("<6f", *pose_mm_rad)
    data += struct.pack("<7f", *([0.0] * 7))
    data += bytes([mask, mask, error_code & 0xFF, warn_code & 0xFF])
    data += struct.pack("<6f", *tcp_offset_mm_rad)
    data += struct.pack("<4f", 0.0, 0.0, 0.0, 0.0)
    data += bytes([collis_sens, teach_sens])
    data += struct.pack("<3f", 0.0, 0.0, -1.0)
    assert len(data) == NORMAL_REPORT_SIZE
    return data
