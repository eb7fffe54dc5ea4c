"""The sim RGB-D camera (MuJoCo): geometry worked out by hand, colours, RealSense-like noise and
holes, the arm in view, per-frame masks, frame reuse, depth on demand."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.perception.camera import make_camera
from pointlab.perception.errors import CameraNotConnectedError, CameraSourceError
from pointlab.sim_mock.camera import SimCamera
from pointlab.sim_mock.world import DEFAULT_CAMERA_EYE_M, DEFAULT_CAMERA_TARGET_M, SimWorld


@pytest.fixture(scope="module")
def clean(world):
    world.reset()
    with make_camera("sim:clean", world=world, fps=0) as cam:
        yield cam.read()


@pytest.fixture(scope="module")
def noisy(world):
    world.reset()
    with make_camera("sim", world=world, fps=0, seed=1) as cam:
        yield cam.read()


def _hand_camera():
    """The camera frame from the eye/target constants, by hand: z forward to the target, x right
    (horizontal), y down."""
    eye, tgt = np.array(DEFAULT_CAMERA_EYE_M), np.array(DEFAULT_CAMERA_TARGET_M)
    z = (tgt - eye) / np.linalg.norm(tgt - eye)
    x = np.cross(z, [0, 0, 1.0])
    x /= np.linalg.norm(x)
    return eye, np.stack([x, np.cross(z, x), z], axis=1)


def test_frame_format(clean):
    assert clean.color.shape == (480, 640, 3) and clean.color.dtype == np.uint8
    assert clean.depth.shape == (480, 640) and clean.depth.dtype == np.uint16
    assert clean.depth_scale_m == 0.001
    i = clean.intrinsics
    assert (i.width, i.height) == (640, 480) and 600 <= i.fx == i.fy <= 630
    assert abs(i.ppx - 320) < 5 and abs(i.ppy - 240) < 5


@pytest.mark.parametrize("pixel", [(600, 440), (40, 400), (560, 200)])
def test_table_depth_equals_the_hand_computed_range(clean, noisy, pixel):
    u, v = pixel
    eye, R = _hand_camera()
    i = clean.intrinsics
    ray = R @ [(u - i.ppx) / i.fx, (v - i.ppy) / i.fy, 1.0]
    t = -eye[2] / ray[2]  # where the ray meets the table plane z = 0; t is the optical z (depth)
    assert 0.4 < t < 1.2
    assert clean.depth[v, u] * 0.001 == pytest.approx(t, abs=0.0006)  # uint16 millimetres
    window = noisy.depth[v - 3 : v + 4, u - 3 : u + 4].astype(float)
    assert np.median(window[window > 0]) * 0.001 == pytest.approx(t, abs=0.004)


def test_known_table_point_projects_where_its_depth_is(clean):
    eye, R = _hand_camera()
    p = np.array([0.45, -0.25, 0.0])  # a bare table point
    pc = R.T @ (p - eye)
    i = clean.intrinsics
    u, v = i.fx * pc[0] / pc[2] + i.ppx, i.fy * pc[1] / pc[2] + i.ppy
    assert clean.depth[int(round(v)), int(round(u))] * 0.001 == pytest.approx(pc[2], abs=0.003)


def _hue_distance(rgb_a, rgb_b) -> float:
    a = np.asarray(rgb_a, float)
    b = np.asarray(rgb_b, float)
    return float(np.linalg.norm(a / (np.linalg.norm(a) + 1e-9) - b / (np.linalg.norm(b) + 1e-9)))


def test_object_centres_project_onto_their_colour(world, noisy):
    eye, R = _hand_camera()
    i = noisy.intrinsics
    objects = world.scene.objects
    for o in objects:
        if o.shape == "mug":  # its top centre is the hollow inside, in the mug's own shadow
            continue
        pc = R.T @ (o.top_center_m - eye)
        u, v = int(round(i.fx * pc[0] / pc[2] + i.ppx)), int(round(i.fy * pc[1] / pc[2] + i.ppy))
        seen = noisy.color[v - 1 : v + 2, u - 1 : u + 2].reshape(-1, 3).mean(axis=0)
        # the colour there is closest to this object's albedo among all objects and the table
        candidates = {x.name: x.color_rgb for x in objects} | {"table": world.scene.table_color_rgb}
        nearest = min(candidates, key=lambda n: _hue_distance(seen, candidates[n]))
        assert candidates[nearest] == o.color_rgb, (o.name, seen)  # two green cubes share a colour


def test_holes_line_object_edges_but_not_the_table(clean, noisy, world):
    shiny = world.masks(noisy)["orange can"]
    depth_c = clean.depth.astype(float) * 0.001
    jumps = np.zeros(depth_c.shape, bool)
    jumps[:, 1:] |= np.abs(np.diff(depth_c, axis=1)) > 0.03
    jumps[1:, :] |= np.abs(np.diff(depth_c, axis=0)) > 0.03
    holes = noisy.depth == 0
    assert jumps.sum() > 200
    assert holes[jumps].mean() > 0.8  # (almost) every pixel at a >3 cm jump is a hole
    # away from every edge, holes are rare random dropouts
    from scipy.ndimage import binary_dilation

    near_edges = binary_dilation(jumps, iterations=5) | shiny
    on_table = (depth_c > 0) & (depth_c < 1.3)  # not the floor beyond the table's far edge
    assert 0.0005 < holes[~near_edges & on_table].mean() < 0.01
    assert holes.mean() < 0.06


def test_the_shiny_can_loses_depth_the_matte_cubes_do_not(world, noisy):
    from scipy.ndimage import binary_erosion

    masks = world.masks(noisy)
    holes = noisy.depth == 0
    inner = {n: binary_erosion(masks[n], iterations=4) for n in ("orange can", "red cube", "purple cube")}
    assert holes[inner["orange can"]].mean() > 0.15  # metal: dropouts in blocks and at the highlight
    assert holes[inner["red cube"]].mean() < 0.02 and holes[inner["purple cube"]].mean() < 0.05


def test_depth_noise_is_about_a_millimetre_or_two(clean, noisy):
    c, n = clean.depth.astype(float), noisy.depth.astype(float)
    both = (c > 0) & (n > 0) & (np.abs(c - 700) < 50)  # table pixels at 0.65-0.75 m
    diff = (n - c)[both]
    assert both.sum() > 10000
    assert 0.8 < diff.std() < 2.5  # millimetres
    assert abs(diff.mean()) < 0.2


def _lag_corr(r: np.ndarray, ok: np.ndarray, lag: int, axis: int) -> float:
    a, b = (r[:, :-lag], r[:, lag:]) if axis == 1 else (r[:-lag], r[lag:])
    m = (ok[:, :-lag] & ok[:, lag:]) if axis == 1 else (ok[:-lag] & ok[lag:])
    return float(np.corrcoef(a[m], b[m])[0, 1])


def test_depth_noise_is_correlated_along_rows_as_a_stereo_camera_s_is(clean, noisy):
    # Real D4xx-class frames (UnseenObjectClustering's tabletop set), flat 32 px patches with a
    # quadratic removed: correlation 0.92 / 0.69 / 0.36 at 1 / 4 / 8 px along a row, 0.71 / 0.32 at
    # 1 / 4 px down a column (the stereo matcher's window runs along the horizontal epipolar line).
    c, n = clean.depth.astype(float), noisy.depth.astype(float)
    ok = (c > 0) & (n > 0) & (np.abs(c - 700) < 50)
    r = n - c
    assert _lag_corr(r, ok, 1, axis=1) > 0.85
    assert 0.45 < _lag_corr(r, ok, 4, axis=1) < 0.85
    assert _lag_corr(r, ok, 8, axis=1) < 0.5
    assert 0.6 < _lag_corr(r, ok, 1, axis=0) < 0.95
    assert _lag_corr(r, ok, 4, axis=0) < 0.45  # shorter down a column than along a row


def test_sim_depth_compresses_about_as_a_real_frame_does(noisy, uoc_tabletop):
    # lossless PNG (zlib 1) of the nine real 640x480 depth frames: 85-123 kB; i.i.d. noise gave 247 kB
    import cv2

    def png_kb(d):
        return len(cv2.imencode(".png", d, [cv2.IMWRITE_PNG_COMPRESSION, 1])[1]) / 1e3

    real = [png_kb(cv2.imread(str(f), cv2.IMREAD_UNCHANGED)) for f in sorted(uoc_tabletop.glob("*-depth.png"))]
    assert len(real) == 9 and 80 < min(real) and max(real) < 130
    assert max(real) < png_kb(noisy.depth) < 1.5 * max(real)


def test_moving_an_object_changes_the_picture_and_each_frame_keeps_its_masks(world):
    world.reset()
    cam = SimCamera(world=world, fps=0, noise=False).connect()
    before = cam.read()
    x, y, _ = world.object("red cube").position_m
    world.set_object_pose("red cube", [0.40, 0.02, 0.0])  # moved away: the table shows where it was
    after = cam.read()
    eye, R = _hand_camera()
    i = before.intrinsics
    pc = R.T @ (np.array([x, y, 0.04]) - eye)
    u, v = int(round(i.fx * pc[0] / pc[2] + i.ppx)), int(round(i.fy * pc[1] / pc[2] + i.ppy))
    assert before.depth[v, u] < after.depth[v, u]  # the old top face is gone: table (farther) there now
    assert after.index == before.index + 1 and after.stamp_ns >= before.stamp_ns
    # the masks are those of the state each frame shows, asked for after the world changed
    m_before, m_after = world.masks(before)["red cube"], world.masks(after)["red cube"]
    assert m_before[v, u] and not m_after[v, u] and m_after.sum() > 300
    with pytest.raises(KeyError):
        SimWorld().masks(before)  # another world's camera did not make it
    world.reset()


def test_every_object_and_the_arm_are_in_view(world, clean):
    masks = world.masks(clean)
    for o in world.scene.objects:
        assert masks[o.name].sum() > 300, o.name  # 3 cm at 0.8 m is about 23 px across
    assert masks["robot"].sum() > 10000  # the Lite 6 above the table, drawn from its meshes
    # no pixel belongs to two things
    assert sum(m.astype(int) for m in masks.values()).max() == 1


def test_unchanged_world_reuses_the_render_and_depth_is_made_only_when_wanted(world):
    world.reset()
    cam = SimCamera(world=world, fps=0).connect()
    frames = [cam.read() for _ in range(4)]
    assert cam.renders == 1 and len({f.stamp_ns for f in frames}) == 4
    assert not np.array_equal(frames[0].color, frames[1].color)  # fresh sensor noise each frame
    cam.want_depth = False
    f = cam.read()
    assert not f.depth.any() and f.color.mean() > 50
    world.bump()
    cam.read()
    assert cam.renders == 2


def test_spec_options_and_errors(world):
    cam = make_camera("sim:clean", world=world, fps=0)
    assert isinstance(cam, SimCamera) and not cam.noise
    with pytest.raises(CameraSourceError):
        make_camera("sim:tool", world=world)  # the arm is always drawn now
    with pytest.raises(CameraSourceError):
        make_camera("sim:fisheye", world=world)
    with pytest.raises(CameraNotConnectedError):
        cam.read()


def test_fps_pacing(world):
    import time

    t0 = time.monotonic()
    cam = SimCamera(world=world, fps=50.0, noise=False).connect()
    for _ in range(6):
        cam.read()
    # frame k is not available before k / fps after connect: the sixth frame (k = 5) not before 100 ms
    assert time.monotonic() - t0 >= 5 / 50


@pytest.mark.slow
def test_while_the_arm_moves_at_most_15_states_a_second_are_drawn_and_the_end_at_once(world):
    import threading
    import time

    from pointlab.robot.arm import TcpPose
    from pointlab.sim_mock.arm import SimArmDriver

    world.reset()
    driver = SimArmDriver(world=world, time_scale=1.0)
    driver.connect()
    cam = SimCamera(world=world, fps=0, noise=False).connect()
    cam.read()
    mover = threading.Thread(target=driver.move_linear, args=(TcpPose((0.20, 0.10, 0.25)), 0.1, 1.0))  # ~1.1 s
    t0 = time.monotonic()
    mover.start()
    frames = []
    while mover.is_alive():
        frames.append(cam.read())
    elapsed = time.monotonic() - t0
    renders = cam.renders - 1
    assert len(frames) > renders  # frames between renders repeat the last state drawn
    assert renders <= 15 * elapsed + 2
    # each frame records the state it shows: frames sharing a render share a capture (the world keeps
    # the last 900 frames' captures; a loop at fps=0 may read more than that in the 1.1 s)
    captures = {world.frames.capture_of(f).version for f in frames[-800:]}
    assert len(captures) <= renders + 1
    after = cam.read()  # the motion is over: this frame shows its end
    assert world.frames.capture_of(after).version == world.capture().version
    world.reset()
