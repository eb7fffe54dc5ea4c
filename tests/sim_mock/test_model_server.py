"""The sim OpenAI-compatible model server, driven by the real openai client and httpx."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import numpy as np
import openai
import pytest

from pointlab.benchmark.points import parse_points
from pointlab.benchmark.prompts import build_messages, image_to_data_url
from pointlab.sim_mock.model_server import (
    NOT_FOUND_TEXT,
    SIM_NOISE_PX,
    ChatRequest,
    OracleModel,
    ScriptedModel,
    create_model_server,
    default_sim_models,
    serve_in_thread,
)


class StubOracle:
    """Test input: the "mug" is at 1/4 of the width and 1/2 of the height; nothing else exists."""

    def __init__(self):
        self.calls = []

    def points(self, instruction, image_rgb):
        height, width = image_rgb.shape[:2]
        self.calls.append((instruction, width, height))
        return [(0.25 * width - 0.5, 0.5 * height - 0.5)] if "mug" in instruction else []


class EchoSize:
    def answer(self, request):
        return f"{request.width}x{request.height} | {request.instruction}"


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    p = tmp_path_factory.mktemp("script") / "answers.jsonl"
    p.write_text('{"answer": "first"}\n\n{"match": "banana", "answer": "[7, 8]"}\n{"answer": "second"}\n')
    return p


@pytest.fixture(scope="module")
def server(script):
    oracle = StubOracle()
    models = default_sim_models(oracle)
    models["echo"] = EchoSize()
    models["scripted"] = ScriptedModel(script)
    url, stop = serve_in_thread(create_model_server(models))
    yield url, oracle
    stop()
    stop()  # idempotent


def image(h=48, w=64):
    return np.full((h, w, 3), 120, dtype=np.uint8)


def test_models_endpoint_lists_ids(server):
    url, _ = server
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    ids = [m.id for m in openai.OpenAI(base_url=url, api_key="x").models.list().data]
    assert {"sim-oracle", "sim-noisy", "oracle-qwen", "echo", "scripted"} <= set(ids)


def test_chat_completion_schema_and_decoded_image_size(server):
    url, _ = server
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
    msgs = build_messages("pick up the red mug", image(48, 64), "xy_pixels", "cot", width=64, height=48)
    r = client.chat.completions.create(model="echo", messages=msgs, temperature=0)
    assert r.id.startswith("chatcmpl-") and r.object == "chat.completion" and r.model == "echo"
    assert r.choices[0].finish_reason == "stop" and r.choices[0].message.role == "assistant"
    # the image is decoded (64 wide, 48 high) and the instruction recovered from the CoT prompt
    assert r.choices[0].message.content == "64x48 | pick up the red mug"
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0


def test_oracle_answers_in_its_format(server):
    url, oracle = server
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
    msgs = build_messages("the mug", image(480, 640), "molmo", "default", width=640, height=480)
    text = client.chat.completions.create(model="sim-oracle", messages=msgs).choices[0].message.content
    # pixel centre (159.5, 239.5) = area position 160/640 = 25 %, 240/480 = 50 %
    assert text.startswith('<point x="25.0" y="50.0"')
    assert oracle.calls[-1] == ("the mug", 640, 480)
    msgs = build_messages("the banana", image(480, 640), "molmo", "default", width=640, height=480)
    assert (
        client.chat.completions.create(model="sim-oracle", messages=msgs).choices[0].message.content == NOT_FOUND_TEXT
    )


def test_scripted_replay_match_then_sequence_then_used_up(server):
    url, _ = server
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)

    def ask(text):
        return client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": text}])

    assert ask("where is the banana?").choices[0].message.content == "[7, 8]"
    assert ask("anything").choices[0].message.content == "first"
    assert ask("a banana again").choices[0].message.content == "[7, 8]"  # matches are not used up
    assert ask("more").choices[0].message.content == "second"
    with pytest.raises(openai.InternalServerError, match="used up"):
        ask("and more")


@pytest.mark.parametrize(
    "body, status, needle",
    [
        ({"model": "echo"}, 400, "messages"),
        (
            {
                "model": "echo",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}],
                    }
                ],
            },
            400,
            "decodable",
        ),
        (
            {
                "model": "echo",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "http://example.com/x.png"}}],
                    }
                ],
            },
            400,
            "data URL",
        ),
        ({"model": "nope", "messages": [{"role": "user", "content": "hi"}]}, 404, "does not exist"),
        ({"model": "sim-oracle", "messages": [{"role": "user", "content": "the mug"}]}, 400, "needs an image"),
    ],
)
def test_bad_requests_get_openai_error_bodies(server, body, status, needle):
    url, _ = server
    r = httpx.post(f"{url}/chat/completions", json=body, timeout=5)
    assert r.status_code == status
    assert needle in r.json()["error"]["message"]


def _png_header_only(w, h):
    """A tiny PNG whose header claims w x h pixels (zlib makes the all-zero rows almost free)."""
    import struct
    import zlib

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    row = b"\x00" * (1 + 3 * w)
    z = zlib.compressobj(9)
    idat = b"".join(z.compress(row) for _ in range(h)) + z.flush()
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", idat)
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    "url, needle",
    [
        ("data:image/png;base64,!!!!", "no bytes"),  # decodes to b"": cv2.imdecode asserted -> HTTP 500
        ("data:image/png;base64,", "no bytes"),
    ],
)
def test_empty_image_is_400_not_500(server, url, needle):
    base, _ = server
    body = {
        "model": "echo",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "x"}],
            }
        ],
    }
    r = httpx.post(f"{base}/chat/completions", json=body, timeout=5)
    assert r.status_code == 400 and needle in r.json()["error"]["message"]


def test_decompression_bomb_is_refused_before_decoding(server):
    import base64

    base, _ = server
    png = _png_header_only(9000, 9000)  # 81 Mpx (243 MB as RGB) from about 250 kB of PNG
    assert len(png) < 400_000
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    body = {
        "model": "echo",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "x"}],
            }
        ],
    }
    r = httpx.post(f"{base}/chat/completions", json=body, timeout=30)
    assert r.status_code == 400 and "9000x9000" in r.json()["error"]["message"]


def test_overflowing_max_tokens_is_ignored_not_500(server):
    base, _ = server
    raw = b'{"model": "echo", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1e400}'
    r = httpx.post(f"{base}/chat/completions", content=raw, headers={"content-type": "application/json"}, timeout=5)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "NonexNone | hi"


def test_model_answer_that_is_not_text_is_passed_through_not_500():
    # len(text.split()) for the token count raised on an int: an unhandled ASGI exception (500)
    class Number:
        def answer(self, request):
            return 12345

    url, stop = serve_in_thread(create_model_server({"number": Number()}))
    try:
        r = httpx.post(
            f"{url}/chat/completions",
            json={"model": "number", "messages": [{"role": "user", "content": "x"}]},
            timeout=5,
        )
    finally:
        stop()
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == 12345
    assert r.json()["usage"]["completion_tokens"] == 0


def test_non_json_body_is_400(server):
    url, _ = server
    r = httpx.post(f"{url}/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"


def _request(w=640, h=480, instruction="the mug"):
    return ChatRequest(
        model="m",
        messages=[],
        prompt_text=instruction,
        all_text=instruction,
        instruction=instruction,
        image_rgb=np.zeros((h, w, 3), np.uint8),
    )


def test_noise_statistics_make_small_objects_missed_often():
    model = OracleModel(StubOracle(), "xy_pixels", noise_px=SIM_NOISE_PX, seed=3)
    req = _request()
    errs = np.array(
        [parse_points(model.answer(req), "xy_pixels", 640, 480).points_px[0] - (159.5, 239.5) for _ in range(4000)]
    )
    assert abs(errs.std(axis=0) - SIM_NOISE_PX).max() < 0.05 * SIM_NOISE_PX
    assert np.abs(errs.mean(axis=0)).max() < 2.0
    # a 40 px object (radius 20 px) is hit when the error is within 20 px:
    # P = 1 - exp(-20^2 / (2 * 28^2)) = 0.2254 for a 2-D isotropic Gaussian
    hit = np.mean(np.hypot(errs[:, 0], errs[:, 1]) <= 20.0)
    assert abs(hit - (1 - np.exp(-400 / (2 * 28.0**2)))) < 0.03


def test_noise_is_reproducible_by_seed():
    a = OracleModel(StubOracle(), "gemini", noise_px=10, seed=7)
    b = OracleModel(StubOracle(), "gemini", noise_px=10, seed=7)
    same = [a.answer(_request()) for _ in range(3)]
    assert same == [b.answer(_request()) for _ in range(3)]
    # and the seed matters: another seed, or no noise, gives other points (equal answers above could
    # otherwise come from noise that is never applied)
    other = OracleModel(StubOracle(), "gemini", noise_px=10, seed=8)
    assert [other.answer(_request()) for _ in range(3)] != same
    exact = OracleModel(StubOracle(), "gemini", noise_px=0, seed=7)
    assert exact.answer(_request()) not in same
    assert len(set(same)) == 3  # each call draws new noise


def test_oracle_model_rejects_bad_settings():
    with pytest.raises(ValueError):
        OracleModel(StubOracle(), "auto")
    with pytest.raises(ValueError):
        OracleModel(StubOracle(), "molmo", noise_px=-1)


@pytest.mark.parametrize("noise", [float("nan"), float("inf")])
def test_non_finite_noise_is_refused(noise):
    # NaN noise was accepted: every sim-noisy answer then failed in format_points (HTTP 500)
    with pytest.raises(ValueError, match="finite"):
        OracleModel(StubOracle(), "gemini", noise_px=noise)


def test_script_with_a_bom_is_read(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"answer": "first"}\r\n')
    assert ScriptedModel(p).remaining == 1


def test_port_out_of_range_is_an_oserror():
    from pointlab.sim_mock.model_server import bind_socket

    for port in (70000, -1):
        with pytest.raises(OSError, match="0-65535"):
            bind_socket("127.0.0.1", port)


@pytest.mark.slow  # two cold CLI processes: 2-5 s
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--port", "70000"], "Invalid value for '--port': Input should be less than or equal to 65535"),
        (["--port", "0", "--noise-px", "nan"], "--noise-px: nan is not a finite number"),
    ],
)
def test_cli_bad_port_or_noise_is_a_one_line_error(args, needle):
    # a subprocess with a timeout: if the bad value were accepted the server would serve for ever
    r = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "pointlab"), "sim", "model-server", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr  # one line


@pytest.mark.parametrize(
    "content, needle",
    [
        ('{"answer": "a"}\nnot json\n', ":2: not JSON"),
        ('{"answer": 3}\n', ':1: need an object with a string "answer"'),
        ('{"match": "", "answer": "x"}\n', ':1: "match" must be'),
    ],
)
def test_bad_script_lines_are_named(tmp_path, content, needle):
    p = tmp_path / "s.jsonl"
    p.write_text(content)
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        ScriptedModel(p)
    with pytest.raises(ValueError, match="cannot read"):
        ScriptedModel(tmp_path / "missing.jsonl")


def test_data_url_png_round_trip_through_server(server):
    url, _ = server
    img = image(30, 50)
    body = {
        "model": "echo",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_to_data_url(img, "png")}},
                    {"type": "text", "text": "x"},
                ],
            }
        ],
    }
    r = httpx.post(f"{url}/chat/completions", json=body, timeout=5)
    assert r.json()["choices"][0]["message"]["content"] == "50x30 | x"


@pytest.mark.slow
def test_cli_model_server_serves_script(tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text('{"answer": "<point x=\\"50\\" y=\\"50\\">x</point>"}\n')
    proc = subprocess.Popen(
        [
            os.path.join(os.path.dirname(sys.executable), "pointlab"),
            "sim",
            "model-server",
            "--port",
            "0",
            "--script",
            str(script),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        out, deadline = "", time.monotonic() + 60
        while time.monotonic() < deadline:
            out += proc.stdout.readline()
            try:
                info = json.loads(out)
                break
            except json.JSONDecodeError:
                continue
        else:
            pytest.fail(f"no JSON from the server: {out!r}")
        assert "sim-oracle" in info["models"] and "scripted" in info["models"]
        client = openai.OpenAI(base_url=info["base_url"], api_key="x", max_retries=5)
        r = client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "x"}])
        assert r.choices[0].message.content == '<point x="50" y="50">x</point>'
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
