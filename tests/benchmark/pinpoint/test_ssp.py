"""SSP scorer: every rule of PinpointQA App. B.2, expectations worked out by hand.

Ground truth used throughout: surface "table"; slots keyboard (next_to, 3.0 cm) and
headphone (under, 25.0 cm). S = 0.4 surface + 0.2 object + 0.2 relation + 0.2 distance, the last
three averaged over the 2 slots.
"""

from __future__ import annotations

import json

import pytest

from pointlab.benchmark.pinpoint.normalize import normalize_label, normalize_relation, normalize_surface, singularize
from pointlab.benchmark.pinpoint.ssp import SSPGroundTruthError, distance_credit, relation_credit, score_ssp

GT = json.dumps(
    {
        "target": "mouse",
        "support_surface": "table",
        "references": [
            {"object": "keyboard", "relation": "next_to", "distance_cm": 3.0},
            {"object": "headphone", "relation": "under", "distance_cm": 25.0},
        ],
    }
)


def pred(surface="table", refs=None, key="support_surface", **extra) -> str:
    refs = (
        [
            {"object": "keyboard", "relation": "next_to", "distance_cm": 3.0},
            {"object": "headphone", "relation": "under", "distance_cm": 25.0},
        ]
        if refs is None
        else refs
    )
    return json.dumps({"target": "mouse", key: surface, "references": refs, **extra})


# ---------------------------------------------------------------- JSON recovery


def test_exact_answer_scores_one():
    r = score_ssp(GT, pred())
    assert r.score == pytest.approx(1.0) and r.reason == "ok"
    assert r.parts == {"surface": 1.0, "object": 1.0, "relation": 1.0, "distance": 1.0}


@pytest.mark.parametrize(
    "text",
    [
        "```json\n" + pred() + "\n```",  # fenced
        "Sure! Here is the JSON:\n```\n" + pred() + "\n```\nHope it helps.",  # fence inside prose
        "The structured answer is " + pred() + " as requested.",  # embedded, no fence
    ],
)
def test_json_is_recovered_from_fences_and_prose(text):
    assert score_ssp(GT, text).score == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text", ["The mouse is on the table next to the keyboard.", "", None, "[1, 2]", "{not json at all}"]
)
def test_no_json_object_scores_zero(text):
    r = score_ssp(GT, text)
    assert r.score == 0.0 and r.reason == "unparseable"


def test_primary_surface_is_an_alias():
    assert score_ssp(GT, pred(key="primary_surface")).parts["surface"] == 1.0


# ---------------------------------------------------------------- normalization


def test_label_normalization_rules():
    assert normalize_surface("Table_Top") == "table"  # case, underscore, the surface synonym map
    assert normalize_label("Table_Top") == "table top"  # the object map has no table top
    assert normalize_label('"Night-Stand"') == "nightstand"  # quotes, hyphen, synonym
    assert normalize_label("Keyboard (black, wireless)") == "keyboard"  # parenthetical
    assert normalize_label("  coffee    mugs ") == "coffee mug"  # spaces, singular of the last word
    assert normalize_label("Mobile Phones") == "phone"  # singular, then synonym
    assert normalize_label("smartphone") == normalize_label("cell phone") == "phone"
    assert normalize_label("Headphones") == normalize_label("headphone") == "headphone"
    assert singularize("batteries") == "battery" and singularize("boxes") == "box"
    assert singularize("glass") == "glass" and singularize("bus") == "bus" and singularize("shoes") == "shoe"


def test_relation_normalization_rules():
    assert normalize_relation("Beside") == "next_to"
    assert normalize_relation("adjacent to") == "next_to"
    assert normalize_relation("next-to") == "next_to"
    assert normalize_relation("close to") == "near" and normalize_relation("nearby") == "near"
    assert normalize_relation("Side Above") == "side_above"
    assert normalize_relation("to the left of") == "to_the_left_of"  # kept; matches nothing


