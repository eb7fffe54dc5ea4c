"""Point-Bench loaders: the release layout (data.json, images/<category>/, masks/, pixmo_metadata.csv),
the instance-mask form, GT / PRED JSONL, and the dataset builder's checks."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.pointbench import (
    DatasetError,
    Prediction,
    load_dataset,
    load_gt_jsonl,
    load_pred_jsonl,
    load_release,
    score_prediction,
    write_gt_jsonl,
)
from pointlab.benchmark.pointbench.build import build_dataset


def _img(p, w=40, h=20):
    p.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(p)


def _mask(p, box=(0, 0, 5, 5), w=40, h=20, value=255):
    p.parent.mkdir(parents=True, exist_ok=True)
    m = np.zeros((h, w), np.uint8)
    c0, r0, c1, r1 = box
    m[r0:r1, c0:c1] = value
    Image.fromarray(m).save(p)


@pytest.fixture
def release(tmp_path):
    r = tmp_path / "rel"
    _img(r / "images" / "affordable" / "a.jpg")
    _img(r / "images" / "steerable" / "s.png")
    _img(r / "images" / "counting" / "c.png")
    _mask(r / "masks" / "a_mask.png")
    _mask(r / "masks" / "s_mask.png")
    _mask(r / "masks" / "c1.png", (0, 0, 5, 5))
    _mask(r / "masks" / "c2.png", (20, 10, 25, 15))
    (r / "data.json").write_text(
        json.dumps(
            [
                {
                    "image_filename": "a.jpg",
                    "mask_filename": "a_mask.png",
                    "user_input": "handle?",
                    "category": "affordable",
                },
                {
                    "image_filename": "a.jpg",
                    "mask_filename": "a_mask.png",
                    "user_input": "again?",
                    "category": "affordable",
                },
                {
                    "image_filename": "s.png",
                    "mask_filename": "s_mask.png",
                    "user_input": "near the dot",
                    "category": "steerable",
                },
                {
                    "image_filename": "c.png",
                    "instance_mask_filenames": ["c1.png", "c2.png"],
                    "user_input": "all",
                    "category": "counting",
                    "count": 2,
                },
            ]
        )
    )
    (r / "pixmo_metadata.csv").write_text('image_filename,points\ns.png,"[{""x"": 25.0, ""y"": 50.0}]"\n')
    return r


def test_release_layout(release):
    items = load_release(release)
    assert [i.id for i in items] == ["affordance/a", "affordance/a#2", "steerable/s", "counting/c"]
    assert [i.category for i in items] == ["affordance", "affordance", "steerable", "counting"]
    assert (items[0].width, items[0].height) == (40, 20)
    # pixmo percent -> pixels: 25 % of 40 = 10, 50 % of 20 = 10
    assert items[2].reference_points_px == [(10.0, 10.0)]
    c = items[3]
    assert c.count == 2 and len(c.instance_masks) == 2 and c.mask is None
    assert c.target_mask().sum() == 50
    assert load_dataset(release)[0].id == "affordance/a"


def test_gt_round_trip_and_scoring(release, tmp_path):
    items = load_release(release)
    gt = write_gt_jsonl(items, tmp_path / "gt" / "gt.jsonl")
    back = load_gt_jsonl(gt)
    assert [(i.id, i.category, i.count, i.reference_points_px, i.image, i.instance_masks) for i in back] == [
        (i.id, i.category, i.count, i.reference_points_px, i.image, i.instance_masks) for i in items
    ]
    assert load_dataset(tmp_path / "gt")[0].id == "affordance/a"
    ok = score_prediction(back[3], Prediction("counting/c", points_px=((2, 2), (22, 12))))
    assert ok.value == 1.0


@pytest.mark.parametrize(
    "entry, msg",
    [
        (
            {"image_filename": "a.jpg", "mask_filename": "a_mask.png", "user_input": "q", "category": "colour"},
            "unknown category",
        ),
        (
            {"image_filename": "zz.jpg", "mask_filename": "a_mask.png", "user_input": "q", "category": "affordable"},
            "not found",
        ),
        (
            {"image_filename": "a.jpg", "mask_filename": "none.png", "user_input": "q", "category": "affordable"},
            "not found",
        ),
        ({"image_filename": "a.jpg", "user_input": "q", "category": "affordable"}, "no mask_filename"),
        ({"mask_filename": "a_mask.png", "user_input": "q", "category": "affordable"}, "missing key"),
    ],
)
def test_release_errors(release, entry, msg):
    (release / "data.json").write_text(json.dumps([entry]))
    with pytest.raises(DatasetError, match=msg):
        load_release(release)


@pytest.mark.parametrize(
    "count, expect",
    [
        (2, 2),
        (2.0, 2),
        ("2", 2),
        (" 3 ", 3),
        ("three", "count must be"),
        ("\u00b2", "count must be"),
        (0, "count must be"),
        (True, "count must be"),
        (2.5, "count must be"),
        ([2], "count must be"),
    ],
)
def test_release_count_is_a_positive_integer(release, count, expect):
    # data.json's count used to go through a bare int(): "three" raised a ValueError traceback, True
    # and 2.5 became counts of 1 and 2; now the same check as the GT JSONL's (digit text still reads)
    (release / "data.json").write_text(
        json.dumps(
            [
                {
                    "image_filename": "c.png",
                    "instance_mask_filenames": ["c1.png"],
                    "user_input": "all",
                    "category": "counting",
                    "count": count,
                }
            ]
        )
    )
    if isinstance(expect, int):
        assert load_release(release)[0].count == expect
    else:
        with pytest.raises(DatasetError, match=r"data.json\[0\]: count must be a positive integer"):
            load_release(release)


def test_gt_and_pred_errors(tmp_path):
    (tmp_path / "empty_dir").mkdir()
    p = tmp_path / "gt.jsonl"
    (tmp_path / "m.png").write_bytes(b"")  # present: masks are checked to be files at load time
    p.write_text(
        '{"id": "x", "image": "i.png", "width": 4, "height": 4, "category": "spatial", "mask": "m.png"}\n{oops\n'
    )
    with pytest.raises(DatasetError, match=r"gt.jsonl:2: not JSON"):
        load_gt_jsonl(p)
    p.write_text('{"id": "x", "image": "i.png", "width": 4, "height": 4, "category": "spatial"}\n')
    with pytest.raises(DatasetError, match="no mask"):
        load_gt_jsonl(p)
    with pytest.raises(DatasetError, match="no data.json"):
        load_dataset(tmp_path / "empty_dir")
    q = tmp_path / "pred.jsonl"
    q.write_text(
        '{"id": "a", "points": [[1, 2]]}\n{"id": "b", "prediction": "[1, 2]"}\n{"id": "c", "points": [["x"]]}\n'
    )
    preds = load_pred_jsonl(q)
    assert preds["a"].points_px == ((1.0, 2.0),)
    assert (preds["b"].prediction, preds["b"].format) == ("[1, 2]", "auto")
    assert preds["c"].problem.startswith("points must be")  # scored 0 with that reason, not a crash
    q.write_text('{"id": "a"}\n{oops\n')
    preds = load_pred_jsonl(q)  # one bad line never stops the scoring of the others
    assert preds["a"].problem.startswith("needs 'prediction'")
    assert len(preds.unreadable) == 1 and "pred.jsonl:2: not JSON" in preds.unreadable[0]
    with pytest.raises(DatasetError, match="cannot read"):
        load_pred_jsonl(tmp_path / "nope.jsonl")


def test_mask_size_mismatch_is_an_error(release):
    _mask(release / "masks" / "a_mask.png", w=30)
    with pytest.raises(DatasetError, match="30x20, image is 40x20"):
        load_release(release)[0].target_mask()


@pytest.fixture
def src(tmp_path):
    s = tmp_path / "src"
    _img(s / "i.png")
    _mask(s / "m.png")
    _mask(s / "empty.png", value=100)  # 100 <= 127: no target pixel
    _mask(s / "wide.png", w=50)
    return s


@pytest.mark.parametrize(
    "line, msg",
    [
        ({"image": "i.png", "query": "q", "category": "spatial", "mask": "empty.png"}, "no target pixel"),
        ({"image": "i.png", "query": "q", "category": "spatial", "mask": "wide.png"}, "50x20, image is 40x20"),
        ({"image": "i.png", "query": "q", "category": "counting", "mask": "m.png"}, "needs 'count'"),
        (
            {"image": "i.png", "query": "q", "category": "counting", "instance_masks": ["m.png"], "count": 2},
            "count 2 but 1",
        ),
        ({"image": "i.png", "query": "q", "category": "steerable", "mask": "m.png"}, "reference_points_px"),
        ({"image": "i.png", "query": " ", "category": "spatial", "mask": "m.png"}, "empty query"),
        ({"image": "x.png", "query": "q", "category": "spatial", "mask": "m.png"}, "not found"),
    ],
)
def test_builder_checks(src, tmp_path, line, msg):
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps(line) + "\n")
    with pytest.raises(DatasetError, match=msg):
        build_dataset(src, q, tmp_path / "out")


def test_builder_writes_release_and_gt(src, tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text(
        json.dumps(
            {
                "image": "i.png",
                "query": "q",
                "category": "Steerability",
                "mask": "m.png",
                "reference_points_px": [[3, 4]],
            }
        )
        + "\n"
    )
    items = build_dataset(src, q, tmp_path / "out")
    assert (tmp_path / "out" / "images" / "steerable" / "i.png").exists()
    assert [(i.id, i.category, i.reference_points_px) for i in items] == [("steerable/i", "steerable", [(3.0, 4.0)])]
    assert load_gt_jsonl(tmp_path / "out" / "gt.jsonl")[0].mask == (tmp_path / "out" / "masks" / "m.png").resolve()


def test_pred_duplicate_ids_and_non_finite_points(tmp_path):
    q = tmp_path / "pred.jsonl"
    q.write_text(
        '{"id": "a", "points": [[1, 2]]}\n{"id": "b", "prediction": "[1, 2]"}\n{"id": "a", "points": [[3, 4]]}\n'
    )
    preds = load_pred_jsonl(q)  # which of two answers counts is a guess: neither does, the item scores 0
    assert "duplicate id 'a'" in preds["a"].problem and "pred.jsonl:3" in preds["a"].problem
    assert preds["b"].problem is None
    q.write_text('{"id": 7, "points": [[1, 2]]}\n{"id": "7", "prediction": "[1, 2]"}\n')  # same id once stringified
    assert "duplicate id '7'" in load_pred_jsonl(q)["7"].problem
    big = "1" + "0" * 400  # an integer too large for a float: kept as an invalid (infinite) point
    q.write_text(
        '{"id": "a", "points": [[NaN, 1]]}\n{"id": "b", "points": [[1, -Infinity]]}\n'
        f'{{"id": "c", "points": [[{big}, 1]]}}\n'
    )
    preds = load_pred_jsonl(q)
    assert np.isnan(preds["a"].points_px[0][0]) and preds["b"].points_px[0][1] == -np.inf
    assert preds["c"].points_px[0][0] == np.inf


@pytest.mark.parametrize(
    "fields, msg",
    [
        ({"width": True}, "width must be a positive integer, got True"),
        ({"width": 320.9}, "width must be a positive integer, got 320.9"),
        ({"height": 0}, "height must be a positive integer, got 0"),
        ({"width": -320}, "width must be a positive integer, got -320"),
        ({"width": "320"}, "width must be a positive integer"),
        ({"count": -1}, "count must be a positive integer, got -1"),
        ({"mask": 7}, "mask must be a file name"),
        ({"mask": "nope.png"}, "mask 'nope.png' is not a file"),
        ({"mask": "."}, "mask '.' is not a file"),
        ({"mask": None, "instance_masks": "m.png"}, "instance_masks must be a list"),
    ],
)
def test_malformed_ground_truth_fields_are_refused(tmp_path, fields, msg):
    """A size, count or mask a scorer cannot use is a ground-truth error naming the line, not a
    per-item model failure (docs/scoring.md: malformed ground truth exits 2)."""
    (tmp_path / "m.png").write_bytes(b"")
    rec = {"id": "x", "image": "i.png", "width": 4, "height": 4, "category": "spatial", "mask": "m.png", **fields}
    p = tmp_path / "gt.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    with pytest.raises(DatasetError, match=re.escape(f"gt.jsonl:1: {msg}")):
        load_gt_jsonl(p)


def test_an_integer_valued_float_size_is_read(tmp_path):
    (tmp_path / "m.png").write_bytes(b"")
    p = tmp_path / "gt.jsonl"
    p.write_text(
        json.dumps(
            {
                "id": "x",
                "image": "i.png",
                "width": 320.0,
                "height": 240,
                "category": "spatial",
                "mask": "m.png",
                "count": 2.0,
            }
        )
        + "\n"
    )
    (item,) = load_gt_jsonl(p)
    assert (item.width, item.height, item.count) == (320, 240, 2)


def test_predictions_as_a_json_array(tmp_path):
    """A JSON array of prediction records reads as the same records in JSONL (as for vsi / egopoint)."""
    q = tmp_path / "pred.json"
    q.write_text(
        json.dumps([{"id": "a", "points": [[1, 2]]}, {"id": "b", "prediction": "[3, 4]", "format": "xy_pixels"}, 7])
    )
    preds = load_pred_jsonl(q)
    assert sorted(preds) == ["a", "b"] and preds["a"].points_px == ((1.0, 2.0),)
    assert preds["b"].prediction == "[3, 4]" and preds.unreadable == [f"{q}[2]: expected an object"]
