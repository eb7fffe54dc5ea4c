"""EgoPoint-Bench under both rule sets (docs/scoring.md, the ``egopoint.*`` rows) and the released file
(a JSON array without ids, ``type`` ``Multiple_Choice``, answers like ``"D. Milk"``). Expectations by hand
from the released playground/eval_qwen3vl.py (GUYYYUG/EgoPoint at 73f12e7)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pointlab.benchmark.egopoint.scoring import reference_extract, reference_ground_truth, score_egopoint
from pointlab.bridge.cli import app

RELEASE = [
    {
        "image_id": "real_27",
        "question": "Is the object I am pointing to a type of mushroom?",
        "options": None,
        "answer": "False",
        "dimension": "Adversarial",
        "deixis_level": "L1",
        "type": "True_False",
    },
    {
        "image_id": "real_18",
        "question": "What is this?",
        "options": ["A. Bread", "B. Eggs", "C. Juice", "D. Milk"],
        "answer": "D. Milk",
        "dimension": "Basic Perception",
        "deixis_level": "L3",
        "type": "Multiple_Choice",
    },
    {
        "image_id": "sim_3",
        "question": "Which one?",
        "options": ["A. a", "B. b", "C. c", "D. d", "E. e"],
        "answer": "E. e",
        "dimension": "Context & Relation",
        "deixis_level": "L2",
        "type": "Multiple_Choice",
    },
    {
        "image_id": "real_12",
        "question": "What text is written there?",
        "options": None,
        "answer": "THE LAND BUSINESS CLASS",
        "dimension": "OCR & Text",
        "deixis_level": "L1",
        "type": "Open_Ended",
    },
]


@pytest.mark.parametrize(
    "text, qtype, expected",
    [
        ("True", "TF", "True"),
        ("It is untrue.", "TF", "True"),
        ("false", "TF", "False"),
        ("Yes.", "TF", "True"),
        ("No, it is a lamp.", "TF", "False"),
        ("maybe", "TF", "maybe"),
        ("Answer: d", "SCQ", "D"),
        ("B. On a shelf", "SCQ", "B"),
        ("\\boxed{C}", "SCQ", "C"),
        ("I think A or maybe C", "SCQ", "C"),
        ("none of them", "SCQ", "none of them"),
        ("<think>A?</think> B.", "SCQ", "B"),
    ],
)
def test_reference_extraction(text, qtype, expected):
    assert reference_extract(text, qtype) == expected


def test_option_e():
    assert reference_ground_truth("E. e", "SCQ") == "E. E"  # no A-D letter: the upper-cased text
    assert reference_ground_truth("E. e", "SCQ", "ABCDE") == "E"
    gt = [RELEASE[2] | {"id": "x", "question_type": "SCQ"}]
    # "Answer: E" under the A-D patterns stays "Answer: E", never "E. E": a miss; pointlab reads E
    assert score_egopoint(gt, {"x": "Answer: E"}, rules="reference")["items"][0]["score"] == 0.0
    assert score_egopoint(gt, {"x": "Answer: E"}, rules="pointlab")["items"][0]["score"] == 1.0


def test_open_ended_under_both_rule_sets():
    gt = [RELEASE[3] | {"id": "o", "question_type": "OQ"}]
    ref = score_egopoint(gt, {"o": "The land business class"}, rules="reference")
    assert ref["items"][0]["score"] is None and "generation only" in ref["items"][0]["reason"]
    pl = score_egopoint(gt, {"o": "The land business class"}, rules="pointlab")  # no judge: unjudged, counted
    assert pl["items"][0]["score"] is None and pl["summary"]["unjudged"] == 1


def test_release_file_and_playground_results_through_the_cli(tmp_path):
    """Must show (issue 12): ``pointlab score egopoint`` on the release format."""
    (tmp_path / "pure_real_test.json").write_text(json.dumps(RELEASE))
    details = [dict(e, model_output=o) for e, o in zip(RELEASE, ["False", "D", "E", "business class"])]
    (tmp_path / "results.json").write_text(json.dumps({"summary": {}, "details": details}))
    r = CliRunner().invoke(
        app,
        [
            "score",
            "egopoint",
            "--gt",
            str(tmp_path / "pure_real_test.json"),
            "--pred",
            str(tmp_path / "results.json"),
            "--rules",
            "reference",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # TF False = False: 1; "D" -> D: 1; "E" stays "E" vs "E. E": 0; OQ unscored
    assert [i["value"] for i in doc["items"]] == [1.0, 1.0, 0.0, None]
    s = doc["summary"]
    assert s["overall"]["score"] == pytest.approx(2 / 3) and s["rules"] == "reference"  # MC + TF accuracy, as released
    assert list(s["dimension"]) == ["BP", "SC", "OCR", "AR"] and s["domain"]["real"]["n"] == 3
    pl = CliRunner().invoke(
        app,
        ["score", "egopoint", "--gt", str(tmp_path / "pure_real_test.json"), "--pred", str(tmp_path / "results.json")],
    )
    assert [i["value"] for i in json.loads(pl.stdout)["items"]] == [1.0, 1.0, 1.0, None]


def test_a_repeated_id_in_a_results_file_scores_zero(tmp_path):
    """As in any prediction file: two details entries with one id -> neither counts (which of two
    answers is the model's is a guess); the last one used to win silently."""
    (tmp_path / "gt.json").write_text(json.dumps(RELEASE))
    details = [dict(RELEASE[0], id=0, model_output="True"), dict(RELEASE[0], id=0, model_output="False")]
    (tmp_path / "results.json").write_text(json.dumps({"summary": {}, "details": details}))
    r = CliRunner().invoke(
        app, ["score", "egopoint", "--gt", str(tmp_path / "gt.json"), "--pred", str(tmp_path / "results.json")]
    )
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout)["items"][0]
    assert first["value"] == 0.0 and "duplicate prediction id (details[0] and details[1])" in first["reason"]