def test_normalized_forms_earn_full_credit():
    p = pred(
        surface="Table-Top",
        refs=[
            {"object": "Keyboards", "relation": "beside", "distance_cm": "3 cm"},
            {"object": "'Headphones' (black)", "relation": "UNDER", "distance_cm": 25},
        ],
    )
    assert score_ssp(GT, p).score == pytest.approx(1.0)


# ---------------------------------------------------------------- relations and distances


def test_relation_credit_pairs():
    assert relation_credit("next_to", "near") == 0.5
    assert relation_credit("below", "under") == 0.5
    assert relation_credit("attached_to", "on") == 0.5
    assert relation_credit("above", "side_above") == 0.0
    assert relation_credit("on", "on") == 1.0
    assert relation_credit("on", "") == 0.0


@pytest.mark.parametrize(
    "gt_cm,pred_cm,credit",
    [
        (8, 13, 1.0),
        (8, 13.1, 0.5),
        (8, 18, 0.5),
        (8, 18.5, 0.0),  # d <= 10: 5 / 10
        (10, 15, 1.0),
        (10, 20.01, 0.0),  # d = 10 is still the first band
        (25, 15, 1.0),
        (25, 13, 0.5),
        (25, 40, 0.5),
        (25, 40.5, 0.0),  # 10 < d <= 30: 10 / 15
        (30, 45, 0.5),
        (30.1, 45.1, 1.0),  # d = 30 vs just above it
        (40, 55, 1.0),
        (40, 60, 0.5),
        (40, 60.1, 0.0),  # d > 30: 15 / 20
        (12.3, 2.3, 1.0),  # float error 10.000000000000002 is 10
        (8, None, 0.0),
    ],
)
def test_distance_bands(gt_cm, pred_cm, credit):
    assert distance_credit(gt_cm, pred_cm) == credit


def test_half_relation_halves_distance_credit():
    # keyboard: near instead of next_to -> rel 0.5, distance exact -> 0.5 * 1 = 0.5
    p = pred(
        refs=[
            {"object": "keyboard", "relation": "near", "distance_cm": 3.0},
            {"object": "headphone", "relation": "under", "distance_cm": 25.0},
        ]
    )
    r = score_ssp(GT, p)
    assert r.parts == pytest.approx({"surface": 1.0, "object": 1.0, "relation": 0.75, "distance": 0.75})
    assert r.score == pytest.approx(0.4 + 0.2 + 0.2 * 0.75 + 0.2 * 0.75)  # 0.9


def test_distance_needs_positive_relation_credit():
    # headphone: above instead of under -> rel 0, so no distance credit despite the exact distance
    p = pred(
        refs=[
            {"object": "keyboard", "relation": "next_to", "distance_cm": 3.0},
            {"object": "headphone", "relation": "above", "distance_cm": 25.0},
        ]
    )
    r = score_ssp(GT, p)
    assert r.parts == pytest.approx({"surface": 1.0, "object": 1.0, "relation": 0.5, "distance": 0.5})
    assert r.score == pytest.approx(0.4 + 0.2 + 0.1 + 0.1)


def test_distance_needs_the_right_object():
    # "laptop" with the keyboard's relation and distance earns nothing for that slot
    p = pred(
        refs=[
            {"object": "laptop", "relation": "next_to", "distance_cm": 3.0},
            {"object": "headphone", "relation": "under", "distance_cm": 25.0},
        ]
    )
    r = score_ssp(GT, p)
    assert r.parts == pytest.approx({"surface": 1.0, "object": 0.5, "relation": 0.5, "distance": 0.5})
    assert r.score == pytest.approx(0.7)


def test_half_distance_with_half_relation():
    # headphone: below (half) and 25 -> 38 cm (e = 13, half band) -> distance 0.5 * 0.5 = 0.25
    p = pred(
        refs=[
            {"object": "keyboard", "relation": "next_to", "distance_cm": 3.0},
            {"object": "headphone", "relation": "below", "distance_cm": 38.0},
        ]
    )
    r = score_ssp(GT, p)
    assert r.parts["relation"] == pytest.approx((1 + 0.5) / 2)
    assert r.parts["distance"] == pytest.approx((1 + 0.25) / 2)
    assert r.score == pytest.approx(0.4 + 0.2 + 0.15 + 0.125)


