"""A local OpenAI-compatible model server that plays models (a test double: no real model runs here).

``POST /v1/chat/completions`` and ``GET /v1/models`` with the OpenAI schema, enough for the real
``openai`` client (``pointlab.benchmark.agents.OpenAIAgent``). Images arrive as ``image_url`` parts
holding base64 data URLs; the server decodes them to learn the image size.

Models (any object with ``answer(request: ChatRequest) -> str``):

- ``OracleModel(oracle, fmt, noise_px, seed)``: asks ``oracle.points(instruction, image_rgb)``
  with the decoded image as sent (points in its pixels; ``pointlab.sim_mock.oracle.SceneOracle(world)``
  maps it back to the sim camera frame it shows and answers from that frame's masks,
  ``mask_oracle.MaskOracle`` to the dataset item it is) and writes
  the points in point format ``fmt`` (``benchmark.points.format_points``), with isotropic Gaussian
  pixel noise of standard deviation ``noise_px`` per axis; ``"I cannot find it."`` when the oracle
  returns no point. The instruction is recovered from the prompt with
  ``benchmark.prompts.extract_instruction``.
- ``ScriptedModel(path)``: replays answers from a JSONL file: lines ``{"answer": "..."}`` are used
  in order, one per request; lines ``{"match": "substring", "answer": "..."}`` answer any request
  whose message text contains the substring (checked first, in file order, never used up). A line
  ``{"status": 429, "message": "...", "headers": {"retry-after-ms": "1"}}`` (with or without
  ``match``) answers with that HTTP status instead, to play a rate limit, an outage or a 400. An
  answer line may add ``"reasoning_content": "..."``: the message then carries it beside the content,
  as a server with a reasoning parser does (``Reasoned``).
- ``OpenAIReasoningRules(model)``: answers like ``model`` but refuses, as OpenAI's o-series and gpt-5
  do, a request carrying ``max_tokens`` or a ``temperature`` other than 1 (HTTP 400 with OpenAI's
  wording).

Errors use the OpenAI error body ``{"error": {"message", "type", "param", "code"}}``: 400 for a bad
request (no messages, a broken data URL, an oracle model without an image), 404 for an unknown
model, 500 when a model fails (e.g. a script is used up), or the status a model raises
(``ModelStatusError``). Every request is logged in ``app.state.requests`` as ``(model, status)``, so
a test counts the requests an answer cost.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Callable, Protocol

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from pointlab.benchmark.points import POINT_FORMATS, format_points
from pointlab.benchmark.serving import bind_socket, serve_in_thread  # noqa: F401 - part of this module's API
from pointlab.benchmark.prompts import data_url_to_image, extract_instruction

__all__ = [
    "ChatRequest",
    "Model",
    "OracleModel",
    "ScriptedModel",
    "Reasoned",
    "OpenAIReasoningRules",
    "ModelInputError",
    "ModelStatusError",
    "create_model_server",
    "serve_in_thread",
    "default_sim_models",
    "SIM_NOISE_PX",
    "NOT_FOUND_TEXT",
]

log = logging.getLogger(__name__)

# sim-noisy: sigma 28 px per axis. A 40 px object (radius 20 px) is hit with probability
# 1 - exp(-20^2 / (2 * 28^2)) = 0.23, so it is missed about three times in four.
SIM_NOISE_PX = 28.0
MODE_STUDY_NOISE_PX = (10, 14, 20)
NOT_FOUND_TEXT = "I cannot find it."


class ModelInputError(ValueError):
    """The request cannot be answered by this model (HTTP 400)."""


class ModelStatusError(Exception):
    """A model's answer is an HTTP error: ``status``, OpenAI-style ``message``, extra response ``headers``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.headers, self.param = int(status), message, dict(headers or {}), param


