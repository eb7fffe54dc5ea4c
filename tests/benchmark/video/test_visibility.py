"""Visibility: a hand-made table for the real ARKitScenes frames, and box projection with poses
against coverages worked out by hand (pinhole, fx = fy = 100, c = (50, 50), 100 x 100 image)."""

import numpy as np
import pytest

from pointlab.benchmark.video.errors import RecordError
from pointlab.benchmark.video.sampling import nested_indices
from pointlab.benchmark.video.visibility import VisibilityTable, box_visibility, table_from_poses

K = np.array([[100.0, 0, 50], [0, 100.0, 50], [0, 0, 1]])


def corners(center, extent):
    s = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    return np.asarray(center, float) + s * np.asarray(extent, float) / 2


def test_real_table_counts_per_budget(arkit_visibility):
    table = VisibilityTable.load(arkit_visibility)
    all_frames = range(28)
    f16 = nested_indices(28, 16)  # 0 2 4 5 7 9 11 13 14 16 18 20 22 23 25 27
    # chairs: #0 (frames 10, 12), #1 (12, 15), #2 (14), #3 (14, 15); of those only frame 14 is in f16
    assert table.count("chair", all_frames) == 4
    assert table.count("chair", f16) == 2
    assert table.count("table", f16) == 1
    assert table.visible(["tv", "stove"], f16)  # tv in 18 and 23, stove in 0 and 5
    assert not table.visible(["chair#0"], f16)  # chair#0 only in frames 10 and 12
    assert table.visible(["chair#0"], all_frames)
    assert not table.visible(["stool"], all_frames)  # the stool is never seen
    assert table.shows(12, ["chair"]) is True and table.shows(1, ["chair"]) is False
    assert table.shows(99, ["chair"]) is None  # unannotated frame


def test_bad_tables(tmp_path):
    with pytest.raises(RecordError):
        VisibilityTable.from_dict({"frames": {"x": ["chair#0"]}})
    with pytest.raises(RecordError):
        VisibilityTable.from_dict({"frames": {"1": "chair#0"}})
    with pytest.raises(RecordError):
        VisibilityTable.from_dict([1, 2])
    (tmp_path / "t.json").write_text("{oops")
    with pytest.raises(RecordError):
        VisibilityTable.load(tmp_path / "t.json")


def test_box_coverage_by_hand():
    eye = np.eye(4)
    # 0.4 m cube face at z 1.9..2.1: extremes at z = 1.9, u = 50 +- 100*0.2/1.9 -> side 21.05 px
    v = box_visibility(corners([0, 0, 2], [0.4, 0.4, 0.2]), eye, K, 100, 100)
    assert v.coverage_frac == pytest.approx((2 * 20 / 1.9) ** 2 / 1e4)  # 0.04432
    assert not v.visible and v.needs_review  # below ReVSI's 5%
    assert box_visibility(corners([0, 0, 2], [0.4, 0.4, 0.2]), eye, K, 100, 100, min_coverage_frac=0.04).visible
    # shifted right to x = 1: u from 50 + 80/2.1 = 88.10 to 50 + 120/1.9 = 113.2, clipped at 99.5
    v = box_visibility(corners([1, 0, 2], [0.4, 0.4, 0.2]), eye, K, 100, 100)
    assert v.coverage_frac == pytest.approx((99.5 - (50 + 80 / 2.1)) * (2 * 20 / 1.9) / 1e4)
    assert v.box_px[2] == 99.5
    # behind the camera
    v = box_visibility(corners([0, 0, -2], [0.4, 0.4, 0.2]), eye, K, 100, 100)
    assert (v.in_front, v.visible, v.coverage_frac) == (False, False, 0.0)


def test_box_crossing_near_plane_and_pose():
    # a long box from z = -1 to z = 3 straight ahead: clipped at the near plane, it fills the image
    v = box_visibility(corners([0, 0, 1], [0.5, 0.5, 4]), np.eye(4), K, 100, 100)
    assert v.coverage_frac == pytest.approx(1.0)
    # the camera moved 2 m back along z sees the first cube at 4 m: side 2*20/3.9 px
    T = np.eye(4)
    T[2, 3] = -2.0
    v = box_visibility(corners([0, 0, 2], [0.4, 0.4, 0.2]), T, K, 100, 100)
    assert v.coverage_frac == pytest.approx((40 / 3.9) ** 2 / 1e4)


def test_occlusion_from_depth():
    box = corners([0, 0, 2], [1.0, 1.0, 0.2])  # coverage (100/1.9)^2/1e4 = 0.277
    wall = np.full((100, 100), 1.0)  # a surface 1 m away hides the box
    assert not box_visibility(box, np.eye(4), K, 100, 100, wall).visible
    assert box_visibility(box, np.eye(4), K, 100, 100, np.full((100, 100), 2.0)).unoccluded_frac == 1.0
    far = box_visibility(box, np.eye(4), K, 100, 100, np.full((100, 100), 6.0))
    assert far.unoccluded_frac is None and far.visible  # only background pixels: no evidence of occlusion
    holes = box_visibility(box, np.eye(4), K, 100, 100, np.zeros((100, 100)))
    assert holes.unoccluded_frac is None
    with pytest.raises(ValueError):
        box_visibility(box, np.eye(4), K, 100, 100, np.zeros((10, 10)))


def test_table_from_poses():
    poses = [np.eye(4), np.eye(4)]
    poses[1][0, 3] = 10.0  # second frame looks 10 m to the side
    table, per_frame = table_from_poses({"sofa#0": corners([0, 0, 2], [1, 1, 0.2])}, poses, K, 100, 100)
    assert table.frames == {0: frozenset({"sofa#0"}), 1: frozenset()}
    assert per_frame[1]["sofa#0"].coverage_frac == 0.0


def test_table_file_with_a_bom_is_read(tmp_path):
    from pointlab.benchmark.video.visibility import VisibilityTable

    p = tmp_path / "vis.json"
    p.write_bytes(b'\xef\xbb\xbf{"frames": {"0": ["chair#0"], "3": []}}')
    t = VisibilityTable.load(p)
    assert t.shows(0, ["chair"]) is True and t.shows(3, ["chair"]) is False and t.shows(1, ["chair"]) is None
