"""Helpers for the sim tests: a world, a connected sim arm on it, a pick/place by physics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pointlab.robot.arm import Arm, MotionConfig
from pointlab.sim_mock.arm import SimArmDriver
from pointlab.sim_mock.world import SimWorld


@pytest.fixture(scope="module")
def world() -> Iterator[SimWorld]:
    w = SimWorld()
    yield w
    w.close()


@pytest.fixture
def fresh(world) -> SimWorld:
    world.reset()
    return world


def sim_arm(world: SimWorld, tool: str = "lite_gripper") -> Arm:
    """A connected ``robot.Arm`` on the world's sim Lite 6, motions as fast as the physics runs."""
    return Arm(SimArmDriver(world=world, tool=tool, time_scale=0.0), motion=MotionConfig(grip_settle_s=0.0)).connect()


def top_of(world: SimWorld, name: str):
    """The object's top-face centre now (base frame, metres), as a perfect pointer would give it."""
    o = world.object(name)
    return o.top_center_m
