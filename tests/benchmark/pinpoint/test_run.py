"""``pointlab bench run pinpointqa``: the paper's 64 uniform frames, the question with its options
and task instruction, the shared journal, and the score of the run equal to ``score pinpoint`` on it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from pointlab.benchmark.pinpoint.generate import INSTRUCTIONS
from pointlab.benchmark.pinpoint.run import pinpoint_prompt
from pointlab.benchmark.video.frames import write_frame_folder
from pointlab.bridge.cli import app
from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread

CHOICES = ["A. keyboard", "B. office chair", "C. monitor", "D. lamp"]
SSP = json.dumps({"target": "mouse", "support_surface": "table", "references": []})
KEY: list[dict] = [
    {"id": "t1", "scene_id": "s1", "source_dataset": "scannetpp", "task": "TPV", "question_type": "presence",
     "question": "Did the mouse appear in the video?", "instruction": INSTRUCTIONS["TPV"], "answer": "Yes",
     "target": "mouse", "choices": None},
    {"id": "n1", "scene_id": "s1", "source_dataset": "scannetpp", "task": "NRI", "question_type": "reference_mcq",
     "question": "Which object is nearest to the mouse, not counting the surface it rests on?",
     "instruction": INSTRUCTIONS["NRI"], "answer": "B", "target": "mouse", "choices": CHOICES},
    {"id": "p1", "scene_id": "s1", "source_dataset": "scannetpp", "task": "SSP", "question_type": "structured",
     "question": "Give the structured location of the mouse.", "instruction": INSTRUCTIONS["SSP"], "answer": SSP,
     "target": "mouse", "choices": None},
]  # fmt: skip
QUESTIONS = [{k: v for k, v in r.items() if k not in ("answer", "target")} for r in KEY]


def test_the_prompt_is_the_question_its_options_and_the_task_instruction():
    assert pinpoint_prompt(QUESTIONS[1]) == "\n".join([QUESTIONS[1]["question"], *CHOICES, INSTRUCTIONS["NRI"]])
    assert pinpoint_prompt(QUESTIONS[0]) == QUESTIONS[0]["question"] + "\n" + INSTRUCTIONS["TPV"]


def test_a_run_sends_64_uniform_frames_and_scores_as_score_pinpoint(tmp_path):
    rng = np.random.default_rng(1)
    videos = tmp_path / "videos"
    write_frame_folder([rng.integers(0, 255, (24, 32, 3), dtype=np.uint8) for _ in range(100)], videos / "s1")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (tmp_path / "key.jsonl").write_text("".join(json.dumps(k) + "\n" for k in KEY))
    script = tmp_path / "script.jsonl"
    lines = [
        {"match": "Did the mouse appear", "answer": "Yes"},
        {"match": "Which object is nearest", "answer": "<think>the chair? no: D</think> B. office chair"},
        {"match": "structured location", "answer": json.dumps({"target": "mouse", "support_surface": "desk", "references": []})},
    ]  # fmt: skip
    script.write_text("".join(json.dumps(x) + "\n" for x in lines))
    server = create_model_server({"qa": ScriptedModel(script)})
    url, stop = serve_in_thread(server)
    agents = tmp_path / "agents.toml"
    agents.write_text(f'[[agents]]\nname = "qa"\nkind = "openai"\nbase_url = "{url}"\nmodel = "qa"\nmax_retries = 0\n')
    try:
        r = CliRunner().invoke(
            app,
            ["bench", "run", "pinpointqa", "--questions", str(tmp_path / "q.jsonl"), "--model", "qa", "--agents",
             str(agents), "--videos", str(videos), "--out", str(tmp_path / "run"), "--answers",
             str(tmp_path / "key.jsonl"), "--no-progress"],
        )  # fmt: skip
    finally:
        stop()
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    journal = [json.loads(x) for x in (tmp_path / "run" / "run_1.jsonl").read_text().splitlines()]
    # 64 of 100 frames, uniform: distinct, in order, spread over the whole video
    for line in journal:
        assert len(line["frames"]) == 64 and line["frames"] == sorted(set(line["frames"]))
        assert line["frames"][0] <= 1 and line["frames"][-1] >= 97
    assert next(x for x in journal if x["id"] == "n1")["reasoning"] == "the chair? no: D"
    # by hand: TPV 1/1, NRI 1/1 (the letter after the stripped reasoning), SSP: the support surface
    # is wrong (desk for table), so below 1
    again = CliRunner().invoke(
        app, ["score", "pinpoint", "--gt", str(tmp_path / "key.jsonl"), "--pred", str(tmp_path / "run" / "run_1.jsonl")]
    )
    assert again.exit_code == 0, again.output
    rescored = json.loads(again.stdout)
    items = {i["id"]: i["value"] for i in rescored["items"]}
    assert items["t1"] == 1.0 and items["n1"] == 1.0 and items["p1"] < 1.0
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (run["benchmark"], run["budget"], run["sampler"]) == ("pinpointqa", "64", "uniform")
    assert doc["score"] == rescored["summary"]  # the run's score is the journal's


@pytest.mark.slow  # a child process killed mid-run, then the rest
def test_a_run_killed_mid_way_resumes_and_its_score_is_score_pinpoints(tmp_path):
    from tests.benchmark.killresume import kill_then_resume

    rng = np.random.default_rng(2)
    videos = tmp_path / "videos"
    write_frame_folder([rng.integers(0, 255, (24, 32, 3), dtype=np.uint8) for _ in range(70)], videos / "s1")
    key = [dict(KEY[0], id=f"t{k}", question=f"Did the mouse appear in video part {k}?") for k in range(12)]
    (tmp_path / "key.jsonl").write_text("".join(json.dumps(k) + "\n" for k in key))
    qs = [{k: v for k, v in r.items() if k not in ("answer", "target")} for r in key]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"match": "Did the mouse appear", "answer": "Yes"}) + "\n")
    server = create_model_server({"qa": ScriptedModel(script)}, latency_s=0.3)
    url, stop = serve_in_thread(server)
    agents = tmp_path / "agents.toml"
    agents.write_text(f'[[agents]]\nname = "qa"\nkind = "openai"\nbase_url = "{url}"\nmodel = "qa"\nmax_retries = 0\n')
    journal = tmp_path / "run" / "run_1.jsonl"
    args = ["bench", "run", "pinpointqa", "--questions", str(tmp_path / "q.jsonl"), "--model", "qa", "--agents"]
    args += [
        str(agents),
        "--videos",
        str(videos),
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
        "--concurrency",
        "1",
    ]
    doc = kill_then_resume(args, journal, total=12, stop=stop, extra=("--answers", str(tmp_path / "key.jsonl")))
    rescored = CliRunner().invoke(
        app, ["score", "pinpoint", "--gt", str(tmp_path / "key.jsonl"), "--pred", str(journal)]
    )
    assert json.loads(rescored.stdout)["summary"] == doc["score"]
    assert all(i["value"] == 1.0 for i in json.loads(rescored.stdout)["items"])  # Yes for Yes, 12 of 12
