"""A generic LLM judge over any OpenAI-compatible chat model, and JSON recovery from model text.

The judge sends one user message (a fully rendered prompt) at temperature 0, reads the answer
text, recovers a JSON object from it and hands that to an optional task-specific ``validate``
function. Everything needed to audit or re-score a verdict is kept: the prompt, the model, the
raw answer text, the parsed object and the number of attempts. A judge that cannot be reached or
does not return a usable JSON object gives a verdict with ``ok=False`` and an ``error`` -- it never
raises on model output, so one bad answer does not stop a scoring run.

Used by PinpointQA FSD (App. B.1: "a fixed scoring prompt and a temperature of zero", "return a
JSON object") and by the EgoPoint-Bench open-ended judge.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from .model_client import ModelClient, RequestParams

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["recover_json_object", "JudgeVerdict", "LLMJudge", "JudgeValidationError", "JudgeCallError"]

log = logging.getLogger(__name__)

# How many "{" positions the embedded-object scan of ``recover_json_object`` tries (left to right).
MAX_OBJECT_STARTS = 64

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


def recover_json_object(text: Any) -> dict | None:
    """The JSON object a model answer holds, or ``None``.

    Order (PinpointQA App. B.2): the whole text parsed as JSON; then the contents of code
    fences (```json ... ```), each in turn, and the text with a leading/trailing fence stripped;
    then the first ``{...}`` embedded in surrounding prose that parses (the widest span from the
    first ``{`` to the last ``}`` first, then each ``{`` left to right with a JSON decoder). Only a
    JSON *object* counts: a list or a number is not recovered. The left-to-right scan tries at most
    ``MAX_OBJECT_STARTS`` ``{`` positions, so the work is linear in the text length; nesting deeper
    than the interpreter's recursion limit is unparseable. Never raises.
    """
    if not isinstance(text, str):
        return None
    raw = text.strip()
    if not raw:
        return None
    candidates = [raw]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(raw)]
    stripped = re.sub(r"^```[ \t]*(?:json|JSON)?[ \t]*\n?", "", raw)
    stripped = re.sub(r"\n?```\s*$", "", stripped).strip()
    candidates.append(stripped)
    for cand in candidates:
        obj = _loads_object(cand)
        if obj is not None:
            return obj
    first, last = raw.find("{"), raw.rfind("}")
    if first == -1 or last <= first:
        return None
    obj = _loads_object(raw[first : last + 1])
    if obj is not None:
        return obj
    decoder = json.JSONDecoder()
    # Each attempt costs up to the rest of the text, so the number of "{" tried is capped: the
    # scan stays linear in the answer length ('{"a":' * 20000 would otherwise be 20000 attempts).
    for attempt, m in enumerate(re.finditer(r"\{", raw)):
        if attempt >= MAX_OBJECT_STARTS:
            break
        try:
            value, _ = decoder.raw_decode(raw, m.start())
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _loads_object(s: str) -> dict | None:
    try:
        value = json.loads(s)
    # RecursionError: nesting deeper than the interpreter's limit ('{"a":' * 20000) is unparseable
    except (json.JSONDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class JudgeCallError(BenchmarkError, RuntimeError):
    """The judge could not be reached or answered with an error status (after the client's retries)."""

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class JudgeValidationError(BenchmarkError, ValueError):
    """Raised by a ``validate`` function when a recovered JSON object is not a usable verdict."""


@dataclass
class JudgeVerdict:
    """One judge call.

    Attributes:
        ok: True when a JSON object was recovered and validated.
        model: the judge model name; base_url: the server (None: the openai default).
        prompt: the exact user message sent.
        raw_text: the judge's answer text ("" when the call failed).
        parsed: the recovered JSON object as returned by the judge (None when none).
        result: what ``validate`` returned (the task's corrected verdict), else ``parsed``.
        error: why ``ok`` is False (``"judge call failed: ..."``, ``"no JSON object in the judge
            answer"``, or the validation message), else None.
        attempts: requests made (the model client's retries included); latency_s: wall time.
        temperature: the sampling temperature asked for (0 by default; ``None``: omitted).
    """

    ok: bool
    model: str
    base_url: str | None
    prompt: str
    raw_text: str
    parsed: dict | None
    result: dict | None
    error: str | None
    attempts: int
    latency_s: float
    temperature: float | None = 0.0
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class LLMJudge:
    """A judge model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint, called through the one
    ``model_client.ModelClient`` (its retry policy: 408, 429, 5xx and timeouts, never another 4xx).

    Args:
        model: model name sent in the request (recorded with every verdict).
        base_url: server URL ending in ``/v1`` (None: ``$OPENAI_BASE_URL`` or OpenAI).
        api_key: key (None: ``$OPENAI_API_KEY``, or the placeholder ``"unused"`` so that local
            servers which ignore keys work without one).
        temperature: 0 (App. B.1); ``None`` omits it (reasoning models: by family, see ``model_client``).
        max_tokens: answer budget.
        max_retries: retries after a transport / server error (not after a bad answer: at temperature 0
            the same prompt gives the same answer).
        timeout_s: per-request timeout.
        response_format: passed through (e.g. a ``json_schema`` the released evaluator asks for).
        extra_body, reasoning_effort: passed through.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = 1024,
        max_retries: int = 2,
        timeout_s: float = 120.0,
        response_format: dict | None = None,
        extra_body: dict | None = None,
        reasoning_effort: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("judge model name is empty")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.temperature = None if temperature is None else float(temperature)
        self.max_tokens = max_tokens
        self.max_retries = int(max_retries)
        body = dict(extra_body or {})
        if response_format is not None:
            body["response_format"] = response_format
        self.client = ModelClient(
            base_url=self.base_url,
            model=model,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "unused",
            timeout_s=timeout_s,
            max_retries=self.max_retries,
            params=RequestParams(
                temperature=self.temperature, max_tokens=max_tokens, reasoning_effort=reasoning_effort, extra_body=body
            ),
        )

    def describe(self) -> dict:
        """What every verdict records about the judge: model, server, request parameters as sent."""
        return self.client.describe()

    def ask(self, prompt: str) -> tuple[str, int, float]:
        """Send ``prompt``; return ``(answer_text, attempts, latency_s)``.

        Raises:
            RuntimeError: the call failed after the client's retries (``"judge call failed: ..."``).
        """
        done = self.client.complete([{"role": "user", "content": prompt}])
        if done.error is not None:
            raise JudgeCallError(f"judge call failed: {done.error}", attempts=done.attempts)
        return done.text or "", done.attempts, done.latency_s

    def judge(self, prompt: str, validate: Callable[[dict], dict] | None = None) -> JudgeVerdict:
        """Ask the judge and recover its JSON verdict; never raises on the judge's behaviour.

        Args:
            prompt: the fully rendered judge prompt.
            validate: turns the recovered object into the task's verdict (e.g. clamps and
                corrects scores); raises ``JudgeValidationError`` (or ``ValueError``/``KeyError``/
                ``TypeError``) for an unusable one, which becomes ``ok=False``.
        """
        base: dict[str, Any] = dict(
            model=self.model, base_url=self.base_url, prompt=prompt, temperature=self.temperature
        )
        try:
            text, attempts, latency_s = self.ask(prompt)
        except JudgeCallError as e:
            return JudgeVerdict(
                ok=False,
                raw_text="",
                parsed=None,
                result=None,
                error=str(e),
                attempts=e.attempts,
                latency_s=0.0,
                **base,
            )
        parsed = recover_json_object(text)
        if parsed is None:
            return JudgeVerdict(
                ok=False,
                raw_text=text,
                parsed=None,
                result=None,
                error="no JSON object in the judge answer",
                attempts=attempts,
                latency_s=latency_s,
                **base,
            )
        result = parsed
        if validate is not None:
            try:
                result = validate(dict(parsed))
            except (JudgeValidationError, ValueError, KeyError, TypeError, ArithmeticError) as e:
                return JudgeVerdict(
                    ok=False,
                    raw_text=text,
                    parsed=parsed,
                    result=None,
                    error=f"invalid verdict: {e}",
                    attempts=attempts,
                    latency_s=latency_s,
                    **base,
                )
        return JudgeVerdict(
            ok=True,
            raw_text=text,
            parsed=parsed,
            result=result,
            error=None,
            attempts=attempts,
            latency_s=latency_s,
            **base,
        )
