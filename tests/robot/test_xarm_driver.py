"""The Lite 6 driver: the real ``xarm.wrapper.XArmAPI`` against the controller emulator.

Expected register values are worked out by hand from the targets in metres: the SDK sends
millimetres and radians (roll 180 deg = pi rad), speed mm/s, acceleration mm/s^2.
"""

from __future__ import annotations

import itertools
import math
import threading
import time

import numpy as np
import pytest

from pointlab.robot.arm import Arm, MotionConfig, TcpPose, make_arm
from pointlab.robot.errors import (
    ArmConnectionError,
    ArmFaultError,
    ArmNotConnectedError,
    ArmProtocolError,
    ArmTimeoutError,
    EmergencyStopError,
    MotionHaltedError,
    MotionRefusedError,
    ReachRefusedError,
    UnreachableTargetError,
)
from pointlab.robot.workspace import Workspace
from pointlab.robot.xarm import Lite6Config, XArmDriver, _within_limit_deg
from pointlab.robot.xarm_codes import POSE_NOT_REACHED
from pointlab.sim_mock.xarm_controller import XArmControllerEmulator

pytest.importorskip("xarm")

# slow tier: the real SDK against the emulator (sockets, report threads, the SDK's own 1 s waits)
pytestmark = [pytest.mark.slow]

FAST = MotionConfig(grip_settle_s=0.01)
MOTION_OR_TOOL = {"move_line", "tgpio_w16b"}
# Tool output words written to address 0x0A15 (high byte: which outputs, low byte: values).
TO0_ON, TO0_OFF, TO1_ON, TO1_OFF = 0x0101, 0x0100, 0x0202, 0x0200


def start_emulator(**kw) -> XArmControllerEmulator:
    """An emulator on a random 127.x.y.z (the SDK's report port 30001 is fixed per address)."""
    return XArmControllerEmulator.start_on_free_loopback(**{"time_scale": 0.05, **kw})


@pytest.fixture
def emu():
    e = start_emulator()
    yield e
    e.stop()


def driver_for(emu: XArmControllerEmulator, **kw) -> XArmDriver:
    return XArmDriver.from_spec(f"{emu.host}:{emu.port}", **{"cmd_timeout_s": 1.0, **kw})


@pytest.fixture
def arm(emu):
    a = Arm(driver_for(emu), motion=FAST)
    a.connect()
    yield a
    a.disconnect()


def moves_mm(entries) -> list[list[float]]:
    return [[e["params"][k] for k in ("x_mm", "y_mm", "z_mm")] for e in entries if e["name"] == "move_line"]


def tool_words(entries) -> list[int]:
    return [int(e["params"]["value"]) for e in entries if e["name"] == "tgpio_w16b"]


def after(entries, index):
    return entries[index + 1 :]


def fault_index(entries) -> int:
    return next(i for i, e in enumerate(entries) if "fault" in e)


# -- spec and config -------------------------------------------------------------------------
def test_from_spec_defaults_and_port():
    d = XArmDriver.from_spec("192.168.1.185")
    assert (d.config.ip, d.config.port, d.tool.name) == ("192.168.1.185", 502, "lite_gripper")
    assert d.config.tcp_offset_mm == pytest.approx(83.6)
    d = XArmDriver.from_spec("10.0.0.2:5020", tool="lite_vacuum")
    assert (d.config.port, d.config.tcp_offset_mm) == (5020, pytest.approx(61.0))


@pytest.mark.parametrize(
    "spec", [None, "", "192.168.1.300", "robot.local", "10.0.0.2:abc", "10.0.0.2:0", "10.0.0.2:30001"]
)
def test_bad_specs_are_refused(spec):
    with pytest.raises(ValueError):
        XArmDriver.from_spec(spec)


def test_config_refuses_speed_above_the_lite6_limit():
    with pytest.raises(ValueError, match="500"):
        Lite6Config("10.0.0.2", max_speed_mm_s=600)


def test_make_arm_builds_without_connecting():
    arm = make_arm("xarm:192.168.1.185", tool="lite_vacuum")
    assert isinstance(arm.driver, XArmDriver) and arm.driver.tool.name == "lite_vacuum"
    assert not arm.driver.connected


