"""Box distances, direction angles and polygon areas against values worked out by hand."""

import math

import numpy as np
import pytest

from pointlab.benchmark.scenes import OrientedBox
from pointlab.benchmark.video.generate import direction_answer
from pointlab.benchmark.video.geometry import box_distance_m, direction_angle_deg, polygon_area_m2


def cube(center, side=1.0, yaw_deg=0.0, extent=None):
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    return OrientedBox(center=center, extent=extent or [side] * 3, rotation=R)


def test_box_distance_by_hand():
    assert box_distance_m(cube([0, 0, 0]), cube([3, 0, 0])) == pytest.approx(2.0)
    assert box_distance_m(cube([0, 0, 0]), cube([3, 4, 0])) == pytest.approx(math.hypot(2, 3))  # edge to edge
    assert box_distance_m(cube([0, 0, 0]), cube([0.5, 0.2, 0.1])) == pytest.approx(0.0, abs=1e-9)  # overlap
    # turned 45 degrees, its vertical edge points at the first cube: 3 - sqrt(0.5) - 0.5
    assert box_distance_m(cube([0, 0, 0]), cube([3, 0, 0], yaw_deg=45)) == pytest.approx(2.5 - math.sqrt(0.5))
    # a flat box (zero height, like a stove top) 1 m above a unit cube's top face
    assert box_distance_m(cube([0, 0, 0]), cube([0, 0, 1.5], extent=[0.5, 0.5, 0.0])) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "query, expected",
    [
        ([-1, 0, 0], 90.0),  # facing +y, a point to the west is on the left
        ([1, 0, 0], 270.0),
        ([0, -2, 5], 180.0),  # height is ignored
        ([1, 1, 0], 315.0),
        ([-1, 1, 0], 45.0),
    ],
)
def test_direction_angle(query, expected):
    assert direction_angle_deg([0, 0, 0], [0, 3, 0], query) == pytest.approx(expected)


def test_direction_angle_undefined():
    with pytest.raises(ValueError):
        direction_angle_deg([0, 0, 0], [0, 0, 2], [1, 0, 0])


@pytest.mark.parametrize(
    "angle, sub, margin, expected",
    [
        (67.6, "easy", 35, "left"),
        (67.6, "medium", 35, "left"),  # 67.6 from 0 and 67.4 from 135
        (67.6, "hard", 35, None),  # 22.4 from the 90-degree boundary
        (45.0, "hard", 35, "front-left"),
        (135.0, "hard", 35, "back-left"),
        (315.0, "hard", 35, "front-right"),
        (180.0, "medium", 35, "back"),
        (200.0, "medium", 35, None),  # 25 from 225
        (10.0, "easy", 35, None),
        (10.0, "easy", 10, "left"),  # VSI-Bench's 10-degree margin: exactly on it is allowed
        (350.0, "easy", 5, "right"),
    ],
)
def test_direction_answer(angle, sub, margin, expected):
    assert direction_answer(angle, sub, margin) == expected


def test_polygon_area():
    assert polygon_area_m2([[0, 0], [4, 0], [4, 3], [0, 3]]) == pytest.approx(12.0)
    assert polygon_area_m2([[0, 0, 0], [2, 0, 0], [0, 2, 0]]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        polygon_area_m2([[0, 0], [1, 1]])