@dataclass(frozen=True)
class ChatRequest:
    """What a model sees of one chat completion request.

    Attributes:
        model: requested model id.
        messages: the raw OpenAI messages.
        prompt_text: the text of the last user turn.
        all_text: the text of every turn joined by newlines (for scripted matching).
        instruction: ``extract_instruction(prompt_text)``.
        image_rgb: ``(H, W, 3)`` uint8 RGB of the last image sent, or ``None``.
        temperature, max_tokens: as requested (``None`` when absent; ``max_tokens`` falls back to
            ``max_completion_tokens``).
        body: the whole request body (every parameter as sent).
    """

    model: str
    messages: list
    prompt_text: str
    all_text: str
    instruction: str
    image_rgb: np.ndarray | None
    temperature: float | None = None
    max_tokens: int | None = None
    body: dict | None = None

    @property
    def width(self) -> int | None:
        return None if self.image_rgb is None else int(self.image_rgb.shape[1])

    @property
    def height(self) -> int | None:
        return None if self.image_rgb is None else int(self.image_rgb.shape[0])


class Model(Protocol):
    def answer(self, request: ChatRequest) -> str: ...


class OracleModel:
    """Answers from ground truth: ``oracle.points(instruction, image_rgb) -> [(u, v), ...]``.

    Args:
        oracle: object with ``points(instruction, image_rgb)`` in pixels of the sent image.
        fmt: point format of the answer (not ``auto``).
        noise_px: standard deviation of the Gaussian noise added to each coordinate, pixels.
        seed: seed of the noise generator (answers are reproducible in request order).

    Raises:
        ValueError: unknown format or negative noise.
    """

    def __init__(self, oracle: Any, fmt: str, noise_px: float = 0.0, seed: int = 0) -> None:
        if fmt not in POINT_FORMATS or fmt == "auto":
            raise ValueError(f"oracle answer format must be one of {', '.join(POINT_FORMATS[:-1])}, got {fmt!r}")
        if not (math.isfinite(noise_px) and noise_px >= 0):  # NaN noise made every answer a HTTP 500
            raise ValueError(f"noise_px must be a finite number >= 0, got {noise_px}")
        self.oracle, self.fmt, self.noise_px = oracle, fmt, float(noise_px)
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def answer(self, request: ChatRequest) -> str:
        if request.image_rgb is None:
            raise ModelInputError("the oracle model needs an image (an image_url data URL part)")
        h, w = request.image_rgb.shape[:2]
        pts = np.asarray(self.oracle.points(request.instruction, request.image_rgb), dtype=np.float64).reshape(-1, 2)
        if len(pts) == 0:
            return NOT_FOUND_TEXT
        if self.noise_px > 0:
            with self._lock:
                pts = pts + self._rng.normal(0.0, self.noise_px, size=pts.shape)
        label = " ".join(request.instruction.split()[:8]) or "target"
        return format_points(pts, self.fmt, w, h, label=label)


@dataclass(frozen=True)
class Reasoned:
    """An answer with its reasoning in the message's ``reasoning_content`` field, as vLLM's reasoning
    parsers and DeepSeek's API send it (the content then holds only the answer)."""

    content: str
    reasoning_content: str


class ScriptedModel:
    """Replays answers from a JSONL script (see module docstring).

    Raises:
        ValueError: unreadable file, a line that is not a JSON object with a string ``answer``
            (the message names the line), or a non-string ``match``.
    """

    def __init__(self, path: str | Path) -> None:
        from pointlab.benchmark.records import iter_jsonl

        self.path = Path(path)
        self._matched: list[tuple[str, str]] = []
        self._queue: list[str] = []
        for where, row in iter_jsonl(self.path):  # RecordError is a ValueError
            if "status" in row:
                st, hdr = row["status"], row.get("headers") or {}
                if not (isinstance(st, int) and 400 <= st <= 599) or not isinstance(hdr, dict):
                    raise ValueError(f'{where}: "status" must be an HTTP error status 400-599 and "headers" an object')
                ans: Any = ModelStatusError(
                    st, str(row.get("message") or f"scripted HTTP {st}"), {str(k): str(v) for k, v in hdr.items()}
                )
            elif isinstance(row.get("answer"), str):
                rc = row.get("reasoning_content")
                if rc is not None and not isinstance(rc, str):
                    raise ValueError(f'{where}: "reasoning_content" must be a string')
                ans = row["answer"] if rc is None else Reasoned(row["answer"], rc)
            else:
                raise ValueError(f'{where}: need an object with a string "answer" or an HTTP "status"')
            if "match" in row:
                if not isinstance(row["match"], str) or not row["match"]:
                    raise ValueError(f'{where}: "match" must be a non-empty string')
                self._matched.append((row["match"], ans))
            else:
                self._queue.append(ans)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Sequential answers not yet used."""
        return len(self._queue) - self._next

    def answer(self, request: ChatRequest) -> str:
        for sub, ans in self._matched:
            if sub in request.all_text:
                return self._give(ans)
        with self._lock:
            if self._next >= len(self._queue):
                raise RuntimeError(f"scripted model {self.path.name}: script used up (no match and no answers left)")
            ans = self._queue[self._next]
            self._next += 1
        return self._give(ans)

    @staticmethod
    def _give(ans: Any) -> str:
        if isinstance(ans, ModelStatusError):
            raise ans
        return ans


class OpenAIReasoningRules:
    """Plays an OpenAI reasoning model's parameter rules in front of ``model`` (module docstring)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def answer(self, request: ChatRequest) -> str:
        body = request.body or {}
        if "max_tokens" in body:
            raise ModelStatusError(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                param="max_tokens",
            )
        t = body.get("temperature")
        if t is not None and t != 1:
            raise ModelStatusError(
                400,
                f"Unsupported value: 'temperature' does not support {t} with this model. "
                "Only the default (1) value is supported.",
                param="temperature",
            )
        return self.model.answer(request)


