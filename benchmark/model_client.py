"""One model client for every call to a model server: agents (``agents.OpenAIAgent``) and judges
(``judge.LLMJudge``) alike, over the real ``openai`` client.

Retry policy (one, and only one): the ``openai`` client's own retry loop -- exponential backoff from
0.5 s doubling to 8 s with jitter, ``Retry-After`` / ``retry-after-ms`` honoured up to two minutes,
timeouts and connection errors retried -- restricted to **408, 429 and 5xx**: every other 4xx (a bad
request, a wrong key, an unknown model, 409) is final at once, whatever ``x-should-retry`` says. No
caller retries on top of it, so an answer costs at most ``max_retries + 1`` requests.

Request parameters are passed through as the agents config gives them (``RequestParams``), with the
rules OpenAI's reasoning models impose applied by model family (``reasoning_family``): o1/o3/o4 and
gpt-5 reject ``max_tokens`` (``max_completion_tokens`` instead) and any ``temperature`` but the
default (OpenAI API reference for reasoning models; openai-python issue threads). What was changed is returned as notes,
so a run records it.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import re
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Mapping

from .extract import split_reasoning

__all__ = [
    "RETRY_STATUSES",
    "RequestParams",
    "Completion",
    "ModelClient",
    "reasoning_family",
    "request_kwargs",
    "retryable_status",
]

log = logging.getLogger(__name__)

#: the statuses retried besides 5xx (and timeouts / connection errors).
RETRY_STATUSES = frozenset({408, 429})
# openai's own ceiling on one backoff sleep (``_constants.MAX_RETRY_DELAY``); used to bound a whole call.
_MAX_BACKOFF_S = 8.0

_REASONING = ((re.compile(r"^o[1-9](?:$|[-_.])"), "o-series"), (re.compile(r"^gpt-5(?:$|[-_.])"), "gpt-5"))


def reasoning_family(model: str) -> str | None:
    """``"o-series"`` (o1, o3, o4-mini, ...), ``"gpt-5"`` (gpt-5, gpt-5-mini, gpt-5.4, ...) or ``None``, from
    the model id (a provider prefix such as ``openai/`` is ignored; ``gpt-4o`` is not a reasoning model)."""
    name = str(model).strip().lower().rsplit("/", 1)[-1]
    for rx, family in _REASONING:
        if rx.match(name):
            return family
    return None


def retryable_status(status: int) -> bool:
    """The policy: retry 408, 429 and 5xx; never any other 4xx."""
    return status in RETRY_STATUSES or status >= 500


@dataclass(frozen=True)
class RequestParams:
    """Parameters of a chat completion request, as the agents config gives them.

    Attributes:
        temperature: sampling temperature; ``None`` omits it (the server's default).
        max_tokens: answer length cap (sent as ``max_completion_tokens`` to reasoning models).
        max_completion_tokens: the newer cap (reasoning tokens included); wins over ``max_tokens``.
        reasoning_effort: ``minimal`` / ``low`` / ``medium`` / ``high`` ... passed through.
        extra_body: extra JSON fields merged into the request body (vLLM ``top_k``, ``mm_processor_kwargs``...).
    """

    temperature: float | None = 0.0
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    reasoning_effort: str | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "max_completion_tokens": self.max_completion_tokens,
            "reasoning_effort": self.reasoning_effort,
            "extra_body": dict(self.extra_body),
        }


def request_kwargs(model: str, params: RequestParams) -> tuple[dict[str, Any], list[str]]:
    """The keyword arguments of ``chat.completions.create`` for ``model``, and notes on what the
    reasoning-model rules changed (empty for other models)."""
    kw: dict[str, Any] = {}
    notes: list[str] = []
    family = reasoning_family(model)
    if family is None:
        if params.temperature is not None:
            kw["temperature"] = params.temperature
        if params.max_tokens is not None:
            kw["max_tokens"] = params.max_tokens
        if params.max_completion_tokens is not None:
            kw["max_completion_tokens"] = params.max_completion_tokens
    else:
        if params.temperature is not None and params.temperature != 1.0:
            notes.append(f"temperature {params.temperature:g} omitted: {family} models accept only the default (1)")
        cap = params.max_completion_tokens if params.max_completion_tokens is not None else params.max_tokens
        if cap is not None:
            kw["max_completion_tokens"] = cap
            if params.max_completion_tokens is None:
                notes.append(f"max_tokens sent as max_completion_tokens: {family} models reject max_tokens")
    if params.reasoning_effort is not None:
        kw["reasoning_effort"] = params.reasoning_effort
    if params.extra_body:
        kw["extra_body"] = dict(params.extra_body)
    return kw, notes


@dataclass
class Completion:
    """The outcome of one call (all its attempts).

    Attributes:
        text: the answer text, or ``None`` when the call failed.
        error: why it failed (``"HTTP 400: ..."``, ``"timeout after 60 s: ..."``, ...), else ``None``.
        status: the HTTP status of a failed call (``None`` for success, timeouts, connection errors).
        attempts: requests sent (1 + retries).
        latency_s: wall time of the call, seconds.
        finish_reason: as the server gave it (``"length"`` when the token cap cut the answer).
        reasoning: the model's reasoning, kept for the record and never read for an answer: the
            message's ``reasoning_content`` (vLLM's and SGLang's reasoning parsers, DeepSeek's API) or
            ``reasoning`` (OpenRouter, newer vLLM), then the text of ``<think>`` blocks left in the
            content (``extract.split_reasoning``); ``None`` when there is none. ``text`` stays the raw
            content, blocks included: every reader strips them.
        usage: token counts as the server reported them (``prompt_tokens``, ``completion_tokens``,
            ``reasoning_tokens`` when given), ``None`` when it did not.
    """

    text: str | None
    error: str | None
    status: int | None
    attempts: int
    latency_s: float
    finish_reason: str | None = None
    reasoning: str | None = None
    usage: dict[str, int] | None = None


def _reasoning_of(message: Any, text: str) -> str | None:
    """The reasoning of a chat message (``Completion.reasoning``)."""
    parts = []
    for key in ("reasoning_content", "reasoning"):
        v = getattr(message, key, None)
        if isinstance(v, str) and v.strip():
            parts.append(v.strip())
            break
    inline, _ = split_reasoning(text)
    if inline:
        parts.append(inline)
    return "\n\n".join(parts) or None


def _usage_of(resp: Any) -> dict[str, int] | None:
    """Token counts of a response (``Completion.usage``); a field that is not an int is left out."""
    u = getattr(resp, "usage", None)
    if u is None:
        return None
    out = {k: v for k in ("prompt_tokens", "completion_tokens") if isinstance(v := getattr(u, k, None), int)}
    details = getattr(u, "completion_tokens_details", None)
    if isinstance(r := getattr(details, "reasoning_tokens", None), int):
        out["reasoning_tokens"] = r
    return out or None


# requests sent by the current call (the openai client retries inside one create(): counted per request)
_attempts: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("pointlab_model_attempts", default=None)


def _reset(token: contextvars.Token) -> None:
    # a coroutine closed unfinished (its loop gone) runs its finally in another context
    try:
        _attempts.reset(token)
    except ValueError:
        pass


class _Policy:
    """The retry policy and attempt count on top of openai's client (two of its documented hooks:
    ``_should_retry`` decides a status retry, ``_prepare_request`` sees every request sent)."""

    def _should_retry(self, response) -> bool:  # noqa: D401 - openai hook
        if not retryable_status(response.status_code):
            return False
        return super()._should_retry(response)  # type: ignore[misc]  # Retry-After ceiling and 5xx/429/408

    def _count(self) -> None:
        box = _attempts.get()
        if box is not None:
            box[0] += 1


def _connect_failure(e: BaseException) -> BaseException | None:
    """The connection failure somewhere under ``e``'s causes -- an ``OSError`` (connection refused,
    host unreachable) or aiohttp's ``ClientConnectionError`` (a server that closed the connection
    without answering) -- other than a timeout; ``None`` when there is none."""
    try:
        from aiohttp import ClientConnectionError
    except ImportError:  # openai without its aiohttp extra: only OSErrors to look for
        ClientConnectionError = OSError  # type: ignore[misc,assignment]
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (OSError, ClientConnectionError)) and not isinstance(cur, TimeoutError):
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


def _aiohttp_transport():
    """openai's aiohttp transport for the async client (``openai.DefaultAioHttpClient``, the
    ``openai[aiohttp]`` extra, which openai's README recommends "for improved concurrency
    performance"), or ``None`` (openai's default httpx transport) where aiohttp is not installed.
    Same timeouts, retries and errors (openai maps aiohttp's to httpx's); it cut the arena workers'
    CPU per model call (docs/arena.md, "Performance")."""
    import openai

    try:
        return openai.DefaultAioHttpClient()
    except RuntimeError:  # openai without its aiohttp extra
        return None


@functools.cache
def _client_classes():
    import openai

    class PolicyAsyncOpenAI(_Policy, openai.AsyncOpenAI):
        async def _prepare_request(self, request) -> None:
            self._count()
            await super()._prepare_request(request)

    class PolicyOpenAI(_Policy, openai.OpenAI):
        def _prepare_request(self, request) -> None:
            self._count()
            super()._prepare_request(request)

    return PolicyAsyncOpenAI, PolicyOpenAI


def _short(s: str, n: int = 300) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 3] + "..."


def _content_text(content) -> str | None:
    """The answer text of a message ``content``: a string, or the joined text of a list of
    ``{"type": "text", "text": ...}`` parts; ``None`` for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content]
        strings = [t for t in texts if isinstance(t, str)]
        if texts and len(strings) == len(texts):
            return "".join(strings)
    return None


