"""EgoPoint-Bench scoring: exact match for TF/SCQ (strict and lenient), the open-ended judge through
the sim OpenAI-compatible server with a scripted judge, stored verdicts, tables with the random
baseline. Expected values are worked out by hand in the comments."""

import json

import pytest
from typer.testing import CliRunner

from pointlab.benchmark.egopoint.scoring import score_egopoint, validate_oq_verdict
from pointlab.benchmark.judge import LLMJudge
from pointlab.benchmark.video.errors import RecordError
from pointlab.bridge.cli import app
from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread

OPT4 = ["A. mug", "B. kettle", "C. bowl", "D. plate"]
OPT5 = ["A. door", "B. sofa", "C. lamp", "D. shelf", "E. window"]
GT = [
    {"id": "1", "question_type": "TF", "dimension": "BP", "deixis": "L1", "answer": "Yes", "question": "Is this red?"},
    {
        "id": "2",
        "question_type": "true_false",
        "dimension": "FS",
        "deixis": "L2",
        "answer": "False",
        "question": "Is that edible?",
    },
    {
        "id": "3",
        "question_type": "SCQ",
        "dimension": "BP",
        "deixis": "L3",
        "answer": "C",
        "options": OPT4,
        "question": "What is this?",
    },
    {
        "id": "4",
        "question_type": "SCQ",
        "dimension": "SC",
        "deixis": "L1",
        "answer": "E",
        "options": OPT5,
        "question": "Which one am I pointing at?",
    },
    {
        "id": "5",
        "question_type": "SCQ",
        "dimension": "AR",
        "deixis": "L2",
        "answer": "A",
        "options": OPT4,
        "question": "What is over there?",
    },
    {
        "id": "6",
        "question_type": "OQ",
        "dimension": "OCR",
        "deixis": "L3",
        "answer": "Coca-Cola",
        "question": "What brand is this?",
    },
    {
        "id": "7",
        "question_type": "OQ",
        "dimension": "BP",
        "deixis": "L1",
        "answer": "a blue mug",
        "question": "What am I pointing at?",
    },
]
PRED = {
    "1": "yes",
    "2": "No, it is not edible.",
    "3": "The answer is (C)",
    "4": "E",
    "5": "B",
    "6": "It says Coca-Cola on the can.",
}


@pytest.fixture(scope="module")
def judge_server(tmp_path_factory):
    script = tmp_path_factory.mktemp("judge") / "judge.jsonl"
    script.write_text(
        json.dumps({"match": "Model answer: Pepsi", "answer": "I would say 0.4"})
        + "\n"
        + json.dumps(
            {
                "match": "Model answer: It says Coca-Cola",
                "answer": '```json\n{"score": 0.8, "reason": "names the brand"}\n```',
            }
        )
        + "\n"
    )
    base_url, stop = serve_in_thread(create_model_server({"judge": ScriptedModel(script)}))
    yield base_url
    stop()


def test_tables_by_hand(judge_server):
    new = []
    out = score_egopoint(GT, PRED, judge=LLMJudge("judge", base_url=judge_server, max_retries=0), on_verdict=new.append)
    items = {it["id"]: it for it in out["items"]}
    # the released extraction: "The answer is (C)" -> the last lone capital, C
    assert [items[k]["score"] for k in "1234567"] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.8, 0.0]
    assert [items[k]["score_lenient"] for k in "1234567"] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.8, 0.0]
    assert items["7"]["reason"] == "missing prediction" and items["6"]["reason"] == "judged"
    s = out["summary"]
    assert s["overall"]["score"] == pytest.approx(4.8 / 7)
    assert s["overall"]["score_lenient"] == pytest.approx(4.8 / 7)
    assert s["overall"]["random"] == pytest.approx((0.5 + 0.5 + 0.25 + 0.2 + 0.25) / 5)
    assert s["dimension"]["BP"] == pytest.approx(
        {"n": 3, "n_scored": 3, "score": 2 / 3, "score_lenient": 2 / 3, "random": 0.375}
    )
    assert list(s["dimension"]) == ["BP", "FS", "SC", "OCR", "AR"]
    assert s["deixis"]["L1"]["score"] == pytest.approx(2 / 3)
    assert s["question_type"]["SCQ"]["random"] == pytest.approx((0.25 + 0.2 + 0.25) / 3)
    assert s["question_type"]["OQ"]["score"] == pytest.approx(0.4) and s["question_type"]["OQ"]["random"] is None
    assert s["judged_now"] == 1 and len(new) == 1 and new[0]["score"] == 0.8

    # a saved run re-scores from the stored verdict without any judge
    again = score_egopoint(GT, PRED, verdicts={v["id"]: v for v in new})
    assert {it["id"]: it["score"] for it in again["items"]}["6"] == 0.8
    assert again["summary"]["stored_verdicts_used"] == 1 and again["summary"]["judged_now"] == 0
    # a changed prediction does not reuse the old verdict; without a judge it stays unjudged
    changed = score_egopoint(GT, {**PRED, "6": "Pepsi"}, verdicts={v["id"]: v for v in new})
    assert {it["id"]: it["score"] for it in changed["items"]}["6"] is None
    assert changed["summary"]["unjudged"] == 1
    assert changed["summary"]["overall"]["n_scored"] == 6


