"""The answer watcher: a worker waiting on answers other workers collect asks the store once per
poll for every battle it waits on, not once per waiting page; each page gets each side once, in the
order the answers were stored; an unreachable store is waited out."""

from __future__ import annotations

import asyncio
import time

import pytest

from pointlab.ui.arena.store import ArenaStore, StoreUnavailable
from pointlab.ui.arena.watch import AnswerWatcher

from .helpers import new_battle

POLL_S = 0.05


def _battles(store: ArenaStore, n: int) -> list[str]:
    sid = store.ensure_session(None)
    return [new_battle(store, sid) for _ in range(n)]


async def _until(cond, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.01)


class CountingStore:
    """The store, with every ``answers_of`` call recorded (how many ids it asked for)."""

    def __init__(self, store: ArenaStore, fail_first: int = 0) -> None:
        self.store, self.fail_first = store, fail_first
        self.calls: list[int] = []

    def answers_of(self, ids):
        if self.fail_first > 0:
            self.fail_first -= 1
            raise StoreUnavailable("down")
        self.calls.append(len(ids))
        return self.store.answers_of(ids)


def test_one_poll_serves_every_waiting_page(tmp_path):
    store = ArenaStore(tmp_path / "w.db")
    bids = _battles(store, 20)
    counting = CountingStore(store)
    got: dict[str, list] = {b: [] for b in bids}

    async def main() -> AnswerWatcher:
        watcher = AnswerWatcher(counting, poll_s=POLL_S)

        async def page(bid: str) -> None:
            async with watcher.watch(bid, set()) as w:
                for _ in range(2):
                    got[bid].append(await asyncio.wait_for(w.get(), 30))

        pages = [asyncio.create_task(page(b)) for b in bids]
        await _until(lambda: len(counting.calls) >= 1, "a first poll")
        for b in bids:
            store.record_answer(b, "B", {"points_px": [[2, 3]]})
        await _until(lambda: all(len(v) == 1 for v in got.values()), "every page got B")
        for b in bids:
            store.record_answer(b, "A", {"points_px": []})
        await asyncio.wait_for(asyncio.gather(*pages), 30)
        await _until(lambda: watcher._task is not None and watcher._task.done(), "the poll loop ends")
        return watcher

    t0 = time.monotonic()
    watcher = asyncio.run(main())
    elapsed = time.monotonic() - t0
    for b in bids:
        assert got[b] == [("B", {"points_px": [[2, 3]]}), ("A", {"points_px": []})]
    assert max(counting.calls) == 20  # one statement asked for all twenty battles
    # one poll per POLL_S at most, whatever the number of pages (one poll per page would be 20x)
    assert len(counting.calls) <= elapsed / POLL_S + 2
    assert watcher.polls == len(counting.calls)


def test_a_page_gets_only_the_sides_it_has_not_had(tmp_path):
    store = ArenaStore(tmp_path / "w.db")
    (bid,) = _battles(store, 1)
    store.record_answer(bid, "A", {"points_px": [[1, 1]]})
    store.record_answer(bid, "B", {"points_px": [[5, 5]]})

    async def main():
        watcher = AnswerWatcher(store, poll_s=POLL_S)
        async with watcher.watch(bid, {"A"}) as w:
            first = await asyncio.wait_for(w.get(), 30)
            await asyncio.sleep(5 * POLL_S)  # more polls find both answers again: nothing more is handed on
            return first, w._queue.qsize()

    first, left = asyncio.run(main())
    assert first == ("B", {"points_px": [[5, 5]]}) and left == 0


def test_an_unreachable_store_is_waited_out(tmp_path):
    store = ArenaStore(tmp_path / "w.db")
    (bid,) = _battles(store, 1)
    store.record_answer(bid, "A", {"points_px": []})
    store.record_answer(bid, "B", {"points_px": []})
    flaky = CountingStore(store, fail_first=3)
    seen_down = []

    async def main():
        watcher = AnswerWatcher(flaky, poll_s=POLL_S)
        async with watcher.watch(bid, set()) as w:
            get = asyncio.ensure_future(asyncio.wait_for(asyncio.gather(w.get(), w.get()), 60))
            while not get.done():
                seen_down.append(watcher.store_down_since is not None)
                await asyncio.sleep(0.05)
            answers = await get
        return answers, watcher.store_down_since

    answers, down_at_end = asyncio.run(main())
    assert sorted(s for s, _ in answers) == ["A", "B"]
    assert any(seen_down) and down_at_end is None


def test_poll_s_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="poll_s"):
        AnswerWatcher(object(), poll_s=0)