def test_calls_before_connect():
    d = XArmDriver.from_spec("192.168.1.185")
    with pytest.raises(ArmNotConnectedError):
        d.move_linear(TcpPose((0.25, 0.0, 0.15)), 0.1, 1.0)
    d.emergency_stop()  # must not raise without a connection


# -- connection ----------------------------------------------------------------------------
def test_refused_connection():
    emu = start_emulator()
    host, port = emu.host, emu.port
    emu.stop()  # nothing listens on host:port any more
    with pytest.raises(ArmConnectionError, match=f"{host}:{port}"):
        XArmDriver.from_spec(f"{host}:{port}").connect()


def test_a_controller_that_is_not_a_lite6_is_refused():
    emu = start_emulator(version="6,6,XS1303,DL1000,v2.0.0")  # axis 6, type 6: an xArm 6
    try:
        with pytest.raises(ArmConnectionError, match="not a Lite 6"):
            driver_for(emu).connect()
        assert not emu.entries("move_line") and not emu.entries("motion_en")
    finally:
        emu.stop()


def test_bring_up_sequence(emu):
    d = driver_for(emu)
    d.connect()
    try:
        setters = [
            (e["name"], e["params"])
            for e in emu.entries()
            if e["name"] in {"clean_war", "clean_err", "motion_en", "set_mode", "set_state", "set_tcp_offset"}
        ]
        assert [n for n, _ in setters] == [
            "clean_war",
            "clean_err",
            "motion_en",
            "set_mode",
            "set_state",
            "set_tcp_offset",
            "set_state",
        ]
        assert setters[2][1] == {"axis": 8, "enable": 1}
        assert setters[3][1]["mode"] == 0
        assert setters[4][1] == {"value": 0} and setters[6][1] == {"value": 0}
        off = setters[5][1]
        # Lite gripper TCP 0.0836 m past the flange = 83.6 mm along z, no rotation.
        assert [off["x_mm"], off["y_mm"], off["z_mm"]] == pytest.approx([0.0, 0.0, 83.6], abs=1e-4)
        assert [off["roll_rad"], off["pitch_rad"], off["yaw_rad"]] == [0.0, 0.0, 0.0]
        assert emu.state == 2 and emu.enabled and emu.error_code == 0
    finally:
        d.disconnect()


# -- pick and place -------------------------------------------------------------------------
def test_pick_and_place_registers(emu, arm):
    arm.pick([0.25, 0.05, 0.03])
    pick_log = emu.entries()
    arm.place([0.30, -0.10, 0.02])
    place_log = emu.entries()[len(pick_log) :]

    # Pick (gripper grasp depth 0.015 m, approach 0.10 m): above z 0.13, down z 0.015, above.
    assert moves_mm(pick_log) == [pytest.approx(p, abs=1e-3) for p in ([250, 50, 130], [250, 50, 15], [250, 50, 130])]
    # Open (TO0 on, TO1 off) before the approach, close (TO0 off, TO1 on) at the bottom.
    assert tool_words(pick_log) == [TO0_ON, TO1_OFF, TO0_OFF, TO1_ON]
    order = [e["name"] for e in pick_log if e["name"] in MOTION_OR_TOOL]
    assert order == ["tgpio_w16b", "tgpio_w16b", "move_line", "move_line", "tgpio_w16b", "tgpio_w16b", "move_line"]

    # Place (release height 0.05 m): above z 0.12, down z 0.07, open, above.
    assert moves_mm(place_log) == [
        pytest.approx(p, abs=1e-3) for p in ([300, -100, 120], [300, -100, 70], [300, -100, 120])
    ]
    assert tool_words(place_log) == [TO0_ON, TO1_OFF]

    for e in emu.entries("move_line"):
        p = e["params"]
        assert [p["roll_rad"], p["pitch_rad"], p["yaw_rad"]] == pytest.approx([math.pi, 0.0, 0.0], abs=1e-6)
        # MotionConfig defaults 0.15 m/s and 1.0 m/s^2
        assert (p["speed_mm_s"], p["acc_mm_s2"]) == (pytest.approx(150.0), pytest.approx(1000.0))
        assert p["radius_mm"] == -1.0 and p["coord"] == 0  # straight line, base frame
        assert e["result"] == "ok"

    st = arm.state()
    assert st.tcp.position_m == pytest.approx((0.30, -0.10, 0.12), abs=1e-4)
    assert emu.pose_mm_rad[:3] == pytest.approx([300.0, -100.0, 120.0], abs=1e-3)
    assert st.error_code == 0 and not st.holding


