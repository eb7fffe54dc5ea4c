"""The replay camera on the real uoc_tabletop frames."""

import json

import numpy as np
import pytest

from pointlab.perception import CameraNotConnectedError, CameraSourceError, make_camera
from pointlab.perception.replay import list_frame_ids, load_camera_params, load_rgbd_frame


def test_camera_params_and_frames(uoc_tabletop):
    intr, scale = load_camera_params(uoc_tabletop)
    assert (intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy) == (
        640,
        480,
        612.937,
        613.173,
        322.549,
        248.158,
    )
    assert scale == 0.001  # README: depth PNGs are millimetres
    assert list_frame_ids(uoc_tabletop) == [f"{i:06d}" for i in range(9)]


def test_colour_is_rgb(uoc_tabletop):
    # Frame 4: the toy block at (225, 340) is yellow (high R and G, low B); the cup at (465, 280) is
    # purple (R and B above G). Read in BGR these would swap and both tests would fail.
    f = load_rgbd_frame(uoc_tabletop, 4)
    r, g, b = (int(c) for c in f.color[340, 225])
    assert r > 150 and g > 150 and b < 80
    r, g, b = (int(c) for c in f.color[280, 465])
    assert r > g + 40 and b > g + 40
    assert f.depth.dtype == np.uint16 and f.depth[280, 465] == 508


def test_replay_loops_in_file_order(uoc_tabletop):
    with make_camera(f"replay:{uoc_tabletop}", fps=0) as cam:
        idx = [cam.read().index for _ in range(11)]
    assert idx == [0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1]


def test_replay_subset(uoc_tabletop):
    with make_camera(f"replay:{uoc_tabletop}#000004", fps=0) as cam:
        assert {cam.read().index for _ in range(3)} == {4}


def test_read_before_connect_raises(uoc_tabletop):
    cam = make_camera(f"replay:{uoc_tabletop}")
    with pytest.raises(CameraNotConnectedError):
        cam.read()


def test_bad_sources(tmp_path):
    with pytest.raises(CameraSourceError):
        make_camera("nosuch:thing")
    with pytest.raises(CameraSourceError):
        make_camera(f"replay:{tmp_path / 'missing'}").connect()
    (tmp_path / "camera_params.json").write_text("{not json")
    with pytest.raises(CameraSourceError, match="malformed"):
        make_camera(f"replay:{tmp_path}").connect()
    (tmp_path / "camera_params.json").write_text(
        json.dumps({"img_width": 4, "img_height": 3, "fx": 1, "fy": 1, "x_offset": 2, "y_offset": 1})
    )
    (tmp_path / "000000-color.png").write_bytes(b"\x89PNG corrupt")
    (tmp_path / "000000-depth.png").write_bytes(b"corrupt")
    cam = make_camera(f"replay:{tmp_path}", fps=0).connect()
    with pytest.raises(CameraSourceError, match="cannot read"):
        cam.read()


def test_params_path_that_is_a_folder_or_under_a_file(tmp_path):
    # IsADirectoryError / NotADirectoryError used to escape as raw OSErrors (a traceback in the CLI)
    (tmp_path / "camera_params.json").mkdir()
    with pytest.raises(CameraSourceError, match="cannot read camera parameters"):
        load_camera_params(tmp_path)
    f = tmp_path / "file.png"
    f.write_bytes(b"x")
    with pytest.raises(CameraSourceError, match="cannot read camera parameters"):
        load_camera_params(f)
