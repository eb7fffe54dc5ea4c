"""Point-Battle runtime state: settings, the store, the agents and the loop they run on, answers in flight."""

from __future__ import annotations

import asyncio
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..imageguard import ImageLimits
from .curated import CuratedSet
from .store import ArenaStore
from .watch import AnswerWatcher

__all__ = ["ArenaSettings", "ArenaContext", "AgentLoop"]


@dataclass(frozen=True)
class ArenaSettings:
    """Settings of one arena app (passed to ``create_arena_app``; nothing read from the environment).

    Attributes:
        sampler: pair sampling, ``uniform`` (PointArena) or ``adaptive`` (see ``sampling``).
        max_upload_bytes, max_image_side_px, max_image_pixels, upload_formats, max_text_chunk_bytes:
            the upload guard (``ui.imageguard.ImageLimits``).
        max_instruction_chars: longest instruction accepted.
        max_battles_per_minute: new battles per session (cookie) per minute (429 beyond).
        max_battles_per_minute_per_address: new battles per client address per minute.
        max_uploads_per_minute, max_uploads_per_minute_per_address: the same for battles on uploads.
        trusted_proxies: addresses of reverse proxies whose ``X-Forwarded-For`` names the client
            (uvicorn's ``ProxyHeadersMiddleware``); empty (default): the header is ignored and the
            client address is the TCP peer.
        flag_min_votes: a session is flagged once at least this many votes all chose the same side.
        include_flagged: count flagged sessions' votes on the leaderboard.
        few_votes: models with fewer votes than this are marked on the leaderboard instead of an interval.
        agent_timeout_s: a model answer slower than this becomes a failed answer.
        store_retry_s: how long a battle in flight keeps trying to store its answers and "shown"
            while the database is unreachable (new battles and votes get 503 meanwhile).
        answer_poll_s: pause between a worker's polls of the store for the answers other workers
            collect (``ui.arena.watch``; one poll covers every battle the worker waits on).
        model_image_side_px: images with a longer side are downscaled (in a worker thread) before
            they go to the models, and the points mapped back to the original pixels; ``None``:
            send the original. Served models downscale large images anyway, and a 4096 px
            image would cost every model call megabytes of base64 JSON.
        elo_start, elo_k, elo_base, elo_scale: online Elo parameters (PointArena: 1000, 2, 10, 400).
        bootstrap_rounds: bootstrap rounds for the leaderboard's intervals.
        human_feedback: tell a human-baseline participant after each item whether it was correct
            (training sessions only; a baseline must not learn from feedback).
        seed: seed of the pair sampler (``None``: nondeterministic).
    """

    sampler: str = "uniform"
    max_upload_bytes: int = 8 * 1024 * 1024
    max_image_side_px: int = 4096
    max_image_pixels: int = 4096 * 4096
    upload_formats: tuple[str, ...] = ("PNG", "JPEG", "WEBP")
    max_text_chunk_bytes: int = 256 * 1024
    max_instruction_chars: int = 500
    max_battles_per_minute: int = 20
    max_battles_per_minute_per_address: int = 120
    max_uploads_per_minute: int = 10
    max_uploads_per_minute_per_address: int = 30
    trusted_proxies: tuple[str, ...] = ()
    flag_min_votes: int = 10
    include_flagged: bool = False
    few_votes: int = 50
    agent_timeout_s: float = 60.0
    store_retry_s: float = 120.0
    answer_poll_s: float = 0.05
    model_image_side_px: int | None = 1600
    elo_start: float = 1000.0
    elo_k: float = 2.0
    elo_base: float = 10.0
    elo_scale: float = 400.0
    bootstrap_rounds: int = 100
    human_feedback: bool = False
    seed: int | None = None

    def __post_init__(self) -> None:
        from .sampling import SAMPLERS

        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {self.sampler!r}")
        if self.max_upload_bytes < 1024 or self.max_image_side_px < 16 or self.max_image_pixels < 256:
            raise ValueError("max_upload_bytes >= 1024, max_image_side_px >= 16, max_image_pixels >= 256 required")
        limits = (
            self.max_battles_per_minute,
            self.max_battles_per_minute_per_address,
            self.max_uploads_per_minute,
            self.max_uploads_per_minute_per_address,
        )
        if min(limits) < 1 or self.flag_min_votes < 2 or not self.agent_timeout_s > 0 or self.few_votes < 0:
            raise ValueError("rate limits >= 1, flag_min_votes >= 2, agent_timeout_s > 0, few_votes >= 0 required")
        if not 0 < self.answer_poll_s <= 5:
            raise ValueError(f"answer_poll_s must be in (0, 5] seconds, got {self.answer_poll_s}")

    @property
    def image_limits(self) -> ImageLimits:
        return ImageLimits(
            max_bytes=self.max_upload_bytes,
            max_side_px=self.max_image_side_px,
            max_pixels=self.max_image_pixels,
            formats=tuple(self.upload_formats),
            max_text_chunk_bytes=self.max_text_chunk_bytes,
            max_text_total_bytes=4 * self.max_text_chunk_bytes,
        )


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (``uvicorn[standard]`` brings it on Linux and macOS), as
    uvicorn's own ``--loop auto`` does: it cut the CPU of every model call here (docs/arena.md)."""
    try:
        import uvloop
    except ImportError:  # Windows: the standard loop
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class AgentLoop:
    """One background thread with its own event loop on which every model call runs.

    An agent prepares its request synchronously (resizing and JPEG-encoding the image, parsing the
    answer); on the serving loop that would stall every other request for the encode time of a large
    upload. Here the serving loop only awaits a future. Clients opened by agents belong to this loop.
    """

    def __init__(self) -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="arena-agents", daemon=True)
        self._thread.start()

    async def run(self, coro, timeout_s: float) -> Any:
        """Run ``coro`` on the agents' loop with a timeout; raises what it raises (``TimeoutError``)."""
        fut = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout_s), self.loop)
        return await asyncio.wrap_future(fut)

    def close(self, agents: Mapping[str, Any] = {}) -> None:
        if not self.loop.is_running():
            return

        async def _close() -> None:
            for a in agents.values():
                if hasattr(a, "aclose"):
                    try:
                        await a.aclose()
                    except Exception:  # closing is best effort
                        pass

        try:
            asyncio.run_coroutine_threadsafe(_close(), self.loop).result(timeout=5)
        except Exception:  # a stuck client must not block shutdown
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


