"""``pointlab video frames`` on the real frames and on an mp4 made in tmp_path."""

import json

import numpy as np
from typer.testing import CliRunner

from pointlab.benchmark.video.frames import write_video
from pointlab.bridge.cli import app


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_frames_budgets_on_real_frames(arkit_frames, arkit_visibility):
    r = run("video", "frames", "--video", arkit_frames, "--budget", "16")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["frames"] == [0, 2, 4, 5, 7, 9, 11, 13, 14, 16, 18, 20, 22, 23, 25, 27]
    assert (out["total"], out["sampler"], out["budget"]) == (28, "nested", 16)
    out = json.loads(run("video", "frames", "--video", arkit_frames, "--budget", "all").stdout)
    assert out["frames"] == list(range(28)) and out["sampler"] == "all"
    r = run(
        "video",
        "frames",
        "--video",
        arkit_frames,
        "--budget",
        "16",
        "--dummy",
        "query_dropped",
        "--visibility",
        arkit_visibility,
        "--query",
        "tv,stove",
    )
    out = json.loads(r.stdout)
    assert not {0, 5, 6, 18, 23} & set(out["frames"]) and out["num_frames"] == 16


def test_frames_mp4_and_errors(tmp_path):
    path = tmp_path / "v.mp4"
    write_video([np.zeros((32, 32, 3), np.uint8)] * 90, path, fps=30)
    out = json.loads(run("video", "frames", "--video", path, "--budget", "4", "--sampler", "uniform").stdout)
    assert out["frames"] == [0, 30, 59, 89]  # rint(linspace(0, 89, 4)) = 0, 29.67, 59.33, 89
    r = run("video", "frames", "--video", tmp_path / "nope.mp4", "--budget", "4")
    assert r.exit_code == 2 and "no such file" in r.stderr
    r = run("video", "frames", "--video", path, "--budget", "zero")
    assert r.exit_code == 2


def test_generate_refuses_no_budget_and_an_unknown_sampler_before_writing(
    tmp_path, arkit_frames, arkit_visibility, vsibench_meta
):
    meta = vsibench_meta / "arkitscenes_meta_info_val.json"
    out = tmp_path / "out"
    out.mkdir()
    (out / "questions.jsonl").write_text('{"id": "kept"}\n')
    # "--budgets ''" wrote 0 records over the previous questions.jsonl and exited 0
    r = run(
        "video",
        "generate",
        "--scenes",
        meta,
        "--scene-id",
        "47334096",
        "--frames",
        arkit_frames,
        "--visibility",
        arkit_visibility,
        "--budgets",
        " , ",
        "--out",
        out,
    )
    assert r.exit_code == 2 and "--budgets names no budget" in r.stderr
    # without --frames an unknown sampler was written into report.json as if it had been used
    r = run("video", "generate", "--scenes", meta, "--scene-id", "47334096", "--sampler", "bogus", "--out", out)
    assert r.exit_code == 2 and "unknown sampler 'bogus'" in r.stderr
    assert (out / "questions.jsonl").read_text() == '{"id": "kept"}\n' and not (out / "report.json").exists()
