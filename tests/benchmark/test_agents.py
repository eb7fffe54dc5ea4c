"""Agents and the agents config: the real openai client against the sim model server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from pointlab.benchmark.agents import AgentAnswer, HumanAgent, OpenAIAgent
from pointlab.benchmark.agents_config import AgentsConfigError, load_agents, load_agents_config
from pointlab.benchmark.points import POINT_FORMATS
from pointlab.benchmark.prompts import PROMPT_STYLES
from pointlab.sim_mock.model_server import ScriptedModel, create_model_server, default_sim_models, serve_in_thread


class StubOracle:
    """Test input: the "mug" sits at 1/4 of the width, 1/2 of the height of whatever image is sent."""

    def points(self, instruction, image_rgb):
        height, width = image_rgb.shape[:2]
        # the pixel centre whose area position is exactly (25 %, 50 %): exact in every area frame
        return [(0.25 * width - 0.5, 0.5 * height - 0.5)] if "mug" in instruction else []


class Failing:
    def answer(self, request):
        raise RuntimeError("boom")


class Slow:
    """Answers 5 s late, or at once when ``release`` is set (the server's teardown need not wait)."""

    def __init__(self):
        self.release = threading.Event()

    def answer(self, request):
        self.release.wait(5.0)
        return "[1, 2]"


class Returns:
    """Answers with a fixed value that need not be a string (the server puts it in "content" as is)."""

    def __init__(self, value):
        self.value = value

    def answer(self, request):
        return self.value


class Capture:
    """Records what arrived (temperature, image size, instruction)."""

    def __init__(self):
        self.seen = []

    def answer(self, request):
        self.seen.append((request.temperature, request.width, request.height, request.instruction))
        return "[1, 2]"


class Flaky:
    """Fails twice, then answers (retries with backoff must get through)."""

    def __init__(self):
        self.n = 0

    def answer(self, request):
        self.n += 1
        if self.n <= 2:
            raise RuntimeError("transient")
        return "[10, 20]"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    script = tmp_path_factory.mktemp("s") / "script.jsonl"
    script.write_text('{"answer": "Reasoning first. Answer: [[30, 40]]"}\n{"answer": "no idea"}\n')
    models = default_sim_models(StubOracle())
    slow = Slow()
    qwen_script = tmp_path_factory.mktemp("q") / "qwen.jsonl"
    qwen_script.write_text('{"match": "mug", "answer": "{\\"point_2d\\": [5, 5]}"}\n')
    models.update(
        {
            "failing": Failing(),
            "slow": slow,
            "flaky": Flaky(),
            "scripted": ScriptedModel(script),
            "capture": CAPTURE,
            "scripted-qwen": ScriptedModel(qwen_script),
            "number": Returns(12345),
            "parts": Returns([{"type": "text", "text": "[30, "}, {"type": "text", "text": "40]"}]),
        }
    )
    url, stop = serve_in_thread(create_model_server(models))
    yield url
    slow.release.set()
    stop()


CAPTURE = Capture()


IMG = np.full((480, 640, 3), 90, dtype=np.uint8)


def run(coro):
    return asyncio.run(coro)


async def _point(agent, image=IMG, instruction="pick up the red mug"):
    try:
        return await agent.point(image, instruction)
    finally:
        await agent.aclose()


# ------------------------------------------------------------------ config


def test_default_config_has_the_three_agents(server):
    agents = load_agents(None, sim_base_url=server)
    assert list(agents) == ["sim-oracle", "sim-noisy", "human"]
    assert isinstance(agents["sim-oracle"], OpenAIAgent) and agents["sim-oracle"].base_url == server
    assert agents["sim-oracle"].point_format == "molmo" and agents["sim-noisy"].point_format == "gemini"
    assert agents["sim-oracle"].temperature == 0.0 and agents["sim-oracle"].api_key_env == ""
    assert isinstance(agents["human"], HumanAgent)


def test_default_sim_agents_point_through_the_server(server):
    agents = load_agents(None, sim_base_url=server)
    exact = run(_point(agents["sim-oracle"]))
    assert exact.error is None and exact.parse_error is None and exact.ok
    assert exact.model == "sim-oracle" and exact.raw_text.startswith("<point ")
    assert np.allclose(exact.points_px, [[159.5, 239.5]])  # 0.25*640 - 0.5, 0.5*480 - 0.5
    noisy = run(_point(agents["sim-noisy"]))
    assert noisy.ok and noisy.raw_text.startswith('[{"point": [')
    assert noisy.points_px.shape == (1, 2) and not np.allclose(noisy.points_px, [[159.5, 239.5]])


def test_sim_base_url_is_required_for_sim_agents():
    with pytest.raises(AgentsConfigError, match='base_url = "sim"'):
        load_agents(None)


@pytest.mark.parametrize(
    "toml, needle",
    [
        (
            '[[agents]]\nname = "a"\nkind = "openai"\nbase_url = "sim"\nmodel = "m"\npoint_format = "pixels"\n',
            "point_format",
        ),
        ('[[agents]]\nname = "a"\nkind = "openai"\nbase_url = "sim"\nmodel = "m"\ntemprature = 0\n', "temprature"),
        ('[[agents]]\nname = "a"\nkind = "openai"\nbase_url = "sim"\n', "needs base_url and model"),
        ('[[agents]]\nname = "a"\nkind = "human"\n[[agents]]\nname = "a"\nkind = "human"\n', "names repeat: a"),
        ('[[agents]]\nname = "a"\nkind = "openai"\nbase_url = "ftp://x"\nmodel = "m"\n', "base_url"),
        ('[[agents]]\nname = "a"\nkind = "openai"\nbase_url = "sim"\nmodel = "m"\npoint_format = "auto"\n', "unparsed"),
        ('[[agents]]\nname = "a"\nkind = "robot"\n', "kind"),
        ('[[agents]]\nname = "a"\nkind = "openai"\nbase_url = "sim"\nmodel = "m"\ntimeout_s = 0\n', "timeout_s"),
        ("agents = []\n", "agents"),
        ("[[agents]\n", "bad TOML"),
    ],
)
def test_invalid_configs_give_clear_errors(tmp_path, toml, needle):
    p = tmp_path / "agents.toml"
    p.write_text(toml)
    with pytest.raises(AgentsConfigError) as e:
        load_agents_config(p)
    assert str(p) in str(e.value) and needle in str(e.value)


_SIM = '[[agents]]\nname = "a"\nkind = "openai"\nbase_url = "sim"\nmodel = "m"\n'


@pytest.mark.parametrize(
    "extra, needle",
    [
        ("timeout_s = inf\n", "timeout_s"),  # an agent that never times out
        ("backoff_s = 0.5\n", "backoff_s"),  # retries are the client's: the key is gone, a typo-style error
        ("timeout_s = nan\n", "timeout_s"),
        ("qwen_min_pixels = 2000000\nqwen_max_pixels = 1000000\n", "qwen_min_pixels"),
    ],
)
def test_non_finite_or_inverted_settings_are_refused(tmp_path, extra, needle):
    p = tmp_path / "agents.toml"
    p.write_text(_SIM + extra)
    with pytest.raises(AgentsConfigError) as e:
        load_agents_config(p)
    assert str(p) in str(e.value) and needle in str(e.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(AgentsConfigError, match="cannot read"):
        load_agents(tmp_path / "nope.toml")


# ------------------------------------------------------------------ every format and style end to end


def _agent(url, model, fmt, style="default", **kw):
    return OpenAIAgent(
        "t", base_url=url, model=model, point_format=fmt, prompt_style=style, timeout_s=5, max_retries=0, **kw
    )


@pytest.mark.parametrize("fmt", [f for f in POINT_FORMATS if f != "auto"])
def test_every_format_round_trips_through_the_server(server, fmt):
    # (159.5, 239.5) on 640x480 is the area position (160, 240), exact in every format: 25 %/50 %; 250/500 of
    # 1000; RoboPoint 0.25/0.5; Qwen sees 644x476 (480/28 = 17.1 -> 476, 640/28 = 22.9 -> 644):
    # 160*644/640 = 161 -> 161*640/644 - 0.5 = 159.5 back; xy_pixels writes the centre itself.
    ans = run(_point(_agent(server, f"oracle-{fmt}", fmt)))
    assert ans.ok and ans.point_format == fmt
    assert np.allclose(ans.points_px, [[159.5, 239.5]], atol=1e-9)


@pytest.mark.parametrize("style", PROMPT_STYLES)
def test_every_prompt_style_reaches_the_oracle(server, style):
    ans = run(_point(_agent(server, "oracle-gemini", "gemini", style)))
    assert ans.ok and ans.prompt_style == style and np.allclose(ans.points_px, [[159.5, 239.5]])


def test_auto_agent_with_unparsed_prompt(server):
    ans = run(_point(_agent(server, "oracle-molmo2", "auto", "unparsed")))
    assert ans.ok and np.allclose(ans.points_px, [[159.5, 239.5]])


def test_downscaled_image_maps_back_to_original_pixels(server):
    big = np.zeros((960, 1280, 3), np.uint8)
    agent = _agent(server, "oracle-xy_pixels", "xy_pixels", max_image_side_px=640)
    ans = run(_point(agent, image=big))
    # sent as 640x480, answered the pixel centre [159.5, 239.5] there -> centre to centre
    # ((159.5 + 0.5) * 2 - 0.5, (239.5 + 0.5) * 2 - 0.5) = (319.5, 479.5) in the 1280x960 original
    assert ans.raw_text == "[159.5, 239.5]"
    assert np.allclose(ans.points_px, [[319.5, 479.5]])


def test_requests_are_greedy_and_carry_the_image(server):
    agent = _agent(server, "capture", "xy_pixels", "cot")
    for _ in range(3):  # a fresh event loop each time: the agent must not reuse a dead loop's client
        assert run(agent.point(IMG, "pick up the red mug")).ok
    assert CAPTURE.seen[-3:] == [(0.0, 640, 480, "pick up the red mug")] * 3


def test_scripted_answers_keep_raw_text_and_parse_errors(server):
    agent = _agent(server, "scripted", "xy_pixels")
    first = run(_point(agent))
    assert first.raw_text == "Reasoning first. Answer: [[30, 40]]" and first.points_px.tolist() == [[30.0, 40.0]]
    second = run(_point(agent))
    assert second.error is None and second.raw_text == "no idea"
    assert second.parse_error.startswith("unparseable:") and second.points_px.shape == (0, 2) and not second.ok


def test_not_found_is_a_parse_error_not_a_call_error(server):
    ans = run(_point(_agent(server, "sim-oracle", "molmo"), instruction="the banana"))
    assert ans.error is None and ans.raw_text == "I cannot find it." and ans.parse_error.startswith("unparseable")


# ------------------------------------------------------------------ failures recorded, never raised


def test_server_error_is_recorded_after_retries(server):
    agent = OpenAIAgent("t", base_url=server, model="failing", point_format="xy_pixels", max_retries=2, timeout_s=5)
    ans = run(_point(agent))
    assert ans.error.startswith("HTTP 500") and "boom" in ans.error
    assert ans.attempts == 3 and ans.points_px.shape == (0, 2) and not ans.ok


def test_transient_failures_are_retried(server):
    agent = OpenAIAgent("t", base_url=server, model="flaky", point_format="xy_pixels", max_retries=2)
    ans = run(_point(agent))
    assert ans.error is None and ans.attempts == 3 and ans.points_px.tolist() == [[10.0, 20.0]]


def test_timeout_is_recorded(server):
    agent = OpenAIAgent("t", base_url=server, model="slow", point_format="xy_pixels", timeout_s=0.3, max_retries=0)
    t0 = time.perf_counter()
    ans = run(_point(agent))
    # cut at the 0.3 s timeout, well before the answer at 5 s (the margin is for a busy machine)
    assert ans.error.startswith("timeout") and time.perf_counter() - t0 < 3.0 and ans.attempts == 1


def test_unknown_model_is_not_retried(server):
    agent = OpenAIAgent("t", base_url=server, model="nope", point_format="xy_pixels", max_retries=3)
    ans = run(_point(agent))
    assert ans.error.startswith("HTTP 404") and ans.attempts == 1


def _agent_at_port(port: int, timeout_s: float) -> OpenAIAgent:
    """An agent for a server on 127.0.0.1:``port`` that never answers properly: one retry (two attempts)."""
    return OpenAIAgent(
        "t", base_url=f"http://127.0.0.1:{port}/v1", model="m", point_format="molmo", max_retries=1, timeout_s=timeout_s
    )


def test_connection_refused_is_recorded():
    from pointlab.sim_mock.model_server import bind_socket

    sock = bind_socket()  # bound, never listening: connections are refused
    port = sock.getsockname()[1]
    try:
        ans = run(_point(_agent_at_port(port, timeout_s=2)))
    finally:
        sock.close()
    assert ans.error is not None and "Connection" in ans.error and ans.attempts == 2


def test_a_server_that_hangs_up_without_answering_is_a_connection_error_not_a_timeout():
    """openai's aiohttp transport maps aiohttp's ServerDisconnectedError to a connect *timeout*; the
    record must say what happened (the httpx transport says "Connection error"), well before the timeout."""
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    stop = threading.Event()

    def hang_up() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conn.recv(65536)  # read the request, answer nothing
            conn.close()

    t = threading.Thread(target=hang_up, daemon=True)
    t.start()
    try:
        ans = run(_point(_agent_at_port(port, timeout_s=30)))
    finally:
        stop.set()
        t.join(timeout=5)
        srv.close()
    assert ans.error is not None and ans.error.startswith("APIConnectionError: Connection error"), ans.error
    assert ans.attempts == 2 and ans.latency_s < 20


def test_missing_api_key_and_bad_image_are_recorded(server, monkeypatch):
    monkeypatch.delenv("POINTLAB_TEST_NO_SUCH_KEY", raising=False)
    agent = OpenAIAgent(
        "t", base_url=server, model="sim-oracle", api_key_env="POINTLAB_TEST_NO_SUCH_KEY", point_format="molmo"
    )
    ans = run(_point(agent))
    assert ans.error == "missing API key: environment variable POINTLAB_TEST_NO_SUCH_KEY is not set"
    ans = run(_point(_agent(server, "sim-oracle", "molmo"), image=np.zeros((4, 4), np.float32)))
    assert ans.error.startswith("bad image")


@pytest.mark.parametrize("fmt,style", [("qwen", "default"), ("auto", "unparsed")])
def test_qwen_answer_on_a_tiny_image_is_a_parse_error_not_a_raise(server, fmt, style):
    # a 20x20 image is below Qwen2.5-VL's 28 px factor: point() must still return an answer
    ans = run(_point(_agent(server, "scripted-qwen", fmt, style), image=np.zeros((20, 20, 3), np.uint8)))
    assert ans.error is None and ans.raw_text == '{"point_2d": [5, 5]}'
    assert ans.parse_error.startswith("unparseable:") and ans.points_px.shape == (0, 2) and not ans.ok


def test_content_that_is_not_a_string_is_recorded_or_joined(server):
    # the openai client does not check the type of "content": a number reached raw_text as an int
    ans = run(_point(_agent(server, "number", "xy_pixels")))
    assert ans.error == "malformed response: message content is int" and ans.raw_text == "" and not ans.ok
    # text parts (some OpenAI-compatible servers) are joined into the answer text
    ans = run(_point(_agent(server, "parts", "xy_pixels")))
    assert ans.error is None and ans.raw_text == "[30, 40]" and ans.points_px.tolist() == [[30.0, 40.0]]


def test_api_key_from_env_is_used(monkeypatch):
    """The key named by ``api_key_env`` is what the openai client sends: a server that requires
    ``Authorization: Bearer secret-key-1`` answers with it and refuses another key with OpenAI's 401."""
    url, stop = serve_in_thread(create_model_server(default_sim_models(StubOracle()), api_key="secret-key-1"))
    try:
        monkeypatch.setenv("POINTLAB_TEST_KEY", "secret-key-1")
        agent = OpenAIAgent(
            "t", base_url=url, model="sim-oracle", api_key_env="POINTLAB_TEST_KEY", point_format="molmo", max_retries=0
        )
        assert run(_point(agent)).ok
        monkeypatch.setenv("POINTLAB_TEST_KEY", "another-key")
        agent = OpenAIAgent(
            "t", base_url=url, model="sim-oracle", api_key_env="POINTLAB_TEST_KEY", point_format="molmo", max_retries=0
        )
        ans = run(_point(agent))
        assert not ans.ok and "401" in (ans.error or "") and "Incorrect API key" in (ans.error or ""), ans
    finally:
        stop()


# ------------------------------------------------------------------ human reference


def test_human_answer_from_another_thread():
    agent = HumanAgent("human", timeout_s=5)

    def operator():
        deadline = time.monotonic() + 5
        while not agent.pending() and time.monotonic() < deadline:
            time.sleep(0.01)
        req = agent.pending()[0]
        assert req.instruction == "pick up the mug" and (req.width, req.height) == (640, 480)
        assert agent.answer("not-an-id", 1, 2) is False
        # a non-finite click is refused and leaves the request open (it was an ok NaN answer)
        assert agent.answer(req.request_id, float("nan"), 2) is False
        assert agent.answer(req.request_id, 1, float("inf")) is False
        assert agent.answer(req.request_id, 123.5, 45.0) is True
        assert agent.answer(req.request_id, 1, 1) is False  # already answered

    t = threading.Thread(target=operator)
    t.start()
    ans = run(agent.point(IMG, "pick up the mug"))
    t.join()
    assert isinstance(ans, AgentAnswer) and ans.ok and ans.model == "human"
    assert ans.points_px.tolist() == [[123.5, 45.0]] and agent.pending() == []


def test_human_timeout_and_cancel():
    agent = HumanAgent("human", timeout_s=0.1)
    ans = run(agent.point(IMG, "x"))
    assert ans.error == "timeout: no human answer within 0.1 s" and agent.pending() == []

    agent = HumanAgent("human", timeout_s=5)

    async def cancel_soon():
        task = asyncio.create_task(agent.point(IMG, "x"))
        while not agent.pending():
            await asyncio.sleep(0.005)
        assert agent.cancel_all() == 1
        return await task

    assert run(cancel_soon()).error == "cancelled"
