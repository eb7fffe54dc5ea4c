"""Reasoning is stored and never read for an answer, in every scorer under the pointlab rules (issue: a
reasoning model that names a decoy while thinking). Each answer below thinks of the wrong answer and
then gives the right one; under ``reference`` the released readers read the text as released."""

from __future__ import annotations

from pointlab.benchmark.egopoint.scoring import score_egopoint
from pointlab.benchmark.pinpoint.scoring import score_pinpoint
from pointlab.benchmark.video.scoring import score_vsi_item

# Qwen3 with no reasoning parser: the block, then the answer; and a template that opened the block itself
THINK_NO_THEN_YES = "<think>\nThe cup is red, so no... but wait, the handle.\n</think>\n\nYes"
OPENED_BY_TEMPLATE = "Option A looks right at first. Then again A is the lamp.\n</think>\nB"


def test_pinpoint_tpv_and_nri():
    gt = [
        {"id": "t", "scene_id": "s", "task": "TPV", "answer": "Yes"},
        {
            "id": "n",
            "scene_id": "s",
            "task": "NRI",
            "answer": "B",
            "choices": ["A. lamp", "B. cup", "C. pen", "D. mug"],
        },
    ]
    preds = {"t": THINK_NO_THEN_YES, "n": OPENED_BY_TEMPLATE}
    ours = {it["id"]: it["score"] for it in score_pinpoint(gt, preds)["items"]}
    assert ours == {"t": 1.0, "n": 1.0}
    # the released reading takes the first yes/no word ("no", in the reasoning) and "Option A"
    released = {it["id"]: it["score"] for it in score_pinpoint(gt, preds, rules="reference")["items"]}
    assert released == {"t": 0.0, "n": 0.0}


def test_vsi_multiple_choice_first_token():
    gt = {"id": "q", "question_type": "object_rel_distance", "ground_truth": "B", "options": ["A. lamp", "B. cup"]}
    assert score_vsi_item(gt, OPENED_BY_TEMPLATE).score == 1.0
    # lmms-eval's rule reads the first whitespace token of the raw text: "Option"
    assert score_vsi_item(gt, OPENED_BY_TEMPLATE, rules="reference").score == 0.0


def test_egopoint_true_false():
    gt = [{"id": "e", "question_type": "TF", "answer": "True"}]
    text = "<thinking>It could be false; false is unlikely.</thinking> True"
    assert score_egopoint(gt, {"e": text})["items"][0]["score"] == 1.0
    # the released extract_answer drops closed <think> blocks only: "false" and "true" both remain, no label
    assert score_egopoint(gt, {"e": text}, rules="reference")["items"][0]["score"] == 0.0
