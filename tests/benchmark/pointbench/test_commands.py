"""CLI pieces not covered end to end: ``pointlab perf score`` output shape, ``pointlab bench report``
with the Human bar, argument errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from pointlab.bridge.cli import app


def test_perf_score_small():
    r = CliRunner().invoke(
        app,
        [
            "perf",
            "score",
            "--items",
            "3",
            "--side-px",
            "200",
            "--votes",
            "500",
            "--models",
            "4",
            "--rounds",
            "5",
            "--repeat",
            "2",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["mask_scoring"]["mask_px"] == [200, 200]
    assert set(out["mask_scoring"]["items_per_s"]) == {"p50", "p90", "p99", "min", "max", "n"}
    assert out["bradley_terry"]["bootstrap_rounds"] == 5 and out["bradley_terry"]["target_s"] == 10.0
    assert out["bradley_terry"]["ratio_bootstrap_over_point_fit"] > 0
    # the re-score reads the masks back from the bit-packed disk cache: three items per repeat
    assert (
        out["mask_scoring"]["rescore_items_per_s"]["n"] == 2
        and out["mask_scoring"]["rescore_target_items_per_s"] == 5000
    )


@pytest.mark.slow  # the sim model server's own process builds the sim world first (a few seconds)
def test_perf_harness_small():
    r = CliRunner().invoke(app, ["perf", "harness", "--items", "12", "--concurrency", "4", "--latency-s", "0.05"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    for run, k in (("serial", 1), ("concurrent", 4)):
        # every item answered [10, 10], inside its mask (the upper-left quarter of 64 x 64)
        assert (out[run]["concurrency"], out[run]["items"], out[run]["errors"], out[run]["accuracy"]) == (k, 12, 0, 1.0)
    # one at a time, each item waits its 50 ms: 12 items take at least 0.6 s
    assert out["serial"]["wall_s"] >= 12 * 0.05
    assert out["speedup"] == pytest.approx(out["concurrent"]["items_per_s"] / out["serial"]["items_per_s"])


def test_bench_report_with_human(tmp_path):
    Image.fromarray(np.zeros((10, 10, 3), np.uint8)).save(tmp_path / "i.png")
    m = np.zeros((10, 10), np.uint8)
    m[0:5, 0:5] = 255
    Image.fromarray(m).save(tmp_path / "m.png")
    gt = tmp_path / "gt.jsonl"
    gt.write_text(
        "".join(
            json.dumps(
                {"id": f"s{k}", "image": "i.png", "width": 10, "height": 10, "category": "spatial", "mask": "m.png"}
            )
            + "\n"
            for k in range(4)
        )
    )
    human = tmp_path / "human.jsonl"
    human.write_text(
        "".join(json.dumps({"id": f"s{k}", "points": [[2, 2] if k < 3 else [8, 8]]}) + "\n" for k in range(4))
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(
        json.dumps(
            {
                "model": "m",
                "aggregate": {
                    "spatial": {"mean": 0.25, "std": 0.05, "runs": 3},
                    "average": {"mean": 0.25, "std": 0.05, "runs": 3},
                },
            }
        )
    )
    r = CliRunner().invoke(
        app,
        [
            "bench",
            "report",
            "--run",
            str(run),
            "--human",
            str(human),
            "--data",
            str(gt),
            "--out",
            str(tmp_path / "fig3"),
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["models"]["Human"]["spatial"] == {"mean": 0.75, "std": 0.0, "runs": 1}  # 3 of 4 clicks inside
    assert (tmp_path / "fig3.png").exists() and (tmp_path / "fig3.md").exists()
    assert CliRunner().invoke(app, ["bench", "report", "--run", str(tmp_path / "nope")]).exit_code == 2


def test_bench_pointing_argument_errors(tmp_path):
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(tmp_path), "--model", "x"])
    assert r.exit_code == 2 and "no data.json" in r.output
    gt = _square_dataset(tmp_path, 1)
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(gt), "--model", "nobody"])
    assert r.exit_code == 2 and "no agent 'nobody'" in r.output
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(gt), "--model", "human"])
    assert r.exit_code == 2 and "kind 'human'" in r.output
    r = CliRunner().invoke(app, ["bench", "pointing", "--data", str(gt), "--model", "sim-oracle", "--steer", "loud"])
    assert r.exit_code == 2 and "steer mode" in r.output


def test_bench_arena_argument_errors(tmp_path):
    r = CliRunner().invoke(app, ["bench", "arena", "--sampler", "greedy", "--db", str(tmp_path / "a.db")])
    assert r.exit_code == 2 and "sampler must be one of" in r.output


def test_bench_arena_refuses_a_bad_store_url_before_rendering_anything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["bench", "arena", "--db", "postgres://bad url"])
    assert r.exit_code == 2 and "cannot open the arena store 'postgres://bad url'" in r.output
    assert list(tmp_path.iterdir()) == []  # no demo set rendered, no uploads folder


def test_bench_run_against_a_server_answering_400_stops_within_the_threshold(tmp_path):
    """Must show (issue 12): every request is a 400 (an OpenAI reasoning model refusing max_tokens); the run
    exits non-zero naming the server's error, after no more failed answers than the threshold allows."""
    from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread

    Image.fromarray(np.zeros((20, 20, 3), np.uint8)).save(tmp_path / "i.png")
    m = np.zeros((20, 20), np.uint8)
    m[5:15, 5:15] = 255
    Image.fromarray(m).save(tmp_path / "m.png")
    gt = tmp_path / "gt.jsonl"
    gt.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"s{k}",
                    "image": "i.png",
                    "width": 20,
                    "height": 20,
                    "category": "spatial",
                    "mask": "m.png",
                    "query": f"Point to thing {k}.",
                }
            )
            + "\n"
            for k in range(30)
        )
    )
    script = tmp_path / "s.jsonl"
    script.write_text(
        json.dumps(
            {
                "match": "Point",
                "status": 400,
                "message": "Unsupported parameter: 'max_tokens' is "
                "not supported with this model. Use 'max_completion_tokens' instead.",
            }
        )
        + "\n"
    )
    server = create_model_server({"refuser": ScriptedModel(script)})
    url, stop = serve_in_thread(server)
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f'[[agents]]\nname = "r"\nkind = "openai"\nbase_url = "{url}"\nmodel = "refuser"\n'
        'point_format = "xy_pixels"\nimage_encoding = "png"\n'
    )
    try:
        r = CliRunner().invoke(
            app,
            [
                "bench",
                "pointing",
                "--data",
                str(gt),
                "--model",
                "r",
                "--agents",
                str(agents),
                "--runs",
                "1",
                "--concurrency",
                "1",
                "--no-progress",
                "--out",
                str(tmp_path / "run"),
            ],
        )
    finally:
        stop()
    assert r.exit_code == 1, r.output
    assert "HTTP 400: Unsupported parameter: 'max_tokens'" in r.output and "run stopped" in r.output
    # 30 answers at 10 %: 3 failures are allowed, the 4th stops the run; each 400 cost one request (no retry)
    assert len(server.state.requests) == 4
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["stopped"].startswith("run stopped: 4 of 4 answers failed")