def test_joints_put_the_tcp_where_the_pose_says(emu, arm):
    from pointlab.sim_mock.kinematics import Lite6Kinematics

    arm.driver.move_linear(TcpPose((0.28, -0.06, 0.18)), 0.2, 1.0)
    joints = arm.driver.get_joints_rad()
    assert len(joints) == 6
    T = Lite6Kinematics().fk(joints, tool="lite_gripper")
    assert T[:3, 3] == pytest.approx([0.28, -0.06, 0.18], abs=1.5e-3)
    assert T[:3, 2] == pytest.approx([0.0, 0.0, -1.0], abs=0.02)  # tool z axis points down


def test_speed_and_acceleration_are_clamped(emu, arm):
    arm.driver.move_linear(TcpPose((0.25, 0.0, 0.20)), speed_m_s=0.8, acc_m_s2=12.0)
    p = emu.entries("move_line")[-1]["params"]
    assert (p["speed_mm_s"], p["acc_mm_s2"]) == (pytest.approx(500.0), pytest.approx(5000.0))


def test_vacuum_pick_uses_the_suction_outputs_and_sensor():
    emu = start_emulator(tool="lite_vacuum")
    arm = Arm(driver_for(emu, tool="lite_vacuum"), motion=FAST)
    try:
        arm.connect()
        off = emu.entries("set_tcp_offset")[-1]["params"]
        assert off["z_mm"] == pytest.approx(61.0, abs=1e-4)
        arm.pick([0.30, -0.10, 0.04])
        # Vacuum grasp depth 0: the cup goes down to the pointed surface, z 40 mm.
        assert moves_mm(emu.entries()) == [
            pytest.approx(p, abs=1e-3) for p in ([300, -100, 140], [300, -100, 40], [300, -100, 140])
        ]
        # off (TO0 0, TO1 1) first, then on (TO0 1, TO1 0)
        assert tool_words(emu.entries()) == [TO0_OFF, TO1_ON, TO0_ON, TO1_OFF]
        assert arm.holding and arm.driver.holding_sensor() is True
        arm.place([0.25, 0.10, 0.03])
        assert arm.driver.holding_sensor() is False  # vacuum off reads -1 ("off")
        emu.vacuum_contact = False  # nothing under the cup this time
        arm.pick([0.30, -0.10, 0.04])
        assert not arm.holding
    finally:
        arm.disconnect()
        emu.stop()


# -- controller refusals -------------------------------------------------------------------
def test_unreachable_pose_is_a_controller_fault_until_cleared(emu, arm):
    d = arm.driver
    with pytest.raises(ArmFaultError) as ei:
        d.move_linear(TcpPose((0.60, 0.0, 0.15)), 0.1, 1.0)  # 600 mm: beyond the Lite 6 reach
    assert ei.value.code == 1 and "C21" in str(ei.value)
    assert d.error_code() == 21 and emu.state == 4
    # An error state refuses motion until it is cleared.
    with pytest.raises(ArmFaultError):
        d.move_linear(TcpPose((0.25, 0.0, 0.15)), 0.1, 1.0)
    assert emu.entries("move_line")[-1]["result"] == "refused_error"
    arm.reset()  # bring-up again: clean_error, enable, set_state(0)
    assert d.error_code() == 0
    d.move_linear(TcpPose((0.25, 0.0, 0.15)), 0.1, 1.0)
    assert emu.pose_mm_rad[:3] == pytest.approx([250.0, 0.0, 150.0], abs=1e-3)


# -- reachability checked before the first command (controller IK, register 43) -------------
# Inside the default Workspace (r 0.43 m <= 0.44, approach z 0.40 m <= 0.40) but too far out and
# too high for the Lite 6 with the gripper pointing down.
FAR_HIGH_TARGET_M = (0.43, 0.0, 0.30)


def ik_entries(entries) -> list[list[float]]:
    return [[e["params"][k] for k in ("x_mm", "y_mm", "z_mm")] for e in entries if e["name"] == "get_ik"]


