"""Agents: something that takes an image and an instruction and points (PointArena sec. 3.4, 4.1).

- ``OpenAIAgent``: any OpenAI-compatible chat model (a vendor API, vLLM, our sim_mock server) through
  the one model client (``model_client.ModelClient`` over the real ``openai`` client): prompt built
  for its point format and prompt style, greedy decoding (temperature 0) unless configured otherwise,
  per-request timeout, the client's own retry policy, the raw text kept, points parsed into
  original-image pixels with every entry the model wrote.
- ``HumanAgent``: the human reference of Point-Act; ``point()`` opens a pending request that an
  operator answers by clicking (``answer(request_id, u, v)``, callable from any thread).

``Agent.point`` never raises: a failed call is an ``AgentAnswer`` with ``error`` set (and no
points), an answer without a parseable point has ``parse_error`` set. Agents are built from the
agents config (``pointlab.benchmark.agents_config``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from .model_client import ModelClient, RequestParams
from .points import QWEN_MAX_PIXELS, QWEN_MIN_PIXELS, ParsedPoints, PointEntry, parse_points, qwen_model_size
from .prompts import build_messages, build_prompt, check_format_and_style

__all__ = ["AgentAnswer", "Agent", "OpenAIAgent", "HumanAgent", "HumanRequest"]

log = logging.getLogger(__name__)


def _no_points() -> np.ndarray:
    return np.zeros((0, 2), dtype=np.float64)


@dataclass
class AgentAnswer:
    """One agent answer.

    Attributes:
        points_px: ``(N, 2)`` float64 ``(u, v)`` original-image pixels (empty on failure).
        raw_text: the model's raw answer text ("" when the call failed).
        parse_error: ``"unparseable: ..."`` when the text held no point, else ``None``.
        latency_s: wall time of the whole call including retries, seconds.
        error: why the call failed (timeout, HTTP error, missing key, bad image...), else ``None``.
        model: the model id (``"human"`` for the human reference).
        point_format, prompt_style: how the answer was asked for and parsed.
        attempts: number of requests made (1 + retries of the one model client).
        status: HTTP status of a failed call (``None`` otherwise).
        entries: every point the model wrote, in its order, invalid ones with their reason
            (``points.PointEntry``); ``None`` when the agent reports none (a caller then derives them from
            ``points_px``); ``first`` is the answer's first point.
        sent_size: ``(width, height)`` of the image as sent (after ``max_image_side_px``).
        prompt: the text of the final user turn sent (the instruction in the format's template).
        reasoning: the model's reasoning (``model_client.Completion.reasoning``): stored, never parsed.
        usage: the server's token counts (``Completion.usage``).
    """

    points_px: np.ndarray = field(default_factory=_no_points)
    raw_text: str = ""
    parse_error: str | None = None
    latency_s: float = 0.0
    error: str | None = None
    model: str = ""
    point_format: str = ""
    prompt_style: str = ""
    attempts: int = 0
    status: int | None = None
    entries: list[PointEntry] | None = None
    sent_size: tuple[int, int] | None = None
    prompt: str = ""
    reasoning: str | None = None
    usage: dict[str, int] | None = None

    @property
    def ok(self) -> bool:
        """At least one point and no error."""
        return self.error is None and self.parse_error is None and len(self.points_px) > 0

    @property
    def first(self) -> PointEntry:
        """The first point the model wrote (``PointEntry``; ``valid`` False with the reason when it is not a
        point, when the call failed, or when the answer held no point; ``inside`` False outside the image)."""
        if self.entries:
            return self.entries[0]
        return PointEntry(u_px=None, v_px=None, valid=False, reason=self.error or self.parse_error or "no point")

    def to_dict(self) -> dict:
        """JSON-ready record (the raw text is kept for re-scoring)."""
        return {
            "points": [[float(u), float(v)] for u, v in self.points_px],
            "raw_text": self.raw_text,
            "parse_error": self.parse_error,
            "latency_s": round(self.latency_s, 6),
            "error": self.error,
            "model": self.model,
            "point_format": self.point_format,
            "prompt_style": self.prompt_style,
            "attempts": self.attempts,
            "status": self.status,
            "entries": [e.to_dict() for e in self.entries or []],
            "sent_size": list(self.sent_size) if self.sent_size else None,
            "prompt": self.prompt,
        }


def _check_image(image_rgb: np.ndarray) -> str | None:
    img = image_rgb
    if not isinstance(img, np.ndarray) or img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        return f"bad image: need (H, W, 3) uint8 RGB, got {getattr(img, 'shape', type(img).__name__)}"
    if img.shape[0] < 1 or img.shape[1] < 1:
        return "bad image: empty"
    return None


class Agent(ABC):
    """An agent that points. Subclasses implement ``point``; it must never raise."""

    def __init__(self, name: str) -> None:
        self.name = name

    @abstractmethod
    async def point(self, image_rgb: np.ndarray, instruction: str) -> AgentAnswer:
        """Point for ``instruction`` on ``image_rgb`` (``(H, W, 3)`` uint8 RGB); never raises."""

    async def aclose(self) -> None:
        """Release network clients (safe to call more than once)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class OpenAIAgent(Agent):
    """An OpenAI-compatible chat model, called through the one ``ModelClient``.

    Args:
        name: agent name (config).
        base_url: API base URL ending in ``/v1`` (e.g. ``http://127.0.0.1:8765/v1``).
        model: model id sent in the request.
        api_key_env: environment variable holding the key; ``""`` means no key needed.
        point_format: one of ``POINT_FORMATS`` (parse rule and answer instruction).
        prompt_style: one of ``PROMPT_STYLES`` (PointArena Table 1).
        temperature: sampling temperature (0: greedy, PointArena's setting); ``None`` omits it.
        timeout_s: per-request timeout, seconds.
        max_retries: retries after a retryable failure (timeouts, connection errors, 408, 429, 5xx; never
            another 4xx), by the ``openai`` client's own backoff (``model_client``).
        max_tokens, max_completion_tokens, reasoning_effort, extra_body: passed through
            (``model_client.RequestParams``; reasoning-model rules applied by model family).
        max_image_side_px: downscale larger images to this longest side before sending (absolute
            coordinates are then mapped back from the sent size); ``None`` sends the original.
        image_encoding: ``jpeg`` (quality 90) or ``png``.
        qwen_min_pixels, qwen_max_pixels: the Qwen2.5-VL processor limits of the served checkpoint.

    Raises:
        ValueError: unknown point format or prompt style, or bad numeric settings.
    """

    def __init__(
        self,
        name: str,
        *,
        base_url: str,
        model: str,
        api_key_env: str = "",
        point_format: str = "xy_pixels",
        prompt_style: str = "default",
        temperature: float | None = 0.0,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        max_tokens: int | None = 1024,
        max_completion_tokens: int | None = None,
        reasoning_effort: str | None = None,
        extra_body: dict | None = None,
        max_image_side_px: int | None = None,
        image_encoding: str = "jpeg",
        qwen_min_pixels: int = QWEN_MIN_PIXELS,
        qwen_max_pixels: int = QWEN_MAX_PIXELS,
    ) -> None:
        super().__init__(name)
        check_format_and_style(point_format, prompt_style)
        if timeout_s <= 0 or max_retries < 0 or (temperature is not None and temperature < 0):
            raise ValueError("need timeout_s > 0, max_retries >= 0, temperature >= 0")
        self.base_url, self.model = base_url, model
        self.api_key_env = api_key_env
        self.point_format, self.prompt_style = point_format, prompt_style
        self.temperature = None if temperature is None else float(temperature)
        self.timeout_s, self.max_retries = float(timeout_s), int(max_retries)
        self.params = RequestParams(
            temperature=self.temperature,
            max_tokens=max_tokens,
            max_completion_tokens=max_completion_tokens,
            reasoning_effort=reasoning_effort,
            extra_body=dict(extra_body or {}),
        )
        self.max_image_side_px = max_image_side_px
        self.image_encoding = image_encoding
        self.qwen_min_pixels, self.qwen_max_pixels = qwen_min_pixels, qwen_max_pixels
        self._model_client: ModelClient | None = None

    def _api_key(self) -> str | None:
        if not self.api_key_env:
            return "EMPTY"  # the client insists on a string; servers that need no key ignore it
        return os.environ.get(self.api_key_env) or None

    def client(self, key: str | None = None) -> ModelClient:
        """The agent's ``ModelClient`` (made on first use with the key from ``api_key_env``)."""
        if self._model_client is None:
            self._model_client = ModelClient(
                base_url=self.base_url,
                model=self.model,
                api_key=key or self._api_key() or "EMPTY",
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                params=self.params,
            )
        return self._model_client

    def describe(self) -> dict:
        """The request settings a run records (``ModelClient.describe`` plus format and prompt style)."""
        return {
            **self.client().describe(),
            "point_format": self.point_format,
            "prompt_style": self.prompt_style,
            "qwen_min_pixels": self.qwen_min_pixels,
            "qwen_max_pixels": self.qwen_max_pixels,
        }

    def sent_size(self, width: int, height: int) -> tuple[int, int]:
        """``(w, h)`` in pixels of the image sent for a ``width x height`` original: downscaled to the
        longest side ``max_image_side_px`` when larger, else unchanged."""
        side = self.max_image_side_px
        if not side or max(width, height) <= side:
            return width, height
        s = side / max(width, height)
        return max(1, round(width * s)), max(1, round(height * s))

    def downscale(self, image_rgb: np.ndarray) -> np.ndarray:
        """``image_rgb`` ``(H, W, 3)`` as it is sent: resized (INTER_AREA) to ``sent_size``, or itself."""
        h, w = image_rgb.shape[:2]
        size = self.sent_size(w, h)
        if size == (w, h):
            return image_rgb
        return cv2.resize(image_rgb, size, interpolation=cv2.INTER_AREA)

    def model_size(self, sent_w: int, sent_h: int) -> tuple[int, int] | None:
        """The frame absolute coordinates refer to for an image sent at ``sent_w x sent_h``: Qwen's
        resize of it under the agent's limits, else the sent size (``None`` when Qwen refuses it)."""
        if self.point_format == "qwen" or self.point_format == "auto":
            try:
                return qwen_model_size(sent_w, sent_h, min_pixels=self.qwen_min_pixels, max_pixels=self.qwen_max_pixels)
            except ValueError:
                return None
        return (sent_w, sent_h)

    def parse(self, text: str, width: int, height: int, sent_size: tuple[int, int] | None = None) -> ParsedPoints:
        """Parse an answer of this agent for a ``width x height`` original sent at ``sent_size``."""
        sw, sh = sent_size or (width, height)
        return parse_points(
            text,
            self.point_format,
            width,
            height,
            model_size=self.model_size(sw, sh),
            qwen_min_pixels=self.qwen_min_pixels,
            qwen_max_pixels=self.qwen_max_pixels,
        )

    async def point(self, image_rgb: np.ndarray, instruction: str) -> AgentAnswer:
        t0 = time.perf_counter()
        base: dict[str, Any] = dict(model=self.model, point_format=self.point_format, prompt_style=self.prompt_style)
        bad = _check_image(image_rgb)
        key = self._api_key()
        if bad is None and key is None:
            bad = f"missing API key: environment variable {self.api_key_env} is not set"
        if bad is not None:
            return AgentAnswer(error=bad, latency_s=time.perf_counter() - t0, **base)
        height, width = image_rgb.shape[:2]
        try:
            sent = self.downscale(image_rgb)
            sh, sw = sent.shape[:2]
            messages = build_messages(
                instruction,
                sent,
                self.point_format,
                self.prompt_style,
                width=sw,
                height=sh,
                encoding=self.image_encoding,
            )
            prompt = build_prompt(instruction, self.point_format, self.prompt_style, width=sw, height=sh)
        except Exception as e:  # a bad image or setting must not crash the caller
            return AgentAnswer(error=f"prompt: {e}", latency_s=time.perf_counter() - t0, **base)
        done = await self.client(key).acomplete(messages)
        latency = time.perf_counter() - t0
        base.update(
            attempts=done.attempts,
            status=done.status,
            sent_size=(sw, sh),
            prompt=prompt,
            reasoning=done.reasoning,
            usage=done.usage,
        )
        if done.error is not None:
            return AgentAnswer(raw_text=done.text or "", error=done.error, latency_s=latency, **base)
        text = done.text or ""
        try:
            parsed = self.parse(text, width, height, (sw, sh))
        except Exception as e:  # parse_points does not raise on model text; keep point()'s contract anyway
            log.exception("agent %s: parsing %r failed", self.name, text[:200])
            return AgentAnswer(raw_text=text, parse_error=f"unparseable: parser failed: {e}", latency_s=latency, **base)
        return AgentAnswer(
            points_px=parsed.points_px,
            raw_text=text,
            parse_error=parsed.reason,
            latency_s=latency,
            entries=list(parsed.entries),
            **base,
        )

    async def aclose(self) -> None:
        if self._model_client is not None:
            await self._model_client.aclose()


@dataclass
class HumanRequest:
    """A pending request for the human reference.

    Attributes:
        request_id: uuid4 hex.
        instruction: what the participant asked.
        image_rgb: ``(H, W, 3)`` uint8 RGB the operator clicks on.
        created_s: ``time.time()`` at creation.
    """

    request_id: str
    instruction: str
    image_rgb: np.ndarray
    created_s: float

    @property
    def width(self) -> int:
        return int(self.image_rgb.shape[1])

    @property
    def height(self) -> int:
        return int(self.image_rgb.shape[0])

    def to_dict(self) -> dict:
        """Metadata without the image."""
        return {
            "request_id": self.request_id,
            "instruction": self.instruction,
            "width": self.width,
            "height": self.height,
            "created_s": self.created_s,
        }


class HumanAgent(Agent):
    """The human reference: an operator clicks the point (PointArena sec. 4.1, Point-Act).

    ``point()`` registers a ``HumanRequest`` and waits (up to ``timeout_s``) for ``answer``;
    ``answer`` and ``cancel_all`` may be called from any thread.
    """

    def __init__(self, name: str = "human", *, timeout_s: float = 300.0) -> None:
        super().__init__(name)
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        self.timeout_s = float(timeout_s)
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[HumanRequest, asyncio.Future, asyncio.AbstractEventLoop]] = {}

    def pending(self) -> list[HumanRequest]:
        """Open requests, oldest first."""
        with self._lock:
            return sorted((r for r, _, _ in self._pending.values()), key=lambda r: r.created_s)

    def answer(self, request_id: str, u: float, v: float) -> bool:
        """Answer request ``request_id`` with the pixel ``(u, v)`` of its image.

        Returns:
            True when the request was open (its ``point()`` returns this point), False otherwise
            (unknown, already answered, timed out or cancelled, or ``u``/``v`` not finite numbers;
            the request then stays open).
        """
        try:
            uv = (float(u), float(v))
        except (TypeError, ValueError):
            return False
        if not (math.isfinite(uv[0]) and math.isfinite(uv[1])):  # a NaN click would be an "ok" answer
            return False
        return self._resolve(request_id, uv)

    def decline(self, request_id: str) -> bool:
        """Answer request ``request_id`` with no point (the operator cannot find what is asked): its
        ``point()`` returns an answer without points, which a trial refuses as ``no_point``, exactly as
        a model's answer that holds no point. ``False`` when the request is not open."""
        return self._resolve(request_id, None)

    def _resolve(self, request_id: str, value: tuple[float, float] | None) -> bool:
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            return False
        _, fut, loop = entry

        def _set() -> None:
            if not fut.done():
                fut.set_result(value)

        try:
            loop.call_soon_threadsafe(_set)
        except RuntimeError:  # the waiting loop is closed
            return False
        return True

    def cancel_all(self) -> int:
        """Cancel every open request (their ``point()`` returns ``error="cancelled"``); returns how many."""
        with self._lock:
            entries, self._pending = list(self._pending.values()), {}
        for _, fut, loop in entries:
            try:
                loop.call_soon_threadsafe(fut.cancel)  # cancelling a finished future changes nothing
            except RuntimeError:
                pass
        return len(entries)

    async def point(self, image_rgb: np.ndarray, instruction: str) -> AgentAnswer:
        t0 = time.perf_counter()
        base: dict[str, Any] = dict(model="human", point_format="xy_pixels", prompt_style="unparsed")
        bad = _check_image(image_rgb)
        if bad is not None:
            return AgentAnswer(error=bad, **base)
        loop = asyncio.get_running_loop()
        req = HumanRequest(uuid.uuid4().hex, instruction, image_rgb, time.time())
        fut: asyncio.Future = loop.create_future()
        with self._lock:
            self._pending[req.request_id] = (req, fut, loop)
        try:
            clicked = await asyncio.wait_for(fut, timeout=self.timeout_s)
        except asyncio.TimeoutError:
            return AgentAnswer(
                error=f"timeout: no human answer within {self.timeout_s:g} s",
                latency_s=time.perf_counter() - t0,
                attempts=1,
                **base,
            )
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # our own task was cancelled, not the request
                raise
            return AgentAnswer(error="cancelled", latency_s=time.perf_counter() - t0, attempts=1, **base)
        finally:
            with self._lock:
                self._pending.pop(req.request_id, None)
        if clicked is None:  # declined: no point, as a model that names none
            return AgentAnswer(
                raw_text="",
                latency_s=time.perf_counter() - t0,
                attempts=1,
                entries=[],
                sent_size=(req.width, req.height),
                **base,
            )
        u, v = clicked
        pts = np.array([[u, v]], dtype=np.float64)
        # the click is a pixel centre of the image shown (xy_pixels), parsed like any answer
        entry = parse_points(f"[{u!r}, {v!r}]", "xy_pixels", req.width, req.height).first
        return AgentAnswer(
            points_px=pts,
            raw_text=f"[{u:.1f}, {v:.1f}]",
            latency_s=time.perf_counter() - t0,
            attempts=1,
            entries=[entry],
            sent_size=(req.width, req.height),
            **base,
        )
