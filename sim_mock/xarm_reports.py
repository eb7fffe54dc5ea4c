"""The three report streams of the xArm controller, built byte for byte (for the emulator).

Layouts from UFACTORY's "Data Description of TCP port" (docs.ufactory.cc support article; the byte
numbers there are 1-based) and from the parser of xarm-python-sdk 1.18.x
(``xarm/x3/base.py`` ``_handle_report_data``: ``__handle_report_normal``, ``__handle_report_rich``,
``__handle_report_real``; the ctypes layouts of ``xarm/x3/report.py``), written independently here so
the tests can parse our frames with the SDK's own code:

============  =====  ======  ===============================================================
port          name   bytes   rate (UFACTORY)
============  =====  ======  ===============================================================
30001         normal   145   5 Hz
30002         rich     587   5 Hz (the SDK 1.18 parser reads up to byte 587)
30003         real     135   100 Hz
============  =====  ======  ===============================================================

Every frame starts with its own length (u32 big-endian); the SDK's report reader takes the first
frame's length as the frame size of the whole stream, and drops the connection when a later frame
disagrees. Floats are little-endian fp32, 16-bit fields big-endian. Lengths mm, angles rad.

What the emulator does not model is sent as zeros (joint torques and currents, force-torque data,
control-box GPIO, reduced mode, fence, monitor device); see docs/robot.md, "Emulator fidelity".
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

__all__ = [
    "ReportSnapshot",
    "build_normal_report",
    "build_rich_report",
    "build_real_report",
    "build_report",
    "REPORT_PORTS",
    "REPORT_SIZES",
    "REPORT_RATES_HZ",
    "NORMAL_REPORT_SIZE",
    "RICH_REPORT_SIZE",
    "REAL_REPORT_SIZE",
]

NORMAL_REPORT_SIZE, RICH_REPORT_SIZE, REAL_REPORT_SIZE = 145, 587, 135
REPORT_PORTS = {"normal": 30001, "rich": 30002, "real": 30003}
REPORT_SIZES = {"normal": NORMAL_REPORT_SIZE, "rich": RICH_REPORT_SIZE, "real": REAL_REPORT_SIZE}
REPORT_RATES_HZ = {"normal": 5.0, "rich": 5.0, "real": 100.0}


@dataclass(frozen=True)
class ReportSnapshot:
    """The controller state one report frame carries (protocol units: mm, rad, mm/s, rad/s).

    ``joints_rad`` and ``pose_mm_rad`` are the actual joint angles (6 or 7) and TCP pose
    ``[x, y, z, roll, pitch, yaw]``; ``axis_angle_rad`` the same orientation as an axis-angle vector.
    ``enabled_mask``/``brake_mask`` have bit i set when joint i+1's motor is enabled / its brake is
    released. The rest mirror the controller settings of the same name.
    """

    state: int
    mode: int
    cmd_num: int
    joints_rad: tuple
    pose_mm_rad: tuple
    error_code: int = 0
    warn_code: int = 0
    enabled_mask: int = 0
    brake_mask: int = 0
    tcp_offset_mm_rad: tuple = (0.0,) * 6
    tcp_load: tuple = (0.0, 0.0, 0.0, 0.0)  # mass kg, centre of mass x, y, z mm
    collision_sens: int = 3
    teach_sens: int = 3
    gravity_direction: tuple = (0.0, 0.0, -1.0)
    # rich report only
    robot_type: int = 9
    axis: int = 6
    firmware: str = "v2.0.0"
    tcp_jerk: float = 1000.0
    tcp_acc_limits: tuple = (1.0, 50000.0)
    tcp_speed_limits: tuple = (0.1, 500.0)
    joint_jerk: float = 20.0
    joint_acc_limits: tuple = (0.01, 20.0)
    joint_speed_limits: tuple = (0.0001, 3.14159265)
    rot_jerk: float = 2.3
    rot_max_acc: float = 2.7
    temperatures_c: tuple = (30,) * 7
    target_tcp_speed: float = 0.0
    target_joint_speeds: tuple = (0.0,) * 7
    counter: int = 0
    world_offset_mm_rad: tuple = (0.0,) * 6
    joint_voltages_v: tuple = (48.0,) * 6 + (0.0,)
    axis_angle_rad: tuple = (0.0, 0.0, 0.0)
    joint_limits_rad: tuple = field(default_factory=tuple)  # ((lo, hi), ...) per joint


def _f32(*values) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _pad(values, n: int) -> list[float]:
    vals = [float(v) for v in list(values)[:n]]
    return vals + [0.0] * (n - len(vals))


def _common87(s: ReportSnapshot, size: int) -> bytes:
    """Bytes 1-87, shared by all three streams: size, state|mode<<4, cached commands, joints, pose,
    joint torques."""
    return (
        struct.pack(">I", size)
        + bytes([(s.state & 0x0F) | ((s.mode & 0x0F) << 4)])
        + struct.pack(">H", s.cmd_num & 0xFFFF)
        + _f32(*_pad(s.joints_rad, 7))
        + _f32(*_pad(s.pose_mm_rad, 6))
        + _f32(*[0.0] * 7)
    )


def build_normal_report(s: ReportSnapshot) -> bytes:
    """The 145-byte "normal" frame (port 30001): bytes 1-87 of the real-time frame, then brake and
    enable bit masks, error and warning codes, TCP offset, TCP payload, collision and teach
    sensitivity, gravity direction."""
    data = (
        _common87(s, NORMAL_REPORT_SIZE)
        + bytes([s.brake_mask & 0xFF, s.enabled_mask & 0xFF, s.error_code & 0xFF, s.warn_code & 0xFF])
        + _f32(*_pad(s.tcp_offset_mm_rad, 6))
        + _f32(*_pad(s.tcp_load, 4))
        + bytes([s.collision_sens & 0xFF, s.teach_sens & 0xFF])
        + _f32(*_pad(s.gravity_direction, 3))
    )
    assert len(data) == NORMAL_REPORT_SIZE
    return data


def build_rich_report(s: ReportSnapshot) -> bytes:
    """The 587-byte "rich" frame (port 30002): the normal frame's fields, then robot type and axes,
    master/slave ids (0xAA/0x55), firmware version, TCP and joint motion limits, servo and tool-IO
    error codes, temperatures, target speeds, the counter, the user (world) offset, tool settings,
    joint voltages and currents, control-box GPIO, force-torque data, axis-angle pose, settings
    flags, reduced-mode limits, fence, alarm and monitor-device fields."""
    body = bytearray(build_normal_report(s))
    body[0:4] = struct.pack(">I", RICH_REPORT_SIZE)
    body += bytes([s.robot_type & 0xFF, s.axis & 0xFF, 0xAA, 0x55, 0, 0])  # 146-151
    body += s.firmware.encode("ascii")[:30].ljust(30, b"\0")  # 152-181
    body += _f32(s.tcp_jerk, *s.tcp_acc_limits, *s.tcp_speed_limits)  # 182-201
    body += _f32(s.joint_jerk, *s.joint_acc_limits, *s.joint_speed_limits)  # 202-221
    body += _f32(s.rot_jerk, s.rot_max_acc)  # 222-229
    body += bytes(14) + bytes(2)  # servo, tool IO codes
    body += struct.pack(">7b", *[max(-128, min(127, int(t))) for t in _pad(s.temperatures_c, 7)])  # 246-252
    body += _f32(s.target_tcp_speed, *_pad(s.target_joint_speeds, 7))  # 253-284
    body += struct.pack(">I", s.counter & 0xFFFFFFFF)  # 285-288
    body += _f32(*_pad(s.world_offset_mm_rad, 6))  # 289-312
    body += bytes([0, 0, 0, 0, 0]) + _f32(*[0.0] * 6)  # 313-341: IO reset,
    # simulation robot 0 (a real arm), self-collision detection off, tool type 0, tool model params
    body += struct.pack(">7H", *[int(round(v * 100)) & 0xFFFF for v in _pad(s.joint_voltages_v, 7)])  # 342-355
    body += _f32(*[0.0] * 7)  # 356-383 currents
    body += bytes([0, 0]) + struct.pack(">8H", *[0] * 8) + bytes(32)  # 384-433 GPIO module
    body += _f32(*[0.0] * 12)  # 434-481 FT data
    body += bytes([0]) + _f32(*_pad(s.axis_angle_rad, 3))  # 482-494
    body += bytes([0, 0]) + struct.pack(">6h", *[0] * 6) + _f32(0.0, 0.0)  # 495-516 reduced mode
    limits = [v for lo_hi in s.joint_limits_rad for v in lo_hi]
    body += _f32(*_pad(limits, 14))  # 517-572 joint ranges
    body += bytes([0, 0]) + struct.pack(">I", 0) + bytes([0, 0, 0]) + struct.pack(">3h", 0, 0, 0)  # 573-587
    assert len(body) == RICH_REPORT_SIZE, len(body)
    return bytes(body)


def build_real_report(s: ReportSnapshot) -> bytes:
    """The 135-byte "real-time" frame (port 30003): bytes 1-87, then the force-torque sensor's
    filtered and raw data (zeros: the Lite 6 here has none)."""
    data = _common87(s, REAL_REPORT_SIZE) + _f32(*[0.0] * 12)
    assert len(data) == REAL_REPORT_SIZE
    return data


_BUILDERS = {"normal": build_normal_report, "rich": build_rich_report, "real": build_real_report}


def build_report(kind: str, s: ReportSnapshot) -> bytes:
    """The frame of stream ``kind`` (``normal``, ``rich``, ``real``).

    Raises:
        KeyError: unknown kind.
    """
    return _BUILDERS[kind](s)