def test_judge_answer_without_json_is_a_recorded_failure(judge_server):
    out = score_egopoint(GT[5:6], {"6": "Pepsi"}, judge=LLMJudge("judge", base_url=judge_server, max_retries=0))
    item = out["items"][0]
    assert item["score"] is None and item["reason"].startswith("judge_failed")


def test_validate_verdict():
    assert validate_oq_verdict({"score": 0.75}) == {"score": 0.8, "reason": "", "snapped_from": 0.75}
    assert validate_oq_verdict({"score": "0.4", "reason": "partly"}) == {"score": 0.4, "reason": "partly"}
    assert validate_oq_verdict({"score": 1})["score"] == 1.0
    for bad in ({"score": 1.3}, {"score": -0.2}, {"score": True}, {"score": None}, {}):
        with pytest.raises(ValueError):
            validate_oq_verdict(bad)


@pytest.mark.parametrize("bad", [7, "abc", [1], -0.2, float("nan")])
def test_corrupt_stored_verdict_is_not_used(bad, judge_server):
    from pointlab.benchmark.egopoint.scoring import OQ_PROMPT_VERSION, prediction_hash

    gt = [GT[5]]  # OQ "What brand is this?" -> "Coca-Cola"
    pred = {"6": PRED["6"]}
    stored = {
        "6": {
            "id": "6",
            "prediction_sha1": prediction_hash(PRED["6"]),
            "prompt_version": OQ_PROMPT_VERSION,
            "score": bad,
        }
    }
    out = score_egopoint(gt, pred, verdicts=stored)
    item = out["items"][0]
    # a score of 7 would have made the overall mean 7.0; a string or a list used to raise
    assert item["score"] is None and item["reason"].startswith("stored verdict unusable")
    assert out["summary"]["unjudged"] == 1 and out["summary"]["stored_verdicts_used"] == 0
    # with a judge the item is judged again (the scripted judge gives 0.8 for this answer)
    out = score_egopoint(gt, pred, verdicts=stored, judge=LLMJudge("judge", base_url=judge_server, max_retries=0))
    assert out["items"][0]["score"] == 0.8 and out["summary"]["judged_now"] == 1


def test_stored_verdict_off_the_grid_is_snapped():
    from pointlab.benchmark.egopoint.scoring import OQ_PROMPT_VERSION, prediction_hash

    stored = {"6": {"prediction_sha1": prediction_hash(PRED["6"]), "prompt_version": OQ_PROMPT_VERSION, "score": 0.75}}
    out = score_egopoint([GT[5]], {"6": PRED["6"]}, verdicts=stored)
    assert out["items"][0]["score"] == 0.8 and out["items"][0]["reason"] == "stored verdict"