# ---------------------------------------------------------------- alignment


def test_alignment_ignores_order_and_extra_references():
    p = pred(
        refs=[
            {"object": "monitor", "relation": "near", "distance_cm": 50},
            {"object": "headphone", "relation": "under", "distance_cm": 25.0},
            {"object": "keyboard", "relation": "next_to", "distance_cm": 3.0},
        ]
    )
    assert score_ssp(GT, p).score == pytest.approx(1.0)


def test_alignment_picks_the_better_of_duplicate_predictions():
    # two keyboards: the first wrong in relation and distance, the second right; one-to-one, so
    # the slot takes the second and the first is unused
    p = pred(
        refs=[
            {"object": "keyboard", "relation": "above", "distance_cm": 90},
            {"object": "keyboard", "relation": "next_to", "distance_cm": 4.0},
            {"object": "headphone", "relation": "under", "distance_cm": 25.0},
        ]
    )
    assert score_ssp(GT, p).score == pytest.approx(1.0)


def test_one_prediction_cannot_fill_two_slots():
    gt = json.dumps(
        {
            "target": "pen",
            "support_surface": "desk",
            "references": [
                {"object": "cup", "relation": "next_to", "distance_cm": 5},
                {"object": "cup", "relation": "near", "distance_cm": 40},
            ],
        }
    )
    p = json.dumps(
        {"support_surface": "desk", "references": [{"object": "cup", "relation": "next_to", "distance_cm": 5}]}
    )
    r = score_ssp(gt, p)
    # one slot matched fully (1, 1, 1), the other empty -> object 0.5, relation 0.5, distance 0.5
    assert r.parts == pytest.approx({"surface": 1.0, "object": 0.5, "relation": 0.5, "distance": 0.5})


def test_unmatched_slot_earns_zero():
    p = pred(refs=[{"object": "keyboard", "relation": "next_to", "distance_cm": 3.0}])
    r = score_ssp(GT, p)
    assert r.score == pytest.approx(0.4 + 0.1 + 0.1 + 0.1)
    (headphone,) = [s for s in r.slots if s["gt"]["object"] == "headphone"]
    assert headphone["pred"] is None


# ---------------------------------------------------------------- malformed fields


def test_wrong_surface_loses_its_weight_only():
    assert score_ssp(GT, pred(surface="desk")).score == pytest.approx(0.6)


def test_missing_surface_field_earns_no_surface_credit():
    text = json.dumps({"target": "mouse", "references": json.loads(pred())["references"]})
    r = score_ssp(GT, text)
    assert r.score == pytest.approx(0.6) and "support_surface" in r.reason


def test_references_not_a_list():
    r = score_ssp(GT, json.dumps({"support_surface": "table", "references": "keyboard, headphone"}))
    assert r.score == pytest.approx(0.4) and "references" in r.reason


def test_malformed_reference_entries_are_skipped():
    p = pred(
        refs=[
            "keyboard",
            {"object": "keyboard", "relation": "next_to", "distance_cm": "about three"},
            {"object": "headphone", "relation": "under", "distance_cm": 25},
        ]
    )
    r = score_ssp(GT, p)
    # keyboard: object and relation right, distance unreadable -> 0
    assert r.parts == pytest.approx({"surface": 1.0, "object": 1.0, "relation": 1.0, "distance": 0.5})


def test_malformed_ground_truth_raises():
    with pytest.raises(SSPGroundTruthError):
        score_ssp("not json", pred())
    with pytest.raises(SSPGroundTruthError):
        score_ssp("[1, 2]", pred())  # JSON, but not an object


@pytest.mark.timeout(60)
def test_deeply_nested_answer_scores_zero_not_recursion_error():
    r = score_ssp(GT, '{"a":' * 20000)
    assert r.score == 0.0 and r.reason == "unparseable"


def test_deeply_nested_ground_truth_is_a_ground_truth_error():
    with pytest.raises(SSPGroundTruthError):
        score_ssp('{"a":' * 20000, pred())
