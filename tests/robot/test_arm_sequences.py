"""``Arm.plan`` pick/place waypoints, worked out by hand from ``robot/arm.py``'s numbers:
approach 0.10 m above the target; Lite gripper grasp depth 0.015 m, release height 0.05 m; Lite
vacuum grasp depth 0, release height 0.05 m; nothing below table + 0.005 m; tool down (180, 0, 0).
An unsafe target sends nothing to the controller (checked on the emulator's register log)."""

from __future__ import annotations

import pytest

from pointlab.robot.arm import Arm, MotionConfig, TcpPose
from pointlab.robot.errors import UnsafeTargetError
from pointlab.robot.workspace import Workspace
from pointlab.robot.xarm import XArmDriver

DOWN = (180.0, 0.0, 0.0)


def unconnected_arm(tool: str = "lite_gripper", **kw) -> Arm:
    # plan() is pure: it needs the driver's tool, never the controller.
    return Arm(XArmDriver.from_spec("192.168.1.185", tool=tool), **kw)


def poses(steps):
    return [(k, (s.position_m, s.rpy_deg) if k == "move" else s) for k, s in steps]


def test_gripper_pick():
    steps = unconnected_arm().plan("pick", [0.25, 0.05, 0.03])
    assert poses(steps) == [
        ("tool", False),
        ("move", (pytest.approx((0.25, 0.05, 0.13)), DOWN)),
        ("move", (pytest.approx((0.25, 0.05, 0.015)), DOWN)),  # 0.03 - 0.015
        ("tool", True),
        ("move", (pytest.approx((0.25, 0.05, 0.13)), DOWN)),
    ]


def test_gripper_pick_of_a_flat_object_stops_at_the_table_clearance():
    steps = unconnected_arm().plan("pick", [0.30, 0.0, 0.01])
    assert steps[2][1].position_m == pytest.approx((0.30, 0.0, 0.005))  # max(0.01 - 0.015, 0 + 0.005)


def test_vacuum_pick_touches_the_surface():
    steps = unconnected_arm("lite_vacuum").plan("pick", [0.30, -0.10, 0.04])
    assert [s.position_m for k, s in steps if k == "move"] == [
        pytest.approx((0.30, -0.10, 0.14)),
        pytest.approx((0.30, -0.10, 0.04)),
        pytest.approx((0.30, -0.10, 0.14)),
    ]
    assert [s for k, s in steps if k == "tool"] == [False, True]


@pytest.mark.parametrize("tool", ["lite_gripper", "lite_vacuum"])
def test_place(tool):
    steps = unconnected_arm(tool).plan("place", [0.30, -0.10, 0.02])
    assert poses(steps) == [
        ("move", (pytest.approx((0.30, -0.10, 0.12)), DOWN)),
        ("move", (pytest.approx((0.30, -0.10, 0.07)), DOWN)),  # 0.02 + 0.05
        ("tool", False),
        ("move", (pytest.approx((0.30, -0.10, 0.12)), DOWN)),
    ]


def test_approach_height_comes_from_the_motion_config():
    arm = unconnected_arm(motion=MotionConfig(approach_height_m=0.05))
    assert arm.plan("place", [0.30, 0.0, 0.02])[0][1].position_m == pytest.approx((0.30, 0.0, 0.07))


def test_target_outside_is_refused():
    with pytest.raises(UnsafeTargetError, match="outside_box: target x"):
        unconnected_arm().plan("pick", [0.50, 0.0, 0.05])


def test_target_inside_but_approach_waypoint_outside_is_refused():
    # z 0.35 is inside the box (max 0.40) but the approach at 0.45 is not.
    with pytest.raises(UnsafeTargetError, match="outside_box: waypoint z=0.450"):
        unconnected_arm().plan("pick", [0.30, 0.0, 0.35])


def test_workspace_of_the_arm_is_used():
    arm = unconnected_arm(workspace=Workspace(max_reach_m=0.30))
    with pytest.raises(UnsafeTargetError, match="beyond_reach"):
        arm.plan("place", [0.32, 0.0, 0.05])


def test_unknown_action():
    with pytest.raises(ValueError):
        unconnected_arm().plan("throw", [0.30, 0.0, 0.05])


# -- nothing is sent for an unsafe target (real SDK, emulator log) --------------------------
@pytest.fixture
def emu_arm():
    pytest.importorskip("xarm")
    from tests.robot.test_xarm_driver import FAST, driver_for, start_emulator

    emu = start_emulator()
    arm = Arm(driver_for(emu), motion=FAST)
    arm.connect()
    yield emu, arm
    arm.disconnect()
    emu.stop()


@pytest.mark.parametrize(
    "action, target",
    [
        ("pick", [0.50, 0.0, 0.05]),  # outside the box
        ("pick", [0.30, 0.0, 0.35]),  # approach waypoint above the box
        ("place", [0.05, 0.0, 0.05]),  # too close to the base
        ("place", [float("nan"), 0.0, 0.05]),
    ],
)
def test_unsafe_target_sends_nothing(emu_arm, action, target):
    emu, arm = emu_arm
    before = len(emu.entries())
    with pytest.raises(UnsafeTargetError):
        getattr(arm, action)(target)
    sent = emu.entries()[before:]
    assert not [e for e in sent if e["name"] in ("move_line", "tgpio_w16b", "set_state")]
    with pytest.raises(UnsafeTargetError):
        arm.move_to(TcpPose((0.30, 0.0, 0.45)))
    assert not emu.entries("move_line")


@pytest.mark.parametrize("rpy", [(float("nan"), 0.0, 0.0), (180.0, float("inf"), 0.0), (180.0, 0.0, float("-inf"))])
def test_a_pose_whose_orientation_is_not_finite_sends_nothing_and_leaves_the_arm_ready(emu_arm, rpy):
    emu, arm = emu_arm
    before = len(emu.entries())
    with pytest.raises(UnsafeTargetError, match="not_finite"):
        arm.move_to(TcpPose((0.25, 0.0, 0.20), rpy))
    assert [e["name"] for e in emu.entries()[before:] if e["name"] in ("move_line", "set_state")] == []
    st = arm.state()
    assert st.fault is None and st.estopped is False  # not faulted: the next command runs
    arm.move_to(TcpPose((0.25, 0.0, 0.20)))
    assert emu.entries("move_line")