def test_score_pointing_reads_the_hugging_face_release_layout(tmp_path):
    """Must show (issue 12): ``pointlab score pointing --gt data.json`` on the release as Hugging Face ships
    it (data.json + selected_images.zip + selected_masks.zip, files found by basename)."""
    import io
    import zipfile

    def png(a):
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="PNG")
        return buf.getvalue()

    mask = np.zeros((10, 40), np.uint8)
    mask[:, :20] = 255  # columns 0..19 of a 40-px image
    with zipfile.ZipFile(tmp_path / "selected_images.zip", "w") as z:
        z.writestr("selected_images/spatial/a.jpg", png(np.zeros((10, 40, 3), np.uint8)))
        z.writestr("selected_images/counting/b.png", png(np.zeros((10, 40, 3), np.uint8)))
    with zipfile.ZipFile(tmp_path / "selected_masks.zip", "w") as z:
        z.writestr("masks/a_mask.png", png(mask))
        z.writestr("masks/b_mask.png", png(mask))
    (tmp_path / "data.json").write_text(
        json.dumps(
            [
                {
                    "image_filename": "a.jpg",
                    "mask_filename": "a_mask.png",
                    "user_input": "left half",
                    "category": "spatial",
                },
                {
                    "image_filename": "b.png",
                    "mask_filename": "b_mask.png",
                    "user_input": "two",
                    "category": "counting",
                    "count": 2,
                },
            ]
        )
    )
    pred = tmp_path / "pred.jsonl"
    # Gemini [y, x] = [500, 499]: 499/1000*40 = 19.96 -> column 19 (inside); counting: two points inside
    pred.write_text(
        json.dumps({"id": "spatial/a", "prediction": '[{"point": [500, 499]}]', "format": "gemini"})
        + "\n"
        + json.dumps({"id": "counting/b", "points": [[3, 3], [10, 5]]})
        + "\n"
    )
    for rules in ("pointlab", "reference"):
        r = CliRunner().invoke(
            app,
            [
                "score",
                "pointing",
                "--gt",
                str(tmp_path / "data.json"),
                "--pred",
                str(pred),
                "--rules",
                rules,
                "--lmms-results",
                str(tmp_path / f"lmms_{rules}.json"),
            ],
        )
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["summary"]["rules"] == rules and doc["summary"]["overall"] == 1.0
        assert [i["reason"] for i in doc["items"]] == ["hit", "all_targets"]
        lm = json.loads((tmp_path / f"lmms_{rules}.json").read_text())
        assert lm["results"]["pointbench"]["pointbench_binary_acc,none"] == 1.0
        assert lm["config"]["pointlab"]["rules"] == rules
    # a GT JSONL names files: zip members are refused by name (was AttributeError: zipfile.Path has no relative_to)
    from pointlab.benchmark.pointbench.dataset import DatasetError, load_release, write_gt_jsonl

    with pytest.raises(DatasetError, match="selected_images.zip"):
        write_gt_jsonl(load_release(tmp_path), tmp_path / "gt" / "gt.jsonl")


