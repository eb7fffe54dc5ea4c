"""The loop every benchmark run shares: ask for answers with N in flight, journal each as it arrives,
stop when failures pass the threshold, leave one line per item behind.

- at most ``concurrency`` answers are asked at once (``asyncio.Semaphore``; tasks start in the order
  given, so the items of one image or video run together and share its decoding);
- every answer (``runs.AnswerRecord``) is appended to its run's journal and flushed as soon as it
  arrives: a crash loses at most that line, and a rerun asks only what has no good answer;
- a run stops as soon as its failed answers exceed ``max_error_rate`` of those it set out to get (it
  can no longer end below the threshold): ``ErrorRateExceeded`` names the most frequent error (a 400
  on every request is reported as that 400, not as a 0 % score);
- each journal is compacted to one line per item (``runs.compact_answers``) before the first answer
  is appended (a line torn by a kill would otherwise swallow it) and at the end (also after a stop
  or Ctrl-C);
- a tqdm progress bar on stderr with answers per second and the errors so far.

Retries are the model client's (``model_client``); nothing here asks twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import BenchmarkError
from .runs import AnswerRecord, append_answer, compact_answers, read_answers

__all__ = ["ErrorRateExceeded", "ask_all", "to_ask", "answer_with_images", "run_journaled"]


class ErrorRateExceeded(BenchmarkError, RuntimeError):
    """A run stopped because its failed answers passed the threshold.

    Attributes:
        errors, answered, planned: failed answers, answers received, answers the run set out to get.
        top_error: the most frequent error message (the server's, or a local one such as a missing video).
    """

    def __init__(self, errors: int, answered: int, planned: int, threshold: float, top_error: str) -> None:
        self.errors, self.answered, self.planned, self.threshold, self.top_error = (
            errors,
            answered,
            planned,
            threshold,
            top_error,
        )
        super().__init__(
            f"run stopped: {errors} of {answered} answers failed ({errors / max(answered, 1):.0%}; "
            f"more than {threshold:.0%} of the {planned} asked); the most frequent error: {top_error}"
        )


def to_ask(done: Mapping[str, AnswerRecord], item_id: str) -> bool:
    """Whether a resumed run asks ``item_id`` again: it has no answer in the journal ``done``
    (``runs.read_answers``), or its answer is a failed call."""
    rec = done.get(item_id)
    return rec is None or bool(rec.error)


async def ask_all(
    todo: Sequence[Any],
    ask: Callable[[Any], Awaitable[AnswerRecord]],
    journals: Mapping[int, Path],
    *,
    concurrency: int,
    max_error_rate: float,
    progress: bool = False,
    label: str = "run",
) -> int:
    """Ask ``ask(entry)`` for every entry of ``todo`` (module docstring); each record goes to
    ``journals[record.run]``. Returns the number of failed answers.

    Raises:
        ErrorRateExceeded: failures passed ``max_error_rate`` of ``len(todo)`` (the answers received
            so far are journaled and compacted).
        ValueError: ``concurrency < 1`` or ``max_error_rate`` outside 0..1.
    """
    from tqdm import tqdm

    if concurrency < 1 or not 0.0 <= max_error_rate <= 1.0:
        raise ValueError("need concurrency >= 1 and 0 <= max_error_rate <= 1")
    sem = asyncio.Semaphore(concurrency)

    async def one(entry: Any) -> AnswerRecord:
        async with sem:
            return await ask(entry)

    allowed = int(max_error_rate * len(todo) + 1e-9)
    errors, answered = 0, 0
    messages: Counter = Counter()
    for p in journals.values():
        compact_answers(p)  # a torn last line (a kill mid-write) would swallow the next answer appended
    files = {run: Path(p).open("a", encoding="utf-8") for run, p in journals.items()}
    tasks: list[asyncio.Future] = []
    try:
        with tqdm(total=len(todo), desc=label, unit="item", disable=not progress, leave=False) as bar:
            # tasks created in queue order start (and take the semaphore) in that order
            tasks = [asyncio.ensure_future(one(entry)) for entry in todo]
            for fut in asyncio.as_completed(tasks):
                rec = await fut
                answered += 1
                if rec.error:
                    errors += 1
                    messages[rec.error] += 1
                append_answer(files[rec.run], rec)
                bar.update(1)
                bar.set_postfix(errors=errors, refresh=False)
                if errors > allowed:
                    raise ErrorRateExceeded(errors, answered, len(todo), max_error_rate, messages.most_common(1)[0][0])
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for f in files.values():
            f.close()
        # one line per item again: an item asked again (after an error, or on resume) appended a second
        for p in journals.values():
            compact_answers(p)
    return errors


async def answer_with_images(
    agent: Any, *, item_id: str, prompt: str, instruction: str, image_urls: Sequence[str], t0: float, **fields: Any
) -> AnswerRecord:
    """One question-answering request of ``agent`` (an ``OpenAIAgent``): the images (data URLs, in
    order), then ``prompt``; the answer as its journal record (raw text, reasoning, tokens, latency
    since ``t0`` (``time.perf_counter``), attempts, error), with ``fields`` (e.g. the frames sent)."""
    import time

    parts: list[dict] = [{"type": "image_url", "image_url": {"url": u}} for u in image_urls]
    parts.append({"type": "text", "text": prompt})
    got = await agent.client().acomplete([{"role": "user", "content": parts}])
    return AnswerRecord(
        id=item_id,
        run=1,
        raw_text=got.text or "",
        prompt=prompt,
        instruction=instruction,
        error=got.error,
        status=got.status,
        latency_s=time.perf_counter() - t0,
        attempts=got.attempts,
        reasoning=got.reasoning,
        usage=got.usage,
        **fields,
    )


def run_journaled(
    items: Sequence[Mapping[str, Any]],
    ask: Callable[[Any], Awaitable[AnswerRecord]],
    journal: Path,
    *,
    agent: Any,
    concurrency: int,
    max_error_rate: float,
    progress: bool,
    label: str,
    close: Callable[[], None] | None = None,
) -> dict:
    """Ask every item of ``items`` (``id`` each) that ``journal`` has no good answer for, with
    ``ask_all`` on one run, then ``close()`` and close the agent's client. Returns ``{"asked",
    "cached", "errors"}``. Raises ``ErrorRateExceeded``."""
    done = read_answers(journal)
    todo = [it for it in items if to_ask(done, str(it["id"]))]

    async def main() -> int:
        try:
            return await ask_all(
                todo,
                ask,
                {1: journal},
                concurrency=concurrency,
                max_error_rate=max_error_rate,
                progress=progress,
                label=label,
            )
        finally:
            if close is not None:
                close()
            if hasattr(agent, "aclose"):
                await agent.aclose()

    errors = asyncio.run(main())
    return {"asked": len(todo), "cached": len(items) - len(todo), "errors": errors}