class ModelClient:
    """Chat completions against one model on one OpenAI-compatible server (module docstring).

    Args:
        base_url: API base URL ending in ``/v1`` (``None``: ``$OPENAI_BASE_URL`` or OpenAI's).
        model: model id sent in the request.
        api_key: the key (``"EMPTY"`` for servers that need none).
        timeout_s: per-request timeout, seconds (> 0).
        max_retries: retries after a retryable failure (>= 0).
        params: request parameters (``RequestParams``); reasoning-model rules are applied to them.

    Raises:
        ValueError: ``timeout_s <= 0`` or ``max_retries < 0``.
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        model: str,
        api_key: str,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        params: RequestParams | None = None,
    ) -> None:
        if not timeout_s > 0 or max_retries < 0:
            raise ValueError(f"need timeout_s > 0 and max_retries >= 0, got {timeout_s}, {max_retries}")
        self.base_url, self.model, self.api_key = base_url, model, api_key
        self.timeout_s, self.max_retries = float(timeout_s), int(max_retries)
        self.params = params or RequestParams()
        self.kwargs, self.notes = request_kwargs(model, self.params)
        for note in self.notes:
            log.info("model %s: %s", model, note)
        # one async client per event loop: httpx pools belong to the loop that made them; weak keys so a
        # finished loop (asyncio.run per call) drops its client instead of handing it to a new loop
        self._async: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._sync = None

    def describe(self) -> dict:
        """What a run record keeps about the requests: model, server, parameters as sent, notes."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "request": {k: v for k, v in self.kwargs.items()},
            "request_notes": list(self.notes),
        }

    @property
    def call_budget_s(self) -> float:
        """An upper bound on one call with all its retries and backoff sleeps, seconds."""
        return self.timeout_s * (self.max_retries + 1) + _MAX_BACKOFF_S * self.max_retries + 1.0

    def _async_client(self):
        loop = asyncio.get_running_loop()
        client = self._async.get(loop)
        if client is None:
            cls, _ = _client_classes()
            client = cls(
                base_url=self.base_url,
                api_key=self.api_key,
                timeout=self.timeout_s,
                max_retries=self.max_retries,
                http_client=_aiohttp_transport(),
            )
            self._async[loop] = client
        return client

    def _sync_client(self):
        if self._sync is None:
            _, cls = _client_classes()
            self._sync = cls(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=self.max_retries
            )
        return self._sync

    async def acomplete(self, messages: list[dict]) -> Completion:
        """One chat completion (retries inside, by the policy); never raises on the server's behaviour."""
        t0 = time.perf_counter()
        box = [0]
        token = _attempts.set(box)
        try:
            client = self._async_client()
            # wait_for backs up the client's own timeouts (a stalled stream, a slow TLS handshake)
            resp = await asyncio.wait_for(self._apost(client, messages), timeout=self.call_budget_s)
            return self._result(resp, box[0], t0)
        except Exception as e:
            return self._failure(e, box[0], t0)
        finally:
            _reset(token)

    async def _apost(self, client, messages: list[dict]):
        """``client.chat.completions.create(model=..., messages=..., **self.kwargs)`` without openai's
        parameter transform: the same JSON body (``extra_body`` merged in), headers and response type
        through ``client.post``, the call openai's README gives for requests it has no method for.
        The transform walks every message part, the base64 image included, to rename aliased keys,
        and chat parameters have none: it was a tenth of an arena worker's CPU (docs/arena.md,
        "Performance"). tests/benchmark/test_model_client.py compares the request's body and headers
        with ``create``'s."""
        from openai.types.chat import ChatCompletion

        kw = dict(self.kwargs)
        extra = kw.pop("extra_body", None)
        body = {"model": self.model, "messages": messages, **kw}
        return await client.post(
            "/chat/completions", cast_to=ChatCompletion, body=body, options={"extra_json": extra} if extra else {}
        )

    def complete(self, messages: list[dict]) -> Completion:
        """The synchronous ``acomplete`` (judges run in plain threads)."""
        t0 = time.perf_counter()
        box = [0]
        token = _attempts.set(box)
        try:
            resp = self._sync_client().chat.completions.create(model=self.model, messages=messages, **self.kwargs)
            return self._result(resp, box[0], t0)
        except Exception as e:
            return self._failure(e, box[0], t0)
        finally:
            _reset(token)

    def _result(self, resp: Any, attempts: int, t0: float) -> Completion:
        latency = time.perf_counter() - t0
        if not hasattr(resp, "choices"):  # a 200 whose body is not JSON comes back as a str
            return Completion(
                None, f"malformed response: not a chat completion ({_short(str(resp), 80)})", None, attempts, latency
            )
        choice = resp.choices[0] if resp.choices else None
        content = choice.message.content if choice is not None and choice.message is not None else None
        finish = getattr(choice, "finish_reason", None) if choice is not None else None
        if content is None:
            why = "empty response: no message content"
            if finish == "length":
                why += (
                    " (finish_reason length: the token cap was spent, e.g. on reasoning; raise max_completion_tokens)"
                )
            return Completion(None, why, None, attempts, latency, finish)
        text = _content_text(content)
        if text is None:  # the client does not check the type: a number or an object got through
            return Completion(
                None,
                f"malformed response: message content is {type(content).__name__}",
                None,
                attempts,
                latency,
                finish,
            )
        return Completion(
            text,
            None,
            None,
            attempts,
            latency,
            finish,
            reasoning=_reasoning_of(choice.message if choice is not None else None, text),  # (content came from it)
            usage=_usage_of(resp),
        )

    def _failure(self, e: Exception, attempts: int, t0: float) -> Completion:
        import openai

        latency = time.perf_counter() - t0
        attempts = max(attempts, 1)
        if isinstance(e, openai.APITimeoutError) and (refused := _connect_failure(e)) is not None:
            # openai's aiohttp transport maps every aiohttp connection error (a refused connect, a
            # server gone without answering) to httpx.ConnectTimeout: told apart by the error under it
            return Completion(
                None, f"APIConnectionError: Connection error: {_short(str(refused))}", None, attempts, latency
            )
        if isinstance(e, openai.APITimeoutError):
            return Completion(None, f"timeout after {self.timeout_s:g} s: {e}", None, attempts, latency)
        if isinstance(e, openai.APIStatusError):
            body = e.body if isinstance(e.body, dict) else {}
            inner = err if isinstance(err := body.get("error"), dict) else body
            msg = m if isinstance(m := inner.get("message"), str) else e.message
            return Completion(None, f"HTTP {e.status_code}: {_short(msg)}", e.status_code, attempts, latency)
        if isinstance(e, asyncio.TimeoutError):
            return Completion(None, f"timeout after {self.call_budget_s:g} s (all attempts)", None, attempts, latency)
        if isinstance(e, openai.APIConnectionError):
            return Completion(
                None, f"{type(e).__name__}: {_short(str(e)) or 'connection failed'}", None, attempts, latency
            )
        # malformed response, client bug: recorded, never raised to the caller
        return Completion(None, f"{type(e).__name__}: {_short(str(e))}", None, attempts, latency)

    async def aclose(self) -> None:
        """Release the HTTP clients (safe to call more than once)."""
        clients = list(self._async.values())
        self._async = weakref.WeakKeyDictionary()
        for c in clients:
            try:
                await c.close()
            except Exception:  # a client of a closed loop: nothing left to release
                pass
        self.close()

    def close(self) -> None:
        """Release the synchronous client."""
        if self._sync is not None:
            try:
                self._sync.close()
            except Exception:
                pass
            self._sync = None
