"""The ground-truth pointing oracle: which object, which pixel, visibility, threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pointlab.perception.deproject import deproject_pixel
from pointlab.sim_mock.camera import SimCamera
from pointlab.sim_mock.oracle import SceneOracle
from pointlab.sim_mock.world import DEFAULT_CAMERA_EYE_M, DEFAULT_CAMERA_TARGET_M, SimWorld


@pytest.fixture(scope="module")
def world() -> SimWorld:
    return SimWorld()


@pytest.fixture
def oracle(world) -> SceneOracle:
    world.reset()
    return SceneOracle(world)


def _hand_project(p_base, width=640, height=480):
    """Project a base-frame point by hand from the camera's eye/target and the D435-like intrinsics."""
    eye, tgt = np.array(DEFAULT_CAMERA_EYE_M), np.array(DEFAULT_CAMERA_TARGET_M)
    z = (tgt - eye) / np.linalg.norm(tgt - eye)
    x = np.cross(z, [0, 0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    d = np.asarray(p_base) - eye
    pc = np.array([d @ x, d @ y, d @ z])
    s = width / 640
    return ((615.0 * pc[0] / pc[2] + 321.0 + 0.5) * s - 0.5, (615.0 * pc[1] / pc[2] + 239.0 + 0.5) * s - 0.5)


def test_points_at_the_named_objects_top_centre(oracle):
    # red cube: 4 cm cube at (0.30, 0.10) on the table -> top centre (0.30, 0.10, 0.04)
    [(u, v)] = oracle.points("pick up the red cube", 640, 480)
    assert (u, v) == pytest.approx(_hand_project([0.30, 0.10, 0.04]), abs=1e-6)
    assert oracle.points("Pick up the RED BLOCK.", 640, 480) == [(u, v)]
    # "from the bowl, pick up the green cube": the graspable thing is the target
    [(u2, v2)] = oracle.points("from the bowl, pick up the green cube", 640, 480)
    assert (u2, v2) == pytest.approx(_hand_project([0.22, -0.06, 0.04]), abs=1e-6)


def test_points_scale_with_the_image_size(oracle):
    [(u, v)] = oracle.points("the purple cube", 640, 480)
    [(us, vs)] = oracle.points("the purple cube", 320, 240)
    assert (us, vs) == pytest.approx(((u + 0.5) / 2 - 0.5, (v + 0.5) / 2 - 0.5))
    assert (us, vs) == pytest.approx(_hand_project([0.36, 0.20, 0.035], 320, 240), abs=1e-6)


@pytest.mark.parametrize("text", ["", "pick up the unicorn", "redcube", None, "the cube"])
def test_nothing_named_gives_no_points(oracle, text):
    assert oracle.points(text, 640, 480) == []


def test_bad_sizes_give_no_points(oracle):
    assert oracle.points("red cube", 0, 480) == []
    assert oracle.points("red cube", "wide", 480) == []


def test_holding_something_points_at_the_other_object(oracle, world):
    with world.lock:
        world.arm.attached = "red cube"
    bowl_floor = [0.30, -0.19, world.object("blue bowl").floor_m]
    for text in ("put it in the blue bowl", "put the red cube in the bowl"):
        [(u, v)] = oracle.points(text, 640, 480)
        assert (u, v) == pytest.approx(_hand_project(bowl_floor), abs=1e-6)
    assert oracle.points("pick up the red cube", 640, 480) == []  # the only named thing is held
    [(u, v)] = oracle.points("put it on the green cube", 640, 480)
    assert (u, v) == pytest.approx(_hand_project([0.22, -0.06, 0.04]), abs=1e-6)


def test_points_deproject_onto_the_target(world, oracle):
    cam = SimCamera(world=world, fps=0, seed=4).connect()
    frame = cam.read()
    cal = world.calibration()
    for o in world.scene.objects:
        [(u, v)] = oracle.points(f"the {o.name}", 640, 480)
        d = deproject_pixel(frame, u, v)
        assert d.valid, (o.name, d.reason)
        p = cal.camera_to_base(d.point_m)
        assert np.linalg.norm(p - o.top_center_m) < 0.006, (o.name, p)


def test_occluded_centre_moves_to_the_visible_part(world, oracle):
    # The yellow block held 10 cm above its place hides part of the green cube behind it; the
    # oracle's point must still deproject onto the green cube's top, not onto the held block.
    y = world.object("yellow block")
    world.set_object_pose("yellow block", [y.position_m[0], y.position_m[1], 0.115])
    world.attach("yellow block")
    [(u, v)] = oracle.points("place it on the green cube", 640, 480)
    frame = SimCamera(world=world, fps=0, seed=2).connect().read()
    p = world.calibration().camera_to_base(deproject_pixel(frame, u, v).point_m)
    green = world.object("green cube")
    assert p[2] == pytest.approx(0.04, abs=0.004)
    assert green.footprint_contains(p[:2])
    # without visibility the ground-truth centre lands on the occluder's edge
    blind = SceneOracle(world, visibility=False).points("place it on the green cube", 640, 480)
    assert blind[0] != (u, v)


def test_thread_safe_while_the_arm_moves(world, oracle):
    from pointlab.robot.arm import TcpPose
    from pointlab.sim_mock.arm import SimArmDriver

    driver = SimArmDriver(world=world, time_scale=0.02)
    driver.connect()
    errors, results = [], []

    def ask():
        try:
            for _ in range(10):
                results.append(oracle.points("the orange can", 640, 480))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for z in (0.30, 0.20, 0.30):
        driver.move_linear(TcpPose((0.25, 0.05, z)), 0.2, 1.0)
    for t in threads:
        t.join(timeout=30)
    assert not errors and len(results) == 30
    assert all(r == results[0] for r in results)  # the can never moved
