"""``SessionConfig(camera_process=True)``: the sim camera node in a process of its own
(``sim_mock.camera_process``). The child renders the parent's physics state and reports each frame's
capture back, so the sim oracle (which finds the state an image shows by its thumbnail) and the
trial's automatic check work as with the in-process camera."""

from __future__ import annotations

import time

import pytest

from pointlab.bridge.session import SessionConfig, start_session

from tests.bridge.ros.helpers import run_trial

pytestmark = [pytest.mark.ros]


def test_a_pick_and_a_place_through_the_camera_process(ros_env):
    with start_session(SessionConfig(camera="sim", robot="sim", time_scale=0.02, camera_process=True)) as s:
        assert s.camera_node is None and s.camera_process is not None
        assert s.wait_ready(30)
        pick = run_trial(s, "sim-oracle", "pick up the red cube")
        place = run_trial(s, "sim-oracle", "put it in the blue bowl")
        frames = s.camera_process.frames_received
        deadline = time.monotonic() + 20
        while s.ports.live_view.latest_jpeg() is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        jpeg = s.ports.live_view.latest_jpeg()[0]
        child = s.camera_process.process
    assert (pick.sim_success, pick.sim_detail) == (True, "holding red cube"), pick
    assert (place.sim_success, place.sim_detail) == (True, "red cube is in blue bowl"), place
    assert frames > 10 and jpeg[:2] == b"\xff\xd8"
    assert child.poll() is not None  # the child is gone with the session
