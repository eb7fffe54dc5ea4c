"""The xArm controller emulator driving the MuJoCo Lite 6 (``arm_backend.world_backend``): a pick
and place through xarm-python-sdk and the real ``XArmDriver`` moves the physics world's arm, and
the world judges it by physics."""

from __future__ import annotations

import pytest

from pointlab.robot.arm import Arm, MotionConfig
from pointlab.sim_mock.arm_backend import world_backend
from pointlab.sim_mock.world import SimWorld

pytestmark = [pytest.mark.slow]


def test_sdk_pick_and_place_moves_the_mujoco_arm_and_is_judged_by_physics():
    pytest.importorskip("xarm")
    from pointlab.robot.xarm import XArmDriver
    from tests.robot.test_xarm_driver import start_emulator

    world = SimWorld()
    emu = start_emulator(time_scale=0.05, backend=world_backend(world, time_scale=0.05))
    try:
        arm = Arm(
            XArmDriver.from_spec(f"{emu.host}:{emu.port}", cmd_timeout_s=5.0), motion=MotionConfig(grip_settle_s=0.4)
        )
        with arm:
            tcp0 = world.arm.tcp_m.copy()
            arm.pick(world.object("red cube").top_center_m)
            assert world.judge({"action": "pick", "object": "red cube"}) == (True, "holding red cube")
            assert abs(world.arm.tcp_m[2] - 0.14) < 0.002 and abs(world.arm.tcp_m[0] - tcp0[0]) > 0.05
            arm.place(world.object("blue bowl").top_center_m)
        assert world.judge({"action": "place", "object": "red cube", "container": "blue bowl"})[0]
        assert emu.entries("move_line")  # the SDK's linear moves went through the controller model
    finally:
        emu.stop()
        world.close()