def test_far_high_target_is_in_the_workspace_but_not_reachable():
    from pointlab.sim_mock.kinematics import Lite6Kinematics

    ws = Workspace()
    ws.check(np.array(FAR_HIGH_TARGET_M))
    ws.check(np.array([0.43, 0.0, 0.40]), "waypoint")  # the approach waypoint, 0.10 m above
    kin = Lite6Kinematics()
    assert kin.ik([0.43, 0.0, 0.40], (180.0, 0.0, 0.0), tool="lite_gripper") is None
    assert kin.ik([0.25, 0.05, 0.13], (180.0, 0.0, 0.0), tool="lite_gripper") is not None


def test_unreachable_pick_is_refused_without_motion_or_fault(emu, arm):
    brought_up = len(emu.entries())
    with pytest.raises(ReachRefusedError, match=r"0\.43, 0\.0, 0\.4") as ei:
        arm.pick(list(FAR_HIGH_TARGET_M))
    assert "code 10" in str(ei.value) and isinstance(ei.value.__cause__, UnreachableTargetError)
    assert isinstance(ei.value, MotionRefusedError)  # a refusal: nothing moved, the arm is fine
    rest = emu.entries()[brought_up:]
    assert rest and not [e for e in rest if e["name"] in MOTION_OR_TOOL]
    assert not [e for e in rest if e["name"] == "set_state"]  # no stop either: nothing was wrong
    assert rest[-1]["name"] == "get_ik" and rest[-1]["result"] == "no_solution"
    assert emu.error_code == 0 and emu.state == 2
    st = arm.state()
    assert st.fault is None and st.error_code == 0 and not st.estopped
    # no reset needed: the next (reachable) pick runs as usual
    before = len(emu.entries())
    arm.pick([0.25, 0.05, 0.03])
    assert moves_mm(emu.entries()[before:]) == [
        pytest.approx(p, abs=1e-3) for p in ([250, 50, 130], [250, 50, 15], [250, 50, 130])
    ]


def test_reachable_pick_asks_ik_along_the_path_before_moving(emu, arm):
    start_mm = np.array(emu.pose_mm_rad[:3])
    arm.pick([0.25, 0.05, 0.03])
    log = emu.entries()
    first_cmd = next(i for i, e in enumerate(log) if e["name"] in MOTION_OR_TOOL)
    assert not [e for e in log[first_cmd:] if e["name"] == "get_ik"]
    asked = [np.array(p) for p in ik_entries(log[:first_cmd])]
    assert all(e["result"] == "ok" for e in log[:first_cmd] if e["name"] == "get_ik")
    # every goal is asked exactly as it will be sent, tool down (roll pi rad)
    goals = [np.array(g, dtype=float) for g in ([250, 50, 130], [250, 50, 15], [250, 50, 130])]
    for g in goals:
        assert any(np.allclose(a, g, atol=1e-3) for a in asked)
    for e in log[:first_cmd]:
        if e["name"] == "get_ik":
            p = e["params"]
            assert [p["roll_rad"], p["pitch_rad"], p["yaw_rad"]] == pytest.approx([math.pi, 0.0, 0.0], abs=1e-5)
    # the points lie on the three straight segments, no more than 50 mm apart along each
    corners = [start_mm, *goals]
    i = 0
    for a, b in itertools.pairwise(corners):
        prev = a
        while True:
            p = asked[i]
            i += 1
            t = float(np.dot(p - a, b - a) / np.dot(b - a, b - a))
            assert 0.0 < t <= 1.0 + 1e-6 and np.linalg.norm(a + t * (b - a) - p) < 1e-3
            assert np.linalg.norm(p - prev) <= 50.0 + 1e-3
            prev = p
            if np.allclose(p, b, atol=1e-3):
                break
    assert i == len(asked)


def test_the_sdk_reads_no_ik_solution_as_code_10(emu, arm):
    api = arm.driver._api
    code, _ = api.get_inverse_kinematics(
        [700.0, 0.0, 150.0, 180.0, 0.0, 0.0], input_is_radian=False, return_is_radian=False
    )
    assert code == 10
    code, angles = api.get_inverse_kinematics(
        [250.0, 0.0, 150.0, 180.0, 0.0, 0.0], input_is_radian=False, return_is_radian=False
    )
    assert code == 0 and len(angles) == 7 and all(-180.0 < a <= 180.0 for a in angles)


