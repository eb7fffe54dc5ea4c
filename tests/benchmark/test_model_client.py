"""The one model client (issue 9): one retry policy, the openai client's own (408, 429, 5xx, timeouts;
never another 4xx, Retry-After honoured), no retry on top, requests counted per answer against the sim
model server; request parameters passed through with OpenAI's reasoning-model rules by family."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import openai
import pytest
from fastapi import FastAPI, Request

from pointlab.benchmark.agents import OpenAIAgent
from pointlab.benchmark.judge import LLMJudge
from pointlab.benchmark.model_client import ModelClient, RequestParams, reasoning_family, request_kwargs
from pointlab.sim_mock.model_server import OpenAIReasoningRules, ScriptedModel, create_model_server, serve_in_thread

IMG = np.zeros((48, 64, 3), np.uint8)
FAST = {"retry-after-ms": "1"}  # Retry-After in milliseconds: the client waits 1 ms, not its backoff


def _script(tmp_path, name, lines):
    p = tmp_path / f"{name}.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ScriptedModel(p)


@pytest.fixture
def server(tmp_path):
    models = {
        "rate-limited": _script(
            tmp_path, "r", [{"status": 429, "headers": FAST}, {"status": 503, "headers": FAST}, {"answer": "[10, 20]"}]
        ),
        "bad-request": _script(
            tmp_path, "b", [{"status": 400, "message": "Unsupported parameter: 'x'"}, {"answer": "[1, 1]"}]
        ),
        "conflict": _script(
            tmp_path, "c", [{"status": 409, "headers": {"x-should-retry": "true"}}, {"answer": "[1, 1]"}]
        ),
        "down": _script(tmp_path, "d", [{"status": 500, "headers": FAST}] * 20),
        "o3-mini": OpenAIReasoningRules(
            _script(
                tmp_path, "o", [{"match": "Point", "answer": "[30, 40]"}, {"match": "grade", "answer": '{"score": 1}'}]
            )
        ),
        "judge-429": _script(tmp_path, "j", [{"status": 429, "headers": FAST}, {"answer": '{"score": 0.4}'}]),
    }
    app = create_model_server(models)
    url, stop = serve_in_thread(app)
    yield url, app
    stop()


def _count(app, model):
    return sum(1 for m, _ in app.state.requests if m == model)


def _agent(url, model, **kw):
    return OpenAIAgent("t", base_url=url, model=model, point_format="xy_pixels", timeout_s=5, **kw)


def _point(agent):
    async def go():
        try:
            return await agent.point(IMG, "Point to the mug.")
        finally:
            await agent.aclose()

    return asyncio.run(go())


def test_429_and_5xx_are_retried_by_the_client_and_counted(server):
    url, app = server
    ans = _point(_agent(url, "rate-limited", max_retries=2))
    assert ans.error is None and ans.points_px.tolist() == [[10.0, 20.0]]
    assert ans.attempts == 3 and _count(app, "rate-limited") == 3


def test_another_4xx_is_never_retried(server):
    url, app = server
    ans = _point(_agent(url, "bad-request", max_retries=5))
    assert ans.error == "HTTP 400: Unsupported parameter: 'x'" and ans.status == 400
    assert ans.attempts == 1 and _count(app, "bad-request") == 1
    # 409 is a 4xx too: not retried even when the server says x-should-retry
    ans = _point(_agent(url, "conflict", max_retries=5))
    assert ans.status == 409 and ans.attempts == 1 and _count(app, "conflict") == 1


def test_an_answer_costs_at_most_max_retries_plus_one_requests(server):
    # before the one client: agent retries x run retries = up to 9 requests per answer
    url, app = server
    ans = _point(_agent(url, "down", max_retries=2))
    assert ans.error.startswith("HTTP 500") and ans.attempts == 3 and _count(app, "down") == 3


def test_judge_uses_the_same_client_and_policy(server):
    url, app = server
    ok = LLMJudge("judge-429", base_url=url, max_retries=2).judge("score this")
    assert ok.ok and ok.result == {"score": 0.4} and ok.attempts == 2 and _count(app, "judge-429") == 2
    bad = LLMJudge("bad-request", base_url=url, max_retries=5).judge("score this")
    assert not bad.ok and "HTTP 400" in bad.error and bad.attempts == 1 and _count(app, "bad-request") == 1


def test_reasoning_model_rules_by_family(server):
    url, app = server
    # the server plays o3's rules: max_tokens or temperature 0 are HTTP 400
    raw = ModelClient(base_url=url, model="o3-mini", api_key="x", max_retries=0)
    raw.kwargs = {"temperature": 0.0, "max_tokens": 64}  # what a family-blind client sends
    done = raw.complete([{"role": "user", "content": "Point to the mug."}])
    assert done.status == 400 and "max_tokens" in done.error
    agent = _agent(url, "o3-mini", max_retries=0, max_tokens=256)
    ans = _point(agent)
    assert ans.error is None and ans.points_px.tolist() == [[30.0, 40.0]]
    assert agent.client().kwargs == {"max_completion_tokens": 256}
    assert any("temperature 0 omitted" in n for n in agent.describe()["request_notes"])


def test_request_parameters_are_passed_through():
    kw, notes = request_kwargs(
        "qwen2.5-vl-7b",
        RequestParams(
            temperature=None, max_tokens=None, max_completion_tokens=99, reasoning_effort="low", extra_body={"top_k": 1}
        ),
    )
    assert kw == {"max_completion_tokens": 99, "reasoning_effort": "low", "extra_body": {"top_k": 1}} and notes == []
    kw, _ = request_kwargs("gpt-4o", RequestParams(temperature=0.0, max_tokens=10))
    assert kw == {"temperature": 0.0, "max_tokens": 10}
    kw, notes = request_kwargs("openai/gpt-5-mini", RequestParams(temperature=1.0, max_tokens=10))
    assert kw == {"max_completion_tokens": 10} and notes == [
        "max_tokens sent as max_completion_tokens: gpt-5 models reject max_tokens"
    ]


@pytest.mark.parametrize(
    "model, family",
    [
        ("o1", "o-series"),
        ("o3-mini", "o-series"),
        ("o4-mini-2025-04-16", "o-series"),
        ("gpt-5", "gpt-5"),
        ("gpt-5.4", "gpt-5"),
        ("gpt-5-mini", "gpt-5"),
        ("gpt-4o", None),
        ("gpt-4.1", None),
        ("omni-7b", None),
        ("qwen3-vl", None),
    ],
)
def test_reasoning_families(model, family):
    assert reasoning_family(model) == family


def test_agents_toml_passes_parameters_through(tmp_path):
    from pointlab.benchmark.agents_config import build_agent, load_agents_config

    p = tmp_path / "agents.toml"
    p.write_text(
        '[[agents]]\nname = "r"\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "vllm-qwen"\n'
        'temperature = "omit"\nmax_tokens = "omit"\nmax_completion_tokens = 512\nreasoning_effort = "high"\n'
        "[agents.extra_body]\ntop_k = 1\n"
    )
    agent = build_agent(load_agents_config(p).agents[0])
    assert agent.client().kwargs == {
        "max_completion_tokens": 512,
        "reasoning_effort": "high",
        "extra_body": {"top_k": 1},
    }


def test_the_request_is_the_one_openai_s_create_sends():
    """ModelClient posts without openai's parameter transform (``client.post``): the body and the headers
    that matter must be those ``chat.completions.create`` sends for the same call, extra_body merged."""
    seen: list[tuple[dict, dict]] = []
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        seen.append((json.loads(await request.body()), dict(request.headers)))
        msg = {"role": "assistant", "content": "[1, 2]"}
        return {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
        }

    url, stop = serve_in_thread(app)
    params = RequestParams(
        temperature=0.2,
        max_tokens=None,
        max_completion_tokens=77,
        reasoning_effort="low",
        extra_body={"top_k": 3, "chat_template_kwargs": {"enable_thinking": False}},
    )
    mc = ModelClient(base_url=url, model="qwen3-vl", api_key="sk-test", max_retries=0, params=params)
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Point to the mug."},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}},
            ],
        }
    ]

    async def both():
        try:
            done = await mc.acomplete(messages)
            ref = openai.AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0)
            await ref.chat.completions.create(model="qwen3-vl", messages=messages, **mc.kwargs)
            await ref.close()
            return done
        finally:
            await mc.aclose()

    try:
        done = asyncio.run(both())
    finally:
        stop()
    assert done.error is None and done.text == "[1, 2]"
    (ours, our_headers), (theirs, their_headers) = seen
    assert (
        ours
        == theirs
        == {
            "model": "qwen3-vl",
            "messages": messages,
            "temperature": 0.2,
            "max_completion_tokens": 77,
            "reasoning_effort": "low",
            "top_k": 3,
            "chat_template_kwargs": {"enable_thinking": False},
        }
    )
    for h in ("authorization", "content-type", "accept", "x-stainless-retry-count"):
        assert our_headers.get(h) == their_headers.get(h), h
    assert our_headers["authorization"] == "Bearer sk-test"
