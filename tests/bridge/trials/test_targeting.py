"""bridge.trials.targeting.compute_target on a real RGB-D frame (uoc_tabletop 000003), values by hand.

camera_params.json: fx = 612.937, fy = 613.173, ppx = 322.549, ppy = 248.158 (pixels), depth in mm.
Test calibration (hand-made, rigid): the camera looks straight down from 0.80 m, 0.13 m in front of
the base axis: p_base = (x_c + 0.13, -y_c, 0.80 - z_c).
"""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.bridge.trials.targeting import compute_target
from pointlab.perception.extrinsics import Calibration, RigidTransform
from pointlab.perception.replay import load_rgbd_frame
from pointlab.robot.workspace import Workspace

T_TEST = np.array([[1.0, 0.0, 0.0, 0.13], [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.80], [0.0, 0.0, 0.0, 1.0]])


@pytest.fixture(scope="module")
def frame3(uoc_tabletop):
    return load_rgbd_frame(uoc_tabletop, "000003", stamp_ns=0)


@pytest.fixture(scope="module")
def cal():
    return Calibration(RigidTransform(T_TEST))


def test_valid_target_on_a_flat_patch(frame3, cal):
    # Raw depth PNG around (458, 250): the 11x11 window holds 27 x 773, 76 x 774, 18 x 775 mm, all
    # within the 15 mm band of the centre (774 mm); the median of 121 values is the 61st: 774 mm.
    # x_c = (458 - 322.549) / 612.937 * 0.774 = 0.220987 * 0.774 = 0.171044 m
    # y_c = (250 - 248.158) / 613.173 * 0.774 = 0.0030041 * 0.774 = 0.0023252 m
    # base: (0.171044 + 0.13, -0.0023252, 0.80 - 0.774) = (0.301044, -0.002325, 0.026)
    assert frame3.depth[250, 458] == 774  # the input the hand values start from
    t = compute_target(frame3, [[458.0, 250.0], [10.0, 10.0]], cal, Workspace())
    assert t.valid and t.refusal is None
    assert t.depth_m == pytest.approx(0.774, abs=1e-9)
    np.testing.assert_allclose(t.point_camera_m, [0.171044, 0.0023252, 0.774], atol=2e-6)
    np.testing.assert_allclose(t.point_base_m, [0.301044, -0.0023252, 0.026], atol=2e-6)
    assert t.pixel == (458.0, 250.0)  # only the first point is acted on


def test_no_depth_window_is_refused(frame3, cal):
    # every one of the 121 raw depth values around (150, 102) is 0 (no data)
    assert not frame3.depth[97:108, 145:156].any()
    t = compute_target(frame3, [[150.0, 102.0]], cal, Workspace())
    assert not t.valid and t.refusal.code == "no_depth" and t.refusal.stage == "depth" and t.point_base_m is None


@pytest.mark.parametrize("uv", [(700.0, 100.0), (-5.0, 20.0), (320.0, 480.0), (639.5, 3.0)])
def test_points_off_the_image_are_refused(frame3, cal, uv):
    # the image is 640 x 480: its area is u in [-0.5, 639.5), v in [-0.5, 479.5)
    t = compute_target(frame3, [list(uv)], cal, Workspace())
    assert not t.valid and t.refusal.code == "outside_image" and t.refusal.stage == "pointing"


@pytest.mark.parametrize("first", [(float("nan"), float("nan")), (float("inf"), 3.0), (1e400, 2.0)])
def test_an_invalid_first_point_refuses_the_trial_and_the_second_is_not_taken(frame3, cal, first):
    # PointArena sec. 4.1 acts on the first point only: a NaN first point followed by a good one
    # (458, 250: a valid target above) must not move the arm to the second one (issue 14, finding 4)
    t = compute_target(frame3, [list(first), [458.0, 250.0]], cal, Workspace())
    assert not t.valid and t.refusal.code == "invalid_point" and t.pixel is None and t.point_base_m is None
    assert "first point" in t.refusal.detail


def test_target_beyond_reach_is_refused(frame3, cal):
    # (624, 84): window 25 x 628, 84 x 629, 12 x 630 mm, centre 629 -> median 629 mm.
    # x_c = (624 - 322.549) / 612.937 * 0.629 = 0.491813 * 0.629 = 0.309350
    # y_c = (84 - 248.158) / 613.173 * 0.629 = -0.267719 * 0.629 = -0.168395
    # base (0.439350, 0.168395, 0.171): inside the box, but sqrt(0.193028 + 0.028357) = 0.47052 m > 0.44 m reach
    assert frame3.depth[84, 624] == 629
    t = compute_target(frame3, [[624.0, 84.0]], cal, Workspace())
    assert not t.valid and t.refusal.code == "workspace" and t.refusal.stage == "reach"
    assert "beyond_reach" in t.refusal.detail and "0.471 m" in t.refusal.detail  # 0.47052 printed to 3 decimals
    np.testing.assert_allclose(t.point_base_m, [0.439350, 0.168395, 0.171], atol=2e-6)


@pytest.mark.parametrize(
    "points, code",
    [
        (None, "no_point"),
        ([], "no_point"),
        ("abc", "invalid_point"),
        ([[1.0, 2.0, 3.0]], "invalid_point"),
        ([["x", 2.0]], "invalid_point"),
    ],
)
def test_no_point_or_a_malformed_first_point_is_refused(frame3, cal, points, code):
    t = compute_target(frame3, points, cal, Workspace())
    assert not t.valid and t.refusal.code == code and t.pixel is None
