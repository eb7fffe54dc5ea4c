"""Frame sources: a folder of real frames and an mp4 encoded with PyAV in tmp_path."""

import numpy as np
import pytest

from pointlab.benchmark.video.errors import FrameSourceError
from pointlab.benchmark.video.frames import FolderFrames, open_frames, write_frame_folder, write_video


def gray_frames(n, h=48, w=64):
    # frame i is a flat gray of level 5*i, so a decoded frame tells its own index
    return [np.full((h, w, 3), 5 * i, np.uint8) for i in range(n)]


def test_real_folder(arkit_frames):
    with open_frames(arkit_frames) as src:
        assert isinstance(src, FolderFrames)
        assert src.total == 28
        assert src.names([0, 27]) == ["frame_00003.jpg", "frame_00030.jpg"]
        img = src.read(5)
        assert img.shape == (640, 480, 3) and img.dtype == np.uint8
        with pytest.raises(FrameSourceError):
            src.read(28)


def test_folder_natural_order(tmp_path):
    for name, level in [("f_10.png", 100), ("f_9.png", 90), ("f_1.png", 10)]:
        write_frame_folder([np.full((4, 4, 3), level, np.uint8)], tmp_path / "tmp_single")
        (tmp_path / "tmp_single" / "frame_00000.png").rename(tmp_path / name)
    (tmp_path / "notes.txt").write_text("not a frame")
    with open_frames(tmp_path) as src:
        assert src.total == 3
        assert [int(x[0, 0, 0]) for x in src.read_many([0, 1, 2])] == [10, 90, 100]


def test_mp4_sequential_and_seek_agree(tmp_path):
    path = tmp_path / "clip.mp4"
    assert write_video(gray_frames(40), path, fps=30, gop=10) == 40
    with open_frames(path) as src:
        assert (src.total, src.fps) == (40, 30.0)
        want = [39, 0, 17, 17, 25]
        for method in ("sequential", "seek", "auto"):
            levels = [float(f.mean()) for f in src.read_many(want, method=method)]
            assert levels == pytest.approx([5 * i for i in want], abs=3), method
        with pytest.raises(ValueError):
            src.read_many([1], method="teleport")


def test_bad_sources(tmp_path):
    with pytest.raises(FrameSourceError):
        open_frames(tmp_path / "missing.mp4")
    (tmp_path / "broken.mp4").write_bytes(b"\x00" * 100)
    with pytest.raises(FrameSourceError):
        open_frames(tmp_path / "broken.mp4")
    (tmp_path / "x.gif").write_bytes(b"GIF89a")
    with pytest.raises(FrameSourceError):
        open_frames(tmp_path / "x.gif")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FrameSourceError):
        open_frames(empty)
    (empty / "bad.jpg").write_bytes(b"not a jpeg")
    with open_frames(empty) as src, pytest.raises(FrameSourceError):
        src.read(0)
