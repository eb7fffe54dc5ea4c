"""End to end on real photos: build a dataset (uoc_tabletop frames + programmatic masks), run
``pointlab bench pointing`` against the sim_mock model server (scripted hand answers and the mask
oracle), resume from the cache, re-score with ``pointlab score pointing``, draw Fig. 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread

from . import tabletop as tt

POINTLAB = [str(Path(sys.executable).parent / "pointlab")]


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(
        POINTLAB + list(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "POINTLAB_LOG": "WARNING"},
    )
    if check and p.returncode != 0:
        raise AssertionError(f"pointlab {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def dataset(uoc_tabletop, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pb")
    queries = tt.write_source(uoc_tabletop, root / "src")
    out = cli(
        "bench",
        "build-dataset",
        "--src",
        str(root / "src"),
        "--queries",
        str(queries),
        "--out",
        str(root / "data"),
        cwd=root,
    )
    summary = json.loads(out.stdout)
    assert summary["items"] == 9
    assert summary["categories"] == {"spatial": 2, "affordance": 2, "counting": 2, "steerable": 1, "reasoning": 2}
    return root / "data"


@pytest.fixture(scope="module")
def scripted_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("script")
    script = d / "answers.jsonl"
    script.write_text("".join(json.dumps({"match": q, "answer": a}) + "\n" for q, (a, _) in tt.SCRIPTED.items()))
    base_url, stop = serve_in_thread(create_model_server({"scripted": ScriptedModel(script)}))
    agents = d / "agents.toml"
    agents.write_text(
        f'[[agents]]\nname = "scripted"\nkind = "openai"\nbase_url = "{base_url}"\nmodel = "scripted"\n'
        f'point_format = "xy_pixels"\nimage_encoding = "png"\nmax_retries = 0\n'
    )
    yield agents
    stop()


@pytest.mark.slow
def test_scripted_run_matches_hand_scores_resumes_and_charts(dataset, scripted_server, tmp_path):
    run_dir = tmp_path / "run_scripted"
    args = (
        "bench",
        "pointing",
        "--data",
        str(dataset),
        "--model",
        "scripted",
        "--agents",
        str(scripted_server),
        "--runs",
        "2",
        "--no-progress",
        "--out",
        str(run_dir),
        "--concurrency",
        "3",
    )
    res = json.loads(cli(*args, cwd=tmp_path).stdout)
    assert (res["asked"], res["cached"], res["errors"]) == (18, 0, 0)
    for cat, acc in tt.EXPECTED.items():
        assert res["aggregate"][cat] == {"mean": pytest.approx(acc), "std": 0.0, "runs": 2}, cat
    assert res["aggregate"]["average"]["mean"] == pytest.approx(tt.EXPECTED_AVERAGE)
    assert res["aggregate"]["overall"]["mean"] == pytest.approx(6 / 9)
    # raw answers are kept, one line per item and run
    lines = [json.loads(x) for x in (run_dir / "run_1.jsonl").read_text().splitlines()]
    assert sorted(x["raw_text"] for x in lines) == sorted(a for a, _ in tt.SCRIPTED.values())
    assert json.loads((run_dir / "run.json").read_text())["temperature"] == 0.0
    # table and Fig. 3 chart
    assert (
        "| scripted | 50.0 ± 0.0 | 50.0 ± 0.0 | 100.0 ± 0.0 | 100.0 ± 0.0 | 50.0 ± 0.0 | 70.0 ± 0.0 |" in res["table"]
    )
    png, svg = (Path(p) for p in res["charts"])
    assert Image.open(png).size[0] > 600 and svg.read_text().lstrip().startswith("<?xml")
    # a saved run re-scores from its raw answers without any model
    rescored = json.loads(
        cli(
            "score", "pointing", "--gt", str(dataset / "gt.jsonl"), "--pred", str(run_dir / "run_2.jsonl"), cwd=tmp_path
        ).stdout
    )
    assert rescored["summary"]["average"] == pytest.approx(tt.EXPECTED_AVERAGE)
    # rerun: everything comes from the cache, no model call
    again = json.loads(cli(*args, cwd=tmp_path).stdout)
    assert (again["asked"], again["cached"]) == (0, 18)
    assert again["aggregate"] == res["aggregate"]


@pytest.mark.slow
def test_mask_oracle_run_scores_every_category_fully(dataset, tmp_path):
    # default agents config: base_url = "sim" -> the command serves the mask oracle for this dataset
    res = json.loads(
        cli(
            "bench",
            "pointing",
            "--data",
            str(dataset),
            "--model",
            "sim-oracle",
            "--runs",
            "1",
            "--no-progress",
            "--out",
            str(tmp_path / "oracle"),
            "--steer",
            "draw",
            cwd=tmp_path,
        ).stdout
    )
    assert res["errors"] == 0
    for cat in tt.EXPECTED:
        assert res["aggregate"][cat]["mean"] == 1.0, cat
    assert (tmp_path / "oracle" / "results.md").read_text().startswith("Scored under `--rules pointlab`")


@pytest.mark.slow
def test_bench_run_pointbench_is_bench_pointing(dataset, tmp_path):
    """`bench run pointbench --questions DATA` is `bench pointing --data DATA` (the same runner, its
    3 runs, its files): the mask oracle scores every category 1.0 across its runs; an option of the
    video tasks is refused in one line."""
    res = json.loads(
        cli(
            "bench", "run", "pointbench", "--questions", str(dataset), "--model", "sim-oracle",
            "--no-progress", "--out", str(tmp_path / "run"), cwd=tmp_path,
        ).stdout
    )  # fmt: skip
    assert res["errors"] == 0 and len(res["runs"]) == 3
    for cat in tt.EXPECTED:
        assert res["aggregate"][cat]["mean"] == 1.0, cat
    assert {"results.json", "results.md", "scores.json"} <= {p.name for p in (tmp_path / "run").iterdir()}
    # scores.json: each run under both rule sets, as `score pointing --rules` gives it
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    for name in ("pointlab", "reference"):
        one = json.loads(
            cli("score", "pointing", "--gt", str(dataset / "gt.jsonl"), "--pred", str(tmp_path / "run" / "run_1.jsonl"),
                "--rules", name, cwd=tmp_path).stdout
        )  # fmt: skip
        assert scores["runs"]["1"][name] == one["summary"], name
    bad = cli(
        "bench", "run", "pointbench", "--questions", str(dataset), "--model", "sim-oracle", "--video",
        str(dataset), "--out", str(tmp_path / "bad"), cwd=tmp_path, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and "--video" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_pointing_run_killed_mid_way_resumes_and_re_scores_to_its_score(dataset, tmp_path):
    """kill -9 in the middle of `bench pointing` (the runner of `bench run pointbench`), resume: only
    what was not journaled is asked; `score pointing` on the journal gives the run's scores."""
    from tests.benchmark.killresume import kill_then_resume

    script = tmp_path / "answers.jsonl"
    script.write_text("".join(json.dumps({"match": q, "answer": a}) + "\n" for q, (a, _) in tt.SCRIPTED.items()))
    base_url, stop = serve_in_thread(create_model_server({"scripted": ScriptedModel(script)}, latency_s=0.3))
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f'[[agents]]\nname = "scripted"\nkind = "openai"\nbase_url = "{base_url}"\nmodel = "scripted"\n'
        f'point_format = "xy_pixels"\nimage_encoding = "png"\nmax_retries = 0\n'
    )
    run_dir = tmp_path / "run"
    args = ["bench", "pointing", "--data", str(dataset), "--model", "scripted", "--agents", str(agents)]
    args += ["--runs", "1", "--no-progress", "--out", str(run_dir), "--concurrency", "1"]
    doc = kill_then_resume(args, run_dir / "run_1.jsonl", total=9, stop=stop)
    assert doc["aggregate"]["average"]["mean"] == pytest.approx(tt.EXPECTED_AVERAGE)
    rescored = json.loads(
        cli(
            "score", "pointing", "--gt", str(dataset / "gt.jsonl"), "--pred", str(run_dir / "run_1.jsonl"), cwd=tmp_path
        ).stdout
    )
    assert rescored["summary"]["average"] == pytest.approx(doc["aggregate"]["average"]["mean"])


