"""The placement rule (bridge.trials.placement): one case per relation and both sides of every
tolerance, with values worked out by hand (table at z = 0; lengths in metres)."""

from __future__ import annotations

import math

import pytest

from pointlab.bridge.trials.placement import (
    NEXT_TO_GAP_M,
    OVERLAP_TOL_M,
    RESTING_TOL_M,
    ObjectBox,
    check_placement,
    footprint_gap_m,
    placement_relation,
)

# The reference: a 4 cm cube at the origin, standing on the table (top at 4 cm).
CUBE = ObjectBox((0.0, 0.0), (0.04, 0.04), 0.0, 0.04)
# A bowl: 13 cm across, 5 cm high, 6 mm wall: inner radius 6.5 - 0.6 = 5.9 cm.
BOWL = ObjectBox((0.0, 0.0), (0.13, 0.13), 0.0, 0.05, footprint="disc", wall_m=0.006)


def block(x: float, y: float = 0.0, bottom: float = 0.0, yaw_deg: float = 0.0) -> ObjectBox:
    """A 4 cm cube with its footprint centre at (x, y) and its bottom at ``bottom``."""
    return ObjectBox((x, y), (0.04, 0.04), bottom, bottom + 0.04, yaw_deg=yaw_deg)


def relation(placed: ObjectBox, reference: ObjectBox = CUBE) -> str:
    return placement_relation(placed, reference, table_z_m=0.0).relation


def test_the_tolerances_are_the_documented_ones():
    assert (RESTING_TOL_M, OVERLAP_TOL_M, NEXT_TO_GAP_M) == (0.010, 0.005, 0.06)


# -- the gap between two footprints --------------------------------------------------------------
def test_gap_between_footprints_by_hand():
    # side by side: faces at x = 0.02 and 0.07 - 0.02 = 0.05
    assert footprint_gap_m(CUBE, block(0.07)) == pytest.approx(0.03)
    # corner to corner: (0.02, 0.02) to (0.05, 0.05), sqrt(0.03^2 + 0.03^2) (an axis test alone says 0.03)
    assert footprint_gap_m(CUBE, block(0.07, 0.07)) == pytest.approx(math.hypot(0.03, 0.03))
    # a block yawed 45 deg at (0.05, 0.05): its edge towards the origin lies on x + y = 0.1 - 0.02 sqrt(2),
    # nearest the cube's corner (0.02, 0.02): (0.1 - 0.02 sqrt(2) - 0.04) / sqrt(2)
    assert footprint_gap_m(CUBE, block(0.05, 0.05, yaw_deg=45.0)) == pytest.approx(
        (0.1 - 0.02 * math.sqrt(2) - 0.04) / math.sqrt(2)
    )
    # overlapping by 5 mm along x (1 cm off in y does not matter): minus the overlap depth
    assert footprint_gap_m(CUBE, block(0.035, 0.01)) == pytest.approx(-0.005)
    can = ObjectBox((0.1, 0.0), (0.05, 0.05), 0.0, 0.08, footprint="disc")
    assert footprint_gap_m(CUBE, can) == pytest.approx(0.1 - 0.02 - 0.025)  # disc and rectangle
    assert footprint_gap_m(can, CUBE) == pytest.approx(0.1 - 0.02 - 0.025)  # either order
    assert footprint_gap_m(BOWL, can) == pytest.approx(0.1 - 0.065 - 0.025)  # two discs


# -- one case per relation -------------------------------------------------------------------------
def test_in_a_container():
    # a cube on the bowl's 1.2 cm floor, 3 cm off centre: centre (0.03, 0, 0.032), inside 5.9 cm, below 5 cm
    assert relation(block(0.03, bottom=0.012), BOWL) == "in"


def test_on_top():
    assert relation(block(0.005, bottom=0.04)) == "on"


def test_next_to():
    p = placement_relation(block(0.07), CUBE)
    assert p.relation == "next_to" and p.gap_m == pytest.approx(0.03) and p.above_table_m == 0.0
    assert p.above_reference_m == pytest.approx(-0.04)


