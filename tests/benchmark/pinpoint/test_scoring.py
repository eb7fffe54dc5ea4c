"""PinpointQA run scoring: TPV / NRI extraction, Micro and Macro by hand, the CLI's JSON."""

from __future__ import annotations

import json
import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import app

from pointlab.benchmark.pinpoint.scoring import PinpointScoreError, score_pinpoint

CHOICES = ["A. keyboard", "B. office chair", "C. monitor", "D. lamp"]
SSP_GT = json.dumps(
    {
        "target": "mouse",
        "support_surface": "table",
        "references": [{"object": "keyboard", "relation": "next_to", "distance_cm": 3.0}],
    }
)


def gt_items():
    return [
        {
            "id": "t1",
            "scene_id": "s1",
            "source_dataset": "scannetpp",
            "task": "TPV",
            "question_type": "presence",
            "question": "Did the mouse appear?",
            "answer": "Yes",
            "target": "mouse",
        },
        {"id": "t2", "scene_id": "s1", "task": "TPV", "answer": "No", "target": "stapler"},
        {"id": "t3", "scene_id": "s2", "task": "TPV", "answer": "Yes", "target": "cup"},
        {
            "id": "n1",
            "scene_id": "s1",
            "task": "NRI",
            "question_type": "reference_mcq",
            "answer": "B",
            "choices": CHOICES,
            "target": "mouse",
        },
        {"id": "n2", "scene_id": "s2", "question_type": "reference_mcq", "answer": "C", "choices": CHOICES},
        {"id": "p1", "scene_id": "s1", "task": "SSP", "answer": SSP_GT, "target": "mouse"},
        {"id": "p2", "scene_id": "s2", "task": "SSP", "answer": SSP_GT, "target": "mouse"},
        {"id": "f1", "scene_id": "s1", "task": "FSD", "answer": "The mouse is on the table.", "target": "mouse"},
    ]


PREDS = {
    "t1": "<think>I saw a mouse near the keyboard.</think> Yes, it appears.",  # yes -> 1
    "t2": "Yes.",  # wrong -> 0
    "t3": "I am not sure.",  # unparseable -> 0
    "n1": "B) office chair",  # 1
    "n2": "The nearest reference is the monitor.",  # no letter -> 0 (released reading)
    "p1": SSP_GT,  # 1.0
    "p2": json.dumps({"support_surface": "desk", "references": []}),  # 0
    "f1": "On the table.",
    "zzz": "a prediction for an id not in the ground truth",
}


def test_closed_tasks_micro_macro_and_averages():
    out = score_pinpoint(gt_items(), PREDS, judge=None)
    s = {it["id"]: it for it in out["items"]}
    assert [s[k]["score"] for k in ("t1", "t2", "t3", "n1", "n2", "p1", "p2")] == [1, 0, 0, 1, 0, 1, 0]
    assert s["t3"]["reason"] == "unparseable" and s["t2"]["parts"] == {"expected": "no", "extracted": "yes"}
    assert s["n2"]["task"] == "NRI"  # from question_type alone
    assert s["f1"]["score"] is None and s["f1"]["reason"] == "no_judge"
    t = out["summary"]["tasks"]
    # TPV: s1 {1, 0}, s2 {0} -> Micro 1/3, Macro (0.5 + 0) / 2
    assert t["TPV"]["micro"] == pytest.approx(1 / 3) and t["TPV"]["macro"] == pytest.approx(0.25)
    # TPV micro 1/3 rounded to 6 decimals as the released summary; NRI: s1 {1}, s2 {0}
    assert t["TPV"]["micro"] == round(1 / 3, 6)
    assert t["NRI"]["micro"] == 0.5 and t["NRI"]["macro"] == 0.5
    assert t["SSP"]["micro"] == pytest.approx(0.5) and t["SSP"]["macro"] == pytest.approx(0.5)
    assert t["FSD"]["micro"] is None and t["FSD"]["n_unscored"] == 1
    assert out["summary"]["tasks_in_average"] == ["TPV", "NRI", "SSP"]
    assert out["summary"]["avg_micro"] == pytest.approx((round(1 / 3, 6) + 0.5 + 0.5) / 3)
    assert out["summary"]["avg_macro"] == pytest.approx((0.25 + 0.5 + 0.5) / 3)
    assert out["summary"]["n_unknown_predictions"] == 1