def test_score_pointing_refuses_unusable_ground_truth_masks(tmp_path):
    """A mask of the wrong size, a file that is no image, an empty ground truth: exit 2 naming it,
    before any item is scored (they used to score as model failures with exit 0)."""
    Image.new("RGB", (320, 240)).save(tmp_path / "i.png")
    Image.new("L", (100, 100), 255).save(tmp_path / "small.png")
    (tmp_path / "text.png").write_text("not an image")
    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"id": "a", "points": [[10, 10]]}\n')
    for mask, needle in (("small.png", "is 100x100, image is 320x240"), ("text.png", "cannot read mask")):
        gt = tmp_path / "gt.jsonl"
        gt.write_text(
            json.dumps({"id": "a", "image": "i.png", "width": 320, "height": 240, "category": "spatial", "mask": mask})
            + "\n"
        )
        r = CliRunner().invoke(app, ["score", "pointing", "--gt", str(gt), "--pred", str(pred)])
        assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output
    (tmp_path / "empty.jsonl").write_text("")
    r = CliRunner().invoke(app, ["score", "pointing", "--gt", str(tmp_path / "empty.jsonl"), "--pred", str(pred)])
    assert r.exit_code == 2 and "no ground-truth items" in r.output


def _square_dataset(tmp_path, n: int):
    """``n`` items on one 20 x 20 black image whose mask is the square rows/columns 5-14."""
    Image.fromarray(np.zeros((20, 20, 3), np.uint8)).save(tmp_path / "i.png")
    m = np.zeros((20, 20), np.uint8)
    m[5:15, 5:15] = 255
    Image.fromarray(m).save(tmp_path / "m.png")
    gt = tmp_path / "gt.jsonl"
    row = {"image": "i.png", "width": 20, "height": 20, "category": "spatial", "mask": "m.png"}
    gt.write_text("".join(json.dumps({**row, "id": f"s{k}", "query": f"Point to thing {k}."}) + "\n" for k in range(n)))
    return gt