def test_a_dropped_connection_during_the_reach_check_is_a_fault(emu):
    arm = Arm(driver_for(emu, cmd_timeout_s=0.5), motion=FAST)
    arm.connect()
    try:
        emu.inject("drop", "get_ik")
        with pytest.raises(ArmConnectionError):
            arm.pick([0.25, 0.05, 0.03])
        assert not emu.entries("move_line") and not emu.entries("tgpio_w16b")
    finally:
        arm.disconnect()


def test_a_stalled_reach_check_is_a_refusal_not_a_fault(emu):
    # issue 14, finding 6: an IK query that never answers moved nothing and left the arm fine
    arm = Arm(driver_for(emu, cmd_timeout_s=0.5), motion=FAST)
    arm.connect()
    try:
        brought_up = len(emu.entries())
        emu.inject("stall", "get_ik")
        with pytest.raises(ReachRefusedError, match="did not answer") as ei:
            arm.pick([0.25, 0.05, 0.03])
        assert isinstance(ei.value.__cause__, ArmTimeoutError)
        rest = emu.entries()[brought_up:]
        assert not [e for e in rest if e["name"] in MOTION_OR_TOOL or e["name"] == "set_state"]  # no stop either
        st = arm.state()
        assert st.fault is None and not st.estopped and emu.error_code == 0 and emu.state == 2
        arm.pick([0.25, 0.05, 0.03])  # no reset needed
        assert emu.entries("move_line")[-1]["result"] == "ok"
    finally:
        arm.disconnect()


@pytest.mark.parametrize(
    "joint, angle_deg, ok",
    [
        (2, 149.0, True),
        (2, 151.0, False),
        (2, -151.0, False),  # J2 +-150
        (3, -3.0, True),
        (3, -4.0, False),  # J3 -3.5 .. 300
        (3, -160.0, True),  # wrapped answer: 200 deg, inside
        (3, -50.0, False),  # 310 deg: outside
        (5, 123.0, True),
        (5, -125.0, False),  # J5 +-124
        (1, 179.0, True),
        (6, -180.0, True),
    ],
)
def test_joint_limits(joint, angle_deg, ok):
    from pointlab.robot.xarm import LITE6_JOINT_LIMITS_DEG

    assert _within_limit_deg(angle_deg, *LITE6_JOINT_LIMITS_DEG[joint - 1]) is ok


def test_a_motion_dropped_by_the_controller_is_detected():
    # The controller ignores a motion sent within state_settle_s of set_state(0); a driver that
    # does not wait would believe it moved.
    emu = start_emulator(state_settle_s=0.5, settle_drop_probability=1.0)
    d = driver_for(emu, state_settle_s=0.0)
    try:
        d.connect()
        with pytest.raises(ArmFaultError) as ei:
            d.move_linear(TcpPose((0.25, 0.08, 0.20)), 0.1, 1.0)
        assert ei.value.code == POSE_NOT_REACHED
        assert emu.entries("move_line")[-1]["result"] == "ignored"
    finally:
        d.disconnect()
        emu.stop()


# -- injected faults: typed error, the arm stops, no motion afterwards -----------------------
def test_error_answer_during_pick(emu, arm):
    emu.inject("error", "move_line", code=31)
    with pytest.raises(ArmFaultError) as ei:
        arm.pick([0.25, 0.05, 0.03])
    assert ei.value.call == "set_position" and ei.value.code == 1 and "C31" in str(ei.value)
    log = emu.entries()
    rest = after(log, fault_index(log))
    assert not [e for e in rest if e["name"] in MOTION_OR_TOOL]
    assert {"value": 4} in [e["params"] for e in rest if e["name"] == "set_state"]  # the stop
    assert emu.state == 4


