"""VSI-Bench / ReVSI under both rule sets (docs/scoring.md, the ``vsi.*`` rows), the released file layouts
(ReVSI question types and fields, VSI-Bench as a JSON array, lmms-eval sample logs) and lmms-eval's results
form. Expected values by hand from lmms-eval's vsibench / revsi utils (75571cfe)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pointlab.benchmark.video.scoring import lmms_extract_number, score_vsi, score_vsi_item
from pointlab.bridge.cli import app


def q(qid, qtype, gt, **kw):
    return {"id": qid, "question_type": qtype, "ground_truth": gt, **kw}


def both(rec, pred):
    return {r: score_vsi_item(rec, pred, rules=r).score for r in ("reference", "pointlab")}


def test_mra_float_boundary():
    # 1 - np.linspace(.5, .95, 10)[6] = 0.19999999999999984 < 0.2: the reference misses theta 0.8 for an
    # error of exactly 0.2; pointlab counts it (within a threshold)
    assert both(q("a", "object_counting", "5"), "6") == {
        "reference": pytest.approx(0.6),
        "pointlab": pytest.approx(0.7),
    }
    # gt 10, pred 9: the tolerance 0.1 is exact in the reference's floats too: both count it (0.9)
    assert both(q("b", "object_counting", "10"), "9") == {
        "reference": pytest.approx(0.9),
        "pointlab": pytest.approx(0.9),
    }
    # ReVSI's code: the same arithmetic
    assert both(q("c", "object_counting_single", "5", scene_id="s", num_frames=16), "4") == {
        "reference": pytest.approx(0.6),
        "pointlab": pytest.approx(0.7),
    }


def test_zero_ground_truth():
    # ReVSI dummy videos: the queried object never appears, the count is 0
    rec = q("d", "object_counting_single", "0", scene_id="s", num_frames=16)
    assert both(rec, "0") == {"reference": 0.0, "pointlab": 1.0}  # reference: ZeroDivisionError caught -> 0
    assert both(rec, "2") == {"reference": 0.0, "pointlab": 0.0}
    s = score_vsi_item(q("e", "object_counting", "0"), "0", rules="reference")  # VSI-Bench's code raises here
    assert s.score == 0.0 and "ZeroDivisionError" in s.reason


def test_negative_ground_truth():
    # |p - g| / g with g = -2: negative for every prediction, so every threshold passes in the reference
    assert both(q("f", "object_abs_distance", "-2"), "100") == {"reference": 1.0, "pointlab": 0.0}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("3", 3.0),
        ("There are 3 boxes", 3.0),
        ("three", 3.0),
        ("Three boxes.", 3.0),
        ("twenty-one", 21.0),
        ("three hundred and twenty-one", 321.0),
        ("one apple, room 2", 1.0),
        ("-2.5 m", -2.5),
        ("none", None),
        ("1e5", 1.0),  # no exponent in the released pattern
    ],
)
def test_lmms_extract_number(text, expected):
    assert lmms_extract_number(text) == expected


def test_reference_extraction():
    opts = ["A. chair", "B. sofa", "C. tv", "D. stove"]
    mc = q("g", "object_rel_distance", "B", options=opts)
    # VSI-Bench splits the raw text on " " (a leading space gives an empty token); ReVSI strips it first
    assert both(mc, " B") == {"reference": 0.0, "pointlab": 0.0}
    rmc = q("h", "object_rel_distance_closest", "B", options=opts, scene_id="s", num_frames=32)
    assert both(rmc, " B") == {"reference": 1.0, "pointlab": 1.0}
    assert both(mc, "B)") == {"reference": 0.0, "pointlab": 0.0}
    assert score_vsi_item(mc, "B)").score_lenient == 1.0  # pointlab's lenient reading, reported beside
    # ReVSI numbers: float() of the first token ("3.5m" fails); VSI-Bench: the first number anywhere
    assert both(q("i", "object_abs_distance", "3.5", scene_id="s", num_frames=16), "3.5m") == {
        "reference": 0.0,
        "pointlab": 0.0,
    }
    assert both(q("j", "object_abs_distance", "3.5"), "about 3.5m") == {"reference": 1.0, "pointlab": 1.0}


def test_revsi_release_types_and_fields_through_the_cli(tmp_path):
    """Must show (issue 12): ``pointlab score vsi`` on ReVSI-typed questions with ``scene_id`` / ``num_frames``."""
    gt = [
        q("1", "object_counting_single", "3", scene_id="scene0001", num_frames=16),
        q("2", "object_counting_multiple", "6", scene_id="scene0001", num_frames=16),
        q("3", "object_rel_direction_forward_easy", "A", options=["A. left", "B. right"], scene_id="s", num_frames=16),
        q("4", "object_rel_direction_backward_hard", "B", options=["A. left", "B. right"], scene_id="s", num_frames=16),
        q("5", "room_size_estimation_single", "20", scene_id="s", num_frames=32),
    ]
    (tmp_path / "gt.json").write_text(json.dumps(gt))  # a JSON array, as released
    pred = tmp_path / "p.jsonl"
    pred.write_text(
        "".join(
            json.dumps({"id": i, "prediction": p}) + "\n"
            for i, p in [("1", "3"), ("2", "5"), ("3", "A"), ("4", "A"), ("5", "21")]
        )
    )
    r = CliRunner().invoke(
        app,
        [
            "score",
            "vsi",
            "--gt",
            str(tmp_path / "gt.json"),
            "--pred",
            str(pred),
            "--rules",
            "reference",
            "--lmms-results",
            str(tmp_path / "lm.json"),
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    s = out["summary"]
    assert s["flavour"] == "revsi" and s["rules"] == "reference"
    # counting = mean of single (1.0) and multiple (|5-6|/6 = 0.167: within 0.50 .. 0.20 -> 0.7)
    assert s["budgets"]["16"]["tasks"]["object_counting"]["score"] == pytest.approx((1.0 + 0.7) / 2)
    assert s["budgets"]["16"]["tasks"]["object_rel_direction"]["score"] == pytest.approx(0.5)
    # room size 21 for 20: error 0.05, and the reference's 1 - 0.95 is 0.050000000000000044: every threshold
    assert s["budgets"]["32"]["tasks"]["room_size_estimation"]["score"] == pytest.approx(1.0)
    lm = json.loads((tmp_path / "lm.json").read_text())
    assert lm["results"]["revsi_16_frame"]["object_counting_acc,none"] == pytest.approx(0.85)
    assert lm["results"]["revsi_32_frame"]["overall_acc,none"] == pytest.approx(1.0)


def test_lmms_eval_samples_log_is_ground_truth_and_predictions(tmp_path):
    log = tmp_path / "20260101_samples_vsibench.jsonl"
    rows = [
        {
            "doc_id": 0,
            "doc": q("v1", "object_counting", "4", dataset="arkitscenes", scene_name="4"),
            "target": "4",
            "arguments": [],
            "resps": [["4"]],
            "filtered_resps": ["4"],
            "vsibench_overall": {},
        },
        {
            "doc_id": 1,
            "doc": q("v2", "object_rel_distance", "C", options=["A. a", "B. b", "C. c", "D. d"]),
            "target": "C",
            "resps": [["B"]],
            "filtered_resps": ["B"],
        },
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = CliRunner().invoke(app, ["score", "vsi", "--pred", str(log), "--lmms-results", str(tmp_path / "lm.json")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [i["value"] for i in out["items"]] == [1.0, 0.0] and out["summary"]["overall"] == pytest.approx(0.5)
    lm = json.loads((tmp_path / "lm.json").read_text())
    assert lm["results"]["vsibench"]["vsibench_overall,none"] == pytest.approx(0.5)
    assert lm["results"]["vsibench"]["object_counting_mra,none"] == 1.0


def test_mixed_benchmarks_are_refused():
    from pointlab.benchmark.video.errors import RecordError

    with pytest.raises(RecordError, match="score them separately"):
        score_vsi([q("1", "object_counting", "3"), q("2", "object_counting_single", "3")], {})