def default_sim_models(oracle: Any, *, noise_px: float = SIM_NOISE_PX, seed: int = 0) -> dict[str, Model]:
    """The models of the default sim server: ``sim-oracle`` (exact, Molmo tags), ``sim-noisy``
    (``noise_px`` Gaussian noise, Gemini JSON) — the model ids of ``default_agents.toml`` —,
    ``sim-noise-10``, ``-14``, ``-20`` (that many pixels of noise, Gemini JSON: the graded agents of
    ``bridge/mode_study_agents.toml``), and an exact ``oracle-<format>`` for every point format
    (benchmark runs in any format)."""
    models: dict[str, Model] = {
        "sim-oracle": OracleModel(oracle, "molmo"),
        "sim-noisy": OracleModel(oracle, "gemini", noise_px=noise_px, seed=seed),
    }
    # agents of graded quality for the study-mode simulation (docs/statistics.md, "Which mode"):
    # a 40 px object is hit with 1 - exp(-20^2 / (2 s^2)) = 0.86, 0.64, 0.39 for s = 10, 14, 20 px
    for sigma in MODE_STUDY_NOISE_PX:
        models[f"sim-noise-{sigma}"] = OracleModel(oracle, "gemini", noise_px=float(sigma), seed=seed + sigma)
    for fmt in POINT_FORMATS:
        if fmt != "auto":
            models[f"oracle-{fmt}"] = OracleModel(oracle, fmt)
    return models


# ------------------------------------------------------------------------------------------------
# HTTP


def _error(
    status: int,
    message: str,
    type_: str,
    code: str | None = None,
    param: str | None = None,
    headers: dict[str, str] | None = None,
):
    return JSONResponse(
        status_code=status,
        headers=headers,
        content={"error": {"message": message, "type": type_, "param": param, "code": code}},
    )


_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}


