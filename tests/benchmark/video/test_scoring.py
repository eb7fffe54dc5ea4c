"""VSI / ReVSI scoring: exact match on letters, MRA on numbers, the released extraction and pointlab's lenient
reading beside it, tables with the direction sub-types averaged into one task. Expected values are worked
out by hand (lmms-eval vsibench: the first space-separated token, ``extract_number``)."""

import json

import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import app

from pointlab.benchmark.video.errors import RecordError
from pointlab.benchmark.video.scoring import score_vsi, score_vsi_item

OPTS = ["A. chair", "B. sofa", "C. tv", "D. stove"]


def q(qid, qtype, gt, budget=32, options=None):
    return {"id": qid, "question_type": qtype, "ground_truth": gt, "options": options, "budget": budget}


def test_multiple_choice_item():
    # the released extraction: the first space-separated token with trailing "." removed, case-insensitive
    s = score_vsi_item(q("1", "object_rel_distance", "B", options=OPTS), "B. sofa")
    assert (s.score, s.score_lenient, s.answer, s.reason) == (1.0, 1.0, "B", "ok")
    s = score_vsi_item(q("1", "object_rel_distance", "B", options=OPTS), "**B**")
    assert (s.score, s.score_lenient, s.answer) == (0.0, 1.0, "**B**")  # "**b**" != "b"; lenient reads it
    s = score_vsi_item(q("1", "object_rel_distance", "B", options=OPTS), "I think it is the sofa.")
    assert (s.score, s.score_lenient) == (0.0, 1.0)  # only the lenient parser reads option text
    s = score_vsi_item(q("1", "object_rel_distance", "B", options=OPTS), "C")
    assert (s.score, s.score_lenient) == (0.0, 0.0)


def test_numeric_items_with_units_and_words():
    s = score_vsi_item(q("2", "object_size_estimation", "120"), "1.2 m")
    assert (s.score, s.score_lenient) == (0.0, 1.0)  # the released code reads 1.2 (vs 120 cm); lenient converts
    s = score_vsi_item(q("3", "object_counting", "5"), "three")
    # extract_number reads number words: 3; |3-5|/5 = 0.4 is within 0.50, 0.45, 0.40 -> 0.3
    assert (s.score, s.score_lenient) == (pytest.approx(0.3), pytest.approx(0.3))
    s = score_vsi_item(q("4", "object_counting", "0"), "0")
    assert s.score == 1.0  # pointlab: gt 0 by exact match
    s = score_vsi_item(q("5", "object_abs_distance", "2.0"), None)
    assert (s.score, s.reason) == (0.0, "missing prediction")
    s = score_vsi_item(q("6", "object_abs_distance", "2.0"), "far away")
    assert (s.score, s.reason) == (0.0, "unparseable")


def test_bad_records():
    with pytest.raises(RecordError):
        score_vsi_item(q("7", "object_counting", "many"), "3")
    with pytest.raises(RecordError):
        score_vsi_item(q("8", "telepathy", "A"), "A")
    with pytest.raises(RecordError):
        score_vsi([q("9", "object_counting", "3"), q("9", "object_counting", "3")], {})
    # a letter outside the options can never be matched: every model would silently score 0
    with pytest.raises(RecordError, match="not one of the option letters ABCD"):
        score_vsi_item(q("10", "object_rel_distance", "E", options=OPTS), "E")
    with pytest.raises(RecordError, match="not one of the option letters"):
        score_vsi_item(q("11", "object_rel_distance", "sofa", options=OPTS), "B")


def test_more_than_ten_options_are_lettered_not_a_crash():
    # 12 bare options are A..L (a fixed "ABCDEFGHIJ" used to raise IndexError at the 11th)
    opts = [f"object {i}" for i in range(12)]
    s = score_vsi_item(q("10", "object_rel_distance", "K", options=opts), "K")
    assert (s.score, s.score_lenient, s.answer) == (1.0, 1.0, "K")
    s = score_vsi_item(q("10", "object_rel_distance", "K", options=opts), "L")
    assert (s.score, s.score_lenient) == (0.0, 0.0)
    with pytest.raises(RecordError, match="27 options"):
        score_vsi_item(q("11", "object_rel_distance", "A", options=[str(i) for i in range(27)]), "A")
    with pytest.raises(RecordError, match="options must be a list"):
        score_vsi_item(q("12", "object_rel_distance", "A", options="A. chair"), "A")


