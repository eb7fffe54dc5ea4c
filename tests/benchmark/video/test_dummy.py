"""Dummy videos (ReVSI sec. 5) on the real ARKitScenes frames and their visibility table."""

import numpy as np
import pytest

from pointlab.benchmark.video.dummy import make_dummy, render_dummy
from pointlab.benchmark.video.errors import VideoBenchError
from pointlab.benchmark.video.frames import open_frames
from pointlab.benchmark.video.sampling import sample_frames
from pointlab.benchmark.video.visibility import VisibilityTable

CHAIR_FRAMES = {10, 12, 14, 15}


def test_query_dropped_removes_every_chair_frame(arkit_frames, arkit_visibility):
    table = VisibilityTable.load(arkit_visibility)
    sel = sample_frames(28, 16)
    d = make_dummy("query_dropped", sel, visibility=table, query_objects=["chair"])
    assert len(d.slots) == 16 and not set(d.slots) & CHAIR_FRAMES
    # 24 chair-free frames remain; 16 of them by position rint(k * 23/15): the kept list is
    # 0..9, 11, 13, 16..27, positions 0 2 3 5 6 8 9 11 12 14 15 17 18 20 21 23
    kept = [i for i in range(28) if i not in CHAIR_FRAMES]
    assert list(d.slots) == [kept[p] for p in (0, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 23)]
    assert table.count("chair", d.slots) == 0  # the count ground truth of this video is 0
    with open_frames(arkit_frames) as src:
        imgs = render_dummy(src, d)
        assert len(imgs) == 16 and np.array_equal(imgs[-1], src.read(27))
    with pytest.raises(ValueError):
        make_dummy("query_dropped", sel, query_objects=["chair"])


def test_first_frame_repeated_and_black(arkit_frames):
    sel = sample_frames(28, 16)
    with open_frames(arkit_frames) as src:
        rep = render_dummy(src, make_dummy("first_frame_repeated", sel))
        first = src.read(0)
        assert len(rep) == 16 and all(np.array_equal(x, first) for x in rep)
        black = render_dummy(src, make_dummy("black", sel))
        assert len(black) == 16 and black[0].shape == (640, 480, 3) and max(int(x.max()) for x in black) == 0
    with pytest.raises(ValueError):
        make_dummy("sepia", sel)


def test_query_dropped_without_free_frames():
    table = VisibilityTable.from_dict({"frames": {"0": ["tv#0"], "1": ["tv#0"]}})
    with pytest.raises(VideoBenchError):
        make_dummy("query_dropped", sample_frames(3, 2), visibility=table, query_objects=["tv"])
