"""Issue 14 #2: one vote per battle under concurrency, on SQLite and on PostgreSQL. 10 simultaneous
votes on each of 20 battles over HTTP: exactly one 200 per battle, the others 409, and the stored
winner is the one the 200 acknowledged."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from pointlab.sim_mock.model_server import serve_in_thread
from pointlab.ui.arena import ArenaSettings, ArenaStore, create_arena_app

from .helpers import start_models

pytestmark = pytest.mark.slow
CHOICES = ("A", "B", "both_good", "both_bad")


def _shown_battles(store: ArenaStore, sid: str, n: int) -> list[str]:
    out = []
    for k in range(n):
        bid = store.create_battle(
            session_id=sid,
            image_sha256="0" * 64,
            image_path="x.png",
            image_source="curated",
            width=10,
            height=10,
            instruction=f"Point {k}",
            model_a="m1",
            model_b="m2",
            sampler="uniform",
        )
        store.record_answer(bid, "A", {"points_px": [[1, 1]]})
        store.record_answer(bid, "B", {"points_px": [[2, 2]]})
        store.mark_shown(bid)
        out.append(bid)
    return out


def _race(url: str, tmp_path) -> None:
    agents, stop_models = start_models(tmp_path)
    store = ArenaStore(url)
    app = create_arena_app(agents, store=store, settings=ArenaSettings(flag_min_votes=10_000))
    base, stop = serve_in_thread(app)
    base = base.removesuffix("/v1")
    try:
        sid = store.ensure_session(None)
        battles = _shown_battles(store, sid, 20)

        async def run() -> dict[str, list[tuple[int, str]]]:
            async with httpx.AsyncClient(base_url=base, cookies={"arena_session": sid}, timeout=30) as c:

                async def one(bid: str, k: int) -> tuple[int, str]:
                    choice = CHOICES[k % 4]
                    r = await c.post(f"/api/battles/{bid}/vote", json={"choice": choice})
                    return r.status_code, choice

                results = await asyncio.gather(*(one(b, k) for b in battles for k in range(10)))
            return {b: results[i * 10 : (i + 1) * 10] for i, b in enumerate(battles)}

        by_battle = asyncio.run(run())
        winners = {"A": "model_a", "B": "model_b", "both_good": "both_good", "both_bad": "both_bad"}
        for bid, res in by_battle.items():
            ok = [c for s, c in res if s == 200]
            assert len(ok) == 1, (bid, res)
            assert sorted(s for s, _ in res) == [200] + [409] * 9
            assert store.battle(bid)["vote"] == winners[ok[0]]
        assert len(store.votes()) == 20
        assert store.session(sid)["votes"] == 20  # counted once per battle, not per request
    finally:
        stop()
        stop_models()
        store.close()


def test_concurrent_votes_sqlite(tmp_path):
    _race(str(tmp_path / "arena.db"), tmp_path)


def test_concurrent_votes_postgresql(pg_url, tmp_path):
    _race(pg_url, tmp_path)
