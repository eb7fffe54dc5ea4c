"""The sim pointing oracle: answers from the image it was sent (the masks of the frame it shows),
which object, which pixel, JPEG and resizing on the way, held objects, threads."""

from __future__ import annotations

import threading

import cv2
import numpy as np
import pytest

from pointlab.perception.deproject import deproject_pixel
from pointlab.sim_mock.camera import SimCamera
from pointlab.sim_mock.oracle import SceneOracle
from pointlab.sim_mock.world import SimWorld

from .conftest import sim_arm, top_of


@pytest.fixture
def cam(fresh):
    c = SimCamera(world=fresh, fps=0, seed=4).connect()
    yield c
    c.disconnect()


@pytest.fixture
def oracle(fresh) -> SceneOracle:
    return SceneOracle(fresh)


def jpeg(rgb: np.ndarray, quality: int = 75) -> np.ndarray:
    """What the image looks like after the JPEG data URL a model client sends."""
    ok, buf = cv2.imencode(".jpg", rgb[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
    decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    assert ok and decoded is not None
    return decoded[:, :, ::-1]


def _on(world, frame, u, v):
    """Base-frame point under pixel (u, v) of a frame, through its depth and the true calibration."""
    d = deproject_pixel(frame, u, v)
    assert d.valid, d.reason
    return world.calibration().camera_to_base(d.point_m)


def test_points_deproject_onto_the_named_objects_top_centre(fresh, cam, oracle):
    frame = cam.read()
    for o in fresh.scene.objects:
        if o.shape == "mug":
            continue  # its top is a thin rim around a hole: the point is on the rim (next test)
        [(u, v)] = oracle.points(f"the {o.name}", jpeg(frame.color))
        p = _on(fresh, frame, u, v)
        # the top-face centre, from the scene file: hand-checkable. A bowl: the middle of the part
        # of its floor the camera sees past the near wall, within 2 cm of the floor's centre
        tol = 0.02 if o.is_container else 0.008
        assert np.linalg.norm(p - o.top_center_m) < tol, (o.name, p, o.top_center_m)
    assert oracle.points("Pick up the RED BLOCK.", frame.color) == oracle.points("the red cube", frame.color)


def test_mug_rim_and_mug_handle(fresh, cam, oracle):
    frame = cam.read()
    masks = fresh.masks(frame)
    [(u, v)] = oracle.points("pick up the mug", frame.color)
    p = _on(fresh, frame, u, v)
    mug = fresh.object("white mug")
    assert p[2] == pytest.approx(mug.height_m, abs=0.005)  # on the rim, 8.5 cm up
    [(uh, vh)] = oracle.points("grab the mug by its handle", frame.color)
    assert masks["white mug"][round(vh), round(uh)]
    ph = _on(fresh, frame, uh, vh)
    # the handle stands out on the mug's local +x (yaw 80 deg): 3.5 + 2.5 cm from the axis
    local = ph[:2] - np.array(mug.position_m[:2])
    heading = np.radians(mug.yaw_deg)
    assert local @ [np.cos(heading), np.sin(heading)] > 0.035


def test_same_text_on_two_images_gets_each_images_point(fresh, cam, oracle):
    """Issue 11: the oracle answers from the image, not from the query text alone."""
    before = cam.read()
    fresh.set_object_pose("red cube", [0.40, 0.02, 0.0])
    after = cam.read()
    [(u0, v0)] = oracle.points("pick up the red cube", jpeg(before.color))
    [(u1, v1)] = oracle.points("pick up the red cube", jpeg(after.color))
    assert np.hypot(u1 - u0, v1 - v0) > 30
    assert np.linalg.norm(_on(fresh, after, u1, v1)[:2] - [0.40, 0.02]) < 0.008
    assert fresh.masks(before)["red cube"][round(v0), round(u0)]  # the old frame's own masks
    assert not fresh.masks(after)["red cube"][round(v0), round(u0)]


def test_points_scale_with_the_image_size(fresh, cam, oracle):
    frame = cam.read()
    [(u, v)] = oracle.points("the purple cube", frame.color)
    small = cv2.resize(frame.color, (320, 240), interpolation=cv2.INTER_AREA)
    [(us, vs)] = oracle.points("the purple cube", jpeg(small))
    assert (us, vs) == pytest.approx(((u + 0.5) / 2 - 0.5, (v + 0.5) / 2 - 0.5))


@pytest.mark.parametrize("text", ["", "pick up the unicorn", "redcube", None, "the cube"])
def test_nothing_named_gives_no_points(cam, oracle, text):
    assert oracle.points(text, cam.read().color) == []


def test_an_image_that_is_no_frame_of_this_world_gets_no_point(cam, oracle):
    frame = cam.read()
    assert oracle.points("the red cube", np.full_like(frame.color, 90)) == []
    assert oracle.points("the red cube", frame.color[:, :, 0]) == []  # not RGB
    assert oracle.points("the red cube", None) == []
    other = SimWorld()  # the same table, the red cube where it never was in this world
    other.set_object_pose("red cube", [0.26, 0.03, 0.0])
    with SimCamera(world=other, fps=0) as c:
        elsewhere = c.read()
    assert oracle.points("the red cube", elsewhere.color) == []
    other.close()


@pytest.mark.slow
def test_holding_something_points_at_the_other_object(fresh, cam, oracle):
    sim_arm(fresh).pick(top_of(fresh, "red cube"))
    frame = cam.read()
    bowl = fresh.object("blue bowl")
    for text in ("put it in the blue bowl", "put the red cube in the bowl"):
        [(u, v)] = oracle.points(text, frame.color)
        p = _on(fresh, frame, u, v)
        assert np.linalg.norm(p[:2] - bowl.position_m[:2]) < 0.02 and p[2] == pytest.approx(bowl.floor_m, abs=0.004)
    assert oracle.points("pick up the red cube", frame.color) == []  # the only named thing is held
    [(u, v)] = oracle.points("put it on the green cube", frame.color)
    assert np.linalg.norm(_on(fresh, frame, u, v) - top_of(fresh, "green cube")) < 0.008
    # the reference is the object after the relation word, not the "can" a question starts with
    [(u, v)] = oracle.points("can you put it on top of the green cube", frame.color)
    assert np.linalg.norm(_on(fresh, frame, u, v) - top_of(fresh, "green cube")) < 0.008


@pytest.mark.slow
def test_next_to_points_at_free_table_beside_the_object_and_a_place_there_is_next_to_it(fresh, cam, oracle):
    arm = sim_arm(fresh)
    arm.pick(top_of(fresh, "red cube"))
    frame = cam.read()
    can = fresh.object("orange can")
    [(u, v)] = oracle.points("put it next to the orange can", jpeg(frame.color))
    p = _on(fresh, frame, u, v)
    assert p[2] == pytest.approx(0.0, abs=0.004)  # on the table, not on the can's top
    # from the can's axis: its corner circle 2.5 sqrt(2) + BESIDE_GAP_M 1.5 + the red cube's 2 sqrt(2) cm
    expected_m = 0.025 * 2**0.5 + 0.015 + 0.02 * 2**0.5  # 7.86 cm
    assert np.hypot(*(p[:2] - can.position_m[:2])) == pytest.approx(expected_m, abs=0.005)
    arm.place(p)
    ok, reason = fresh.judge({"action": "place", "object": "red cube", "near": "orange can"})
    assert ok, reason


@pytest.mark.slow
def test_something_in_the_bowl_counts_as_the_bowl(fresh, cam, oracle):
    arm = sim_arm(fresh)
    arm.pick(top_of(fresh, "red cube"))
    arm.place(top_of(fresh, "blue bowl"))
    arm.pick(top_of(fresh, "yellow block"))
    frame = cam.read()
    [(u, v)] = oracle.points("put it in the bowl", frame.color)
    masks = fresh.masks(frame)
    assert masks["blue bowl"][round(v), round(u)] or masks["red cube"][round(v), round(u)]


def test_thread_safe_while_the_arm_moves(fresh, cam, oracle):
    from pointlab.robot.arm import TcpPose
    from pointlab.sim_mock.arm import SimArmDriver

    driver = SimArmDriver(world=fresh, time_scale=0.02)
    driver.connect()
    frame = cam.read()
    errors, results = [], []

    def ask():
        try:
            for _ in range(5):
                results.append(oracle.points("the orange can", frame.color))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for z in (0.30, 0.20, 0.30):
        driver.move_linear(TcpPose((0.25, 0.05, z)), 0.2, 1.0)
        cam.read()
    for t in threads:
        t.join(timeout=30)
    assert not errors and len(results) == 15
    assert all(r == results[0] for r in results)  # one image, one answer


def test_intended_mask_of_a_place_on_is_the_support_and_of_a_place_near_none():
    from pointlab.sim_mock.plugins import SimWorldPlugin

    plugin = SimWorldPlugin()
    try:
        green = SceneOracle(plugin.sim).mask_of("green cube")
        assert green.any()
        on = plugin.intended_mask({"action": "place", "object": "red cube", "on": "green block"})
        assert np.array_equal(on, green)  # where to point for "on": the support itself
        assert plugin.intended_mask({"action": "place", "object": "red cube", "near": "green cube"}) is None
        # an expectation that names no object has no intended mask (it raised AttributeError)
        assert plugin.intended_mask({"action": "pick"}) is None
        assert plugin.intended_mask({"action": "pick", "object": 3}) is None
    finally:
        plugin.sim.close()