def test_cli_too_many_options_is_one_line_error(tmp_path):
    gt = tmp_path / "gt.jsonl"
    gt.write_text(json.dumps(q("1", "object_rel_distance", "A", options=[str(i) for i in range(30)])) + "\n")
    pred = tmp_path / "p.jsonl"
    pred.write_text('{"id": "1", "prediction": "A"}\n')
    r = CliRunner().invoke(app, ["score", "vsi", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 2 and "30 options" in r.output and "Traceback" not in r.output


def test_prediction_that_is_not_text_scores_zero_with_the_reason():
    # ["3"] was stringified to "['3']" and read as 3 (MRA 1.0) although the file is malformed
    s = score_vsi_item(q("20", "object_counting", "3"), ["3"])
    assert (s.score, s.score_lenient) == (0.0, 0.0) and s.reason == "unparseable: prediction is a JSON list, not text"
    s = score_vsi_item(q("21", "object_rel_distance", "B", options=OPTS), {"answer": "B"})
    assert s.score_lenient == 0.0 and s.reason.endswith("a JSON dict, not text")
    assert score_vsi_item(q("22", "object_counting", "3"), 3).score == 1.0  # a bare JSON number is its text
    out = score_vsi([q("20", "object_counting", "3")], {"20": ["3"]})
    assert out["summary"]["unparseable"] == 1


def test_tables_average_direction_subtypes():
    gt = [
        q("e1", "object_rel_direction_easy", "A", options=OPTS),
        q("e2", "object_rel_direction_easy", "A", options=OPTS),
        q("h1", "object_rel_direction_hard", "C", options=OPTS),
        q("c1", "object_counting", "5", budget=16),
    ]
    pred = {"e1": "A", "e2": "B", "h1": "C", "c1": "3", "zz": "A"}
    out = score_vsi(gt, pred)
    summary = out["summary"]
    # direction: mean of sub-type means (easy 0.5, hard 1.0) = 0.75, not the pooled 2/3
    assert summary["tasks"]["object_rel_direction"]["score"] == pytest.approx(0.75)
    assert summary["tasks"]["object_counting"]["score"] == pytest.approx(0.3)  # 3 for 5: error 0.4
    assert summary["overall"] == pytest.approx((0.75 + 0.3) / 2)
    assert summary["budgets"]["32"]["overall"] == pytest.approx(0.75)
    assert summary["budgets"]["16"]["overall"] == pytest.approx(0.3)
    assert summary["unknown_prediction_ids"] == ["zz"] and summary["rules"] == "pointlab"
    assert [it["id"] for it in out["items"]] == ["e1", "e2", "h1", "c1"]


def test_cli_score_vsi(tmp_path):
    gt = tmp_path / "gt.jsonl"
    pred = tmp_path / "pred.jsonl"
    gt.write_text(
        "\n".join(
            json.dumps(r) for r in [q("a", "object_counting", "4"), q("b", "object_rel_distance", "D", options=OPTS)]
        )
        + "\n"
    )
    pred.write_text(
        json.dumps({"id": "a", "prediction": "4 objects"})
        + "\n"
        + json.dumps({"id": "b", "prediction": "D. stove"})
        + "\n"
    )
    r = CliRunner().invoke(app, ["score", "vsi", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [it["value"] for it in out["items"]] == [1.0, 1.0]
    assert out["summary"]["overall"] == 1.0 and out["summary"]["scorer"] == "vsi"
    # a line that is not JSON is listed, not fatal: its item scores 0 as a missing prediction
    pred.write_text("{not json\n" + json.dumps({"id": "b", "prediction": "D"}) + "\n")
    r = CliRunner().invoke(app, ["score", "vsi", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (
        out["items"][0]["reason"] == "missing prediction"
        and "pred.jsonl:1" in out["summary"]["unreadable_prediction_lines"][0]
    )
