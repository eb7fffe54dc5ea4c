"""bridge.recording.clip: the points drawn on a frame, and H.264 clips that decode and meet the size target
(issue 10: at most 3 MB for a 20 s trial at 640x480) on real frames."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.bridge.recording.clip import FIRST_POINT_RGB, OTHER_POINT_RGB, ClipSettings, ClipWriter, draw_points
from pointlab.perception.replay import list_frame_ids, load_rgbd_frame

from tests.bridge.recording.test_recorder import decode_clip


def test_the_first_point_is_large_and_ringed_the_others_small():
    img = np.full((100, 120, 3), 100, np.uint8)
    out = draw_points(img, [(30.0, 40.0), (90.0, 60.0)])
    assert tuple(out[40, 30]) == FIRST_POINT_RGB and tuple(out[40, 30 + 8]) == FIRST_POINT_RGB  # radius 9
    assert out[40, 30 + 10].min() > 180  # white ring 9..11 (edges anti-aliased)
    assert out[40, 30 + 12].max() < 60  # black ring 11..13
    assert tuple(out[40, 30 + 15]) == (100, 100, 100)
    assert tuple(out[60, 90]) == OTHER_POINT_RGB and tuple(out[60, 90 + 3]) == OTHER_POINT_RGB  # radius 4
    assert out[60, 90 + 5].max() < 60 and tuple(out[60, 90 + 8]) == (100, 100, 100)
    assert tuple(img[40, 30]) == (100, 100, 100)  # the input is not drawn on


def test_no_point_claims_to_be_the_target_when_the_first_was_invalid():
    img = np.zeros((60, 60, 3), np.uint8)
    out = draw_points(img, [(20.0, 20.0)], first_is_target=False)
    assert tuple(out[20, 20]) == OTHER_POINT_RGB and not out[20, 30].any()  # small: radius 6 at most


def test_points_scale_with_the_frame_and_bad_ones_are_skipped():
    img = np.zeros((200, 200, 3), np.uint8)
    out = draw_points(img, [(50.0, 25.0), (float("nan"), 3.0)], scale=2.0)
    assert tuple(out[50, 100]) == FIRST_POINT_RGB
    assert np.count_nonzero(out.any(axis=2)) < 30 * 30  # one disc only


def test_frames_out_of_time_order_are_skipped_and_sizes_are_made_even(tmp_path):
    w = ClipWriter(tmp_path / "c.mp4")
    frame = np.full((101, 1281, 3), 60, np.uint8)  # odd, and wider than 640
    assert w.add(frame, 10**9) and w.add(frame, 10**9 + 100_000_000)
    assert not w.add(frame, 10**9 + 50_000_000)  # earlier than the previous
    assert w.close() == 2
    codec, size, frames = decode_clip(tmp_path / "c.mp4")
    assert codec == "h264" and size == (640, 50) and len(frames) == 2  # 1281 -> 640 wide, 101*640/1281 -> 50


def test_an_empty_clip_makes_no_file(tmp_path):
    assert ClipWriter(tmp_path / "none.mp4").close() == 0
    assert not (tmp_path / "none.mp4").exists()


@pytest.mark.slow
def test_twenty_seconds_at_640x480_stay_under_3_mb_even_when_every_frame_is_a_new_scene(tmp_path, uoc_tabletop):
    real = [load_rgbd_frame(uoc_tabletop, i).color for i in list_frame_ids(uoc_tabletop)]
    rng = np.random.default_rng(0)
    noisy = [np.clip(real[3] + rng.normal(0, 2.0, real[3].shape), 0, 255).astype(np.uint8) for _ in range(8)]
    sizes = {}
    for name, frames in (("cuts", real), ("still", noisy)):
        w = ClipWriter(tmp_path / f"{name}.mp4", ClipSettings())
        for k in range(200):  # 20 s at 10 fps
            w.add(frames[k % len(frames)], k * 100_000_000)
        assert w.close() == 200
        sizes[name] = (tmp_path / f"{name}.mp4").stat().st_size
        _, size, decoded = decode_clip(tmp_path / f"{name}.mp4")
        assert size == (640, 480) and len(decoded) == 200
        assert decoded[-1][0] == pytest.approx(19.9)
    # nine different real scenes, one per frame, is the worst a tabletop gives: the VBV cap holds it
    assert sizes["cuts"] <= 3_000_000, sizes
    # a still real scene with sensor noise, what most of a trial is: a small fraction of that
    assert sizes["still"] <= 600_000, sizes