def test_stall_while_moving(emu):
    arm = Arm(driver_for(emu, cmd_timeout_s=0.5), motion=FAST)
    arm.connect()
    try:
        # The SDK polls the state while it waits for the motion and ignores one unanswered poll
        # (the first of wait_move); two in a row are a timeout.
        emu.inject("stall", "get_state", count=2)
        with pytest.raises(ArmTimeoutError):
            arm.pick([0.25, 0.05, 0.03])
        log = emu.entries()
        i = fault_index(log)
        assert any(e["name"] == "move_line" for e in log[:i])  # the stall came during a motion
        rest = after(log, i)
        assert not [e for e in rest if e["name"] in MOTION_OR_TOOL]
        assert {"value": 4} in [e["params"] for e in rest if e["name"] == "set_state"]
        assert emu.state == 4 and not emu.moving
    finally:
        arm.disconnect()


@pytest.mark.slow
def test_stall_on_the_motion_command(emu, arm):
    # The SDK waits a fixed 10 s for the reply to a motion command (move_line_common).
    emu.inject("stall", "move_line")
    with pytest.raises(ArmTimeoutError):
        arm.pick([0.25, 0.05, 0.03])
    log = emu.entries()
    rest = after(log, fault_index(log))
    assert not [e for e in rest if e["name"] in MOTION_OR_TOOL]
    assert {"value": 4} in [e["params"] for e in rest if e["name"] == "set_state"]


def test_dropped_connection_while_moving(emu):
    arm = Arm(driver_for(emu), motion=FAST)
    arm.connect()
    try:
        emu.inject("drop", "get_state")
        with pytest.raises(ArmConnectionError, match="reconnected and sent the stop"):
            arm.pick([0.25, 0.05, 0.03])
        log = emu.entries()
        i = fault_index(log)
        assert any(e["name"] == "move_line" for e in log[:i])
        rest = after(log, i)
        # a new session, then the stop and nothing else: no bring-up, no motion, no tool
        assert {"value": 4} in [e["params"] for e in rest if e["name"] == "set_state"]
        assert not [e for e in rest if e["name"] in MOTION_OR_TOOL | {"clean_err", "motion_en"}]
        assert emu.state == 4 and not emu.moving
        arm.reset()  # the operator's reset: bring-up again
        arm.driver.move_linear(TcpPose((0.25, 0.0, 0.15)), 0.1, 1.0)
        assert np.allclose(emu.pose_mm_rad[:3], [250.0, 0.0, 150.0], atol=1e-3)
    finally:
        arm.disconnect()


@pytest.mark.slow
def test_a_lost_connection_mid_motion_stops_the_arm_before_the_fault_is_reported():
    # issue 14, finding 7: a Lite 6 goes on with an accepted motion when its client vanishes (the
    # emulator does too); the driver must reconnect and stop it, not just report the loss.
    emu = start_emulator(time_scale=1.0)
    # 0.03 m/s: the approach from the power-on pose, about 80 mm, takes about 2.7 s
    arm = Arm(driver_for(emu, reconnect_timeout_s=2.0), motion=MotionConfig(grip_settle_s=0.01, speed_m_s=0.03))
    try:
        arm.connect()
        emu.inject("drop", "get_state")  # the first poll of the approach motion
        with pytest.raises(ArmConnectionError, match="reconnected and sent the stop"):
            arm.pick([0.25, 0.05, 0.03])
        t_fault = time.monotonic()
        log = emu.entries()
        t_drop = log[fault_index(log)]["t"]
        assert t_fault - t_drop < 2.0 + 1.0  # the reconnect bound + the SDK noticing the closed socket
        assert not emu.moving  # stopped by the time the fault is reported
        stop_mm = np.array(emu.pose_mm_rad[:3])
        assert np.linalg.norm(stop_mm - [250.0, 50.0, 130.0]) > 10.0  # short of the waypoint: stopped, not done
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:  # and it stays where it stopped
            assert emu.pose_mm_rad[:3] == pytest.approx(list(stop_mm), abs=1e-6)
            time.sleep(0.1)
    finally:
        arm.disconnect()
        emu.stop()


def test_when_the_controller_cannot_be_reached_the_fault_says_to_press_the_stop_button():
    emu = start_emulator()
    arm = Arm(driver_for(emu, reconnect_timeout_s=0.3), motion=FAST)
    try:
        arm.connect()
        emu.stop()  # the controller is gone: nothing to reconnect to
        with pytest.raises(ArmConnectionError, match="could not reconnect within 0.3 s.*emergency stop button"):
            arm.pick([0.25, 0.05, 0.03])
    finally:
        arm.disconnect()


