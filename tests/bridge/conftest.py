"""Fixtures of the bridge tests."""

import pytest

from pointlab.perception.replay import list_frame_ids, load_rgbd_frame


@pytest.fixture(scope="session")
def real_frames(uoc_tabletop):
    """The nine real uoc_tabletop RGB-D frames (``RGBDFrame``, 640x480, depth in mm)."""
    return [load_rgbd_frame(uoc_tabletop, i) for i in list_frame_ids(uoc_tabletop)]
