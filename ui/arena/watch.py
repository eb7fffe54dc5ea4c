"""One poll per worker for the answers other workers collect.

With N worker processes a page's websocket lands on another worker than the one that asked the
models (N-1)/N of the time; that worker learns the answers from the store. Polling the store once
per waiting page made the polls themselves the load: 50 pages meant hundreds of transactions a
second (``pointlab perf arena``, docs/arena.md). The ``AnswerWatcher`` asks one question for every
battle this worker waits on (``ArenaStore.answers_of``: one ``SELECT ... WHERE id IN (...)``) every
``poll_s`` and hands each page the answers it has not had yet, so the store sees at most
``1 / poll_s`` polls a second per worker however many pages wait.

Why not PostgreSQL ``LISTEN/NOTIFY``: it would need a dedicated connection per worker kept open
across outages, and SQLite has no equivalent; one batched poll works on both, costs one indexed
read per worker per ``poll_s``, and adds at most ``poll_s`` to an answer's delivery.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.concurrency import run_in_threadpool

from .store import StoreUnavailable

__all__ = ["AnswerWatcher", "Watch"]

log = logging.getLogger(__name__)


class Watch:
    """One page's wait on one battle: ``await get()`` returns ``(side, answer record)`` for each side
    not in ``sent`` as it is found in the store."""

    def __init__(self, sent: set[str]) -> None:
        self.sent = set(sent)
        self._queue: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()

    def _offer(self, answers: tuple[Any, Any]) -> None:
        for side, rec in zip("AB", answers):
            if rec is not None and side not in self.sent:
                self.sent.add(side)
                self._queue.put_nowait((side, rec))

    async def get(self) -> tuple[str, dict]:
        return await self._queue.get()


class AnswerWatcher:
    """Polls the store for every battle watched in this process (see the module docstring).

    Args:
        store: the ``ArenaStore``.
        poll_s: pause between polls, seconds (> 0).

    ``store_down_since`` is the ``time.monotonic()`` of the first failed poll of an outage that is
    still going on (``None`` while the store answers): a page waiting on answers waits as long as the
    outage lasts, since the worker holding them stores them when the database is back.
    """

    def __init__(self, store: Any, poll_s: float = 0.05) -> None:
        if not poll_s > 0:
            raise ValueError(f"poll_s must be > 0, got {poll_s}")
        self.store, self.poll_s = store, float(poll_s)
        self.store_down_since: float | None = None
        self._watches: dict[str, set[Watch]] = {}
        self._task: asyncio.Task | None = None
        self.polls = 0  # polls made (tests and perf read it)

    @asynccontextmanager
    async def watch(self, battle_id: str, sent: set[str]) -> AsyncIterator[Watch]:
        """Watch ``battle_id`` for the sides not in ``sent`` while the block runs."""
        w = Watch(sent)
        self._watches.setdefault(battle_id, set()).add(w)
        if self._task is None or self._task.done():
            # no await between the poll loop's last "anything watched?" and its end, so a watch
            # added here is either seen by the running loop or starts a new one
            self._task = asyncio.create_task(self._poll_loop(), name="arena-answer-watcher")
        try:
            yield w
        finally:
            watchers = self._watches.get(battle_id)
            if watchers is not None:
                watchers.discard(w)
                if not watchers:
                    del self._watches[battle_id]

    async def _poll_loop(self) -> None:
        while self._watches:
            try:
                found = await run_in_threadpool(self.store.answers_of, list(self._watches))
            except StoreUnavailable:
                if self.store_down_since is None:
                    self.store_down_since = time.monotonic()
                await asyncio.sleep(max(self.poll_s, 0.4))
                continue
            except Exception:  # a poll that fails for another reason must not end every page's wait
                log.exception("polling the arena store for answers failed")
                await asyncio.sleep(max(self.poll_s, 0.4))
                continue
            self.polls += 1
            self.store_down_since = None
            for bid, answers in found.items():
                for w in list(self._watches.get(bid, ())):
                    w._offer(answers)
            await asyncio.sleep(self.poll_s)