def test_an_sdk_exception_during_a_motion_is_a_typed_robot_error(emu):
    # issue 14, finding 8: an error reply without data to the state poll of wait_move makes the SDK's
    # get_state raise IndexError; it must reach the trial as a typed robot error and stop the arm.
    arm = Arm(driver_for(emu), motion=FAST)
    arm.connect()
    try:
        emu.inject("error_no_data", "get_state", code=31)
        with pytest.raises(ArmProtocolError) as ei:
            arm.pick([0.25, 0.05, 0.03])
        e = ei.value
        assert isinstance(e, ArmFaultError) and e.call == "set_position" and e.code == -3
        assert "IndexError" in e.detail and isinstance(e.__cause__, IndexError)
        rest = after(emu.entries(), fault_index(emu.entries()))
        assert not [x for x in rest if x["name"] in MOTION_OR_TOOL]
        assert {"value": 4} in [x["params"] for x in rest if x["name"] == "set_state"]
        assert arm.state().fault.startswith("ArmProtocolError")
    finally:
        arm.disconnect()


# -- the controlled stop (halt) ------------------------------------------------------------
def test_a_halt_mid_motion_ends_the_move_without_an_error_and_the_next_move_works():
    emu = start_emulator(time_scale=1.0)
    d = driver_for(emu)
    try:
        d.connect()
        d.move_linear(TcpPose((0.25, 0.0, 0.20)), 0.5, 5.0)
        # 100 mm down at 50 mm/s, 500 mm/s^2: 100/50 + 50/500 = 2.1 s
        out = {}
        t = threading.Thread(target=lambda: _catch(out, d.move_linear, TcpPose((0.25, 0.0, 0.10)), 0.05, 0.5))
        t.start()
        deadline = time.monotonic() + 5
        while emu.pose_mm_rad[2] > 195.0:  # 5 mm down the line
            assert time.monotonic() < deadline, "the motion never started"
            time.sleep(0.005)
        n_before = len(emu.entries())
        d.halt()
        t.join(timeout=10)
        assert not t.is_alive() and isinstance(out.get("error"), MotionHaltedError), out
        assert "-9" in str(out["error"])  # wait_move saw the stop state: APIState.EMERGENCY_STOP
        halted_z = emu.pose_mm_rad[2]
        assert 100.5 < halted_z < 195.0 and not emu.moving  # stopped on the line, short of the goal
        assert emu.error_code == 0 and emu.state == 4
        sent = [(e["name"], e["params"]) for e in emu.entries()[n_before:] if e["name"] != "get_state"]
        assert ("set_state", {"value": 4}) in sent and not [n for n, _ in sent if n in ("move_line", "clean_err")]
        with pytest.raises(MotionHaltedError):  # nothing is sent while halted
            d.move_linear(TcpPose((0.25, 0.0, 0.10)), 0.5, 5.0)
        n_before = len(emu.entries())
        d.clear_halt()
        sent = [(e["name"], e["params"]) for e in emu.entries()[n_before:]]
        # set_state(0) and the read-back only: no bring-up (motion_en, set_mode, clean_err)
        assert ("set_state", {"value": 0}) in sent
        assert not [n for n, _ in sent if n in ("motion_en", "set_mode", "clean_err", "clean_war", "move_line")]
        assert emu.state == 2 and emu.error_code == 0
        d.move_linear(TcpPose((0.25, 0.0, 0.10)), 0.5, 5.0)
        assert emu.pose_mm_rad[:3] == pytest.approx([250.0, 0.0, 100.0], abs=1e-3)
    finally:
        d.disconnect()
        emu.stop()


