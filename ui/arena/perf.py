"""``pointlab perf arena``: votes per second and latency of battle creation and of the vote, against
a bare insert into the same database measured in the same run.

The arena runs as users run it: ``pointlab bench arena --workers N --db URL`` in its own process
(the demo set, the four sim agents on the sim model server of that process). ``voters`` simulated
voters, each with its own session cookie, loop until ``duration_s``: start a battle on a curated
image (timed: *battle creation*), poll until both answers are shown, cast a random vote (timed:
*the vote*). Afterwards the store is read back and checked: every acknowledged vote is stored
once with the winner acknowledged (``lost``), no battle holds a vote nobody was told about
(``unacknowledged``), and the sessions' vote counters add up to the votes stored
(``double_counted``).

Baseline: single-row ``INSERT`` + ``COMMIT`` into a scratch table of the same database from this
process (what a vote costs at least), run before the load.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["measure_arena_perf", "bare_insert_times"]

CHOICES = ("A", "B", "both_good", "both_bad")


def bare_insert_times(url: str, n: int = 200) -> list[float]:
    """Seconds per single-row insert + commit into a scratch table of the database at ``url``."""
    from sqlalchemy import Column, Float, Integer, MetaData, Table, create_engine

    from .store import store_url

    engine = create_engine(store_url(url).replace("postgresql://", "postgresql+psycopg://", 1))
    meta = MetaData()
    t = Table("perf_baseline", meta, Column("id", Integer, primary_key=True, autoincrement=True), Column("t", Float))
    meta.create_all(engine)
    out = []
    try:
        with engine.connect() as c:
            for _ in range(n):
                t0 = time.perf_counter()
                c.execute(t.insert().values(t=time.time()))
                c.commit()
                out.append(time.perf_counter() - t0)
        meta.drop_all(engine)
    finally:
        engine.dispose()
    return out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _voter(base: str, k: int, deadline: float, images: list[str], out: dict) -> None:
    import httpx
    import websockets

    rng = random.Random(k)
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as c:
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            r = await c.post("/api/battles", data={"instruction": "Point to the red cube",
                                                   "image_name": images[rng.randrange(len(images))]})
            if r.status_code != 200:
                out["errors"].append(f"battle {r.status_code}: {r.text[:100]}")
                await asyncio.sleep(0.1)
                continue
            out["battle_s"].append(time.perf_counter() - t0)
            bid = r.json()["battle_id"]
            # as the page does: one websocket per battle, the server pushes both answers, then "ready"
            cookie = "; ".join(f"{k}={v}" for k, v in c.cookies.items())
            async with websockets.connect(base.replace("http", "ws", 1) + f"/api/battles/{bid}/ws",
                                          additional_headers={"Cookie": cookie}) as ws:
                while json.loads(await ws.recv()).get("type") not in ("ready", "error"):
                    pass
            choice = rng.choice(CHOICES)
            t0 = time.perf_counter()
            v = await c.post(f"/api/battles/{bid}/vote", json={"choice": choice})
            dt = time.perf_counter() - t0
            if v.status_code == 200:
                out["vote_s"].append(dt)
                out["acked"][bid] = choice
            else:
                out["errors"].append(f"vote {v.status_code}: {v.text[:100]}")


def _check(url: str, acked: dict[str, str]) -> dict:
    from .store import VOTE_CHOICES, ArenaStore, SessionRow

    store = ArenaStore(url)
    try:
        stored = {v["battle_id"]: v["winner"] for v in store.votes(include_flagged=True)}
        from sqlalchemy import func, select
        with store._tx() as s:
            counted = int(s.scalar(select(func.coalesce(func.sum(SessionRow.votes_n), 0))) or 0)
    finally:
        store.close()
    lost = sum(1 for b, c in acked.items() if stored.get(b) != VOTE_CHOICES[c])
    return {"acknowledged": len(acked), "stored": len(stored), "lost": lost,
            "unacknowledged": sum(1 for b in stored if b not in acked),
            "double_counted": counted - len(stored)}


def measure_arena_perf(db: str, *, workers: int = 4, voters: int = 50, duration_s: float = 20.0,
                       baseline_inserts: int = 200, start_timeout_s: float = 120.0) -> dict[str, Any]:
    """Run the load (see the module docstring) against a fresh arena on ``db`` (a SQLAlchemy URL or
    SQLite path; its arena tables should be empty). Returns the report.

    Raises: RuntimeError when the arena does not start; ValueError for bad arguments.
    """
    import httpx

    from pointlab.benchmark.perfstats import summarize

    if workers < 1 or voters < 1 or duration_s <= 0:
        raise ValueError("workers >= 1, voters >= 1, duration_s > 0 required")
    base_times = bare_insert_times(db, baseline_inserts)
    port = _free_port()
    tmp = Path(tempfile.mkdtemp(prefix="pointlab-perf-arena-"))
    cmd = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()", "bench", "arena", "--db", db, "--workers", str(workers),
           "--port", str(port), "--demo-dir", str(tmp / "demo"), "--rate-limit", "100000",
           "--address-rate-limit", "1000000"]
    log = (tmp / "arena.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp, env={**os.environ})
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.monotonic()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the arena exited ({proc.returncode}): {(tmp / 'arena.log').read_text()[-800:]}")
            try:
                if httpx.get(base + "/api/images", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - t0 > start_timeout_s:
                raise RuntimeError("the arena did not start")
            time.sleep(0.1)
        images = [i["name"] for i in httpx.get(base + "/api/images").json()["images"]]
        out: dict = {"battle_s": [], "vote_s": [], "acked": {}, "errors": []}

        async def load() -> float:
            deadline = time.monotonic() + duration_s
            t = time.perf_counter()
            await asyncio.gather(*(_voter(base, k, deadline, images, out) for k in range(voters)))
            return time.perf_counter() - t
        wall = asyncio.run(load())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    check = _check(db, out["acked"])
    ms = ("n", "p50", "p90", "p99", "max")
    return {"db": db.split("@")[-1] if "://" in db else db, "workers": workers, "voters": voters,
            "duration_s": round(wall, 2), "votes_per_s": round(len(out["vote_s"]) / wall, 1),
            "battle_create_ms": summarize(out["battle_s"], ms, scale=1e3, digits=1),
            "vote_ms": summarize(out["vote_s"], ms, scale=1e3, digits=1),
            "baseline_bare_insert_ms": summarize(base_times, ms, scale=1e3, digits=2),
            "vote_p50_over_insert_p50": (round(float(summarize(out["vote_s"], ("p50",))["p50"])
                                               / float(summarize(base_times, ("p50",))["p50"]), 1)
                                         if out["vote_s"] else None),
            "integrity": check, "errors": len(out["errors"]), "first_errors": out["errors"][:5]}
