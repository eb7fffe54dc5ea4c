"""The xArm controller's command protocol, as the controller side sees it (for the emulator).

Read from UFACTORY's "Private TCP protocol" manual (docs.ufactory.cc, ``private_tcp_protocol/`` of
xArm-Developer/ufactory_docs) and from xarm-python-sdk 1.18.x (``xarm/core/wrapper/uxbus_cmd*.py``,
``xarm/core/comm/*.py``, ``xarm/x3/base.py``), written independently here so the emulator checks the
SDK rather than reusing it.

Command socket (port 502 on a real controller), "private Modbus-TCP" frames:

- request: ``trans_id u16 BE | protocol u16 BE | length u16 BE | register u8 | params``;
  ``length`` counts the register byte and the params. The protocol is 2, or 3 once the SDK's report
  thread has switched it (firmware >= 1.8.6); the controller echoes what the client sent.
- reply: ``trans_id | protocol | length | register u8 | state u8 | data``; ``length`` = 2 + data.
  State bits: ``0x40`` the controller has an error, ``0x20`` a warning, ``0x10`` not ready to move
  (the SDK turns it into code 9 for motion commands), ``0x08`` the command was invalid (code 10).
- parameters: floats little-endian fp32, 16-bit register addresses and counters big-endian, bytes as
  bytes. Lengths in **mm**, angles in **radians**, speeds mm/s or rad/s, accelerations mm/s^2 or rad/s^2.

The report streams (30001-30003) are in ``xarm_reports``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Request",
    "REGISTERS",
    "REG",
    "FrameReader",
    "build_reply",
    "decode_params",
    "STATE_FLAG_ERROR",
    "STATE_FLAG_WARN",
    "STATE_FLAG_NOT_READY",
    "STATE_FLAG_INVALID",
    "TGPIO_DIGITAL_IN",
    "TGPIO_DIGITAL_OUT",
    "TGPIO_OUTPUT_STATE",
    "POSE_KEYS",
]

STATE_FLAG_ERROR = 0x40
STATE_FLAG_WARN = 0x20
STATE_FLAG_NOT_READY = 0x10
STATE_FLAG_INVALID = 0x08

# Tool GPIO addresses behind registers 127/128 (end-effector board, host id 9).
TGPIO_DIGITAL_IN = 0x0A14
TGPIO_DIGITAL_OUT = 0x0A15
TGPIO_OUTPUT_STATE = 0x0A18

POSE_KEYS = ("x_mm", "y_mm", "z_mm", "roll_rad", "pitch_rad", "yaw_rad")
JOINT_KEYS = tuple(f"j{i}_rad" for i in range(1, 8))

# register number -> name (the SDK's XCONF.UxbusReg names, lower case)
REGISTERS: dict[int, str] = {
    1: "get_version",
    2: "get_robot_sn",
    3: "check_verify",
    4: "reload_dynamics",
    5: "get_report_tau_or_i",
    6: "get_tcp_rotation_radius",
    7: "get_allow_approx_motion",
    10: "system_control",
    11: "motion_en",
    12: "set_state",
    13: "get_state",
    14: "get_cmdnum",
    15: "get_error",
    16: "clean_err",
    17: "clean_war",
    18: "set_brake",
    19: "set_mode",
    21: "move_line",
    22: "move_lineb",
    23: "move_joint",
    24: "move_jointb",
    25: "move_home",
    26: "sleep_instt",
    27: "move_circle",
    28: "move_line_tool",
    29: "move_servoj",
    30: "move_servo_cart",
    31: "set_tcp_jerk",
    32: "set_tcp_maxacc",
    33: "set_joint_jerk",
    34: "set_joint_maxacc",
    35: "set_tcp_offset",
    36: "set_load_param",
    37: "set_collis_sens",
    38: "set_teach_sens",
    39: "clean_conf",
    40: "save_conf",
    41: "get_tcp_pose",
    42: "get_joint_pos",
    43: "get_ik",
    44: "get_fk",
    45: "is_joint_limit",
    46: "is_tcp_limit",
    51: "set_gravity_dir",
    55: "get_joint_tau",
    70: "report_tau_or_i",
    73: "set_world_offset",
    74: "cnter_reset",
    75: "cnter_plus",
    81: "vc_set_jointv",
    82: "vc_set_cartv",
    83: "move_relative",
    91: "get_tcp_pose_aa",
    92: "move_line_aa",
    93: "move_servo_cart_aa",
    124: "rs485_rtu",
    127: "tgpio_w16b",
    128: "tgpio_r16b",
    129: "tgpio_w32b",
    130: "tgpio_r32b",
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
            body, self._buf = self._buf[6 : 6 + length], self._buf[6 + length :]
            if length == 0:
                continue
            out.append(Request(trans_id, protocol, body[0], bytes(body[1:])))
        return out


def build_reply(req: Request, state_flags: int, data: bytes = b"") -> bytes:
    """The reply frame to ``req`` with the state byte ``state_flags`` and ``data``."""
    return struct.pack(">HHHBB", req.trans_id, req.protocol, 2 + len(data), req.register, state_flags) + data


def _floats(payload: bytes, n: int) -> list[float]:
    if len(payload) < 4 * n:
        raise struct.error(f"need {4 * n} bytes of floats, got {len(payload)}")
    return list(struct.unpack(f"<{n}f", payload[: 4 * n]))


def _tail(out: dict, payload: bytes, keys: tuple[str, ...]) -> dict:
    """Name the trailing option bytes (present or not, depending on the SDK call)."""
    for key, b in zip(keys, payload):
        out[key] = b
    return out


_CHECK_KEYS = ("only_check_type", "motion_type")


def _decode_move_line(p: bytes) -> dict:
    # move_line_common (firmware >= 1.11.100: 10 floats + coord, is_axis_angle, only_check_type
    # [, motion_type]) or the legacy 9-float form [+ only_check_type [, motion_type]].
    common = len(p) >= 43
    vals = _floats(p, 10 if common else 9)
    out = dict(zip(POSE_KEYS, vals[:6]))
    out.update(speed_mm_s=vals[6], acc_mm_s2=vals[7], mvtime_s=vals[8], common=common)
    if common:
        out["radius_mm"] = vals[9]
        return _tail(out, p[40:], ("coord", "is_axis_angle") + _CHECK_KEYS)
    return _tail(out, p[36:], _CHECK_KEYS)


def _decode_move_lineb(p: bytes) -> dict:
    vals = _floats(p, 10)
    out = dict(zip(POSE_KEYS, vals[:6]))
    out.update(speed_mm_s=vals[6], acc_mm_s2=vals[7], mvtime_s=vals[8], radius_mm=vals[9])
    return _tail(out, p[40:], _CHECK_KEYS)


def _decode_move_joint(p: bytes) -> dict:  # 23 and 24: 7 joints, speed, acc, mvtime (23) or radius (24)
    vals = _floats(p, 10)
    out = {"joints_rad": vals[:7], "speed_rad_s": vals[7], "acc_rad_s2": vals[8], "last": vals[9]}
    return _tail(out, p[40:], ("only_check_type",))


def _decode_move_home(p: bytes) -> dict:
    vals = _floats(p, 3)
    return _tail({"speed_rad_s": vals[0], "acc_rad_s2": vals[1], "mvtime_s": vals[2]}, p[12:], ("only_check_type",))


def _decode_move_relative(p: bytes) -> dict:
    # 7 values (x, y, z mm, roll, pitch, yaw rad, unused; or J1..J7 rad), speed, acc, mvtime, radius,
    # then is_joint_motion, is_angle_axis [, only_check_type [, motion_type]]
    vals = _floats(p, 11)
    out = {"delta": vals[:7], "speed": vals[7], "acc": vals[8], "mvtime_s": vals[9], "radius_mm": vals[10]}
    return _tail(out, p[44:], ("is_joint_motion", "is_angle_axis") + _CHECK_KEYS)


def _decode_move_line_aa(p: bytes) -> dict:  # legacy (< 1.11.100): pose, speed, acc, mvtime, coord, relative
    vals = _floats(p, 9)
    out = dict(zip(POSE_KEYS, vals[:6]))
    out.update(speed_mm_s=vals[6], acc_mm_s2=vals[7], mvtime_s=vals[8])
    return _tail(out, p[36:], ("coord", "relative") + _CHECK_KEYS)


def _decode_move_line_tool(p: bytes) -> dict:
    vals = _floats(p, 9)
    out = dict(zip(POSE_KEYS, vals[:6]))
    out.update(speed_mm_s=vals[6], acc_mm_s2=vals[7], mvtime_s=vals[8])
    return _tail(out, p[36:], _CHECK_KEYS)


def _decode_get_ik(p: bytes) -> dict:
    # 6 floats; firmware >= 2.7.103 may add a "limited" byte and 7 reference joint angles (rad)
    out: dict[str, Any] = dict(zip(POSE_KEYS, _floats(p, 6)))
    if len(p) > 24:
        out["limited"] = p[24]
    if len(p) >= 25 + 28:
        out["ref_rad"] = _floats(p[25:], 7)
    return out


def _decode_tgpio(p: bytes, write: bool) -> dict:
    out = {"host_id": p[0], "addr": struct.unpack(">H", p[1:3])[0]}
    if write:
        out["value"] = _floats(p[3:7], 1)[0]
        if len(p) > 7:
            out["sync"] = p[7]
    return out


def _byte_keys(*keys: str):
    return lambda p: {k: p[i] for i, k in enumerate(keys) if i < len(p) or i == 0}


_DECODERS = {
    "motion_en": _byte_keys("axis", "enable"),
    "set_brake": _byte_keys("axis", "enable"),
    "set_state": _byte_keys("value"),
    "set_collis_sens": _byte_keys("value"),
    "set_teach_sens": _byte_keys("value"),
    "system_control": _byte_keys("value"),
    "report_tau_or_i": _byte_keys("value"),
    "set_mode": _byte_keys("mode", "detection_param"),
    "get_joint_pos": lambda p: {"num": p[0]} if p else {},
    "get_tcp_rotation_radius": _byte_keys("joint"),
    "move_line": _decode_move_line,
    "move_lineb": _decode_move_lineb,
    "move_joint": _decode_move_joint,
    "move_jointb": _decode_move_joint,
    "move_home": _decode_move_home,
    "move_relative": _decode_move_relative,
    "move_line_aa": _decode_move_line_aa,
    "move_line_tool": _decode_move_line_tool,
    "sleep_instt": lambda p: {"seconds": _floats(p, 1)[0]},
    "set_tcp_offset": lambda p: dict(zip(POSE_KEYS, _floats(p, 6))),
    "set_world_offset": lambda p: dict(zip(POSE_KEYS, _floats(p, 6))),
    "get_ik": _decode_get_ik,
    "get_fk": lambda p: {"joints_rad": _floats(p, 7)},
    "is_joint_limit": lambda p: {"joints_rad": _floats(p, 7)},
    "is_tcp_limit": lambda p: dict(zip(POSE_KEYS, _floats(p, 6))),
    "set_tcp_jerk": lambda p: {"value": _floats(p, 1)[0]},
    "set_tcp_maxacc": lambda p: {"value": _floats(p, 1)[0]},
    "set_joint_jerk": lambda p: {"value": _floats(p, 1)[0]},
    "set_joint_maxacc": lambda p: {"value": _floats(p, 1)[0]},
    "set_load_param": lambda p: (lambda v: {"mass_kg": v[0], "com_mm": v[1:]})(_floats(p, 4)),
    "set_gravity_dir": lambda p: {"direction": _floats(p, 3)},
    "tgpio_w16b": lambda p: _decode_tgpio(p, True),
    "tgpio_w32b": lambda p: _decode_tgpio(p, True),
    "tgpio_r16b": lambda p: _decode_tgpio(p, False),
    "tgpio_r32b": lambda p: _decode_tgpio(p, False),
}


def decode_params(req: Request) -> dict:
    """The request's parameters as named values in protocol units (mm, rad, mm/s, mm/s^2).

    Unknown registers give ``{"raw": hex}``; a payload too short for its register gives
    ``{"raw": hex, "malformed": True}``, so that nothing is lost from the log.
    """
    decoder = _DECODERS.get(req.name)
    if decoder is None:
        return {"raw": req.payload.hex()} if req.payload else {}
    try:
        return decoder(req.payload)
    except (IndexError, struct.error):
        return {"raw": req.payload.hex(), "malformed": True}
