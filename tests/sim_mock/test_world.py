"""The tabletop scene and the MuJoCo world: layout, names, scene files, masses, drops and
collisions by physics, exact reset, judgement, calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pointlab.robot.workspace import Workspace
from pointlab.sim_mock.scene import ObjectSpec, Scene, default_scene, load_scene, normalize_text
from pointlab.sim_mock.world import DEFAULT_CAMERA_EYE_M, DEFAULT_CAMERA_TARGET_M, DEFAULT_INTRINSICS, default_world

from .conftest import sim_arm, top_of


def test_default_scene_has_what_the_issue_asks_for():
    scene = default_scene()
    names = [o.name for o in scene.objects]
    # every object of the demo script, plus a second green cube and a mug
    for n in ("red cube", "green cube", "yellow block", "orange can", "purple cube", "blue bowl"):
        assert n in names
    assert [o.name for o in scene.containers] == ["blue bowl"]
    cube_sizes = {o.size_m for o in scene.objects if o.shape == "box" and len(set(o.size_m)) == 1}
    assert len(cube_sizes) >= 2  # cubes of two sizes
    colours = [o.color_rgb for o in scene.objects]
    assert any(colours.count(c) >= 2 for c in colours)  # two objects of one colour
    assert {o.shape for o in scene.objects} >= {"box", "cylinder", "bowl", "mug"}
    for o in scene.objects:
        assert o.position_m[2] == 0.0  # everything starts on the table


def test_scene_file_round_trip_and_errors(tmp_path):
    good = tmp_path / "s.toml"
    good.write_text(
        'name = "mini"\n[[objects]]\nname = "box a"\nshape = "box"\nsize_m = [0.03, 0.03, 0.03]\n'
        "color_rgb = [10, 20, 30]\nposition_m = [0.3, 0.0, 0.0]\nmass_kg = 0.05\n"
    )
    s = load_scene(good)
    assert s.name == "mini" and s.objects[0].size_m == (0.03, 0.03, 0.03) and s.objects[0].mass == 0.05
    for body, what in (
        (
            '[[objects]]\nname = "x"\nshape = "cone"\nsize_m = [1, 1, 1]\ncolor_rgb = [1, 2, 3]\n'
            "position_m = [0, 0, 0]\n",
            "shape",
        ),
        (
            '[[objects]]\nname = "x"\nshape = "box"\nsize_m = [1, 1, 1]\ncolor_rgb = [1, 2, 3]\n'
            "position_m = [0, 0, 0]\ncolour = 3\n",
            "colour",
        ),
        ('name = "empty"\n', "at least one"),
        (
            'table_color_rgb = [200, 200]\n[[objects]]\nname = "x"\nshape = "box"\nsize_m = [1, 1, 1]\n'
            "color_rgb = [1, 2, 3]\nposition_m = [0, 0, 0]\n",
            "table_color_rgb must be three integers",
        ),
        ("[[objects\n", "TOML"),
    ):
        bad = tmp_path / "bad.toml"
        bad.write_text(body)
        with pytest.raises(ValueError, match=what):
            load_scene(bad)


def test_masses_follow_size_and_density(world):
    import mujoco

    m = world.physics.model
    body = lambda n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "obj:" + n)  # noqa: E731
    # red cube: 4 cm of wood (600 kg/m^3) = 0.04^3 * 600 = 38.4 g
    assert m.body_mass[body("red cube")] == pytest.approx(0.0384, rel=1e-6)
    # blue bowl, density 1000: wall pi (0.065^2 - 0.059^2) (0.05 - 0.012) + floor pi 0.065^2 0.012
    assert m.body_mass[body("blue bowl")] == pytest.approx(
        1000 * math.pi * (7.44e-4 * 0.038 + 4.225e-3 * 0.012), rel=1e-6
    )
    assert m.body_mass[body("white mug")] == pytest.approx(0.25, rel=1e-6)  # given in the scene file


def test_every_object_is_inside_the_workspace_and_reachable_tool_down(world):
    ws = Workspace()
    for o in world.scene.objects:
        top = o.top_center_m
        for p in (top, top + [0, 0, 0.10], top + [0, 0, 0.05]):  # target, approach, release height
            ws.check(p, o.name)
            assert world.kinematics.ik(p, (180, 0, 0), tool="lite_gripper") is not None, (o.name, p)


def test_names_and_aliases_resolve():
    scene = default_scene()
    assert scene.resolve("Red Block") == "red cube"
    assert scene.resolve("the bowl") is None  # resolve takes a name, not a sentence
    assert scene.resolve("bowl") == "blue bowl"
    assert scene.mentions("Put the RED BLOCK into the blue bowl!") == ["red cube", "blue bowl"]
    assert scene.mentions("bowl first, then the green cube") == ["blue bowl", "green cube"]
    assert scene.mentions("the small green cube, not the green cube") == ["small green cube", "green cube"]
    assert scene.mentions("the redcube") == []  # whole words only
    with pytest.raises(ValueError):
        Scene(
            (
                ObjectSpec("a", "box", (0.04, 0.04, 0.04), (1, 2, 3), (0.3, 0, 0), aliases=("b",)),
                ObjectSpec("b", "box", (0.04, 0.04, 0.04), (1, 2, 3), (0.3, 0.1, 0)),
            )
        )


def test_mention_spans_index_the_normalised_text():
    scene = default_scene()
    text = "Put the RED BLOCK on top of the bowl, then the red block again"
    words = normalize_text(text)
    assert words == "put the red block on top of the bowl then the red block again"
    spans = scene.mention_spans(text)
    assert spans == [(8, 17, "red cube"), (32, 36, "blue bowl"), (46, 55, "red cube")]  # every mention, in order
    assert [words[a:b] for a, b, _ in spans] == ["red block", "bowl", "red block"]
    assert scene.mention_spans("the small green cube") == [(4, 20, "small green cube")]  # the longest name wins


@pytest.mark.parametrize(
    "text, expected",
    [
        ("place it on top of the green cube", ("on", "green cube")),
        ("set it down on the purple cube", ("on", "purple cube")),
        ("stack it onto the can", ("on", "orange can")),
        ("put it on the top of the mug", ("on", "white mug")),
        ("put the red cube next to the orange can", ("near", "orange can")),  # the held object is not the reference
        ("put it on the left of the can", ("near", "orange can")),  # "on" not right before the name
        ("put it in the mug", ("near", "white mug")),  # a mug is not a container
        ("can you put it next to the mug", ("near", "white mug")),  # "can" is no reference here
        ("put it on the table next to the bowl", ("near", "blue bowl")),
        ("drop it into the bowl", ("container", "blue bowl")),
        ("put it on the bowl", ("container", "blue bowl")),  # a bowl is filled
        ("the green cube", ("near", "green cube")),  # no relation word: near
        ("put the red cube down", None),  # nothing but the held object
    ],
)
def test_place_target_reads_the_words_before_the_reference(text, expected):
    assert default_scene().place_target(text, "red cube") == expected


def test_default_world_is_a_process_singleton():
    assert default_world() is default_world()


def test_camera_pose_looks_at_the_table_from_the_front(world):
    T = world.T_base_camera
    eye, target = np.array(DEFAULT_CAMERA_EYE_M), np.array(DEFAULT_CAMERA_TARGET_M)
    dist = np.linalg.norm(target - eye)
    assert 0.65 <= dist <= 0.8
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


def test_objects_start_at_rest_upright_on_the_table(fresh):
    snap = fresh.snapshot()
    for o in fresh.scene.objects:
        s = snap[o.name]
        assert s["upright"] and not s["held"], o.name
        # soft contacts let a resting body sink by a fraction of a millimetre, never more
        assert s["position_m"] == pytest.approx(list(o.position_m), abs=5e-4), o.name
    assert fresh.physics.at_rest()


@pytest.mark.parametrize("where, rest_z", [("bowl", 0.012), ("green cube", 0.04), ("table", 0.0)])
def test_a_dropped_cube_lands_on_what_is_under_it(fresh, where, rest_z):
    """Dropped from 8 cm, the red cube comes to rest on the bowl's 12 mm floor, on the 4 cm green cube
    (it does not pass through it: collisions), or on the table."""
    over = {
        "bowl": fresh.object("blue bowl").position_m,
        "green cube": fresh.object("green cube").position_m,
        "table": (0.40, 0.02, 0.0),
    }[where]
    fresh.set_object_pose("red cube", [over[0], over[1], rest_z + 0.08], yaw_deg=-10.0)
    fresh.settle(2.0)
    p = fresh.object("red cube").position_m
    assert p[2] == pytest.approx(rest_z, abs=1.5e-3)
    assert fresh.snapshot()["red cube"]["upright"]


@pytest.mark.slow
def test_reset_restores_the_scene_exactly(fresh):
    q0 = fresh.physics.qpos()
    arm = sim_arm(fresh)
    arm.pick(top_of(fresh, "red cube"))
    fresh.set_object_pose("yellow block", [0.25, 0.25, 0.0])
    assert not np.array_equal(fresh.physics.qpos(), q0)
    fresh.reset()
    assert np.array_equal(fresh.physics.qpos(), q0)
    assert not fresh.arm.tool_closed and fresh.held() is None
    assert fresh.snapshot()["_arm"]["tcp_m"] == pytest.approx([0.20, 0.0, 0.25], abs=5e-4)


@pytest.mark.slow
def test_judge_pick_place_and_near_from_the_physics(fresh):
    w = fresh
    assert w.judge({"action": "pick", "object": "red cube"}) == (False, "not holding red cube (tool empty)")
    arm = sim_arm(w)
    arm.pick(top_of(w, "red cube"))
    assert w.judge({"action": "pick", "object": "red block"}) == (True, "holding red cube")
    assert w.judge({"action": "place", "object": "red cube", "container": "blue bowl"}) == (
        False,
        "red cube is still held",
    )
    arm.place(top_of(w, "blue bowl"))
    assert w.judge({"action": "place", "object": "red cube", "container": "bowl"}) == (True, "red cube is in blue bowl")
    green = w.object("green cube").position_m
    w.set_object_pose("yellow block", [green[0] + 0.06, green[1], 0.0], yaw_deg=0.0)
    # gap: 6 cm between centres, minus the yellow block's 2.25 cm half-length, minus the green cube's
    # half-extent along x at yaw -10 deg, 2 (cos 10 + sin 10) = 2.32 cm: 1.43 cm
    ok, reason = w.judge({"action": "place", "object": "yellow block", "near": "green cube"})
    assert ok and "1.4 cm away" in reason, reason


def test_a_block_stacked_on_another_is_on_it_not_next_to_it(fresh):
    """The bug this rule fixed: "next to" passed for a block stacked on top (origins 0 cm apart)."""
    for support, top_m in (("green cube", 0.04), ("orange can", 0.08)):
        fresh.reset()
        s = fresh.object(support).position_m
        fresh.set_object_pose("red cube", [s[0], s[1], top_m + 0.001])  # dropped 1 mm onto its top
        # it rests there: its bottom within 2 mm of the top (contacts sink a little), well inside
        # RESTING_TOL_M
        assert fresh.object_box("red cube").bottom_z_m == pytest.approx(top_m, abs=0.002)
        assert fresh.judge({"action": "place", "object": "red cube", "near": support}) == (
            False,
            f"red cube is on top of, not next to, {support}",
        )
        assert fresh.judge({"action": "place", "object": "red block", "on": support}) == (
            True,
            f"red cube is on top of {support}",
        )


def test_a_block_beside_the_cup_is_next_to_it_within_6_cm(fresh):
    mug = fresh.object("cup")
    assert fresh.object_box("cup").footprint == "disc"  # the mug's 7 cm body, its handle left out
    # the red cube (4 cm, yaw 0) on the mug's -x side: its face 3.5 + 3 cm from the mug's axis
    fresh.set_object_pose("red cube", [mug.position_m[0] - 0.035 - 0.03 - 0.02, mug.position_m[1], 0.0], yaw_deg=0.0)
    assert fresh.judge({"action": "place", "object": "red cube", "near": "cup"}) == (
        True,
        "red cube is next to white mug, 3.0 cm away (within 6 cm)",
    )
    assert fresh.judge({"action": "place", "object": "red cube", "on": "cup"}) == (
        False,
        "red cube is next to, not on top of, white mug",
    )
    fresh.set_object_pose("red cube", [mug.position_m[0] - 0.035 - 0.07 - 0.02, mug.position_m[1], 0.0], yaw_deg=0.0)
    assert fresh.judge({"action": "place", "object": "red cube", "near": "cup"}) == (
        False,
        "red cube is 7.0 cm from white mug (beyond 6 cm), not next to it",
    )


def test_a_block_dropped_onto_the_cup_falls_in_and_is_neither_on_nor_next_to_it(fresh):
    # every block of the default scene fits the mug's 6 cm opening (the red cube's diagonal: 5.7 cm)
    mug = fresh.object("white mug")
    fresh.set_object_pose("red cube", [mug.position_m[0], mug.position_m[1], mug.height_m + 0.002])
    assert fresh.object_box("red cube").bottom_z_m == pytest.approx(mug.floor_m, abs=0.001)  # on its 8 mm floor
    for key in ("on", "near"):
        ok, reason = fresh.judge({"action": "place", "object": "red cube", key: "white mug"})
        assert not ok and "its bottom is 0.8 cm above the table" in reason, reason


def test_a_block_in_the_bowl_is_in_it_not_on_or_next_to_it(fresh):
    bowl = fresh.object("blue bowl")
    fresh.set_object_pose("red cube", [bowl.position_m[0] + 0.02, bowl.position_m[1], bowl.floor_m + 0.002])
    assert fresh.judge({"action": "place", "object": "red cube", "container": "bowl"}) == (
        True,
        "red cube is in blue bowl",
    )
    assert fresh.judge({"action": "place", "object": "red cube", "near": "bowl"}) == (
        False,
        "red cube is in, not next to, blue bowl",
    )
    assert fresh.judge({"action": "place", "object": "red cube", "on": "bowl"}) == (
        False,
        "red cube is in, not on top of, blue bowl",
    )


def test_a_cube_beside_the_bowl_is_not_in_it(fresh):
    bowl = fresh.object("blue bowl").position_m
    fresh.set_object_pose("red cube", [bowl[0] + 0.09, bowl[1], 0.0])  # outside the 6.5 cm radius
    ok, reason = fresh.judge({"action": "place", "object": "red cube", "container": "blue bowl"})
    assert not ok and "not in" in reason


def test_object_box_of_a_tilted_block_reaches_from_its_lowest_to_its_highest_corner(fresh):
    # lean the red cube 30 deg about the base y axis, standing on one edge: its corners span
    # 4 (cos 30 + sin 30) = 5.46 cm in height
    import mujoco

    ph = fresh.physics
    a = ph._obj_qadr["red cube"]
    tilt = math.radians(30)
    with fresh.lock:
        ph.data.qpos[a : a + 7] = [0.30, 0.10, 0.02 * math.sin(tilt), math.cos(tilt / 2), 0.0, math.sin(tilt / 2), 0.0]
        mujoco.mj_forward(ph.model, ph.data)
        box = fresh.object_box("red cube")
    assert box.top_z_m - box.bottom_z_m == pytest.approx(0.04 * (math.cos(tilt) + math.sin(tilt)))
    assert box.bottom_z_m == pytest.approx(0.0, abs=1e-9)  # the lowest edge on the table


@pytest.mark.parametrize(
    "expected",
    [
        None,
        "pick",
        {},
        {"action": "pick", "object": "unicorn"},
        {"action": "wave", "object": "red cube"},
        {"action": "place", "object": "red cube"},
        {"action": "place", "object": "red cube", "container": "green cube"},
        {"action": "place", "object": "red cube", "on": "unicorn"},
        {"action": "place", "object": "red cube", "near": "red block"},
    ],
)
def test_judge_never_raises_on_bad_expectations(world, expected):
    ok, reason = world.judge(expected)
    assert ok is False and reason.startswith("bad_expected")


def test_set_object_pose_refuses_unknown_names(world):
    with pytest.raises(KeyError):
        world.set_object_pose("unicorn", [0.3, 0.0, 0.0])


def test_inject_fault_rejects_unknown_kinds(world):
    with pytest.raises(ValueError):
        world.inject_fault("meteor")


@pytest.mark.slow
def test_infer_expected_reads_typed_instructions(fresh):
    w = fresh
    assert w.infer_expected("pick up the red cube", "pick") == {
        "action": "pick",
        "object": "red cube",
        "inferred": True,
    }
    # the bowl is a container: a pick names the first object that is not one
    assert w.infer_expected("take the yellow block out of the blue bowl", "pick")["object"] == "yellow block"
    assert w.infer_expected("wave at the camera", "pick") is None
    assert w.infer_expected("put it in the blue bowl", "place") is None  # nothing held: no place to judge
    sim_arm(w).pick(top_of(w, "red cube"))
    assert w.infer_expected("put the red cube in the blue bowl", "place") == {
        "action": "place",
        "object": "red cube",
        "container": "blue bowl",
        "inferred": True,
    }
    assert w.infer_expected("place it next to the green cube", "place") == {
        "action": "place",
        "object": "red cube",
        "near": "green cube",
        "inferred": True,
    }
    assert w.infer_expected("place it on top of the green cube", "place") == {
        "action": "place",
        "object": "red cube",
        "on": "green cube",
        "inferred": True,
    }
    assert w.infer_expected("put it in the mug", "place")["near"] == "white mug"  # a mug is not a container
    assert w.infer_expected(None, "place") is None


def test_mujoco_forward_kinematics_agrees_with_the_ik_chain(fresh):
    """The MJCF arm is built from the same joint table as ikpy: the TCP site MuJoCo computes at a
    joint vector equals ``Lite6Kinematics.fk`` there."""
    import mujoco

    ph = fresh.physics
    data = mujoco.MjData(ph.model)
    for q in ([0, 0, 0, 0, 0, 0], [0.3, 0.4, 1.2, -0.5, 0.8, 1.0], [-1.0, -0.2, 2.0, 0.7, -1.1, -2.5]):
        data.qpos[ph._arm_qadr] = q
        mujoco.mj_kinematics(ph.model, data)
        site = mujoco.mj_name2id(ph.model, mujoco.mjtObj.mjOBJ_SITE, "tcp")
        T = fresh.kinematics.fk(q, "lite_gripper")
        np.testing.assert_allclose(data.site_xpos[site], T[:3, 3], atol=1e-6)
        np.testing.assert_allclose(data.site_xmat[site].reshape(3, 3), T[:3, :3], atol=1e-5)
