"""The workspace envelope: hand-worked points inside and just outside every limit of the default box
(x 0.10..0.45, y -0.35..0.35, z -0.02..0.40 m), TCP waypoints at least table + 5 mm, targets at
least table - 10 mm (depth noise on a bare table), reach 0.12..0.44 m."""

from __future__ import annotations

import math

import pytest

from pointlab.robot.errors import UnsafeTargetError
from pointlab.robot.workspace import Workspace

WS = Workspace()


@pytest.mark.parametrize(
    "point",
    [
        (0.30, 0.0, 0.10),  # middle
        (0.10, 0.07, 0.10),  # x at its minimum; r = hypot(0.10, 0.07) = 0.1221 >= 0.12
        (0.20, -0.35, 0.10),  # y at its minimum; r = 0.4031
        (0.30, 0.0, 0.40),  # z at its maximum
        (0.30, 0.0, 0.005),  # exactly table + clearance
        (0.30, 0.0, -0.003),  # a target on the bare table measured 3 mm low
        (0.30, 0.0, -0.01),  # exactly table - target tolerance
        (0.35, 0.26, 0.10),  # r = sqrt(0.1225 + 0.0676) = 0.4360 <= 0.44
        (0.11, 0.05, 0.10),  # r = sqrt(0.0121 + 0.0025) = 0.1208 >= 0.12
    ],
)
def test_points_inside(point):
    WS.check(point)
    assert WS.contains(point)


@pytest.mark.parametrize(
    "point, reason",
    [
        ((0.09, 0.0, 0.10), "outside_box"),  # x below 0.10
        ((0.46, 0.0, 0.10), "outside_box"),  # x above 0.45
        ((0.20, 0.36, 0.10), "outside_box"),  # y above 0.35
        ((0.20, -0.36, 0.10), "outside_box"),  # y below -0.35
        ((0.30, 0.0, 0.41), "outside_box"),  # z above 0.40
        ((0.30, 0.0, -0.03), "outside_box"),  # z below the box
        ((0.30, 0.0, -0.011), "below_table"),  # a target under 0 - 0.010
        ((0.45, 0.0, 0.10), "beyond_reach"),  # in the box (x max), r = 0.45 > 0.44
        ((0.35, 0.27, 0.10), "beyond_reach"),  # r = sqrt(0.1225 + 0.0729) = 0.4420
        ((0.10, 0.05, 0.10), "too_close_to_base"),  # r = 0.1118 < 0.12
        ((math.nan, 0.0, 0.10), "not_finite"),
        ((0.30, math.inf, 0.10), "not_finite"),
        ((0.30, 0.0), "not_finite"),  # not a 3D point
    ],
)
def test_points_outside(point, reason):
    with pytest.raises(UnsafeTargetError) as ei:
        WS.check(point, "target")
    assert ei.value.reason.startswith(reason)
    assert not WS.contains(point)


def test_table_height_moves_the_floor():
    ws = Workspace(table_z_m=0.05)
    with pytest.raises(UnsafeTargetError, match="below_table"):
        ws.check((0.30, 0.0, 0.054), "waypoint")  # TCP floor 0.05 + 0.005 = 0.055
    ws.check((0.30, 0.0, 0.055), "waypoint")
    with pytest.raises(UnsafeTargetError, match="below_table"):
        ws.check((0.30, 0.0, 0.039), "target")  # target floor 0.05 - 0.010 = 0.040
    ws.check((0.30, 0.0, 0.040), "target")


@pytest.mark.parametrize("z", [0.004, -0.01])
def test_waypoints_keep_the_clearance(z):
    with pytest.raises(UnsafeTargetError, match="below_table"):
        WS.check((0.30, 0.0, z), "waypoint")


def test_reason_names_what_was_checked():
    with pytest.raises(UnsafeTargetError, match=r"waypoint z=0\.450 m"):
        WS.check((0.30, 0.0, 0.45), "waypoint")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"x_m": (0.40, 0.10)},
        {"z_m": (0.2, 0.2)},
        {"min_radius_m": 0.5},  # not below max_reach_m 0.44
        {"min_radius_m": -0.1},
    ],
)
def test_invalid_envelopes_are_refused(kwargs):
    with pytest.raises(ValueError):
        Workspace(**kwargs)
