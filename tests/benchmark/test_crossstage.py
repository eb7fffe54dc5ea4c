"""Cross-stage R^2 (PointArena sec. 4.3, Fig. 5b) against hand-computed values, and the CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pointlab.benchmark.crossstage import CrossStageError, cross_stage_report, fit_pair, load_stage_file
from pointlab.bridge.cli import app


def test_r2_by_hand():
    # x = 1, 2, 3; y = 2, 4, 5: Sxy = 3, Sxx = 2, Syy = 14/3 -> r^2 = 9 / (2 * 14/3) = 27/28
    f = fit_pair({"a": 1, "b": 2, "c": 3, "only_x": 9}, {"a": 2, "b": 4, "c": 5, "only_y": 0})
    assert f["models"] == ["a", "b", "c"]
    assert f["r2"] == pytest.approx(27 / 28)
    assert f["slope"] == pytest.approx(1.5) and f["intercept"] == pytest.approx(2 / 3)


def test_perfect_and_degenerate():
    assert fit_pair({"a": 0, "b": 1, "c": 2}, {"a": 10, "b": 8, "c": 6})["r2"] == pytest.approx(1.0)
    assert fit_pair({"a": 0, "b": 1}, {"a": 1, "b": 2})["r2"] is None  # two models say nothing
    assert fit_pair({"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 2, "c": 3})["r2"] is None  # constant x


def test_report_pairs():
    r = cross_stage_report(
        {
            "point_act": {"a": 0.1, "b": 0.5, "c": 0.9},
            "point_bench": {"a": 0.2, "b": 0.4, "c": 0.6},
            "point_battle": {"a": 900, "b": 1000, "c": 1100},
        }
    )
    assert set(r["pairs"]) == {"point_battle_vs_point_bench", "point_act_vs_point_bench", "point_act_vs_point_battle"}
    assert all(p["r2"] == pytest.approx(1.0) for p in r["pairs"].values())


def test_cli_reads_all_three_sources(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    rows = {"m1": (0.30, 950.0, 0.2), "m2": (0.50, 1010.0, 0.5), "m3": (0.70, 1040.0, 0.9)}
    for m, (acc, _, _) in rows.items():
        d = tmp_path / m
        d.mkdir()
        (d / "results.json").write_text(json.dumps({"model": m, "aggregate": {"average": {"mean": acc}}}))
    (tmp_path / "ratings.json").write_text(
        json.dumps({m: {"rating": r[1], "ci_low": 0, "ci_high": 0} for m, r in rows.items()})
    )
    (tmp_path / "act.json").write_text(json.dumps({m: r[2] for m, r in rows.items()}))
    res = CliRunner().invoke(
        app,
        [
            "bench",
            "crossstage",
            "--bench",
            str(tmp_path / "m1"),
            "--bench",
            str(tmp_path / "m2"),
            "--bench",
            str(tmp_path / "m3"),
            "--battle",
            str(tmp_path / "ratings.json"),
            "--act",
            str(tmp_path / "act.json"),
            "--out",
            str(tmp_path / "fig5b"),
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    # battle vs bench by hand: x = .3 .5 .7, y = 950 1010 1040:
    # dx = -.2, 0, .2; dy = -50, 10, 40 -> Sxy = 10 + 8 = 18, Sxx = .08, Syy = 2500+100+1600 = 4200
    # r^2 = 18^2 / (.08 * 4200) = 324 / 336 = 0.964286
    assert out["pairs"]["point_battle_vs_point_bench"]["r2"] == pytest.approx(324 / 336)
    assert (tmp_path / "fig5b.png").stat().st_size > 1000 and (tmp_path / "fig5b.svg").exists()
    bad = CliRunner().invoke(app, ["bench", "crossstage", "--bench", str(tmp_path / "m1")])
    assert bad.exit_code == 2


def test_stage_file_errors(tmp_path):
    (tmp_path / "x.json").write_text('{"m": "high"}')
    with pytest.raises(CrossStageError, match="not a number"):
        load_stage_file(tmp_path / "x.json", "point_act")
    with pytest.raises(CrossStageError, match="cannot read"):
        load_stage_file(tmp_path / "none.json", "point_act")


def test_point_act_agent_results_form(tmp_path):
    rows = [
        {"agent": "molmo", "n_judged": 10, "success_rate": 0.8},
        {"agent": "gpt", "success_rate": 0.3},
        {"agent": "idle", "success_rate": None},
    ]
    (tmp_path / "act.json").write_text(json.dumps({"agents": rows}))
    assert load_stage_file(tmp_path / "act.json", "point_act") == {"molmo": 0.8, "gpt": 0.3}
    (tmp_path / "act2.json").write_text(json.dumps(rows))
    assert load_stage_file(tmp_path / "act2.json", "point_act") == {"molmo": 0.8, "gpt": 0.3}
