"""Point-Bench under both rule sets (docs/scoring.md, the ``pointbench.*`` rows): ``--rules reference``
reproduces PointArena's model_evaluator.py / molmo_evaluator.py and lmms-eval's pointbench task,
``--rules pointlab`` differs only in the listed rules. Inputs of our own making; expectations by hand."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.pointbench import BenchItem, Prediction, score_prediction
from pointlab.benchmark.pointbench.reference import reference_answer

W, H = 320, 240


def _item(tmp_path, mask, category="spatial", count=None, mode="L", inst=(), name="i"):
    img = tmp_path / f"{name}.png"
    Image.fromarray(np.zeros((mask.shape[0], mask.shape[1], 3), np.uint8)).save(img)
    mp = tmp_path / f"{name}_mask.png"
    if mode == "L":
        Image.fromarray(mask.astype(np.uint8) * 255).save(mp)
    else:
        Image.fromarray(mask).save(mp)
    inst_paths = []
    for k, m in enumerate(inst):
        p = tmp_path / f"{name}_inst{k}.png"
        Image.fromarray(m.astype(np.uint8) * 255).save(p)
        inst_paths.append(p)
    h, w = mask.shape[:2]
    return BenchItem(name, img, "q", category, w, h, mp, inst_paths, count)


def both(item, text=None, fmt="xy_pixels", points=None):
    pred = Prediction(item.id, prediction=text, format=fmt) if points is None else Prediction(item.id, points_px=points)
    return {r: score_prediction(item, pred, rules=r).reason for r in ("reference", "pointlab")}


def cols(c0, c1, w=W, h=H):
    m = np.zeros((h, w), bool)
    m[:, c0 : c1 + 1] = True
    return m


def test_gemini_999_full_mask_succeeds_under_both_rule_sets(tmp_path):
    # issue 12: [500, 999] on a 320-px image whose mask is the whole image scored outside_image before.
    # PointArena: int(999 / 1000 * 320) = int(319.68) = 319 < 320; pointlab: floor(319.68) = 319
    it = _item(tmp_path, np.ones((H, W), bool))
    assert both(it, '[{"point": [500, 999], "label": "x"}]', "gemini") == {"reference": "hit", "pointlab": "hit"}
    # Molmo 31.1 % of 320 = 99.52 -> column 99 in both (the old corner mapping read column 100, a miss)
    it = _item(tmp_path, cols(0, 99), name="m")
    assert both(it, '<point x="31.1" y="50" alt="a">a</point>', "molmo") == {"reference": "hit", "pointlab": "hit"}
    # lmms-eval's grid reader rounds: 999 -> round(319.68) = 320, outside; pointlab's area frame: column 319
    it = _item(tmp_path, np.ones((H, W), bool), name="g")
    assert both(it, "[(999, 500)]", "grid1000") == {"reference": "outside_image", "pointlab": "hit"}


def test_fractional_pixel_answers(tmp_path):
    it = _item(tmp_path, cols(0, 99))
    # 99.7: PointArena int() -> column 99 (hit); pointlab nearest centre -> column 100 (miss)
    assert both(it, '[{"point": [99.7, 10]}]') == {"reference": "hit", "pointlab": "miss"}
    # -0.7: int() -> 0, inside; pointlab: left of the image
    assert both(it, '[{"point": [-0.7, 10]}]') == {"reference": "hit", "pointlab": "outside_image"}
    # a negative normalised answer: Gemini x = -1 -> -0.32 px: int() -> 0 (inside), floor -> -1 (outside)
    assert both(it, '[{"point": [500, -1]}]', "gemini") == {"reference": "hit", "pointlab": "outside_image"}
    # integer pixels agree
    assert both(it, '[{"point": [99, 10]}]') == {"reference": "hit", "pointlab": "hit"}
    assert both(it, '[{"point": [100, 10]}]') == {"reference": "miss", "pointlab": "miss"}


def test_invalid_first_point_fails_under_pointlab(tmp_path):
    it = _item(tmp_path, cols(0, 99))
    # pointlab: the first point is the answer; NaN first fails, the good second point is never used
    assert (
        score_prediction(it, Prediction("i", prediction="[[NaN, NaN], [50, 50]]", format="xy_pixels")).reason
        == "unparseable"
    )
    # PointArena reads only [{"point": [x, y]}]: int(NaN) raises inside is_point_in_mask -> "Processing error"
    s = score_prediction(
        it,
        Prediction("i", prediction='[{"point": [NaN, 1]}, {"point": [50, 50]}]', format="xy_pixels"),
        rules="reference",
    )
    assert (s.reason, s.metadata["detail"].startswith("Processing error")) == ("unparseable", True)
    # an integer too large for a float: an invalid entry under pointlab; reference: int() of it works and
    # the point is outside the image
    big = "1" + "0" * 400
    assert both(it, f'[{{"point": [{big}, 5]}}]') == {"reference": "outside_image", "pointlab": "unparseable"}


def test_mask_channels(tmp_path):
    p50, p250 = '[{"point": [50, 50]}]', '[{"point": [250, 50]}]'  # PointArena's standard answer form
    # RGBA mask: target pixels red and opaque, background transparent black (alpha 0) ... and one opaque
    # black region: PointArena's any-channel test counts the alpha channel, so opaque black is a target
    rgba = np.zeros((H, W, 4), np.uint8)
    rgba[:, :100] = (255, 0, 0, 255)  # red, opaque: a target under both
    rgba[:, 200:] = (0, 0, 0, 255)  # black, opaque: a target only by its alpha
    it = _item(tmp_path, rgba, mode="RGBA")
    assert both(it, p50) == {"reference": "hit", "pointlab": "hit"}
    assert both(it, p250) == {"reference": "hit", "pointlab": "miss"}
    # a red RGB mask: grey value 76 < 127, but a channel above 127 -> a target under both (convert("L") would
    # have missed it)
    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[:, :100] = (255, 0, 0)
    assert both(_item(tmp_path, rgb, mode="RGB", name="r"), p50) == {"reference": "hit", "pointlab": "hit"}
    # a 1-bit mask: np.array gives bools, never > 127 under the reference
    bit = tmp_path / "bit.png"
    Image.fromarray(cols(0, 99)).convert("1").save(bit)
    it = _item(tmp_path, cols(0, 99), name="b")
    it.mask = bit
    assert both(it, p50) == {"reference": "miss", "pointlab": "hit"}


def test_qwen_point_under_both_rule_sets(tmp_path):
    # 1920x1080 -> the checkpoint's resize 1932x1092; the model's (1220, 716) is column floor(1220*1920/1932)
    # = 1212 under pointlab; the reference takes 1220 as a column of the original
    m = np.zeros((1080, 1920), bool)
    m[:, 1205:1215] = True
    it = _item(tmp_path, m)
    assert both(it, '{"point_2d": [1220, 716]}', "qwen") == {"reference": "miss", "pointlab": "hit"}


@pytest.mark.parametrize(
    "text, fmt, category, expected",
    [
        # OpenAI/Claude/Grok: first [ to last ] as JSON; bare pairs are not {"point": ...}: processing error
        ('Sure: [{"point": [10, 20]}] done', "xy_pixels", "spatial", [{"point": [10, 20]}]),
        ("[[10, 20]]", "xy_pixels", "spatial", [[10, 20]]),
        ("no brackets", "xy_pixels", "spatial", []),
        ('[{"point": [1, 2]}, {"point": [3, 4]}]', "xy_pixels", "spatial", [{"point": [1, 2]}]),  # first only
        ('[{"point": [1, 2]}, {"point": [3, 4]}]', "xy_pixels", "counting", [{"point": [1, 2]}, {"point": [3, 4]}]),
        # Gemini: [y, x] / 1000; a string coordinate raises: []
        ('[{"point": [500, 250]}]', "gemini", "spatial", [{"point": [80.0, 120.0]}]),
        ('[{"point": ["500", 250]}]', "gemini", "spatial", []),
        ("[500, 250]", "gemini", "spatial", [{"point": [80.0, 120.0]}]),  # regex fallback on the span
        # Qwen: XML first, raw pixels
        ('<points x1="100" y1="50" alt="a">a</points>', "qwen", "spatial", [{"point": [100.0, 50.0]}]),
        ("x: 12, y: 34", "qwen", "spatial", [{"point": [12.0, 34.0]}]),
        # Molmo: percent; a value above 100 is dropped
        ('<point x="50" y="25">a</point>', "molmo", "spatial", [{"point": [160.0, 60.0]}]),
        ('<point x="150" y="25">a</point>', "molmo", "spatial", []),
        # lmms-eval tuples: both in [0, 1] normalised, both in [0, 1000] per mille (rounded)
        ("[(0.5, 0.25)]", "robopoint", "spatial", [(160, 60)]),
        ("[(500, 250)]", "grid1000", "spatial", [(160, 60)]),
        ("[(1, 5)]", "grid1000", "spatial", [(0, 1)]),  # (1, 5) is not both <= 1: per mille, round(0.32) = 0
    ],
)
def test_reference_readers(text, fmt, category, expected):
    assert reference_answer(text, fmt, W, H, category).points == expected


def test_counting_reference_uses_the_union_mask(tmp_path):
    a, b = cols(10, 29), cols(150, 179)
    it = _item(tmp_path, a | b, "counting", count=2, inst=(a, b))
    # two points on instance A: the union-mask rule of the released code passes, pointlab's one-to-one cover fails
    assert both(it, points=((20.0, 20.0), (25.0, 25.0))) == {
        "reference": "all_targets",
        "pointlab": "instance_uncovered",
    }


def test_lmms_metrics_under_both_rule_sets(tmp_path):
    """lmms-eval's pointbench_acc is the mean per item of the fraction of points in the target; it is
    never below pointbench_binary_acc. Under the reference rules the points are PointArena's
    {"point": [x, y]} objects (they were all dropped: pointbench_acc 0.0 with every item a hit)."""
    from pointlab.benchmark.pointbench.scoring import lmms_metrics

    hit = _item(tmp_path, cols(0, 99), name="h")
    two = _item(tmp_path, cols(0, 99), category="counting", count=2, name="c")
    # item h: (50.7, 10) -> column 50 (int) / 51 (nearest centre): inside columns 0-99 under both.
    # item c: (10, 10) inside, (200, 10) outside: fails, half its points in the mask.
    for rules in ("reference", "pointlab"):
        scores = [
            score_prediction(hit, Prediction("h", points_px=((50.7, 10.0),)), rules=rules),
            score_prediction(two, Prediction("c", points_px=((10.0, 10.0), (200.0, 10.0))), rules=rules),
        ]
        assert [s.value == 1.0 for s in scores] == [True, False]
        assert lmms_metrics([hit, two], scores) == {"pointbench_binary_acc": 0.5, "pointbench_acc": 0.75}, rules
    # 99.7: column 99 under PointArena's int() (inside), 100 under pointlab (outside): the fractions differ
    edge = _item(tmp_path, cols(0, 99), category="counting", count=2, name="e")
    pts = ((99.7, 10.0), (300.0, 10.0))
    ref = score_prediction(edge, Prediction("e", points_px=pts), rules="reference")
    lab = score_prediction(edge, Prediction("e", points_px=pts), rules="pointlab")
    assert lmms_metrics([edge], [ref])["pointbench_acc"] == 0.5
    assert lmms_metrics([edge], [lab])["pointbench_acc"] == 0.0