def test_apart():
    assert relation(block(0.15)) == "apart"  # 11 cm between the faces


def test_elsewhere():
    # 4 cm up (on some other object) and 16 cm away: neither on the reference nor on the table
    assert relation(block(0.2, bottom=0.04)) == "elsewhere"


# -- both sides of every tolerance -----------------------------------------------------------------
@pytest.mark.parametrize(
    "bottom, expected",
    [
        (0.04 + 0.0095, "on"),
        (0.04 + 0.0105, "elsewhere"),  # RESTING_TOL_M above the reference's top
        (0.04 - 0.0095, "on"),
        (0.04 - 0.0105, "elsewhere"),  # ... and below it
    ],
)
def test_on_top_within_the_resting_tolerance(bottom, expected):
    assert relation(block(0.0, bottom=bottom)) == expected


@pytest.mark.parametrize("x, expected", [(0.0195, "on"), (0.0205, "elsewhere")])
def test_on_top_needs_the_centre_over_the_footprint(x, expected):
    # the cube's edge is at x = 0.02; beyond it the block is not on it (and 4 cm above the table)
    assert relation(block(x, bottom=0.04)) == expected


def test_on_top_of_a_yawed_reference_uses_its_yawed_footprint():
    # (0.019, 0.019) is inside the axis-aligned cube but, in the frame of one yawed 45 deg, at
    # 0.019 sqrt(2) = 0.0269 along its x axis: beyond its 0.02 half-width
    assert relation(block(0.019, 0.019, bottom=0.04)) == "on"
    yawed = ObjectBox((0.0, 0.0), (0.04, 0.04), 0.0, 0.04, yaw_deg=45.0)
    assert relation(block(0.019, 0.019, bottom=0.04), yawed) == "elsewhere"


@pytest.mark.parametrize("x, expected", [(0.0995, "next_to"), (0.1005, "apart")])
def test_next_to_within_the_gap(x, expected):
    # faces at 0.02 and x - 0.02: gaps of 5.95 and 6.05 cm either side of NEXT_TO_GAP_M
    assert relation(block(x)) == expected


@pytest.mark.parametrize(
    "bottom, expected", [(0.0095, "next_to"), (0.0105, "elsewhere"), (-0.0095, "next_to"), (-0.0105, "elsewhere")]
)
def test_next_to_rests_on_the_table_within_the_resting_tolerance(bottom, expected):
    assert relation(block(0.07, bottom=bottom)) == expected


@pytest.mark.parametrize("x, expected", [(0.0355, "next_to"), (0.0345, "elsewhere")])
def test_next_to_allows_overlap_up_to_the_overlap_tolerance(x, expected):
    # faces at 0.02 and x - 0.02: overlaps of 4.5 and 5.5 mm either side of OVERLAP_TOL_M
    assert relation(block(x)) == expected


@pytest.mark.parametrize("x, expected", [(0.0585, "in"), (0.0595, "elsewhere")])
def test_in_needs_the_centre_inside_the_inner_wall(x, expected):
    # inner radius 0.065 - 0.006 = 0.059
    assert relation(block(x, bottom=0.012), BOWL) == expected


@pytest.mark.parametrize("bottom, expected", [(0.0395, "in"), (0.0405, "on")])
def test_in_needs_the_bottom_below_the_rim_by_the_resting_tolerance(bottom, expected):
    # the 5 cm rim less 1 cm: 3.95 cm is 1.05 cm below it (in), 4.05 cm only 0.95 cm (resting on the
    # rim's height: on)
    assert relation(block(0.0, bottom=bottom), BOWL) == expected


def test_a_can_taller_than_the_bowl_standing_in_it_is_in_it():
    # an 8 cm can on the bowl's floor (bottom 1.2 cm above the table): its centre (5.2 cm) is above the
    # 5 cm rim, its bottom well below it (the newcomer's trial 12, judged "not in" by the first rule)
    can = ObjectBox((0.0, 0.0), (0.066, 0.066), 0.012, 0.092, footprint="disc")
    assert relation(can, BOWL) == "in"


