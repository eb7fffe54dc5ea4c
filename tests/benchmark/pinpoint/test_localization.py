"""Human localization score of PinpointQA App. D.2 (r = 0.12, quadratic fall-off, wrong frame 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pointlab.benchmark.pinpoint.localization import LocalizationRecordError, localization_score, score_localization


def test_score_by_hand():
    assert localization_score(2, 0.5, 0.5, 2, 0.5, 0.5) == 1.0
    # d = 0.06 = r/2 -> 1 - 0.25
    assert localization_score(2, 0.5, 0.5, 2, 0.56, 0.5) == pytest.approx(0.75)
    # d = sqrt(0.03^2 + 0.04^2) = 0.05 -> 1 - (0.05/0.12)^2 = 1 - 0.173611 = 0.826389
    assert localization_score(2, 0.5, 0.5, 2, 0.53, 0.54) == pytest.approx(1 - (0.05 / 0.12) ** 2)
    assert localization_score(2, 0.5, 0.5, 2, 0.62, 0.5) == pytest.approx(0.0, abs=1e-12)  # d = r
    assert localization_score(2, 0.5, 0.5, 2, 0.9, 0.9) == 0.0  # beyond r
    assert localization_score(2, 0.5, 0.5, 1, 0.5, 0.5) == 0.0  # wrong frame


def test_real_demo_samples(shared_data: Path):
    samples = json.loads((shared_data / "video" / "pinpointqa_human_assist" / "demo_samples.json").read_text())
    gt = [{"id": s["id"], **s["ground_truth"]} for s in samples]
    s1 = samples[0]["ground_truth"]
    pred = [
        {"id": "sample1", "frame_index": s1["frame_index"], "x": s1["x"] + 0.06, "y": s1["y"], "elapsed_s": 10},
        {
            "id": "sample2",
            "frame_index": samples[1]["ground_truth"]["frame_index"] + 1,
            "x": 0.5,
            "y": 0.5,
            "elapsed_s": 20,
        },
    ]
    out = score_localization(gt, pred)
    scores = [it["score"] for it in out["items"]]
    assert scores == pytest.approx([0.75, 0.0, 0.0])
    assert [it["reason"] for it in out["items"]] == ["ok", "wrong_frame", "missing_response"]
    assert out["summary"]["accuracy"] == pytest.approx(100 * 0.75 / 3)
    assert out["summary"]["frame_accuracy"] == pytest.approx(1 / 3)
    assert out["summary"]["mean_elapsed_s"] == pytest.approx(15)


@pytest.mark.parametrize(
    "rec",
    [
        {"id": "a", "x": 0.1, "y": 0.1},
        {"id": "a", "frame_index": 1.5, "x": 0, "y": 0},
        {"id": "a", "frame_index": 1, "x": "left", "y": 0},
    ],
)
def test_malformed_records(rec):
    with pytest.raises(LocalizationRecordError):
        score_localization([rec], [])


def test_cli(tmp_path):
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    gt, pred = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl"
    gt.write_text(json.dumps({"id": "a", "frame_index": 1, "x": 0.5, "y": 0.5}) + "\n")
    pred.write_text(json.dumps({"id": "a", "frame_index": 1, "x": 0.56, "y": 0.5}) + "\n")
    r = CliRunner().invoke(app, ["score", "localization", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["items"][0]["value"] == pytest.approx(0.75) and doc["summary"]["accuracy"] == pytest.approx(75.0)
    # one unusable response line scores 0 with its reason; the run goes on (issue 14)
    big = "1" + "0" * 400
    pred.write_text(json.dumps({"id": "a", "frame_index": "one", "x": 0.5, "y": 0.5}) + "\n")
    r = CliRunner().invoke(app, ["score", "localization", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0 and json.loads(r.stdout)["items"][0]["reason"] == "invalid_response"
    pred.write_text(f'{{"id": "a", "frame_index": 1, "x": {big}, "y": 0.5}}\n')
    r = CliRunner().invoke(app, ["score", "localization", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0 and "too large" in json.loads(r.stdout)["items"][0]["metadata"]["detail"]
    gt.write_text(json.dumps({"id": "a", "frame_index": "one", "x": 0.5, "y": 0.5}) + "\n")  # bad ground truth: exit 2
    r = CliRunner().invoke(app, ["score", "localization", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 2 and "frame_index" in r.output


def test_non_finite_or_out_of_range_response_is_an_item_failure():
    gt = [{"id": k, "frame_index": 1, "x": 0.5, "y": 0.5} for k in "abcde"]
    pred = [
        {"id": "a", "frame_index": 1, "x": 1e308, "y": 1e308},
        {"id": "b", "frame_index": 1, "x": float("nan"), "y": 0.5},
        {"id": "c", "frame_index": 1, "x": 0.5, "y": -0.01},
        {"id": "d", "frame_index": 1, "x": 0.56, "y": 0.5},  # d = r/2 -> 0.75
        {"id": "e", "frame_index": 1, "x": 1.0, "y": 0.0},
    ]  # the corners are in range; d > r -> 0
    out = score_localization(gt, pred)
    items = {it["id"]: it for it in out["items"]}
    for k in "abc":
        assert items[k]["score"] == 0.0 and items[k]["reason"] == "invalid_response"
        assert items[k]["distance"] is None and items[k]["frame_correct"] is False
    assert items["d"]["score"] == pytest.approx(0.75) and items["e"]["reason"] == "ok"
    s = out["summary"]
    assert s["accuracy"] == pytest.approx(100 * 0.75 / 5) and s["frame_accuracy"] == pytest.approx(2 / 5)
    # mean over the two valid right-frame responses: (0.06 + sqrt(0.5^2 + 0.5^2)) / 2
    assert s["mean_distance"] == pytest.approx((0.06 + 0.5**0.5) / 2)
    assert s["invalid_responses"] == 3
    json.dumps(out, allow_nan=False)


@pytest.mark.parametrize("x", [1.2, -0.5])
def test_ground_truth_out_of_range_is_a_record_error(x):
    with pytest.raises(LocalizationRecordError, match="ground truth"):
        score_localization([{"id": "a", "frame_index": 1, "x": x, "y": 0.5}], [])


def test_cli_nan_response_does_not_abort(tmp_path):
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    gt, pred = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl"
    gt.write_text(
        json.dumps({"id": "a", "frame_index": 1, "x": 0.5, "y": 0.5})
        + "\n"
        + json.dumps({"id": "b", "frame_index": 1, "x": 0.5, "y": 0.5})
        + "\n"
    )
    pred.write_text(
        '{"id": "a", "frame_index": 1, "x": NaN, "y": 0.5}\n{"id": "b", "frame_index": 1, "x": 1e308, "y": 1e308}\n'
    )
    r = CliRunner().invoke(app, ["score", "localization", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0, r.output
    assert "Infinity" not in r.stdout and "NaN" not in r.stdout
    doc = json.loads(r.stdout)
    assert [it["reason"] for it in doc["items"]] == ["invalid_response", "invalid_response"]
    assert doc["summary"]["accuracy"] == 0.0 and doc["summary"]["mean_distance"] is None


def test_unusable_elapsed_times_are_left_out_of_the_mean():
    gt = [
        {"id": "a", "frame_index": 1, "x": 0.5, "y": 0.5},
        {"id": "b", "frame_index": 1, "x": 0.5, "y": 0.5},
        {"id": "c", "frame_index": 1, "x": 0.5, "y": 0.5},
    ]
    pred = [
        {"id": "a", "frame_index": 1, "x": 0.5, "y": 0.5, "elapsed_s": 10**400},  # too large for a float
        {"id": "b", "frame_index": 1, "x": 0.5, "y": 0.5, "elapsed_s": True},
        {"id": "c", "frame_index": 1, "x": 0.5, "y": 0.5, "elapsed_s": 12},
    ]
    out = score_localization(gt, pred)
    assert [it["score"] for it in out["items"]] == [1.0, 1.0, 1.0]
    assert out["summary"]["mean_elapsed_s"] == 12