def _parts(content: Any) -> tuple[list[str], list[str]]:
    """(texts, image urls) of one message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return [content], []
    texts, urls = [], []
    if isinstance(content, list):
        for p in content:
            if not isinstance(p, dict):
                continue
            if p.get("type") == "text" and isinstance(p.get("text"), str):
                texts.append(p["text"])
            elif p.get("type") == "image_url":
                iu = p.get("image_url")
                url = iu.get("url") if isinstance(iu, dict) else iu
                if isinstance(url, str):
                    urls.append(url)
    return texts, urls


def _to_request(body: dict) -> ChatRequest:
    """Validate the body and decode the image. Raises ModelInputError."""
    model, messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise ModelInputError('"model" must be a non-empty string')
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise ModelInputError('"messages" must be a non-empty list of message objects')
    if body.get("stream"):
        raise ModelInputError("streaming is not supported by the sim model server")
    all_texts, prompt_text, image_url = [], "", None
    for m in messages:
        texts, urls = _parts(m.get("content"))
        all_texts.extend(texts)
        if m.get("role") == "user":
            prompt_text = "\n".join(texts)
            if urls:
                image_url = urls[-1]
    image = None
    if image_url is not None:
        try:
            image = _decoded(image_url)
        except ValueError as e:
            raise ModelInputError(str(e)) from e
    return ChatRequest(
        model=model,
        messages=messages,
        prompt_text=prompt_text,
        all_text="\n".join(all_texts),
        instruction=extract_instruction(prompt_text),
        image_rgb=image,
        temperature=_opt(body.get("temperature"), float),
        max_tokens=_opt(body.get("max_tokens", body.get("max_completion_tokens")), int),
        body={k: v for k, v in body.items() if k != "messages"},
    )


@functools.lru_cache(maxsize=32)
def _decoded(url: str) -> np.ndarray:
    """``data_url_to_image`` of a data URL, the last 32 kept: load generators and arena runs send the
    same few images again and again, and decoding each costs the machine the load is measured on.
    Read-only, since every request with that URL gets the same array. Raises: ValueError."""
    image = data_url_to_image(url)
    image.flags.writeable = False
    return image


def _opt(v: Any, cast: Callable) -> Any:
    try:
        return None if v is None else cast(v)
    except (TypeError, ValueError, OverflowError):  # int(1e400) -> OverflowError
        return None


def create_model_server(models: Mapping[str, Model], *, api_key: str | None = None, latency_s: float = 0.0):
    """FastAPI app serving ``models`` by id (see module docstring).

    Args:
        api_key: when set, a chat completion without ``Authorization: Bearer <api_key>`` gets OpenAI's
            401 (``invalid_api_key``), so a test can see that a client sends its key.
        latency_s: every answer waits this long (without using the CPU) before it is sent, as a remote
            model's generation time: what concurrency hides (``pointlab perf harness``).
    """
    if not (latency_s >= 0 and math.isfinite(latency_s)):
        raise ValueError(f"latency_s must be a finite number >= 0, got {latency_s}")
    app = FastAPI(title="pointlab sim model server")
    app.state.models = dict(models)
    app.state.requests = []  # (model, HTTP status) of every chat completion request, in arrival order
    created = int(time.time())

    @app.get("/v1/models")
    async def list_models() -> dict:
        return {
            "object": "list",
            "data": [
                {"id": k, "object": "model", "created": created, "owned_by": "pointlab-sim"} for k in app.state.models
            ],
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        response = await _chat(request)
        if latency_s:
            await asyncio.sleep(latency_s)
        model = getattr(request.state, "model", None)
        app.state.requests.append((model, response.status_code if isinstance(response, JSONResponse) else 200))
        return response

    async def _chat(request: Request):
        if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_request_error", code="invalid_api_key")
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            return _error(400, "body is not JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "body must be a JSON object", "invalid_request_error")
        try:
            req = _to_request(body)
        except ModelInputError as e:
            return _error(400, str(e), "invalid_request_error")
        request.state.model = req.model
        model = app.state.models.get(req.model)
        if model is None:
            return _error(
                404,
                f"The model `{req.model}` does not exist (served: {', '.join(app.state.models)})",
                "invalid_request_error",
                code="model_not_found",
                param="model",
            )
        try:
            text = await run_in_threadpool(model.answer, req)
        except ModelInputError as e:
            return _error(400, str(e), "invalid_request_error")
        except ModelStatusError as e:
            kind = _ERROR_TYPES.get(e.status, "server_error" if e.status >= 500 else "invalid_request_error")
            return _error(e.status, e.message, kind, param=e.param, headers=e.headers)
        except Exception as e:  # a failing model is a server error, reported like a real API's
            log.warning("model %s failed: %s", req.model, e)
            return _error(500, f"model {req.model} failed: {e}", "server_error")
        prompt_tokens = len(req.all_text.split()) + (0 if req.image_rgb is None else 256)
        # a model may answer with something other than a string (to play a server that sends text
        # parts or a malformed "content"): it is passed through as is and counted as 0 tokens
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if isinstance(text, Reasoned):
            message = {"role": "assistant", "content": text.content, "reasoning_content": text.reasoning_content}
            text = text.content
        completion_tokens = len(text.split()) if isinstance(text, str) else 0
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    return app
