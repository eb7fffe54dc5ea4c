"""``Arm.release``: the operator's "open the gripper" on the simulated Lite 6.

Numbers by hand from the default scene and ``robot/arm.py``: the red cube stands on the table at
(0.30, 0.10), 4 cm tall; a pick at its top (0.30, 0.10, 0.04) descends to 0.025 (grasp depth
0.015 m) and lifts back to 0.14 (approach 0.10 m), so the held cube rises by 0.115 m. Opening the
gripper there drops it onto the table (z = 0, the physics lets it land within a couple of cm) and
leaves the TCP where it was."""

from __future__ import annotations

import pytest

from pointlab.robot.arm import Arm, MotionConfig
from pointlab.robot.errors import ArmFaultError, ArmNotConnectedError, EmergencyStopError
from pointlab.sim_mock.arm import SimArmDriver
from pointlab.sim_mock.world import SimWorld

RED_CUBE_TOP = [0.30, 0.10, 0.04]


@pytest.fixture
def sim():
    world = SimWorld()
    arm = Arm(SimArmDriver(world=world, time_scale=0.0), motion=MotionConfig(grip_settle_s=0.0))
    arm.connect()
    yield world, arm
    arm.disconnect()


def picked(world, arm):
    arm.pick(RED_CUBE_TOP)
    assert arm.holding and world.arm.attached == "red cube"
    assert world.snapshot()["red cube"]["position_m"] == pytest.approx([0.30, 0.10, 0.115], abs=0.004)


def test_release_drops_the_held_object_without_moving_the_arm(sim):
    world, arm = sim
    picked(world, arm)
    report = arm.release()
    assert world.arm.attached is None and arm.holding is False and arm.state().holding is False
    red = world.snapshot()["red cube"]
    assert red["position_m"][2] == pytest.approx(0.0, abs=0.002) and red["upright"]
    assert red["position_m"][:2] == pytest.approx([0.30, 0.10], abs=0.02)
    assert world.snapshot()["_arm"]["tcp_m"] == pytest.approx([0.30, 0.10, 0.14], abs=5e-4)  # no motion
    assert report.action == "release" and report.waypoints == [] and report.tool_commands == ["open"]
    assert report.to_dict()["target_m"] == [] and arm.state().tool_closed is False


def test_release_with_nothing_held_is_harmless(sim):
    world, arm = sim
    assert arm.release().tool_commands == ["open"] and not arm.holding and world.arm.attached is None


def test_release_is_refused_when_estopped_and_nothing_changes(sim):
    world, arm = sim
    picked(world, arm)
    arm.stop()
    with pytest.raises(EmergencyStopError):
        arm.release()
    assert arm.holding is True and world.arm.attached == "red cube" and world.arm.tool_closed is True
    arm.reset()  # after a reset the operator can open it
    arm.release()
    assert arm.holding is False and world.arm.attached is None


def test_release_is_refused_after_a_fault_and_a_failing_release_keeps_the_belief(sim):
    world, arm = sim
    picked(world, arm)
    world.inject_fault("next_tool", 31)
    with pytest.raises(ArmFaultError):
        arm.release()
    # the tool command failed: the gripper may still hold the cube, so the belief stays
    assert arm.holding is True and world.arm.attached == "red cube" and arm.state().fault is not None
    with pytest.raises(EmergencyStopError, match="fault"):
        arm.release()
    assert arm.holding is True and world.arm.attached == "red cube"


def test_release_is_refused_when_not_connected():
    world = SimWorld()
    arm = Arm(SimArmDriver(world=world, time_scale=0.0), motion=MotionConfig(grip_settle_s=0.0))
    with pytest.raises(ArmNotConnectedError):
        arm.release()
    assert world.arm.tool_closed is False and arm.holding is False
