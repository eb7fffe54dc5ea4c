"""SUS scoring (Brooke 1996): values worked out by hand from the standard rule."""

from __future__ import annotations

import json

import pytest

from pointlab.bridge.study.sus import SusError, score_sus_lines, sus_score


@pytest.mark.parametrize(
    "responses, expected",
    [
        ([5, 1, 5, 1, 5, 1, 5, 1, 5, 1], 100.0),  # best answer on every item: 5 * 4 + 5 * 4 = 40 -> 100
        ([1, 5, 1, 5, 1, 5, 1, 5, 1, 5], 0.0),  # worst on every item
        ([3] * 10, 50.0),  # neutral: every item contributes 2 -> 20 * 2.5
        ([5] * 10, 50.0),  # odd items 4 each (20), even items 0 -> 20 * 2.5
        # odd: 4-1, 4-1, 3-1, 5-1, 4-1 = 15; even: 5-2, 5-1, 5-2, 5-1, 5-2 = 17; 32 * 2.5 = 80
        ([4, 2, 4, 1, 3, 2, 5, 1, 4, 2], 80.0),
        # odd items 2,1,3,4,5 -> 1+0+2+3+4 = 10; even items 1,5,2,4,3 -> 4+0+3+1+2 = 10; 20 * 2.5
        ([2, 1, 1, 5, 3, 2, 4, 4, 5, 3], 50.0),
    ],
)
def test_sus_score_by_hand(responses, expected):
    assert sus_score(responses) == expected


@pytest.mark.parametrize(
    "bad, words",
    [
        ([3] * 9, "10 items"),
        ([3] * 11, "10 items"),
        ([3] * 9 + [6], "item 10: 6 is outside 1-5"),
        ([0] + [3] * 9, "item 1: 0 is outside"),
        ([3, 3, 2.0] + [3] * 7, "item 3: 2.0 is not an integer"),
        ([True] + [3] * 9, "item 1: True is not an integer"),
        (["3"] * 10, "is not an integer"),
        ("3333333333", "must be a list"),
        (None, "must be a list"),
    ],
)
def test_sus_rejects_bad_responses(bad, words):
    with pytest.raises(SusError, match=words):
        sus_score(bad)


def test_score_lines_reports_each_malformed_line():
    lines = [
        json.dumps({"id": "p1", "responses": [5, 1, 5, 1, 5, 1, 5, 1, 5, 1]}),
        "",  # blank: skipped
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"responses": [3] * 10}),
        json.dumps({"id": "p5"}),
        json.dumps({"id": "p6", "responses": [3] * 9}),
        json.dumps({"id": 7, "responses": [3] * 10}),
    ]
    out = score_sus_lines(lines)
    items = out["items"]
    assert [it["id"] for it in items] == ["p1", "line 3", "line 4", "line 5", "p5", "p6", 7]
    assert [it["score"] for it in items] == [100.0, None, None, None, None, None, 50.0]
    assert "not JSON" in items[1]["reason"]
    assert "not a JSON object" in items[2]["reason"]
    assert 'missing "id"' in items[3]["reason"]
    assert 'missing "responses"' in items[4]["reason"]
    assert "10 items" in items[5]["reason"]
    assert out["summary"] == {"mean": 75.0, "n": 2, "n_invalid": 5}


def test_score_lines_all_invalid_mean_is_none():
    assert score_sus_lines(["x"])["summary"] == {"mean": None, "n": 0, "n_invalid": 1}


def test_cli_score_sus(tmp_path):
    f = tmp_path / "sus.jsonl"
    f.write_text(
        json.dumps({"id": "a", "responses": [4, 2, 4, 1, 3, 2, 5, 1, 4, 2]})
        + "\n"
        + json.dumps({"id": "b", "responses": [3] * 10})
        + "\nbroken\n"
    )
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    res = CliRunner().invoke(app, ["score", "sus", "--pred", str(f)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["items"][:2] == [{"id": "a", "score": 80.0}, {"id": "b", "score": 50.0}]
    assert doc["items"][2]["score"] is None and "not JSON" in doc["items"][2]["reason"]
    assert doc["summary"]["mean"] == 65.0
    missing = CliRunner().invoke(app, ["score", "sus", "--pred", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2


def test_duplicate_ids_are_refused_and_counted_once():
    all5 = [5] * 10  # odd items 4 each, even items 0 -> 20 * 2.5 = 50
    best = [5, 1] * 5  # 40 * 2.5 = 100
    lines = [
        json.dumps({"id": "p1", "responses": best}),
        json.dumps({"id": "p2", "responses": all5}),
        json.dumps({"id": "p1", "responses": all5}),
    ]
    out = score_sus_lines(lines)
    assert [it["id"] for it in out["items"]] == ["p1", "p2", "p1"]
    assert out["items"][2]["score"] is None and "duplicate" in out["items"][2]["reason"]
    assert out["summary"] == {"mean": 75.0, "n": 2, "n_invalid": 1}  # (100 + 50) / 2, p1 once


def test_cli_accepts_a_utf8_bom(tmp_path):
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    f = tmp_path / "sus.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + (json.dumps({"id": "p1", "responses": [5, 1] * 5}) + "\n").encode())
    res = CliRunner().invoke(app, ["score", "sus", "--pred", str(f)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["items"] == [{"id": "p1", "score": 100.0}]
    assert doc["summary"] == {"mean": 100.0, "n": 1, "n_invalid": 0}