@pytest.mark.slow
def test_score_pointing_cli_with_hand_predictions(dataset, tmp_path):
    gt = [json.loads(x) for x in (dataset / "gt.jsonl").read_text().splitlines()]
    by_query = {g["query"]: g["id"] for g in gt}
    pred = tmp_path / "pred.jsonl"
    pred.write_text(
        "".join(
            json.dumps({"id": by_query[q], "prediction": a, "format": "xy_pixels"}) + "\n"
            for q, (a, _) in tt.SCRIPTED.items()
        )
    )
    out = json.loads(
        cli("score", "pointing", "--gt", str(dataset / "gt.jsonl"), "--pred", str(pred), cwd=tmp_path).stdout
    )
    assert {i["id"]: i["metadata"]["success"] for i in out["items"]} == {
        by_query[q]: ok for q, (_, ok) in tt.SCRIPTED.items()
    }
    assert {c: v["accuracy"] for c, v in out["summary"]["categories"].items()} == tt.EXPECTED
    assert out["summary"]["average"] == pytest.approx(tt.EXPECTED_AVERAGE)
    bad = cli(
        "score",
        "pointing",
        "--gt",
        str(dataset / "gt.jsonl"),
        "--pred",
        str(tmp_path / "none.jsonl"),
        cwd=tmp_path,
        check=False,
    )
    assert bad.returncode == 2 and "cannot read" in bad.stderr


@pytest.mark.slow
def test_prompt_variant_and_steer_mode_are_selectable_and_recorded(dataset, scripted_server, tmp_path):
    # Table 1 chain-of-thought prompt, reference point drawn and described: the scripted model still
    # finds each query in the prompt, so the hand scores hold; run.json records the setting.
    out = tmp_path / "cot"
    res = json.loads(
        cli(
            "bench",
            "pointing",
            "--data",
            str(dataset),
            "--model",
            "scripted",
            "--agents",
            str(scripted_server),
            "--runs",
            "1",
            "--prompt-style",
            "cot",
            "--steer",
            "both",
            "--no-progress",
            "--out",
            str(out),
            cwd=tmp_path,
        ).stdout
    )
    assert res["aggregate"]["average"]["mean"] == pytest.approx(tt.EXPECTED_AVERAGE)
    meta = json.loads((out / "run.json").read_text())
    assert (meta["prompt_style"], meta["steer_mode"]) == ("cot", "both")
    rec = [json.loads(x) for x in (out / "run_1.jsonl").read_text().splitlines()]
    assert {r["prompt_style"] for r in rec} == {"cot"}
