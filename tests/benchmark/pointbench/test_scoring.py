"""Point-Bench scoring rules (PointArena sec. 3.1, 4.1) with hand-computed expectations, and every
point format through PRED records."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.pointbench import BenchItem, Prediction, score_points, score_prediction, summarize
from pointlab.benchmark.pointbench.scoring import pixel_index, point_score

W, H = 200, 100


def rect(c0, c1, r0, r1):
    """Mask with columns c0..c1 and rows r0..r1 inclusive set."""
    m = np.zeros((H, W), dtype=bool)
    m[r0 : r1 + 1, c0 : c1 + 1] = True
    return m


TARGET = rect(50, 99, 20, 59)
INST_A = rect(10, 29, 10, 29)
INST_B = rect(150, 179, 60, 89)
UNION = INST_A | INST_B


@pytest.mark.parametrize(
    "u, v, expected",
    [
        (60, 30, (True, "hit")),
        (49.4, 30, (False, "miss")),  # floor(49.9) = col 49, left of the mask
        (49.5, 30, (True, "hit")),  # floor(50.0) = col 50, first mask column
        (99.49, 59.49, (True, "hit")),  # col 99, row 59: last mask pixel
        (99.5, 30, (False, "miss")),  # col 100
        (60, 19.4, (False, "miss")),  # row 19
        (-0.6, 10, (False, "outside_image")),
        (199.6, 10, (False, "outside_image")),  # col 200 does not exist
        (10, 99.5, (False, "outside_image")),  # row 100 does not exist
        (float("nan"), 10, (False, "outside_image")),
    ],
)
def test_single_point_rule(u, v, expected):
    ok, reason, used = score_points([[u, v]], "spatial", TARGET)
    assert (ok, reason) == expected
    assert len(used) == 1


def test_only_first_point_counts_for_non_counting():
    assert score_points([[10, 10], [60, 30]], "affordance", TARGET)[:2] == (False, "miss")
    ok, reason, used = score_points([[60, 30], [10, 10], [500, 500]], "reasoning", TARGET)
    assert (ok, reason, used) == (True, "hit", [[60.0, 30.0]])


def test_no_points_fails():
    assert score_points(np.zeros((0, 2)), "steerable", TARGET)[:2] == (False, "no_points")


@pytest.mark.parametrize(
    "points, expected",
    [
        ([[20, 20], [160, 70]], (True, "all_targets")),
        ([[160, 70], [20, 20]], (True, "all_targets")),
        ([[20, 20]], (False, "count_mismatch")),
        ([[20, 20], [160, 70], [165, 75]], (False, "count_mismatch")),
        ([[20, 20], [100, 50]], (False, "point_outside_targets")),
        ([[20, 20], [250, 50]], (False, "outside_image")),
        # union-mask form cannot tell instances apart: two points on one target pass (PointArena's code)
        ([[20, 20], [25, 25]], (True, "all_targets")),
    ],
)
def test_counting_with_union_mask(points, expected):
    assert score_points(points, "counting", UNION, count=2)[:2] == expected


@pytest.mark.parametrize(
    "points, expected",
    [
        ([[20, 20], [160, 70]], (True, "all_targets")),
        ([[20, 20], [25, 25]], (False, "instance_uncovered")),  # both on A: B uncovered
        ([[20, 20]], (False, "count_mismatch")),
        ([[20, 20], [100, 50]], (False, "point_outside_targets")),
    ],
)
def test_counting_with_instance_masks(points, expected):
    # count defaults to the number of instances (2)
    assert score_points(points, "counting", UNION, instance_masks=[INST_A, INST_B])[:2] == expected


def test_instance_assignment_is_one_to_one_with_overlap():
    # Overlapping instances: X = cols 10..59, Y = cols 40..59 (rows 10..29). Points at col 45 (in X and Y)
    # and col 15 (X only): greedy "first instance that contains the point" would give X twice;
    # a one-to-one assignment is (15 -> X, 45 -> Y), so success.
    x, y = rect(10, 59, 10, 29), rect(40, 59, 10, 29)
    assert score_points([[45, 20], [15, 20]], "counting", x | y, instance_masks=[x, y])[:2] == (True, "all_targets")
    # Both points only in X-not-Y: Y uncovered.
    assert score_points([[15, 20], [20, 20]], "counting", x | y, instance_masks=[x, y])[:2] == (
        False,
        "instance_uncovered",
    )


def test_pixel_index_convention():
    assert pixel_index(0, 0, W, H) == (0, 0)
    assert pixel_index(-0.5, -0.5, W, H) == (0, 0)
    assert pixel_index(-0.51, 0, W, H) is None
    assert pixel_index(199.49, 99.49, W, H) == (99, 199)


def _item(tmp_path, category="spatial", mask=TARGET, count=None, inst=()):
    img = tmp_path / "img.png"
    Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(img)
    mp = tmp_path / f"mask_{category}.png"
    Image.fromarray(mask.astype(np.uint8) * 255).save(mp)
    inst_paths = []
    for k, m in enumerate(inst):
        p = tmp_path / f"inst{k}.png"
        # values 128 (above 127: target) and 127 (not) test the release threshold
        Image.fromarray(np.where(m, 128, 127).astype(np.uint8)).save(p)
        inst_paths.append(p)
    return BenchItem("i1", img, "q", category, W, H, mp, inst_paths, count)


# Mask cols 50..99, rows 20..59. Every answer below is converted by hand to (u, v) = (60, 40) -> hit,
# or to a point the wrong reading would put elsewhere.
@pytest.mark.parametrize(
    "text, fmt, expected",
    [
        ('<point x="30.0" y="40.0" alt="t">t</point>', "molmo", "hit"),  # 30% of 200, 40% of 100
        ('<points x1="30" y1="40" x2="1" y2="1" alt="t">t</points>', "molmo", "hit"),  # first point counts
        ('<points coords="1 1 300 400">t</points>', "molmo2", "hit"),  # 300/1000*200, 400/1000*100
        ('[{"point": [500, 300], "label": "t"}]', "gemini", "hit"),  # y=50, x=60 (y first)
        ('[{"point": [300, 500], "label": "t"}]', "gemini", "miss"),  # y=30, x=100 -> col 100
        ('[{"point_2d": [58.8, 44.8], "label": "t"}]', "qwen", "hit"),  # resized 196x112: 58.8*200/196=60
        ('[{"point_2d": [98, 44.8], "label": "t"}]', "qwen", "miss"),  # 98*200/196 = 100 -> col 100
        ("[(0.3, 0.4)]", "robopoint", "hit"),  # 0.3*200, 0.4*100
        ("[60, 40]", "xy_pixels", "hit"),
        ("[100, 40]", "xy_pixels", "miss"),
        ('<point x="30.0" y="40.0" alt="t">t</point>', "auto", "hit"),  # self-identifying Molmo tag
        ("[60, 40]", "auto", "hit"),  # a bare [x, y] under auto: pixels (PointArena sec. 4.1)
        ('[{"point": [60, 40]}]', "auto", "unparseable"),  # an object: gemini or xy_pixels, ambiguous
        ("I cannot find it.", "xy_pixels", "unparseable"),
        ("[60, 40]", "pixels_please", "unparseable"),  # unknown format is recorded
    ],
)
def test_every_point_format_through_pred(tmp_path, text, fmt, expected):
    s = score_prediction(_item(tmp_path), Prediction("i1", prediction=text, format=fmt))
    assert s.reason == expected
    assert (s.value == 1.0) == (expected == "hit")


def test_pred_points_in_pixels_and_missing(tmp_path):
    it = _item(tmp_path)
    assert score_prediction(it, Prediction("i1", points_px=((60.0, 40.0),))).value == 1.0
    assert score_prediction(it, None).reason == "no_prediction"


def test_instance_masks_from_files_use_threshold_127(tmp_path):
    it = _item(tmp_path, "counting", UNION, inst=(INST_A, INST_B))
    it.mask = None  # instance form only: the union comes from the instances
    assert score_prediction(it, Prediction("i1", points_px=((20, 20), (160, 70)))).reason == "all_targets"
    assert score_prediction(it, Prediction("i1", points_px=((20, 20), (21, 21)))).reason == "instance_uncovered"
    # count given explicitly wins over the number of instances
    it.count = 3
    assert score_prediction(it, Prediction("i1", points_px=((20, 20), (160, 70)))).reason == "count_mismatch"


def test_bad_mask_is_recorded_not_raised(tmp_path):
    it = _item(tmp_path)
    it.mask = tmp_path / "nope.png"
    s = score_prediction(it, Prediction("i1", points_px=((60, 40),)))
    assert (s.value, s.reason) == (0.0, "bad_ground_truth")
    it.mask = _item(tmp_path).mask
    it.width = 300  # mask is 200 wide
    assert score_prediction(it, Prediction("i1", points_px=((60, 40),))).reason == "bad_ground_truth"


def test_summary_unweighted_mean_of_categories():
    scores = (
        [point_score(f"s{i}", "spatial", i < 1) for i in range(4)]  # 1/4
        + [point_score(f"c{i}", "counting", True) for i in range(2)]  # 2/2
        + [point_score("a0", "affordance", False)]
    )  # 0/1
    s = summarize(scores)
    assert s["categories"]["spatial"] == {"n": 4, "success": 1, "accuracy": 0.25}
    assert s["categories"]["steerable"] == {"n": 0, "success": 0, "accuracy": None}
    assert s["average"] == pytest.approx((0.25 + 1.0 + 0.0) / 3)
    assert s["overall"] == pytest.approx(3 / 7)
    assert summarize([])["average"] is None


def test_run_records_are_predictions(tmp_path):
    import json

    from pointlab.benchmark.pointbench import load_pred_jsonl

    p = tmp_path / "run_1.jsonl"
    p.write_text(
        json.dumps(
            {"id": "i1", "raw_text": '<point x="30" y="40" alt="t">t</point>', "point_format": "molmo", "error": None}
        )
        + "\n"
        + json.dumps({"id": "i2", "raw_text": "", "point_format": "molmo", "error": "HTTP 500: boom"})
        + "\n"
    )
    preds = load_pred_jsonl(p)
    it = _item(tmp_path)
    assert score_prediction(it, preds["i1"]).reason == "hit"  # (60, 40) as in the molmo case above
    s = score_prediction(it, preds["i2"])
    assert (s.reason, s.metadata["detail"]) == ("model_error", "HTTP 500: boom")


@pytest.mark.parametrize(
    "points, spatial", [(((float("nan"), 1.0),), "unparseable"), (((60.0, 40.0), (float("inf"), 40.0)), "hit")]
)
def test_non_finite_points_are_invalid_points(tmp_path, points, spatial):
    import json

    # non-counting: the first point is the answer (a NaN first point fails, a NaN second point is never
    # looked at); counting: every point must be a finite point
    for cat, inst, count, expected in (
        ("spatial", (), None, spatial),
        ("counting", (INST_A, INST_B), 2, "unparseable"),
    ):
        s = score_prediction(
            _item(tmp_path, cat, UNION if inst else TARGET, count, inst), Prediction("i1", points_px=points)
        )
        assert (s.value == 1.0, s.reason) == (expected == "hit", expected)
        if expected == "unparseable":
            assert "finite" in s.metadata["detail"]
        json.dumps(s.model_dump(), allow_nan=False)  # raises on NaN / Infinity


def test_cli_nan_point_fails_the_item_and_output_is_strict_json(tmp_path):
    import json

    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    it = _item(tmp_path)
    gt, pred = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl"
    gt.write_text(
        json.dumps(
            {"id": "1", "image": str(it.image), "width": W, "height": H, "category": "spatial", "mask": str(it.mask)}
        )
        + "\n"
    )
    pred.write_text('{"id":"1","points":[[NaN,1]]}\n')
    r = CliRunner().invoke(app, ["score", "pointing", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    assert "NaN" not in r.stdout
    doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-finite {c} in output"))
    assert doc["items"][0]["value"] == 0.0 and doc["items"][0]["reason"] == "unparseable"
    assert doc["summary"]["rules"] == "pointlab"
    # one bad line never stops the run: a repeated id scores 0 with its reason, a line that is not JSON is
    # listed, the other items score
    pred.write_text('{"id":"1","points":[[60,40]]}\n{"id":"1","points":[[0,0]]}\nnot json\n')
    r = CliRunner().invoke(app, ["score", "pointing", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["items"][0]["value"] == 0.0 and doc["items"][0]["reason"] == "invalid_prediction"
    assert "duplicate id '1'" in doc["items"][0]["metadata"]["detail"]
    assert len(doc["summary"]["unreadable_prediction_lines"]) == 1


def test_registered_scorer_returns_the_contract_item_scores(tmp_path):
    from pointlab.benchmark.scorers import ItemScore, get_scorer

    img = tmp_path / "img.png"
    Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(img)
    items = []
    for iid, cat, mask in (("in", "spatial", TARGET), ("out", "affordance", INST_A)):
        Image.fromarray(mask.astype(np.uint8) * 255).save(tmp_path / f"{iid}.png")
        items.append(BenchItem(iid, img, "q", cat, W, H, tmp_path / f"{iid}.png"))
    # "in": (60, 40) -> col 60, row 40, inside cols 50..99 x rows 20..59: hit.
    # "out": (30, 20) -> col floor(30.5) = 30, one right of INST_A's last column 29: miss.
    preds = {
        "in": Prediction("in", prediction="[60, 40]", format="xy_pixels"),
        "out": Prediction("out", prediction="[30, 20]", format="xy_pixels"),
    }
    report = get_scorer("pointing")(items, preds)
    assert all(type(s) is ItemScore for s in report.items)
    assert report.items == [
        ItemScore(
            id="in",
            value=1.0,
            parsed=[[60.0, 40.0]],
            reason="hit",
            metadata={"category": "spatial", "success": True, "reader": "pointlab:parse_points"},
        ),
        ItemScore(
            id="out",
            value=0.0,
            parsed=[[30.0, 20.0]],
            reason="miss",
            metadata={"category": "affordance", "success": False, "reader": "pointlab:parse_points"},
        ),
    ]
    # one category each: 1/1 and 0/1; average of the two categories 0.5, overall 1 of 2
    assert report.summary["categories"]["spatial"] == {"n": 1, "success": 1, "accuracy": 1.0}
    assert report.summary["categories"]["affordance"] == {"n": 1, "success": 0, "accuracy": 0.0}
    assert (report.summary["average"], report.summary["overall"], report.summary["n"]) == (0.5, 0.5, 2)
    assert report.summary["lmms_eval"] == {"pointbench_binary_acc": 0.5, "pointbench_acc": 0.5}