def test_an_arm_halt_on_the_lite6_leaves_it_ready_and_reports_what_was_sent():
    emu = start_emulator(time_scale=1.0)
    arm = Arm(driver_for(emu), motion=MotionConfig(grip_settle_s=0.01, speed_m_s=0.03))
    try:
        arm.connect()
        out = {}
        t = threading.Thread(target=lambda: _catch(out, arm.pick, [0.25, 0.05, 0.03]))
        t.start()
        deadline = time.monotonic() + 5
        while not emu.entries("move_line"):  # the approach (about 80 mm at 30 mm/s) was sent
            assert time.monotonic() < deadline, "the approach was never sent"
            time.sleep(0.005)
        assert arm.halt() is True
        t.join(timeout=10)
        err = out.get("error")
        assert not t.is_alive() and isinstance(err, MotionHaltedError), out
        assert err.report.tool_commands == ["open"]
        assert [w.position_m for w in err.report.waypoints] == [pytest.approx((0.25, 0.05, 0.13))]
        assert len(emu.entries("move_line")) == 1  # the descent was never sent
        st = arm.state()
        assert st.fault is None and st.estopped is False and st.error_code == 0 and not st.holding
        assert emu.state == 2  # the halt was cleared: ready
        arm.motion = FAST
        arm.home()
        assert emu.pose_mm_rad[:3] == pytest.approx([200.0, 0.0, 250.0], abs=1e-3)
    finally:
        arm.disconnect()
        emu.stop()


def _catch(out: dict, fn, *args) -> None:
    try:
        out["result"] = fn(*args)
    except Exception as e:  # noqa: BLE001 - handed to the test thread
        out["error"] = e


# -- a whole trial: the fault is stored as a robot failure ----------------------------------
@pytest.mark.parametrize(
    "fault, on_register, says, error_type",
    [
        ("error", "move_line", "C31", "ArmFaultError"),
        ("drop", "get_state", "reconnected and sent the stop", "ArmConnectionError"),
        ("error_no_data", "get_state", "the SDK raised IndexError", "ArmProtocolError"),  # issue 14, finding 8
    ],
)
def test_trial_with_a_controller_fault_is_stored_as_robot_failure(
    emu, ros_env, tmp_path, fault, on_register, says, error_type
):
    from pointlab.bridge.trials.headless import run_scripted_trials
    from pointlab.bridge.session import SessionConfig, start_session
    from pointlab.bridge.study.store import Store

    db = tmp_path / "trials.sqlite"
    session = start_session(SessionConfig(camera="sim", robot=f"xarm:{emu.host}:{emu.port}", db_path=db))
    try:
        emu.inject(fault, on_register)
        out = run_scripted_trials(
            session.station, "sim-oracle", [{"instruction": "pick up the red cube"}], max_repeats=0
        )
    finally:
        session.close()
    (trial,) = out["trials"]
    # a fault is no test of the agent: aborted, left out of the rate (none judged), counted apart
    assert trial["robot_outcome"] == "robot_failure" and trial["outcome"] == "aborted"
    assert trial["abort"]["code"] == "robot_fault" and trial["failure_stage"] == "aborted"
    assert out["success_rate"] is None and out["aborted"] == 1 and out["judged"] == 0
    assert not emu.moving  # stopped by the driver, whatever the fault (issue 14, finding 7)
    log = emu.entries()
    i = fault_index(log)
    assert not [e for e in after(log, i) if e["name"] in MOTION_OR_TOOL]
    store = Store(db, create=False)
    try:
        (row,) = store.trials()
        assert row["robot_outcome"] == "robot_failure" and says in row["robot_error"]["detail"]
        assert row["robot_error"]["type"] == error_type  # typed, never the bare SDK exception
    finally:
        store.close()


def test_a_stalled_state_read_is_a_fault_that_stops_the_arm(emu):
    """The state the arm node publishes is read from the controller; a read that gets no answer
    within the SDK's deadline means nobody can watch the arm: fault, stop, and no motion until reset."""
    arm = Arm(driver_for(emu, cmd_timeout_s=0.5), motion=FAST)
    arm.connect()
    try:
        emu.inject("stall", "get_tcp_pose")
        st = arm.state()
        assert st.fault is not None and "ArmTimeoutError" in st.fault and "no answer" in st.fault, st.fault
        assert emu.state == 4  # the stop reached the controller
        before = len(emu.entries("move_line"))
        with pytest.raises(EmergencyStopError, match="after a fault"):
            arm.pick([0.25, 0.05, 0.03])
        assert len(emu.entries("move_line")) == before
        arm.reset()
        assert arm.state().fault is None
        arm.pick([0.25, 0.05, 0.03])  # after the reset the arm works again
    finally:
        arm.disconnect()
