"""Generic LLM judge: JSON recovery, and a recorded failure (never a crash) when the judge is down."""

from __future__ import annotations

import socket

import pytest

from pointlab.benchmark.judge import LLMJudge, recover_json_object


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Verdict:\n```\n{"a": {"b": [1, 2]}}\n```\nDone.', {"a": {"b": [1, 2]}}),
        ('The score is {"total": 7} because... {"other": 1}', {"total": 7}),  # first object that parses
        ('I think {"total": 7}. Also {"x": }', {"total": 7}),  # widest span fails, scan finds it
        ('<think>{not json}</think> {"ok": true}', {"ok": True}),
        ("[1, 2, 3]", None),
        ("no json here", None),
        ("", None),
        (None, None),
    ],
)
def test_recover_json_object(text, expected):
    assert recover_json_object(text) == expected


def test_unreachable_judge_is_a_recorded_failure():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = LLMJudge("judge-model", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, timeout_s=2.0)
    v = judge.judge("score this")
    assert not v.ok and v.error.startswith("judge call failed")
    assert v.attempts == 2 and v.prompt == "score this" and v.model == "judge-model" and v.temperature == 0.0


def test_empty_model_name_is_rejected():
    with pytest.raises(ValueError):
        LLMJudge("")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"a":' * 20000, None),  # nesting far past the recursion limit
        ("[" * 20000 + '{"a": 1}' + "]" * 20000, {"a": 1}),  # deep list around an object: the object counts
        ('{"a":1,' * 20000, None),  # never closed (each "{" decoded to the end: quadratic)
    ],
)
def test_recover_json_object_pathological_answers(text, expected):
    assert recover_json_object(text) == expected


def test_recover_json_object_deep_then_valid_object():
    # an unclosed prefix within the scan's start budget must not hide a later valid object, nor raise
    from pointlab.benchmark.judge import MAX_OBJECT_STARTS

    text = '{"a":' * (MAX_OBJECT_STARTS - 1) + ' then {"ok": 1}'
    assert recover_json_object(text) == {"ok": 1}
    text = '{"a":' * 2000 + '{"ok": 1}' + "}" * 2000  # 2001 levels: past the recursion limit
    assert recover_json_object(text) is None