def test_cli_corrupt_verdict_file_is_no_traceback(tmp_path):
    from pointlab.benchmark.egopoint.scoring import OQ_PROMPT_VERSION, prediction_hash

    gt, pred, ver = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", tmp_path / "verdicts.jsonl"
    gt.write_text(json.dumps(GT[5]) + "\n")
    pred.write_text(json.dumps({"id": "6", "prediction": PRED["6"]}) + "\n")
    ver.write_text(
        json.dumps(
            {
                "id": "6",
                "prediction_sha1": prediction_hash(PRED["6"]),
                "prompt_version": OQ_PROMPT_VERSION,
                "score": "abc",
            }
        )
        + "\n"
    )
    r = CliRunner().invoke(app, ["score", "egopoint", "--gt", str(gt), "--pred", str(pred), "--verdicts", str(ver)])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["items"][0]["reason"].startswith("stored verdict unusable")


def test_bad_records():
    with pytest.raises(RecordError):
        score_egopoint([{"id": "x", "question_type": "essay"}], {})


def test_unreadable_answer_keys_are_reported_per_item_and_the_rest_is_scored():
    gt = [
        {"id": "maybe", "question_type": "TF", "answer": "maybe"},
        {"id": "f", "question_type": "SCQ", "answer": "F", "options": OPT5},
        # options as one string: its 4 characters were taken for 4 options
        {"id": "str", "question_type": "SCQ", "answer": "A", "options": "A. x"},
        {"id": "none", "question_type": "TF"},
        {"id": "ok", "question_type": "TF", "answer": "True"},
    ]
    out = score_egopoint(gt, {k["id"]: "yes" for k in gt})
    why = {it["id"]: it["reason"] for it in out["items"]}
    assert why["maybe"] == "invalid_ground_truth: TF answer 'maybe' is not yes/no/true/false"
    assert why["f"] == "invalid_ground_truth: SCQ answer 'F' is not one of ABCDE"
    assert why["str"] == "invalid_ground_truth: single-choice options must be a list, got str"
    assert why["none"] == "invalid_ground_truth: no answer" and why["ok"] == "ok"
    s = out["summary"]
    assert s["invalid_ground_truth"] == ["maybe", "f", "str", "none"] and s["unjudged"] == 0
    assert s["overall"]["n"] == 5 and s["overall"]["n_scored"] == 1 and s["overall"]["score"] == 1.0


def test_prediction_that_is_not_text_scores_zero_without_the_judge():
    # ["yes"] was stringified to "['yes']" and read as yes
    out = score_egopoint([GT[0], GT[5]], {"1": ["yes"], "6": {"answer": "Coca-Cola"}})
    items = {it["id"]: it for it in out["items"]}
    assert items["1"]["score"] == 0.0 and items["1"]["score_lenient"] == 0.0
    assert items["1"]["reason"] == "unparseable: prediction is a JSON list, not text"
    assert items["6"]["score"] == 0.0 and items["6"]["reason"].endswith("JSON dict, not text")
    assert out["summary"]["unparseable"] == 2 and out["summary"]["judged_now"] == 0


def test_domain_names_are_case_insensitive():
    gt = [dict(GT[0], domain="Real"), dict(GT[1], domain=" real"), dict(GT[3], domain="sim")]
    out = score_egopoint(gt, PRED)
    assert list(out["summary"]["domain"]) == ["real", "sim"] and out["summary"]["domain"]["real"]["n"] == 2


def test_cli_score_egopoint(tmp_path, judge_server):
    gt, pred, ver = tmp_path / "gt.jsonl", tmp_path / "pred.jsonl", tmp_path / "verdicts.jsonl"
    gt.write_text("".join(json.dumps(r) + "\n" for r in GT))
    pred.write_text("".join(json.dumps({"id": k, "prediction": v}) + "\n" for k, v in PRED.items()))
    r = CliRunner().invoke(
        app,
        [
            "score",
            "egopoint",
            "--gt",
            str(gt),
            "--pred",
            str(pred),
            "--judge",
            "judge",
            "--judge-base-url",
            judge_server,
            "--verdicts",
            str(ver),
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["summary"]["overall"]["score"] == pytest.approx(4.8 / 7)
    assert [json.loads(x)["score"] for x in ver.read_text().splitlines()] == [0.8]
    r = CliRunner().invoke(app, ["score", "egopoint", "--gt", str(gt), "--pred", str(pred), "--verdicts", str(ver)])
    assert json.loads(r.stdout)["summary"]["stored_verdicts_used"] == 1
