"""Generic LLM judge: JSON recovery, and a recorded failure (never a crash) when the judge is down."""

from __future__ import annotations

import socket

import pytest

from pointlab.benchmark.judge import LLMJudge, recover_json_object


@pytest.mark.parametrize("text,expected", [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('Verdict:\n```\n{"a": {"b": [1, 2]}}\n```\nDone.', {"a": {"b": [1, 2]}}),
    ('The score is {"total": 7} because... {"other": 1}', {"total": 7}),   # first object that parses
    ('I think {"total": 7}. Also {"x": }', {"total": 7}),                 # widest span fails, scan finds it
    ("<think>{not json}</think> {\"ok\": true}", {"ok": True}),
    ("[1, 2, 3]", None),
    ("no json here", None),
    ("", None),
    (None, None),
])
def test_recover_json_object(text, expected):
    assert recover_json_object(text) == expected


def test_unreachable_judge_is_a_recorded_failure():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = LLMJudge("judge-model", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, retry_wait_s=0.0,
                     timeout_s=2.0)
    v = judge.judge("score this")
    assert not v.ok and v.error.startswith("judge call failed")
    assert v.attempts == 2 and v.prompt == "score this" and v.model == "judge-model" and v.temperature == 0.0


def test_empty_model_name_is_rejected():
    with pytest.raises(ValueError):
        LLMJudge("")
