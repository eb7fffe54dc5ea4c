"""The emulator's report frames read back with xarm-python-sdk's own layouts (``xarm.x3.report``,
ctypes structures written by UFACTORY independently of the SDK's byte-offset parser in base.py,
which test_xarm_sdk_defaults exercises through real sessions)."""

from __future__ import annotations

import math
import struct

import pytest

from pointlab.sim_mock.xarm_reports import (
    NORMAL_REPORT_SIZE,
    REAL_REPORT_SIZE,
    RICH_REPORT_SIZE,
    REPORT_PORTS,
    ReportSnapshot,
    build_report,
)

report = pytest.importorskip("xarm.x3.report")

LIMITS = ((-6.283, 6.283), (-2.618, 2.618), (-0.061, 5.236), (-6.283, 6.283), (-2.164, 2.164), (-6.283, 6.283))
SNAP = ReportSnapshot(
    state=1,
    mode=0,
    cmd_num=3,
    joints_rad=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
    pose_mm_rad=(250.0, -40.0, 120.0, 3.0, 0.1, -0.2),
    error_code=21,
    warn_code=11,
    enabled_mask=0x3F,
    brake_mask=0x3F,
    tcp_offset_mm_rad=(0, 0, 83.6, 0, 0, 0),
    tcp_load=(0.5, 0.0, 0.0, 40.0),
    collision_sens=4,
    teach_sens=2,
    firmware="v2.0.0",
    target_tcp_speed=150.0,
    counter=7,
    world_offset_mm_rad=(1.0, 2.0, 3.0, 0.0, 0.0, 0.5),
    axis_angle_rad=(3.1, 0.0, 0.2),
    joint_limits_rad=LIMITS,
)


def parsed(kind: str):
    data = build_report(kind, SNAP)
    r = report.ReportDataStructure.create(REPORT_PORTS[kind], is_radian=True)
    assert len(data) == len(r)  # the SDK's layout has exactly our size
    r.update(data)
    return data, r


@pytest.mark.parametrize(
    "kind, size", [("normal", NORMAL_REPORT_SIZE), ("rich", RICH_REPORT_SIZE), ("real", REAL_REPORT_SIZE)]
)
def test_common_fields(kind, size):
    data, r = parsed(kind)
    assert struct.unpack(">I", data[:4])[0] == size == r.data_size
    assert (r.state, r.mode, r.cmd_num) == (1, 0, 3)
    assert r.actual_joint_angle == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.0])
    assert r.actual_tcp_pose == pytest.approx([250.0, -40.0, 120.0, 3.0, 0.1, -0.2], abs=1e-5)
    assert r.estimated_joint_torque == [0.0] * 7


@pytest.mark.parametrize("kind", ["normal", "rich"])
def test_normal_fields(kind):
    _, r = parsed(kind)
    assert (r.motor_brake_status, r.motor_enable_status, r.error_code, r.warn_code) == (0x3F, 0x3F, 21, 11)
    assert r.tcp_offset == pytest.approx([0, 0, 83.6, 0, 0, 0], abs=1e-5)
    assert r.tcp_payload == pytest.approx([0.5, 0.0, 0.0, 40.0])
    assert (r.collision_sens, r.teaching_sens) == (4, 2)
    assert r.gravity_direction == pytest.approx([0, 0, -1])


def test_rich_fields():
    _, r = parsed("rich")
    assert (r.robot_type, r.robot_axis, r.master_id, r.slave_id) == (9, 6, 0xAA, 0x55)  # Lite 6; ids fixed
    assert r.version == "v2.0.0"
    assert (r.tcp_min_speed, r.tcp_max_speed) == pytest.approx((0.1, 500.0))  # the Lite 6 TCP limit
    assert r.joint_max_speed == pytest.approx(math.pi)
    assert r.servo_status_codes == [(0, 0)] * 7 and r.tgpio_status_codes == [0, 0]
    assert r.temperatures == [30] * 7
    assert r.target_tcp_speed == pytest.approx(150.0)
    assert r.counter == 7
    assert r.world_offset == pytest.approx([1.0, 2.0, 3.0, 0.0, 0.0, 0.5])
    assert r.is_simulation_robot is False  # it plays a real arm
    assert r.joint_voltages == [4800] * 6 + [0]  # 48 V, sent times 100
    assert r.axis_angle == pytest.approx([3.1, 0.0, 0.2])
    assert r.reduced_joint_limits[:6] == [pytest.approx(list(lim), abs=1e-6) for lim in LIMITS]
    assert r.monitor_device_type == 0 and r.cgpio_alarm_code == 0


def test_real_time_fields():
    _, r = parsed("real")
    assert r.ft_ext_force == [0.0] * 6 and r.ft_raw_force == [0.0] * 6
