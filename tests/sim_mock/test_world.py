"""The tabletop scene and the sim world: layout, names, drops, judgement, calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pointlab.robot.workspace import Workspace
from pointlab.sim_mock.scene import ObjectSpec, Scene, default_scene
from pointlab.sim_mock.world import (DEFAULT_CAMERA_EYE_M, DEFAULT_CAMERA_TARGET_M, DEFAULT_INTRINSICS, SimWorld,
                                     default_world)


@pytest.fixture(scope="module")
def world() -> SimWorld:
    return SimWorld()


@pytest.fixture
def fresh(world) -> SimWorld:
    world.reset()
    return world


def test_scene_has_small_objects_and_one_container():
    scene = default_scene()
    assert 5 <= len(scene.objects) - 1 <= 7
    assert [o.name for o in scene.containers] == ["blue bowl"]
    bowl = scene.containers[0]
    assert 0.12 <= bowl.size_m[0] <= 0.14
    for o in scene.objects:
        if o.shape == "box":
            assert all(0.035 <= s <= 0.045 for s in o.size_m), o.name
        assert o.position_m[2] == 0.0  # everything starts on the table


def test_every_object_is_inside_the_workspace_and_reachable_tool_down(world):
    ws = Workspace()
    for o in world.scene.objects:
        top = o.top_center_m
        for p in (top, top + [0, 0, 0.10], top + [0, 0, 0.05]):  # target, approach, release height
            ws.check(p, o.name)
            assert world.kinematics.ik(p, (180, 0, 0), tool="lite_gripper") is not None, (o.name, p)


def test_every_object_is_in_view(world):
    T_cam_base = world.T_base_camera.inverse()
    for o in world.scene.objects:
        uv = world.intrinsics.project(T_cam_base.apply(o.corners_m()))
        assert np.all(np.isfinite(uv))
        assert np.all((uv[:, 0] > 10) & (uv[:, 0] < 630) & (uv[:, 1] > 10) & (uv[:, 1] < 470)), o.name


def test_names_and_aliases_resolve():
    scene = default_scene()
    assert scene.resolve("Red Block") == "red cube"
    assert scene.resolve("the bowl") is None  # resolve takes a name, not a sentence
    assert scene.resolve("bowl") == "blue bowl"
    assert scene.mentions("Put the RED BLOCK into the blue bowl!") == ["red cube", "blue bowl"]
    assert scene.mentions("bowl first, then the green cube") == ["blue bowl", "green cube"]
    assert scene.mentions("the redcube") == []  # whole words only
    with pytest.raises(ValueError):
        Scene((ObjectSpec("a", "box", (0.04, 0.04, 0.04), (1, 2, 3), (0.3, 0, 0), aliases=("b",)),
               ObjectSpec("b", "box", (0.04, 0.04, 0.04), (1, 2, 3), (0.3, 0.1, 0))))


def test_default_world_is_a_process_singleton():
    assert default_world() is default_world()


def test_camera_pose_looks_at_the_table_from_the_front(world):
    T = world.T_base_camera
    eye, target = np.array(DEFAULT_CAMERA_EYE_M), np.array(DEFAULT_CAMERA_TARGET_M)
    dist = np.linalg.norm(target - eye)
    assert 0.6 <= dist <= 0.8
    assert np.allclose(T.apply([0, 0, dist]), target, atol=1e-9)  # optical axis hits the target
    # facing the robot (-x), image right is base +y and image down has a -z component
    assert np.allclose(T.rotation[:, 0], [0, 1, 0], atol=1e-9)
    assert T.rotation[2, 1] < 0
    assert DEFAULT_INTRINSICS.width == 640 and abs(DEFAULT_INTRINSICS.fx - 615) < 10


def test_calibration_is_exact_or_perturbed_by_the_asked_amount(world):
    cal = world.calibration()
    assert np.allclose(cal.T_base_camera.matrix, world.T_base_camera.matrix)
    assert cal.parent_frame == "link_base" and cal.child_frame == "camera_color_optical_frame"
    noisy = world.calibration(translation_noise_m=0.005, rotation_noise_deg=0.5, seed=3)
    dt = np.linalg.norm(noisy.T_base_camera.translation_m - world.T_base_camera.translation_m)
    assert math.isclose(dt, 0.005, rel_tol=1e-9)
    R = world.T_base_camera.rotation.T @ noisy.T_base_camera.rotation
    assert math.isclose(math.degrees(math.acos((np.trace(R) - 1) / 2)), 0.5, rel_tol=1e-6)


def test_release_drops_onto_the_bowl_floor_an_object_top_or_the_table(fresh):
    w = fresh
    bowl, green = w.object("blue bowl"), w.object("green cube")
    # hold the red cube 10 cm up over the bowl centre, then let go
    for over, expected_z in ((bowl.position_m, bowl.floor_m), (green.position_m, 0.04), ((0.40, 0.0, 0), 0.0)):
        w.set_object_pose("red cube", [over[0], over[1], 0.12])
        w.attach("red cube")
        w.release()
        red = w.object("red cube")
        assert red.position_m[2] == pytest.approx(expected_z, abs=1e-9)
        assert red.position_m[:2] == pytest.approx(over[:2])
    assert w.arm.attached is None


def test_drop_on_the_bowl_rim_is_not_in_the_bowl(fresh):
    w = fresh
    bowl = w.object("blue bowl")
    rim_xy = (bowl.position_m[0] + 0.062, bowl.position_m[1])  # radius 0.065, wall 6 mm
    w.set_object_pose("red cube", [rim_xy[0], rim_xy[1], 0.12])
    w.attach("red cube")
    w.release()
    assert w.object("red cube").position_m[2] == pytest.approx(0.05)
    ok, reason = w.judge({"action": "place", "object": "red cube", "container": "blue bowl"})
    assert not ok and "not in" in reason


def test_judge_pick_place_and_near(fresh):
    w = fresh
    assert w.judge({"action": "pick", "object": "red cube"}) == (False, "not holding red cube (tool empty)")
    with w.lock:
        w.arm.attached = "red cube"
    assert w.judge({"action": "pick", "object": "red block"})[0]
    assert not w.judge({"action": "place", "object": "red cube", "container": "blue bowl"})[0]  # still held
    w.set_object_pose("red cube", [0.31, -0.20, 0.012])  # lets go of it; 1.4 cm from the bowl axis
    assert w.judge({"action": "place", "object": "red cube", "container": "bowl"}) == (True, "red cube is in blue bowl")
    green = w.object("green cube").position_m
    w.set_object_pose("yellow block", [green[0] + 0.05, green[1], 0.0])
    ok, reason = w.judge({"action": "place", "object": "yellow block", "near": "green cube"})
    assert ok and "5.0 cm" in reason
    w.set_object_pose("yellow block", [green[0] + 0.07, green[1], 0.0])
    assert not w.judge({"action": "place", "object": "yellow block", "near": "green cube"})[0]


@pytest.mark.parametrize("expected", [None, "pick", {}, {"action": "pick", "object": "unicorn"},
                                      {"action": "wave", "object": "red cube"},
                                      {"action": "place", "object": "red cube"},
                                      {"action": "place", "object": "red cube", "container": "green cube"}])
def test_judge_never_raises_on_bad_expectations(world, expected):
    ok, reason = world.judge(expected)
    assert ok is False and reason.startswith("bad_expected")


def test_snapshot_and_reset(fresh):
    w = fresh
    snap = w.snapshot()
    assert snap["red cube"]["position_m"] == [0.30, 0.10, 0.0] and snap["red cube"]["top_z_m"] == 0.04
    assert snap["blue bowl"]["container"] and snap["_arm"]["attached"] is None
    w.set_object_pose("red block", [0.2, 0.2, 0.0], yaw_deg=0.0)
    assert w.snapshot()["red cube"]["position_m"] == [0.2, 0.2, 0.0]
    w.reset()
    assert w.snapshot()["red cube"]["position_m"] == [0.30, 0.10, 0.0]
    assert w.snapshot()["_arm"]["tcp_m"] == pytest.approx([0.20, 0.0, 0.25], abs=1e-6)


def test_grasp_tolerance_rule(fresh):
    w = fresh
    # red cube: 4 cm, half width 2 cm -> min(0.6 * 0.02 + 0.01, 0.02) = 0.02 m
    x, y, _ = w.object("red cube").position_m
    assert w.grasp_candidate([x + 0.019, y, 0.025]) == "red cube"
    assert w.grasp_candidate([x + 0.021, y, 0.025]) is None
    assert w.grasp_candidate([x, y, 0.045]) is None  # above the top
    # purple cube: 3.5 cm -> min(0.6 * 0.0175 + 0.01, 0.02) = 0.0205 -> 0.02 also
    px, py, _ = w.object("purple cube").position_m
    assert w.grasp_candidate([px, py + 0.0195, 0.02]) == "purple cube"
    assert w.grasp_candidate([0.30, -0.19, 0.02]) is None  # the bowl is not graspable


def test_set_object_pose_refuses_unknown_names(world):
    with pytest.raises(KeyError):
        world.set_object_pose("unicorn", [0.3, 0.0, 0.0])


def test_inject_fault_rejects_unknown_kinds(world):
    with pytest.raises(ValueError):
        world.inject_fault("meteor")


def test_infer_expected_reads_typed_instructions(fresh):
    w = fresh
    assert w.infer_expected("pick up the red cube", "pick") == {"action": "pick", "object": "red cube", "inferred": True}
    # the bowl is a container: a pick names the first object that is not one
    assert w.infer_expected("take the yellow block out of the blue bowl", "pick")["object"] == "yellow block"
    assert w.infer_expected("wave at the camera", "pick") is None
    assert w.infer_expected("put it in the blue bowl", "place") is None  # nothing held: no place to judge
    with w.lock:
        w.arm.attached = "red cube"
    assert w.infer_expected("put the red cube in the blue bowl", "place") == {
        "action": "place", "object": "red cube", "container": "blue bowl", "inferred": True}
    assert w.infer_expected("place it next to the green cube", "place") == {
        "action": "place", "object": "red cube", "near": "green cube", "inferred": True}
    assert w.infer_expected(None, "place") is None
    with w.lock:
        w.arm.attached = None
