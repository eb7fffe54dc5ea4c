"""Request-id keyed futures that ROS callbacks (executor threads) resolve on the caller's event loop.

A trial awaits messages for its request id (the answer, the target, the arm's result) from any
asyncio loop (uvicorn's, or ``asyncio.run`` in the CLI); the callback that receives one calls
``deliver(kind, request_id, payload)``, which resolves the future through
``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

__all__ = ["Waiters"]


class Waiters:
    """``(kind, request_id) -> future`` of the loop that asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str, str], tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}

    def expect(self, kind: str, request_id: str) -> asyncio.Future:
        """A future of the running loop that the next ``deliver(kind, request_id, ...)`` resolves."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._lock:
            self._waiting[(kind, request_id)] = (loop, fut)
        return fut

    def deliver(self, kind: str, request_id: str, payload: Any) -> bool:
        """Resolve the waiter of ``(kind, request_id)``; ``False`` when nobody waits for it."""
        with self._lock:
            waiter = self._waiting.pop((kind, request_id), None)
        if waiter is None:
            return False
        loop, fut = waiter
        try:
            loop.call_soon_threadsafe(_resolve, fut, payload)
        except RuntimeError:  # the caller's loop is closed: nobody waits any more
            return False
        return True

    def forget(self, request_id: str, kinds: tuple[str, ...]) -> None:
        with self._lock:
            for kind in kinds:
                self._waiting.pop((kind, request_id), None)

    @staticmethod
    async def wait(fut: asyncio.Future, timeout_s: float) -> Any | None:
        """The future's result, or ``None`` after ``timeout_s`` seconds."""
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            return None


def _resolve(fut: asyncio.Future, payload: Any) -> None:
    if not fut.done():
        fut.set_result(payload)