def test_missing_prediction_scores_zero():
    out = score_pinpoint(gt_items()[:1], {}, judge=None)
    assert out["items"][0]["score"] == 0.0 and out["items"][0]["reason"] == "missing_prediction"
    assert out["summary"]["missing_predictions"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "x", "scene_id": "s", "task": "XYZ", "answer": "Yes"},
        {"id": "x", "scene_id": "s", "task": "TPV", "answer": "Maybe"},
        {"id": "x", "scene_id": "s", "task": "TPV"},
        {"id": "x", "scene_id": "s", "task": "SSP", "answer": "not json"},
    ],
)
def test_unusable_ground_truth_is_an_error(bad):
    with pytest.raises(PinpointScoreError):
        score_pinpoint([bad], {"x": "Yes"})


def test_cli_prints_one_json_document(tmp_path):
    gt, pred = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl"
    gt.write_text("".join(json.dumps(r) + "\n" for r in gt_items()))
    pred.write_text("".join(json.dumps({"id": k, "prediction": v}) + "\n" for k, v in PREDS.items()))
    r = CliRunner().invoke(app, ["score", "pinpoint", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc) == {"items", "summary"} and len(doc["items"]) == 8
    assert doc["summary"]["tasks"]["NRI"]["micro"] == 0.5 and doc["summary"]["rules"] == "pointlab"
    pred.write_text("{broken\n")  # one bad line: listed, its items score as missing
    r = CliRunner().invoke(app, ["score", "pinpoint", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0 and "not JSON" in json.loads(r.stdout)["summary"]["unreadable_prediction_lines"][0]


def test_generated_questions_round_trip_through_the_scorer():
    """Answering every generated question with its own ground truth scores 1 on TPV, NRI and SSP."""
    from pointlab.benchmark.pinpoint.dataset import generate_records

    from .test_generate import desk_scene

    records, _, _ = generate_records([desk_scene()], seed=5)
    out = score_pinpoint(records, {r["id"]: r["answer"] for r in records}, judge=None)
    t = out["summary"]["tasks"]
    assert t["TPV"]["micro"] == 1.0 and t["NRI"]["micro"] == 1.0 and t["SSP"]["micro"] == 1.0
    assert t["TPV"]["n"] == 6 and t["NRI"]["n"] >= 1 and t["SSP"]["n"] >= 1
    # the option text instead of the letter is no label (the released reading, sec. 4.2 "extract the
    # predicted option letter")
    nri = next(r for r in records if r["task"] == "NRI")
    text = next(c[3:] for c in nri["choices"] if c[0] == nri["answer"])
    assert score_pinpoint([nri], {nri["id"]: f"The {text}."})["items"][0]["score"] == 0.0


def test_cli_deeply_nested_ssp_answer_scores_zero(tmp_path):
    gt, pred = tmp_path / "ssp_gt.jsonl", tmp_path / "ssp_p.jsonl"
    answer = json.dumps(
        {"support_surface": "table", "references": [{"object": "cup", "relation": "left of", "distance_m": 0.3}]}
    )
    gt.write_text(json.dumps({"id": "1", "scene_id": "s", "task": "SSP", "answer": answer}) + "\n")
    pred.write_text(json.dumps({"id": "1", "prediction": '{"a":' * 20000}) + "\n")
    r = CliRunner().invoke(app, ["score", "pinpoint", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["items"][0]["value"] == 0.0 and doc["items"][0]["reason"] == "unparseable"
