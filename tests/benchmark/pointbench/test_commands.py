"""CLI pieces not covered end to end: ``pointlab perf score`` output shape, ``pointlab bench report``
with the Human bar, argument errors."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from pointlab.bridge.cli import app


def test_perf_score_small():
    r = CliRunner().invoke(app, ["perf", "score", "--items", "3", "--side-px", "200", "--votes", "500",
                                 "--models", "4", "--rounds", "5", "--repeat", "2"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["mask_scoring"]["mask_px"] == [200, 200]
    assert set(out["mask_scoring"]["items_per_s"]) == {"p50", "p90", "p99", "min", "max", "n"}
    assert out["bradley_terry"]["bootstrap_rounds"] == 5 and out["bradley_terry"]["target_s"] == 10.0
    assert out["bradley_terry"]["ratio_bootstrap_over_point_fit"] > 0


def test_bench_report_with_human(tmp_path):
    Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(tmp_path / "i.png")
    m = np.zeros((10, 10), np.uint8)
    m[0:5, 0:5] = 255
    Image.fromarray(m).save(tmp_path / "m.png")
    gt = tmp_path / "gt.jsonl"
    gt.write_text("".join(json.dumps({"id": f"s{k}", "image": "i.png", "width": 10, "height": 10,
                                      "category": "spatial", "mask": "m.png"}) + "\n" for k in range(4)))
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"id": f"s{k}", "points": [[2, 2] if k < 3 else [8, 8]]}) + "\n" for k in range(4)))
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"model": "m", "aggregate": {
        "spatial": {"mean": 0.25, "std": 0.05, "runs": 3}, "average": {"mean": 0.25, "std": 0.05, "runs": 3}}}))
    r = CliRunner().invoke(app, ["bench", "report", "--run", str(run), "--human", str(human), "--data", str(gt),
                                 "--out", str(tmp_path / "fig3")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["models"]["Human"]["spatial"] == {"mean": 0.75, "std": 0.0, "runs": 1}  # 3 of 4 clicks inside
    assert (tmp_path / "fig3.png").exists() and (tmp_path / "fig3.md").exists()
    assert CliRunner().invoke(app, ["bench", "report", "--run", str(tmp_path / "nope")]).exit_code == 2


def test_bench_pointing_argument_errors(tmp_path):
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(tmp_path), "--model", "x"])
    assert r.exit_code == 2 and "no data.json" in r.output
    gt = tmp_path / "gt.jsonl"
    gt.write_text("")
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(gt), "--model", "nobody"])
    assert r.exit_code == 2 and "no agent 'nobody'" in r.output
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(gt), "--model", "human"])
    assert r.exit_code == 2 and "kind 'human'" in r.output
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(gt), "--model", "sim-oracle", "--steer", "loud"])
    assert r.exit_code == 2 and "steer mode" in r.output


def test_bench_arena_argument_errors(tmp_path):
    r = CliRunner().invoke(app, ["bench", "arena", "--sampler", "greedy", "--db", str(tmp_path / "a.db")])
    assert r.exit_code == 2 and "sampler must be one of" in r.output