@pytest.mark.slow  # a whole bench run with its figures: ~4 s
@pytest.mark.parametrize("temperature, want_exit", [('"omit"', 0), ("0", 1)])
def test_bench_pointing_honours_a_config_that_omits_the_temperature(tmp_path, temperature, want_exit):
    """A reasoning deployment refuses any temperature but its default (OpenAI's o-series and gpt-5 rules,
    played by ``OpenAIReasoningRules``): with ``temperature = "omit"`` in the agents file every request
    leaves it out and the run succeeds; with ``temperature = 0`` every request is a 400 (the control:
    the server does refuse it). ``bench pointing`` used to force 0.0 over the config."""
    from pointlab.benchmark.pointbench import load_dataset
    from pointlab.sim_mock.mask_oracle import mask_sim_models
    from pointlab.sim_mock.model_server import OpenAIReasoningRules, create_model_server, serve_in_thread

    gt = _square_dataset(tmp_path, 6)
    models = mask_sim_models(load_dataset(gt))
    server = create_model_server({"o-pointer": OpenAIReasoningRules(models["oracle-xy_pixels"])})
    url, stop = serve_in_thread(server)
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f'[[agents]]\nname = "r"\nkind = "openai"\nbase_url = "{url}"\nmodel = "o-pointer"\n'
        f'point_format = "xy_pixels"\nimage_encoding = "png"\ntemperature = {temperature}\nmax_tokens = "omit"\n'
    )
    args = ["--model", "r", "--agents", str(agents), "--runs", "1", "--concurrency", "2", "--no-progress"]
    try:
        r = CliRunner().invoke(
            app,
            ["bench", "pointing", "--data", str(gt), *args, "--out", str(tmp_path / "run"), "--max-error-rate", "0"],
        )
    finally:
        stop()
    assert r.exit_code == want_exit, r.output
    statuses = [status for _, status in server.state.requests]
    if want_exit == 0:
        # six answers, each one request answered 200, and all six inside the square
        assert statuses == [200] * 6
        run = json.loads((tmp_path / "run" / "run.json").read_text())
        assert run["agent"]["temperature"] is None
        res = json.loads((tmp_path / "run" / "results.json").read_text())
        assert res["aggregate"]["overall"]["mean"] == pytest.approx(1.0)
    else:
        assert statuses[0] == 400 and "Unsupported value: 'temperature'" in r.output


def test_an_unknown_point_format_is_refused_in_one_line_not_scored_as_unparseable(tmp_path):
    gt = _square_dataset(tmp_path, 2)
    pred = tmp_path / "p.jsonl"
    pred.write_text(
        "".join(json.dumps({"id": f"s{k}", "prediction": "[10, 10]", "format": "molmoo"}) + "\n" for k in range(2))
    )
    before = pred.read_bytes()
    r = CliRunner().invoke(app, ["score", "pointing", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        f"pointlab score pointing: error: {pred}:1: unknown point format 'molmoo'; use one of "
        "molmo, molmo2, gemini, grid1000, qwen, qwen3, robopoint, xy_pixels, auto"
    ]
    assert pred.read_bytes() == before
    r = CliRunner().invoke(app, ["score", "pointing", "--gt", str(gt), "--pred", str(pred), "--lmms-format", "pixels"])
    assert r.exit_code == 2 and "--lmms-format: unknown point format 'pixels'" in r.stderr
    # a known format on the same lines scores: [10, 10] is inside the square
    pred.write_text(before.decode().replace("molmoo", "xy_pixels"))
    r = CliRunner().invoke(app, ["score", "pointing", "--gt", str(gt), "--pred", str(pred)])
    assert r.exit_code == 0 and json.loads(r.stdout)["summary"]["overall"] == 1.0


def test_bench_pointing_on_an_empty_ground_truth_exits_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the default run folder would go
    (tmp_path / "gt.jsonl").write_text("")
    args = ["bench", "pointing", "--data", str(tmp_path / "gt.jsonl"), "--model", "sim-oracle", "--no-progress"]
    r = CliRunner().invoke(app, args)
    assert (
        r.exit_code == 2
        and r.stderr.strip() == f"pointlab bench pointing: error: {tmp_path / 'gt.jsonl'}: no ground-truth items"
    )
    assert not (tmp_path / "pointbench_runs").exists()
