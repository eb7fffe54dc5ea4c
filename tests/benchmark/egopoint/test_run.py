"""``pointlab bench run egopoint``: the released evaluation's request (image, then the text of
eval_real_qwen3vl.py), a missing image as a recorded failure, the shared journal and resume, and the
run's score equal to ``score egopoint`` on its journal with the same released file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from pointlab.benchmark.egopoint.run import egopoint_prompt
from pointlab.bridge.cli import app
from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread

# the released array's shape (pure_real_test.json): no id, `type`, `options` with letters, answers
ENTRIES = [
    {"image_path": "test_img/1.jpg", "type": "Multiple_Choice", "question": "What is the person pointing at?",
     "options": ["A. Milk", "B. Chocolate", "C. Bread", "D. Cup"], "answer": "B. Chocolate",
     "dimension": "Basic Perception", "deixis_level": "L1"},
    {"image_path": "test_img/2.jpg", "type": "True_False", "question": "Is the pointed object red?",
     "answer": "True", "dimension": "Basic Perception", "deixis_level": "L2"},
    {"image_path": "test_img/9.jpg", "type": "Multiple_Choice", "question": "Which shelf is it on?",
     "options": ["A. Top", "B. Middle", "C. Bottom", "D. Floor"], "answer": "A. Top",
     "dimension": "Context & Relation", "deixis_level": "L3"},
]  # fmt: skip


def test_the_text_is_the_released_evaluations():
    assert egopoint_prompt(ENTRIES[0]) == (
        "What is the person pointing at?\nA. Milk\nB. Chocolate\nC. Bread\nD. Cup\n"
        "Answer directly using the letters of the options given."
    )
    assert egopoint_prompt(ENTRIES[1]) == "Is the pointed object red?\nAnswer directly with 'True' or 'False'."
    assert egopoint_prompt({"type": "Open_Ended", "question": "What is it?"}) == (
        "What is it?\nPlease output the answer directly."
    )


def test_a_run_asks_each_entry_once_records_a_missing_image_and_scores_as_score_egopoint(tmp_path):
    images = tmp_path / "bench"
    (images / "test_img").mkdir(parents=True)
    for n in (1, 2):  # 9.jpg is missing on purpose
        Image.fromarray(np.full((40, 60, 3), 90 * n, np.uint8)).save(images / "test_img" / f"{n}.jpg")
    data = tmp_path / "pure_real_test.json"
    data.write_text(json.dumps(ENTRIES))
    script = tmp_path / "script.jsonl"
    lines = [{"match": "pointing at", "answer": "B"}, {"match": "object red", "answer": "False"}]
    script.write_text("".join(json.dumps(x) + "\n" for x in lines))
    server = create_model_server({"qa": ScriptedModel(script)})
    url, stop = serve_in_thread(server)
    agents = tmp_path / "agents.toml"
    agents.write_text(f'[[agents]]\nname = "qa"\nkind = "openai"\nbase_url = "{url}"\nmodel = "qa"\nmax_retries = 0\n')
    args = ["bench", "run", "egopoint", "--questions", str(data), "--images", str(images), "--model", "qa"]
    args += ["--agents", str(agents), "--out", str(tmp_path / "run"), "--no-progress", "--max-error-rate", "1"]
    try:
        first = CliRunner().invoke(app, args)
        again = CliRunner().invoke(app, args)  # resume: only the failed entry is asked again
    finally:
        stop()
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)
    assert (doc["asked"], doc["errors"]) == (3, 1)
    assert json.loads(again.stdout)["asked"] == 1
    assert len(server.state.requests) == 2  # the missing image never reached the model
    journal = {x["id"]: x for x in map(json.loads, (tmp_path / "run" / "run_1.jsonl").read_text().splitlines())}
    assert journal["2"]["error"].startswith("image:") and journal["0"]["prompt"] == egopoint_prompt(ENTRIES[0])
    rescored = CliRunner().invoke(
        app,
        [
            "score",
            "egopoint",
            "--gt",
            str(data),
            "--pred",
            str(tmp_path / "run" / "run_1.jsonl"),
            "--lmms-results",
            str(tmp_path / "lmms.json"),
        ],  # fmt: skip
    )
    assert rescored.exit_code == 0, rescored.output
    # by hand: entry 0 right (B), entry 1 wrong (False for True), entry 2 failed (no image: 0)
    items = {i["id"]: i["value"] for i in json.loads(rescored.stdout)["items"]}
    assert items == {"0": 1.0, "1": 0.0, "2": 0.0}
    # lmms-eval's results form: 1 of 3 overall; SCQ 1 of 2, TF 0 of 1
    lmms = json.loads((tmp_path / "lmms.json").read_text())["results"]["egopoint"]
    assert lmms["accuracy,none"] == pytest.approx(1 / 3) and lmms["accuracy_scq,none"] == 0.5
    assert lmms["accuracy_tf,none"] == 0.0
    assert doc["score"] == json.loads(rescored.stdout)["summary"]
    both = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert both["pointlab"] == doc["score"] and set(both) == {"scorer", "rules_printed", "pointlab", "reference"}


@pytest.mark.slow  # a child process killed mid-run, then the rest
def test_a_run_killed_mid_way_resumes_and_its_score_is_score_egopoints(tmp_path):
    from tests.benchmark.killresume import kill_then_resume

    images = tmp_path / "bench"
    (images / "test_img").mkdir(parents=True)
    Image.fromarray(np.full((40, 60, 3), 120, np.uint8)).save(images / "test_img" / "1.jpg")
    many = [dict(ENTRIES[0], question=f"What is the person pointing at in room {k}?") for k in range(12)]
    data = tmp_path / "pure_real_test.json"
    data.write_text(json.dumps(many))
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"match": "pointing at", "answer": "B. Chocolate"}) + "\n")
    server = create_model_server({"qa": ScriptedModel(script)}, latency_s=0.3)  # one at a time: 3.6 s
    url, stop = serve_in_thread(server)
    agents = tmp_path / "agents.toml"
    agents.write_text(f'[[agents]]\nname = "qa"\nkind = "openai"\nbase_url = "{url}"\nmodel = "qa"\nmax_retries = 0\n')
    journal = tmp_path / "run" / "run_1.jsonl"
    args = ["bench", "run", "egopoint", "--questions", str(data), "--images", str(images), "--model", "qa"]
    args += ["--agents", str(agents), "--out", str(tmp_path / "run"), "--no-progress", "--concurrency", "1"]
    doc = kill_then_resume(args, journal, total=12, stop=stop)
    rescored = CliRunner().invoke(app, ["score", "egopoint", "--gt", str(data), "--pred", str(journal)])
    assert json.loads(rescored.stdout)["summary"] == doc["score"]
    assert all(i["value"] == 1.0 for i in json.loads(rescored.stdout)["items"])  # B for B. Chocolate
