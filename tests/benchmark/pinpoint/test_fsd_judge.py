"""FSD judging through the real openai client against the sim_mock model server (scripted verdicts).

Expected values are App. B.1's rules applied by hand: the total is the sum of the five parts
(3/2/2/2/1), capped at 2 when main location and references are both 0 (pointlab), divided by 10; error
tags outside the allowed eight make the verdict invalid (the released evaluator raises on them).
"""

from __future__ import annotations

import json

import pytest

from pointlab.benchmark.judge import LLMJudge
from pointlab.benchmark.pinpoint.fsd import correct_fsd_verdict
from pointlab.benchmark.pinpoint.scoring import score_pinpoint
from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, serve_in_thread

GT_TEXT = "The mouse is on the table. It is also next to the keyboard, about 3 cm away."


def verdict(parts, total, tags=(), fence=False):
    keys = ("main_location", "reference_objects", "spatial_relations", "distance_cm", "clarity")
    text = json.dumps(
        {"total_score": total, "dimension_scores": dict(zip(keys, parts)), "error_tags": list(tags), "explanation": "x"}
    )
    return f"Here is my grading:\n```json\n{text}\n```" if fence else text


SCRIPT = [
    verdict((3, 2, 2, 2, 1), 10),  # f1 consistent: 1.0
    verdict((3, 1, 1, 0, 1), 9),  # f2 inconsistent total: sum 6 -> 0.6
    verdict((0, 0, 2, 1, 1), 4, ["wrong_main_location"]),  # f3 capped: 4 -> 2 -> 0.2
    verdict((0, 0, 2, 2, 1), 1),  # f4 inconsistent and capped: 5 -> 2 -> 0.2
    verdict((2, 1, 1, 1, 1), 6, fence=True),  # f5 fenced in prose: 0.6
    "I would give this a solid seven out of ten.",  # f6 no JSON -> unscored
    verdict((5, 2, 2, 2, 1), 12),  # f7 main_location out of range -> unscored
]


@pytest.fixture
def judge_server(tmp_path):
    script = tmp_path / "judge.jsonl"
    script.write_text("".join(json.dumps({"answer": a}) + "\n" for a in SCRIPT))
    base_url, stop = serve_in_thread(create_model_server({"judge": ScriptedModel(script)}))
    yield base_url
    stop()


def test_fsd_items_scored_through_the_judge_server(judge_server):
    gt = [
        {
            "id": f"f{i}",
            "scene_id": "s1" if i <= 4 else "s2",
            "task": "FSD",
            "question_type": "free_form_localization",
            "question": "Where is the mouse?",
            "answer": GT_TEXT,
            "target": "mouse",
        }
        for i in range(1, 8)
    ]
    preds = {f"f{i}": "The mouse is on the desk near a laptop." for i in range(1, 8)}
    judge = LLMJudge("judge", base_url=judge_server, max_retries=0)
    out = score_pinpoint(gt, preds, judge)
    items = {it["id"]: it for it in out["items"]}
    assert items["f1"]["score"] == pytest.approx(1.0)
    assert items["f2"]["score"] == pytest.approx(0.6)
    assert items["f2"]["judge"]["total_corrected"] and items["f2"]["judge"]["judge_total"] == 9
    assert items["f3"]["score"] == pytest.approx(0.2) and items["f3"]["judge"]["capped"]
    assert not items["f3"]["judge"]["total_corrected"]
    assert items["f3"]["judge"]["error_tags"] == ["wrong_main_location"]
    assert items["f4"]["score"] == pytest.approx(0.2)
    assert items["f4"]["judge"]["capped"] and items["f4"]["judge"]["total_corrected"]
    assert items["f5"]["score"] == pytest.approx(0.6)
    assert items["f6"]["score"] is None and items["f6"]["reason"].startswith("judge_failed")
    assert items["f7"]["score"] is None and "main_location must be in 0..3" in items["f7"]["reason"]
    # stored with every item: prompt (the released rubric with target, ground truth, prediction), model, raw verdict
    j = items["f2"]["judge"]
    assert j["model"] == "judge" and j["temperature"] == 0.0
    assert "mouse" in j["prompt"] and GT_TEXT in j["prompt"] and "near a laptop" in j["prompt"]
    assert j["prompt"].startswith("You are judging a model's answer for the Open-ended Precise Localization task.")
    assert j["raw_verdict"] == SCRIPT[1]
    # Micro over the 5 judged items; Macro over s1 (f1-f4) and s2 (f5)
    fsd = out["summary"]["tasks"]["FSD"]
    assert fsd["micro"] == pytest.approx((1.0 + 0.6 + 0.2 + 0.2 + 0.6) / 5)
    assert fsd["macro"] == pytest.approx(((1.0 + 0.6 + 0.2 + 0.2) / 4 + 0.6) / 2)
    assert fsd["n"] == 5 and fsd["n_unscored"] == 2
    assert out["summary"]["judge"]["model"] == "judge"


@pytest.mark.parametrize(
    "obj",
    [
        {"dimension_scores": {"main_location": 1}},  # no total_score (required)
        {"total_score": 5, "dimension_scores": "high"},  # dimension_scores not an object
        {"total_score": 5, "dimension_scores": {"main_location": 1.5}},  # pointlab: not an integer
        {"total_score": 5, "dimension_scores": {}, "error_tags": ["made_up_tag"]},  # a tag outside the eight
    ],
)
def test_invalid_verdicts_are_rejected(obj):
    with pytest.raises(ValueError):
        correct_fsd_verdict(obj)


def test_cap_does_not_touch_anchored_answers():
    # main location 1, references 0: no cap even though the total (5) exceeds 2
    r = correct_fsd_verdict(
        {
            "total_score": 5,
            "dimension_scores": {
                "main_location": 1,
                "reference_objects": 0,
                "spatial_relations": 2,
                "distance_cm": 1,
                "clarity": 1,
            },
        }
    )
    assert r["total"] == 5 and not r["capped"] and not r["total_corrected"]