def test_the_release_files_unreadable_true_false_keys_are_scored_as_released_or_reported(tmp_path):
    """``pure_real_test.json`` has True/False answers written ``"Raw"`` and ``"B. No"``; the file is read
    whole. The released evaluator: ``parse_ground_truth("Raw")`` keeps "Raw", so a "No" prediction
    ("False") misses and the item counts; "B. No" holds "no", so it is False and "No" matches. pointlab:
    "Raw" is reported and left out, "B. No" is scored the same."""
    tf = {"question": "Is it a cup?", "options": None, "dimension": "Adversarial", "deixis_level": "L1"}
    release = [*RELEASE, {**tf, "image_id": "real_90", "answer": "Raw", "type": "True_False"}]
    release.append({**tf, "image_id": "real_91", "answer": "B. No", "type": "True_False"})
    (tmp_path / "gt.json").write_text(json.dumps(release))
    outputs = ["False", "D", "E", "business class", "No", "No"]
    (tmp_path / "res.json").write_text(
        json.dumps({"details": [dict(e, model_output=o) for e, o in zip(release, outputs)]})
    )
    args = ["score", "egopoint", "--gt", str(tmp_path / "gt.json"), "--pred", str(tmp_path / "res.json")]
    ref = CliRunner().invoke(app, [*args, "--rules", "reference"])
    assert ref.exit_code == 0, ref.output
    doc = json.loads(ref.stdout)
    assert [i["value"] for i in doc["items"]] == [1.0, 1.0, 0.0, None, 0.0, 1.0]
    assert doc["summary"]["overall"]["score"] == pytest.approx(3 / 5)  # as released: 5 closed items, 3 right
    pl = CliRunner().invoke(app, args)
    assert pl.exit_code == 0, pl.output
    doc = json.loads(pl.stdout)
    assert [i["value"] for i in doc["items"]] == [1.0, 1.0, 1.0, None, None, 1.0]
    assert doc["summary"]["invalid_ground_truth"] == ["4"]  # release ids are positions
    assert doc["summary"]["overall"]["n_scored"] == 4 and doc["summary"]["overall"]["score"] == 1.0