@dataclass
class ArenaContext:
    """Everything routes share (``app.state.arena``)."""

    store: ArenaStore
    agents: Mapping[str, Any]
    settings: ArenaSettings
    curated: CuratedSet
    uploads_dir: Path
    bench_items: list = field(default_factory=list)  # Point-Bench items for the human baseline page
    rng: random.Random = field(default_factory=random.Random)
    pending: dict[str, dict[str, asyncio.Task]] = field(default_factory=dict)
    agent_loop: AgentLoop | None = None
    admin_token: str | None = None
    cache: dict = field(default_factory=dict)  # leaderboard and sampler snapshots of this process
    watcher: AnswerWatcher | None = None  # answers collected by other workers; made on first use
    db_pool: ThreadPoolExecutor = field(init=False)

    def __post_init__(self) -> None:
        # as many threads as the store keeps pooled connections: more would open overflow connections
        # and close them again on return, a new PostgreSQL backend (a fork) every few calls under load
        self.db_pool = ThreadPoolExecutor(max_workers=max(1, self.store.pool_size), thread_name_prefix="arena-db")

    async def blocking(self, fn, *args) -> Any:
        """``fn(*args)`` on this arena's thread pool (store calls, file reads), awaited; raises what it
        raises. ``loop.run_in_executor`` rather than Starlette's ``run_in_threadpool``: anyio's
        hand-off to a worker thread (a capacity limiter and a ``queue.Queue`` per call) was an eighth
        of a worker's CPU at six store calls per vote (docs/arena.md, "Performance")."""
        return await asyncio.get_running_loop().run_in_executor(self.db_pool, fn, *args)

    def answer_watcher(self) -> AnswerWatcher:
        if self.watcher is None:
            self.watcher = AnswerWatcher(self.store, self.settings.answer_poll_s)
        return self.watcher
