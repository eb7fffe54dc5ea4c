"""The automatic outcome check and the failure attribution, on a real RGB-D frame (uoc_tabletop
000003) with values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.bridge.trials.attribution import failure_stage, mask_from_click, point_in_mask, settle
from pointlab.bridge.trials.autocheck import depth_check, physics_check
from pointlab.benchmark.points import PointEntry
from pointlab.bridge.trials.outcomes import Abort, Refusal
from pointlab.bridge.trials.targeting import Target
from pointlab.bridge.trials.record import TrialResult
from pointlab.perception.replay import load_rgbd_frame


@pytest.fixture(scope="module")
def frame3(uoc_tabletop):
    return load_rgbd_frame(uoc_tabletop, "000003", stamp_ns=0)


def test_pick_is_seen_when_the_surface_under_the_target_moves_away(frame3):
    d0 = frame3.depth
    # (458, 250): 774 mm over the 25x25 window is mostly 773-775 (test_targeting.py): median 774
    after = d0.copy()
    after[238:263, 446:471] = 820  # the object left: the table behind it is 46 mm farther
    c = depth_check("pick", (458.0, 250.0), d0, after, frame3.depth_scale_m)
    assert c.success is True and c.method == "depth" and c.depth_change_mm == pytest.approx(46.0, abs=1.0)
    same = depth_check("pick", (458.0, 250.0), d0, d0.copy(), frame3.depth_scale_m)
    assert same.success is False and same.depth_change_mm == 0.0
    # a vacuum sensor saying nothing is held overrules the depth
    assert depth_check("pick", (458.0, 250.0), d0, after, frame3.depth_scale_m, holding_sensor=False).success is False


def test_place_is_seen_when_something_arrives_and_holes_cannot_tell(frame3):
    d0 = frame3.depth
    after = d0.copy()
    after[238:263, 446:471] = 740  # a 34 mm object now stands there
    c = depth_check("place", (458.0, 250.0), d0, after, frame3.depth_scale_m)
    assert c.success is True and c.depth_change_mm == pytest.approx(-34.0, abs=1.0)
    assert depth_check("place", (458.0, 250.0), d0, d0, frame3.depth_scale_m).success is False
    # (150, 102): every raw depth value in 11x11 around it is 0 (test_targeting.py); the 25x25
    # window holds a few valid ones only: too few to tell
    assert not d0[97:108, 145:156].any()
    unknown = depth_check("place", (150.0, 102.0), d0, d0, frame3.depth_scale_m, min_valid_px=400)
    assert unknown.success is None and "too little depth" in unknown.detail
    with pytest.raises(ValueError):
        depth_check("push", (1.0, 1.0), d0, d0, 0.001)


def test_physics_check_is_the_sims_own_judgement():
    assert physics_check(None, None) is None
    c = physics_check(True, "holding red cube")
    assert (c.success, c.method, c.detail) == (True, "physics", "holding red cube")


def _trial(**kw) -> TrialResult:
    base = dict(
        trial_id="t",
        agent="a",
        instruction="x",
        action="pick",
        robot_outcome="done",
        points=[PointEntry(u_px=5.0, v_px=5.0)],
        points_px=[(5.0, 5.0)],
        target=Target(valid=True, pixel=(5.0, 5.0), point_base_m=(0.3, 0.0, 0.02)),
    )
    base.update(kw)
    return TrialResult(**base)


def test_failure_stages_in_order():
    assert failure_stage(settle(_trial(), True)) is None
    assert settle(_trial(), False).failure_stage == "grasp"
    assert settle(_trial(action="place"), False).failure_stage == "place"
    assert settle(_trial(point_on_target=False), False).failure_stage == "pointing"
    refused = dict(robot_outcome="refused", target=Target(valid=False, refusal=Refusal(code="no_depth")))
    assert settle(_trial(refusal=Refusal(code="no_depth"), **refused), False).failure_stage == "depth"
    assert settle(_trial(refusal=Refusal(code="invalid_point"), **refused), False).failure_stage == "pointing"
    assert settle(_trial(refusal=Refusal(code="unreachable"), **refused), False).failure_stage == "reach"
    assert settle(_trial(refusal=Refusal(code="no_point"), **refused), False).failure_stage == "no_point"
    # a refused trial cannot have succeeded, whatever was said
    assert settle(_trial(refusal=Refusal(code="workspace"), **refused), True).outcome == "failed"
    # an abort stays an abort
    t = settle(_trial(robot_outcome="stopped", abort=Abort(code="estop")), True)
    assert (t.outcome, t.failure_stage) == ("aborted", "aborted")


def test_mask_from_a_click_on_a_real_object(frame3):
    # the operator clicks the orange bowl at (458, 250) (its box in the picture: about u 400-530,
    # v 210-315); the grown mask covers the bowl and not the teal bowl (310, 220) or the table
    mask = mask_from_click(frame3.color, 458.0, 250.0)
    rows, cols = np.nonzero(mask)
    assert 395 <= cols.min() and cols.max() <= 535 and 205 <= rows.min() and rows.max() <= 320
    assert 5000 < mask.sum() < 14000  # the bowl's disc, about pi * 60 * 50 px
    assert point_in_mask(mask, 458.0, 250.0) and point_in_mask(mask, 420.0, 260.0)
    assert not point_in_mask(mask, 310.0, 220.0) and not point_in_mask(mask, 10.0, 470.0)
    assert not point_in_mask(mask, -3.0, 250.0)
    with pytest.raises(ValueError):
        mask_from_click(frame3.color, 700.0, 10.0)
