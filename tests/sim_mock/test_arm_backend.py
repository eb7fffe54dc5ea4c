"""The kinematic Lite 6 behind the controller emulator, on a fake clock (no sleeps).

Expected values by hand: trapezoid times as in test_trapezoid; the Lite 6 of the xarm_ros2 model is
planar in its link1 frame (no lateral offsets), so with the tool pointing straight down joint 1 is
atan2(y, x) of the TCP and turns at v / r rad/s when the TCP crosses the x axis at radius r.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pointlab.sim_mock.arm_backend import (
    JOINT_LIMIT_ERROR,
    KINEMATIC_ERROR,
    SPEED_LIMIT_ERROR,
    KinematicArmBackend,
    PlanningError,
)
from pointlab.sim_mock.xarm_model import T_to_pose, pose_to_T

FLANGE = np.eye(4)


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def arm(clock):
    return KinematicArmBackend(clock=clock, min_motion_s=0.0)


def go_to(arm: KinematicArmBackend, clock: FakeClock, pose_mm_rad) -> None:
    q = arm.ik(pose_to_T(pose_mm_rad), arm.joints_rad())
    assert q is not None
    arm.move_joints(q, 3.0, 20.0)
    clock.t += 10.0
    assert not arm.moving()


def test_it_is_an_arm_backend(arm, clock):
    from tests.sim_mock.arm_backend_contract import check_contract

    def wait(backend):
        clock.t += 30.0  # far past any motion of the contract

    check_contract(arm, wait)


def test_joint_move_is_synchronous_and_trapezoidal(arm, clock):
    q0 = arm.joints_rad()
    q1 = q0 + np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.2])
    # 0.5 rad at 1 rad/s, 10 rad/s^2: 0.1 s up (0.05 rad), 0.4 s cruise, 0.1 s down: 0.6 s
    assert arm.move_joints(q1, 1.0, 10.0) == pytest.approx(0.6)
    clock.t += 0.05  # accelerating: 1/2 * 10 * 0.05^2 = 0.0125 rad of 0.5
    assert arm.joints_rad() - q0 == pytest.approx([0.0125, 0, 0, 0, 0, 0.0125 * 0.2 / 0.5], abs=1e-9)
    clock.t += 0.25  # 0.3 s: 0.05 + 0.2 = 0.25 rad, half way; joint 6 half way too
    assert arm.joints_rad() - q0 == pytest.approx([0.25, 0, 0, 0, 0, 0.1], abs=1e-9)
    assert arm.moving()
    clock.t += 0.3
    assert not arm.moving() and arm.joints_rad() == pytest.approx(q1)


def test_time_scale_stretches_a_motion(clock):
    arm = KinematicArmBackend(clock=clock, time_scale=0.5, min_motion_s=0.0)
    q1 = arm.joints_rad() + np.array([0.5, 0, 0, 0, 0, 0])
    assert arm.move_joints(q1, 1.0, 10.0) == pytest.approx(0.3)
    clock.t += 0.15
    assert arm.joints_rad()[0] - (q1[0] - 0.5) == pytest.approx(0.25)


def test_linear_move_keeps_the_tcp_on_the_line(arm, clock):
    tool = pose_to_T([0, 0, 83.6, 0, 0, 0])  # the Lite gripper TCP
    start = [250.0, 0.0, 150.0, math.pi, 0.0, 0.0]
    go_to(arm, clock, T_to_pose(pose_to_T(start) @ np.linalg.inv(tool)))
    # 100 mm along y at 100 mm/s, 1000 mm/s^2: 1.1 s; at 0.6 s the TCP is 55 mm along
    assert arm.move_linear(pose_to_T([250.0, 100.0, 150.0, math.pi, 0, 0]), tool, 0.1, 1.0) == pytest.approx(1.1)
    for dt, y_mm in ((0.05, 1.25), (0.55, 55.0), (0.45, 98.75)):
        clock.t += dt
        T = arm.fk(arm.joints_rad()) @ tool
        assert T[:3, 3] * 1000 == pytest.approx([250.0, y_mm, 150.0], abs=0.05)
        assert T[:3, 2] == pytest.approx([0, 0, -1], abs=1e-3)  # still pointing down
    clock.t += 0.1
    assert not arm.moving()
    assert (arm.fk(arm.joints_rad()) @ tool)[:3, 3] * 1000 == pytest.approx([250, 100, 150], abs=1e-3)


def test_no_joint_solution_on_the_line_is_c21_and_nothing_moves(arm, clock):
    q0 = arm.joints_rad()
    with pytest.raises(PlanningError) as ei:
        arm.move_linear(pose_to_T([700.0, 0.0, 150.0, math.pi, 0, 0]), FLANGE, 0.1, 1.0)  # beyond the reach
    assert ei.value.code == KINEMATIC_ERROR
    assert not arm.moving() and arm.joints_rad() == pytest.approx(q0)


def test_joint_target_outside_the_limits_is_c23(arm):
    q = arm.joints_rad()
    q[2] = math.radians(-60.0)  # J3 of the Lite 6: -3.5 .. 300 deg
    with pytest.raises(PlanningError) as ei:
        arm.move_joints(q, 1.0, 10.0)
    assert ei.value.code == JOINT_LIMIT_ERROR and not arm.moving()


def test_a_line_close_to_the_base_axis_is_c24_when_fast_and_fine_when_slow(arm, clock):
    # Tool down along x = 100 mm from y = +150 to -150: joint 1 turns at v / 0.1 m when crossing
    # y = 0, so the 180 deg/s limit allows up to pi * 0.1 = 0.314 m/s.
    go_to(arm, clock, [100.0, 150.0, 250.0, math.pi, 0, 0])
    goal = pose_to_T([100.0, -150.0, 250.0, math.pi, 0, 0])
    with pytest.raises(PlanningError) as ei:
        arm.move_linear(goal, FLANGE, 0.35, 2.0)  # needs 3.5 rad/s = 200 deg/s
    assert ei.value.code == SPEED_LIMIT_ERROR and not arm.moving()
    arm.move_linear(goal, FLANGE, 0.28, 2.0)  # 2.8 rad/s = 160 deg/s
    assert arm.moving()


def test_stop_ends_the_motion_where_the_arm_is(arm, clock):
    q0 = arm.joints_rad()
    arm.move_joints(q0 + np.array([0.5, 0, 0, 0, 0, 0]), 1.0, 10.0)
    clock.t += 0.3
    arm.stop()
    clock.t += 1.0
    assert not arm.moving() and arm.joints_rad()[0] - q0[0] == pytest.approx(0.25)


def test_vacuum_sensor_needs_suction_and_a_seal(clock):
    arm = KinematicArmBackend(clock=clock, vacuum=True)
    assert not arm.tool_holding()
    arm.set_tool(True)
    assert arm.tool_holding()
    arm.vacuum_contact = False
    assert not arm.tool_holding()
    gripper = KinematicArmBackend(clock=clock)
    gripper.set_tool(True)
    assert not gripper.tool_holding()  # the Lite gripper has no sensor
