"""``pointlab bench run vsibench``: lmms-eval's prompt, frames at the budget, the journal, resume, and the
score of the run equal to ``pointlab score vsi`` on its journal."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from pointlab.benchmark.video.frames import write_frame_folder
from pointlab.benchmark.video.run import vsi_prompt
from pointlab.bridge.cli import app
from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread
from tests.benchmark.killresume import kill_then_resume

QUESTIONS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "dataset": "arkitscenes",
        "scene_name": "s1",
        "question_type": "object_rel_distance",
        "question": "Which of these objects (sofa, lamp) is the closest to the bed?",
        "options": ["A. sofa", "B. lamp"],
    },
    {
        "id": "q2",
        "dataset": "arkitscenes",
        "scene_name": "s1",
        "question_type": "object_counting",
        "question": "How many chair(s) are in this room?",
        "options": None,
    },
    {
        "id": "q3",
        "dataset": "arkitscenes",
        "scene_name": "s1",
        "question_type": "object_abs_distance",
        "question": "What is the distance between the bed and the lamp (in meters)?",
        "options": None,
    },
]
ANSWERS = [{**q, "ground_truth": g} for q, g in zip(QUESTIONS, ["B", 4, 2.0])]


def test_the_prompt_is_lmms_evals():
    # lmms-eval tasks/vsibench/utils.py vsibench_doc_to_text
    assert vsi_prompt(QUESTIONS[0]) == (
        "These are frames of a video.\n"
        "Which of these objects (sofa, lamp) is the closest to the bed?\n"
        "Options:\nA. sofa\nB. lamp\n"
        "Answer with the option's letter from the given choices directly."
    )
    assert vsi_prompt(QUESTIONS[1]) == (
        "These are frames of a video.\nHow many chair(s) are in this room?\n"
        "Please answer the question using a single word or phrase."
    )


@pytest.fixture
def setup(tmp_path):
    rng = np.random.default_rng(0)
    write_frame_folder([rng.integers(0, 255, (24, 32, 3), dtype=np.uint8) for _ in range(40)], tmp_path / "frames")
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in ANSWERS))
    return tmp_path


def _serve(tmp_path, lines):
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(x) + "\n" for x in lines))
    server = create_model_server({"qa": ScriptedModel(script)})
    url, stop = serve_in_thread(server)
    agents = tmp_path / "agents.toml"
    agents.write_text(f'[[agents]]\nname = "qa"\nkind = "openai"\nbase_url = "{url}"\nmodel = "qa"\nmax_retries = 0\n')
    return server, stop, agents


def _run(setup, agents, *extra):
    args = ["bench", "run", "vsibench", "--questions", str(setup / "questions.jsonl"), "--model", "qa"]
    args += ["--agents", str(agents), "--video", str(setup / "frames"), "--out", str(setup / "run"), "--no-progress"]
    return CliRunner().invoke(app, [*args, "--answers", str(setup / "answers.jsonl"), *extra])


def test_a_run_resumes_and_its_score_is_the_score_of_its_journal(setup):
    # first server: q1 right ("B"), q2 fails (500), q3 "<think>...</think> 2.5" (MRA of 2.5 vs 2.0: 0.6)
    server, stop, agents = _serve(
        setup,
        [
            {"match": "closest to the bed", "answer": "B"},
            {"match": "chair", "status": 500, "message": "overloaded"},
            {"match": "distance between", "answer": "<think>maybe 9 m</think> 2.5"},
        ],
    )
    try:
        r = _run(setup, agents, "--max-error-rate", "1")
    finally:
        stop()
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout)
    assert (first["asked"], first["cached"], first["errors"]) == (3, 0, 1)
    assert len(server.state.requests) == 3
    # the second server answers the counting question; only it is asked again
    server, stop, agents = _serve(setup, [{"match": "chair", "answer": "4"}])
    try:
        r = _run(setup, agents, "--max-error-rate", "1", "--lmms-results", str(setup / "lmms.json"))
    finally:
        stop()
    assert r.exit_code == 0, r.output
    second = json.loads(r.stdout)
    assert (second["asked"], second["cached"], second["errors"]) == (1, 2, 0) and len(server.state.requests) == 1
    lines = [json.loads(x) for x in (setup / "run" / "run_1.jsonl").read_text().splitlines()]
    assert sorted(x["id"] for x in lines) == ["q1", "q2", "q3"]  # one line per question
    q3 = next(x for x in lines if x["id"] == "q3")
    assert q3["reasoning"] == "maybe 9 m" and q3["prompt"] == vsi_prompt(QUESTIONS[2])
    # --budget 16 of 40 frames: 16 distinct frames in order, the first and the last included
    assert len(q3["frames"]) == 16 and q3["frames"] == sorted(set(q3["frames"])) and q3["frames"][0] == 0
    assert q3["frames"][-1] <= 39
    # MC accuracy 1/1; counting 4 vs 4: MRA 1; distance 2.5 vs 2.0 (relative error 0.25: theta .5 .. .75 pass,
    # 6 of 10 thresholds): 0.6
    rescored = CliRunner().invoke(
        app, ["score", "vsi", "--gt", str(setup / "answers.jsonl"), "--pred", str(setup / "run" / "run_1.jsonl")]
    )
    assert rescored.exit_code == 0, rescored.output
    items = {i["id"]: i["value"] for i in json.loads(rescored.stdout)["items"]}
    assert items == {"q1": 1.0, "q2": 1.0, "q3": pytest.approx(0.6)}
    assert second["score"] == json.loads(rescored.stdout)["summary"]
    # scores.json: the journal under both rule sets; each reproduced by `score vsi --rules`
    both = json.loads((setup / "run" / "scores.json").read_text())
    for name in ("pointlab", "reference"):
        again_r = CliRunner().invoke(
            app,
            ["score", "vsi", "--gt", str(setup / "answers.jsonl"), "--pred", str(setup / "run" / "run_1.jsonl"),
             "--rules", name],
        )  # fmt: skip
        assert both[name] == json.loads(again_r.stdout)["summary"], name
    # --lmms-results: the same file `score vsi --lmms-results` writes from the journal
    again = CliRunner().invoke(
        app,
        ["score", "vsi", "--gt", str(setup / "answers.jsonl"), "--pred", str(setup / "run" / "run_1.jsonl"),
         "--lmms-results", str(setup / "lmms-score.json")],
    )  # fmt: skip
    assert again.exit_code == 0
    ours = json.loads((setup / "lmms.json").read_text())
    assert ours["results"] == json.loads((setup / "lmms-score.json").read_text())["results"]
    assert ours["results"]  # (one entry per question type, lmms-eval's names)
    run = json.loads((setup / "run" / "run.json").read_text())
    assert (run["benchmark"], run["model"], run["budget"], run["sampler"]) == ("vsibench", "qa", "16", "nested")
    # a question-answering run names the scorer that reads it, and carries no pointing fields
    assert run["parser"] == "scorer:vsi" and not {"point_format", "prompt_style", "steer_mode"} & set(run)


def test_a_rerun_with_another_budget_is_refused(setup):
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    try:
        assert _run(setup, agents).exit_code == 0
        r = _run(setup, agents, "--budget", "8")
    finally:
        stop()
    assert r.exit_code == 2 and "holds a run of another setting" in r.stderr


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--budget", "0"], "budget"),
        (["--sampler", "best"], "unknown sampler 'best'"),
        (["--model", "nobody"], "no agent 'nobody'"),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_asked(setup, extra, needle):
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    try:
        r = _run(setup, agents, *extra)
    finally:
        stop()
    assert r.exit_code == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert server.state.requests == [] and not (setup / "run").exists()


def test_a_questions_own_frames_are_sent_as_given(setup):
    qs = [dict(QUESTIONS[0], frame_indices=[3, 9, 27])]
    (setup / "questions.jsonl").write_text(json.dumps(qs[0]) + "\n")
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    try:
        r = _run(setup, agents)
    finally:
        stop()
    assert r.exit_code == 0, r.output
    (line,) = [json.loads(x) for x in (setup / "run" / "run_1.jsonl").read_text().splitlines()]
    assert line["frames"] == [3, 9, 27] and json.loads(r.stdout)["score"]["n_questions"] == 1


@pytest.mark.slow  # a child process killed mid-run, then resumed
@pytest.mark.parametrize("task", ["vsibench", "revsi"])  # one runner; run.json names the task
def test_a_run_killed_mid_way_resumes_without_asking_twice(setup, task):
    many = [dict(QUESTIONS[1], id=f"c{k}", question=f"How many chair(s) are in room {k}?") for k in range(12)]
    (setup / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in many))
    (setup / "answers.jsonl").write_text("".join(json.dumps(dict(q, ground_truth=4)) + "\n" for q in many))
    script = setup / "script.jsonl"
    script.write_text(json.dumps({"match": "chair", "answer": "4"}) + "\n")
    server = create_model_server({"qa": ScriptedModel(script)}, latency_s=0.3)  # 12 answers, one at a time: 3.6 s
    url, stop = serve_in_thread(server)
    agents = setup / "agents.toml"
    agents.write_text(f'[[agents]]\nname = "qa"\nkind = "openai"\nbase_url = "{url}"\nmodel = "qa"\nmax_retries = 0\n')
    journal = setup / "run" / "run_1.jsonl"
    args = ["bench", "run", task, "--questions", str(setup / "questions.jsonl"), "--model", "qa", "--agents"]
    args += [str(agents), "--video", str(setup / "frames"), "--out", str(setup / "run"), "--no-progress"]
    args += ["--concurrency", "1"]
    doc = kill_then_resume(args, journal, total=12, stop=stop, extra=("--answers", str(setup / "answers.jsonl")))
    assert sorted(json.loads(x)["id"] for x in journal.read_text().splitlines()) == sorted(q["id"] for q in many)
    assert doc["score"]["overall"] == 1.0 and doc["score"]["n_questions"] == 12  # MRA of 4 against 4: 1
    assert json.loads((setup / "run" / "run.json").read_text())["benchmark"] == task
    rescored = CliRunner().invoke(app, ["score", "vsi", "--gt", str(setup / "answers.jsonl"), "--pred", str(journal)])
    assert json.loads(rescored.stdout)["summary"] == doc["score"]  # the record reproduces the run's score


@pytest.mark.slow  # real frames: generate, then run the sim agents over the questions
def test_the_sim_agents_answer_generated_questions_on_real_frames(
    tmp_path, arkit_frames, arkit_visibility, vsibench_meta
):
    """The README's sequence on the ARKitScenes scene 47334096: generate questions at budget 16, run the
    default agents file's sim-oracle (answers from the key: every score 1) and sim-noisy (wrong letters
    and scaled numbers: below 1), each score equal to `score vsi` on its journal."""
    meta = vsibench_meta / "arkitscenes_meta_info_val.json"
    gen = ["video", "generate", "--scenes", str(meta), "--scene-id", "47334096", "--frames", str(arkit_frames)]
    gen += ["--visibility", str(arkit_visibility), "--budgets", "16", "--out", str(tmp_path / "q")]
    r = CliRunner().invoke(app, gen)
    assert r.exit_code == 0, r.output
    n = json.loads(r.stdout)["records"]
    assert n > 0
    overall = {}
    for model in ("sim-oracle", "sim-noisy"):
        args = ["bench", "run", "vsibench", "--questions", str(tmp_path / "q" / "questions.jsonl"), "--model", model]
        args += ["--video", str(arkit_frames), "--answers", str(tmp_path / "q" / "answers.jsonl"), "--no-progress"]
        r = CliRunner().invoke(app, [*args, "--out", str(tmp_path / model), "--limit", "50"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert (doc["asked"], doc["errors"]) == (min(n, 50), 0)
        journal = tmp_path / model / "run_1.jsonl"
        # every answer was asked on the 16 frames the question names
        lines = [json.loads(x) for x in journal.read_text().splitlines()]
        assert all(len(x["frames"]) == 16 for x in lines)
        again = CliRunner().invoke(
            app, ["score", "vsi", "--gt", str(tmp_path / "q" / "answers.jsonl"), "--pred", str(journal)]
        )
        if n <= 50:  # the run asked every question of the key: the same numbers
            assert json.loads(again.stdout)["summary"] == doc["score"]
        overall[model] = doc["score"]["overall"]
    assert overall["sim-oracle"] == 1.0 and overall["sim-noisy"] < 1.0


def test_videos_are_found_in_lmms_evals_layout_and_a_missing_one_is_a_recorded_failure(setup):
    import shutil

    shutil.copytree(setup / "frames", setup / "videos" / "arkitscenes" / "s1")  # <dataset>/<scene_name>
    qs = [QUESTIONS[0], dict(QUESTIONS[1], scene_name="s2")]  # s2 has no video
    (setup / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    args = ["bench", "run", "vsibench", "--questions", str(setup / "questions.jsonl"), "--model", "qa", "--agents"]
    args += [str(agents), "--videos", str(setup / "videos"), "--out", str(setup / "run"), "--no-progress"]
    try:
        r = CliRunner().invoke(app, [*args, "--max-error-rate", "1"])
    finally:
        stop()
    assert r.exit_code == 0, r.output
    lines = {x["id"]: x for x in map(json.loads, (setup / "run" / "run_1.jsonl").read_text().splitlines())}
    assert lines["q1"]["error"] is None and len(lines["q1"]["frames"]) == 16
    assert lines["q2"]["error"].startswith("frames: question q2: no video") and len(server.state.requests) == 1


def test_a_journal_torn_by_a_kill_mid_write_loses_only_that_answer(setup):
    # the newcomer's case: the last line cut in the middle; the rerun's first answer was glued onto it
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    try:
        assert _run(setup, agents).exit_code == 0
        journal = setup / "run" / "run_1.jsonl"
        text = journal.read_text()
        journal.write_text(text[: len(text) - 40])  # q3's line torn
        r = _run(setup, agents)
    finally:
        stop()
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["asked"], doc["cached"]) == (1, 2)
    assert sorted(json.loads(x)["id"] for x in journal.read_text().splitlines()) == ["q1", "q2", "q3"]
    assert doc["score"]["missing_predictions"] == 0


def test_another_questions_file_into_a_run_folder_is_refused(setup):
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    try:
        assert _run(setup, agents).exit_code == 0
        (setup / "questions.jsonl").write_text(json.dumps(dict(QUESTIONS[0], id="other")) + "\n")
        r = _run(setup, agents)
    finally:
        stop()
    assert r.exit_code == 2 and "holds a run of another setting" in r.stderr
    assert len((setup / "run" / "run_1.jsonl").read_text().splitlines()) == 3


def test_a_missing_video_is_bad_input_and_nothing_runs(setup):
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    args = ["bench", "run", "vsibench", "--questions", str(setup / "questions.jsonl"), "--model", "qa", "--agents"]
    args += [str(agents), "--video", str(setup / "nope"), "--out", str(setup / "run"), "--no-progress"]
    try:
        r = CliRunner().invoke(app, args)
    finally:
        stop()
    assert r.exit_code == 2 and r.stderr.strip().endswith("--video " + str(setup / "nope") + ": no such file or folder")
    assert not (setup / "run").exists() and server.state.requests == []


def test_the_questions_of_a_scene_at_one_budget_decode_its_frames_once(setup, monkeypatch):
    from pointlab.benchmark.video import frames as frames_mod

    calls = []
    real = frames_mod.FolderFrames.read_many

    def counting(self, indices):
        calls.append(tuple(indices))
        return real(self, indices)

    monkeypatch.setattr(frames_mod.FolderFrames, "read_many", counting)
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    try:
        r = _run(setup, agents, "--concurrency", "3")
    finally:
        stop()
    assert r.exit_code == 0, r.output
    # three questions, no frame_indices of their own: the same 16 frames, read once
    assert len(calls) == 1 and len(calls[0]) == 16 and len(server.state.requests) == 3


def test_an_answer_key_given_as_the_questions_is_refused_before_anything_is_asked(setup):
    """The newcomer's mix-up: `--questions answers.jsonl` would send the ground truth with every
    question's record to the runner. Refused in one line, nothing asked, no run folder."""
    server, stop, agents = _serve(setup, [{"match": "frames of a video", "answer": "B"}])
    try:
        args = ["bench", "run", "vsibench", "--questions", str(setup / "answers.jsonl"), "--model", "qa"]
        args += ["--agents", str(agents), "--video", str(setup / "frames"), "--out", str(setup / "run")]
        r = CliRunner().invoke(app, [*args, "--no-progress", "--answers", str(setup / "answers.jsonl")])
    finally:
        stop()
    assert r.exit_code == 2 and "ground_truth" in r.stderr and "answer key" in r.stderr
    assert server.state.requests == [] and not (setup / "run").exists()


def test_a_questions_own_budget_wins_and_a_video_of_another_scene_is_warned_about(setup):
    """A generated record at budget "all" has no frame list: it is sent every frame (40 here), not
    --budget 16; and --video named after none of the questions' scenes ("frames" for scene s1) gets
    one warning line (the run goes on: a lab may name its files otherwise)."""
    q = dict(QUESTIONS[1], budget="all", frame_indices=None)
    (setup / "questions.jsonl").write_text(json.dumps(q) + "\n")
    server, stop, agents = _serve(setup, [{"match": "chair", "answer": "4"}])
    try:
        r = _run(setup, agents)
    finally:
        stop()
    assert r.exit_code == 0, r.output
    (line,) = [json.loads(x) for x in (setup / "run" / "run_1.jsonl").read_text().splitlines()]
    assert line["frames"] == list(range(40))
    assert "warning: --video" in r.stderr and "s1" in r.stderr
