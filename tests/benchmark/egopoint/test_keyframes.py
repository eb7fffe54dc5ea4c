"""Clarity-aware keyframe selection (EgoPoint App. C.1.1) on the real ARKitScenes frames with added
blur: within a trigger window the sharp frame must win."""

import cv2
import numpy as np
import pytest

from pointlab.benchmark.egopoint.keyframes import clarity_metrics, clarity_scores, select_keyframes
from pointlab.benchmark.video.frames import open_frames


def motion_blur(img, length):
    k = np.zeros((length, length))
    k[length // 2, :] = 1.0 / length  # horizontal head motion
    return cv2.filter2D(img, -1, k)


@pytest.fixture(scope="module")
def real_frames(arkit_frames_path):
    with open_frames(arkit_frames_path) as src:
        return src.read_many(range(src.total))


@pytest.fixture(scope="module")
def arkit_frames_path(shared_data):
    p = shared_data / "scenes" / "arkitscenes_47334096_frames"
    if not p.is_dir():
        pytest.skip(f"{p} is absent")
    return p


@pytest.mark.slow
def test_sharp_frame_wins_on_real_frames(real_frames):
    # every third real frame (10 views: kitchen, walls, table, hallway) keeps the test quick
    for i, img in list(enumerate(real_frames))[::3]:
        # a trigger window: the same view with jitter blur before and after the sharp frame
        window = [
            motion_blur(img, 9),
            cv2.GaussianBlur(img, (0, 0), 2.0),
            img,
            motion_blur(img, 15),
            cv2.GaussianBlur(img, (0, 0), 1.0),
        ]
        assert select_keyframes(window) == [2], f"frame {i}"
        scores, _ = clarity_scores(window)
        assert scores[2] == pytest.approx(3.0)  # best on all three metrics: 1 + 1 + 1


def test_more_blur_scores_lower(real_frames):
    img = real_frames[12]  # the dining table: rich texture
    window = [motion_blur(img, n) for n in (25, 15, 7, 3)] + [img]
    scores, raw = clarity_scores(window)
    assert list(np.argsort(scores)) == [0, 1, 2, 3, 4]
    assert [r.laplacian_var for r in raw] == sorted(r.laplacian_var for r in raw)
    assert select_keyframes(window, top_k=2) == [4, 3]


def test_metric_edge_cases():
    flat = np.full((40, 60, 3), 128, np.uint8)
    m = clarity_metrics(flat)
    assert (m.laplacian_var, m.hf_energy, m.edge_density) == (0.0, 0.0, 0.0)
    scores, _ = clarity_scores([flat, flat])
    assert list(scores) == [0.0, 0.0]  # nothing to tell apart: all normalised to 0
    assert select_keyframes([flat, flat]) == [0]
    with pytest.raises(ValueError):
        select_keyframes([])
    with pytest.raises(ValueError):
        clarity_metrics(np.zeros((2, 2, 2, 2)))