@pytest.mark.parametrize("y, expected", [(0.022, "in"), (0.0255, "elsewhere")])
def test_in_a_rectangular_tray_the_nearer_wall_decides(y, expected):
    # a 10 x 6 cm tray, 5 mm wall: 0.03 - y from the long side's outer face (0.8 and 0.45 cm), 5 cm
    # from the short sides'
    tray = ObjectBox((0.0, 0.0), (0.10, 0.06), 0.0, 0.03, wall_m=0.005)
    assert relation(ObjectBox((0.0, y), (0.01, 0.01), 0.005, 0.015), tray) == expected


def test_in_only_for_a_container():
    # the same block in the same place around a solid cylinder of the bowl's size is not "in" it
    solid = ObjectBox((0.0, 0.0), (0.13, 0.13), 0.0, 0.05, footprint="disc")
    assert relation(block(0.03, bottom=0.012), solid) == "elsewhere"


# -- the judgement and its words -----------------------------------------------------------------
def test_stacked_on_top_is_not_next_to():
    stacked = block(0.0, bottom=0.04)
    assert check_placement(stacked, CUBE, "next_to", placed_name="red cube", reference_name="white mug") == (
        False,
        "red cube is on top of, not next to, white mug",
    )
    assert check_placement(stacked, CUBE, "on", placed_name="red cube", reference_name="white mug") == (
        True,
        "red cube is on top of white mug",
    )


def test_check_placement_says_what_it_found():
    names = {"placed_name": "a", "reference_name": "b"}
    assert check_placement(block(0.07), CUBE, "next_to", **names) == (True, "a is next to b, 3.0 cm away (within 6 cm)")
    assert check_placement(block(0.07), CUBE, "on", **names) == (False, "a is next to, not on top of, b")
    assert check_placement(block(0.15), CUBE, "next_to", **names) == (
        False,
        "a is 11.0 cm from b (beyond 6 cm), not next to it",
    )
    assert check_placement(block(0.03, bottom=0.012), BOWL, "in", **names) == (True, "a is in b")
    assert check_placement(block(0.03, bottom=0.012), BOWL, "next_to", **names) == (False, "a is in, not next to, b")
    assert check_placement(block(0.2, bottom=0.04), CUBE, "on", **names) == (
        False,
        "a is not on top of b: its bottom is 4.0 cm above the table and +0.0 cm from the top of b",
    )


def test_table_height_is_where_the_table_is():
    # the same scene 0.75 m up (a table top as the base frame would not put it at 0)
    up = ObjectBox((0.0, 0.0), (0.04, 0.04), 0.75, 0.79)
    assert placement_relation(block(0.07, bottom=0.75), up, table_z_m=0.75).relation == "next_to"
    assert placement_relation(block(0.07, bottom=0.75), up, table_z_m=0.0).relation == "elsewhere"


def test_check_placement_refuses_an_unknown_relation():
    with pytest.raises(ValueError, match="wanted"):
        check_placement(block(0.07), CUBE, "apart")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"size_xy_m": (0.0, 0.04)}, "positive"),
        ({"top_z_m": 0.0}, "above"),
        ({"footprint": "disc", "size_xy_m": (0.04, 0.05)}, "one diameter"),
        ({"footprint": "hexagon"}, "rect or disc"),
        ({"wall_m": 0.02}, "wall"),
        ({"wall_m": 0.0}, "wall"),
    ],
)
def test_object_box_refuses_impossible_boxes(kwargs, match):
    args = {"center_xy_m": (0.0, 0.0), "size_xy_m": (0.04, 0.04), "bottom_z_m": 0.0, "top_z_m": 0.04, **kwargs}
    with pytest.raises(ValueError, match=match):
        ObjectBox(**args)
