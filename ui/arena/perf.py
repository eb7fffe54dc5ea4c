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

``measure_arena_outage`` runs the same voters while the database is stopped and started again
(``pause``/``resume`` callables): the voters behave as the page does (a 503 is sent again after
``Retry-After``, a websocket closed with 1013 is opened again, a 409 on a vote sent again after a
503 is resolved by reading the battle), and the report says how many 503s and other 5xx the voters
saw, and the same integrity check.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..serve import free_port

__all__ = ["measure_arena_perf", "bare_insert_times"]

CHOICES = ("A", "B", "both_good", "both_bad")


def _shown(db: str) -> str:
    """``db`` as the report shows it: a URL with its scheme and without a password, or the path."""
    if "://" not in db:
        return db
    from sqlalchemy.engine import make_url

    return make_url(db).render_as_string(hide_password=True)


def require_empty_store(db: str) -> None:
    """Refuse a store that already holds battles: the integrity check compares every stored vote with
    the votes this run was told about, so an earlier run's votes would read as "unacknowledged".

    Raises: ArenaError when the store cannot be opened (a bad URL, a missing driver, a file that is not
    a database); ValueError when it has battles."""
    from .store import ArenaStore

    store = ArenaStore(db)
    try:
        n = sum(store.battle_counts().values()) // 2
    finally:
        store.close()
    if n:
        raise ValueError(
            f"--db {_shown(db)}: the arena store already has {n} battles; perf arena needs an empty one "
            "(its integrity check counts every vote stored)"
        )


@contextlib.contextmanager
def _stopped_on_sigterm():
    """While the arena runs: SIGTERM (``timeout``, CI, systemd) raises SystemExit in this process, so
    the ``finally`` that stops the arena and its workers runs, as it does on Ctrl-C. Only from the
    main thread (Python delivers signals there); elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


@dataclass(frozen=True)
class _Reply:
    """One HTTP answer as the voters read it (status, headers, body), the connection already released."""

    status_code: int
    headers: Mapping[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


async def _send(c, method: str, url: str, out: dict, retry_cap_s: float, **kw) -> tuple[_Reply, bool]:
    """One request as the page sends it: a 503 is sent again after its ``Retry-After`` (at most
    ``retry_cap_s``), 40 times at most. Returns ``(last reply, whether a 503 came first)``; every
    status is counted in ``out["status"]``. ``c``: the voter's ``aiohttp.ClientSession``."""
    had_503 = False
    for _ in range(40):
        async with c.request(method, url, **kw) as resp:
            r = _Reply(resp.status, resp.headers.copy(), await resp.text())  # case-insensitive, as sent
        out["status"][r.status_code] = out["status"].get(r.status_code, 0) + 1
        if r.status_code != 503:
            return r, had_503
        had_503 = True
        await asyncio.sleep(min(retry_cap_s, float(r.headers.get("Retry-After", "1"))))
    return r, had_503


async def _wait_ready(c, base: str, bid: str, out: dict, deadline: float) -> bool:
    """As the page does: one websocket per battle (the voter's session sends its cookie), the server
    pushes both answers, then "ready"; a close with 1013 (database unreachable) is opened again.
    False on "error", a refused handshake or past ``deadline``."""
    import aiohttp

    while time.monotonic() < deadline:
        try:
            async with c.ws_connect(base.replace("http", "ws", 1) + f"/api/battles/{bid}/ws") as ws:
                async for msg in ws:
                    if msg.type != aiohttp.WSMsgType.TEXT:
                        break
                    kind = json.loads(msg.data).get("type")
                    if kind in ("ready", "error"):
                        return kind == "ready"
                closed_1013 = ws.close_code == 1013
        except aiohttp.WSServerHandshakeError as e:
            out["errors"].append(f"websocket {e.status}")
            return False
        except aiohttp.ClientConnectionError:
            closed_1013 = False
        out["ws_1013"] += closed_1013
        await asyncio.sleep(0.5)
    return False


def _tree_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid`` and its children, from Linux's
    ``/proc``; ``None`` where there is no ``/proc``."""
    hz = os.sysconf("SC_CLK_TCK")
    total, seen = 0.0, False
    try:
        pids = [pid] + [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return None
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12])) / hz  # utime, stime (proc(5))
        seen = True
    return total if seen else None


def _wait_all_workers(base: str, workers: int, deadline: float) -> int:
    """Ask ``/api/health`` on new connections until ``workers`` different worker processes have
    answered (or ``deadline``, monotonic); returns how many did. Why: a voter's keep-alive connection
    stays with the worker that accepted it, so load started while one worker is still importing
    would all go to the others (measured: one worker at 100 % of a core, three nearly idle)."""
    import httpx

    seen: set[int] = set()
    while len(seen) < workers and time.monotonic() < deadline:
        try:
            r = httpx.get(base + "/api/health", timeout=5.0)  # a new connection each time
            if r.status_code == 200:
                seen.add(int(r.json()["worker_pid"]))
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.05)
    return len(seen)


def _cpu_now(arena_pid: int) -> dict[str, float | None]:
    t = os.times()
    return {"arena": _tree_cpu_s(arena_pid), "load_generator": t.user + t.system}


async def _voter(
    base: str,
    k: int,
    deadline: float,
    images: list[str],
    out: dict,
    retry_cap_s: float = 30.0,
    measure_from: float = 0.0,
    ramp_s: float = 0.0,
) -> None:
    import aiohttp

    from .store import VOTE_CHOICES

    rng = random.Random(k)
    if ramp_s > 0:
        await asyncio.sleep(ramp_s)  # arrivals spread over the warm-up (see measure_arena_perf)
    # aiohttp, not httpx + websockets: the load generator shares the arena's two cores (a third of
    # the CPU per vote); unsafe=True keeps cookies set by an IP address (127.0.0.1), as a browser does
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(base_url=base, cookie_jar=jar, timeout=aiohttp.ClientTimeout(total=30.0)) as c:
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            r, _ = await _send(
                c,
                "POST",
                "/api/battles",
                out,
                retry_cap_s,
                data={"instruction": "Point to the red cube", "image_name": images[rng.randrange(len(images))]},
            )
            if r.status_code != 200:
                out["errors"].append(f"battle {r.status_code}: {r.text[:100]}")
                await asyncio.sleep(0.1)
                continue
            if time.monotonic() >= measure_from:  # after the warm-up
                out["battle_s"].append(time.perf_counter() - t0)
            bid = r.json()["battle_id"]
            out["created_at"][bid] = time.monotonic()
            if not await _wait_ready(c, base, bid, out, time.monotonic() + 180.0):
                out["errors"].append(f"battle {bid}: no answers")
                continue
            choice = rng.choice(CHOICES)
            t0 = time.perf_counter()
            v, retried = await _send(c, "POST", f"/api/battles/{bid}/vote", out, retry_cap_s, json={"choice": choice})
            dt = time.perf_counter() - t0
            if v.status_code == 200:
                if time.monotonic() - dt >= measure_from:
                    out["vote_s"].append(dt)
                out["acked"][bid], out["acked_at"][bid] = choice, time.monotonic()
            elif v.status_code == 409 and retried:
                # the vote sent during the outage may have been committed before its answer was cut: the
                # page reads the battle and shows the reveal when its vote is the one stored
                b, _ = await _send(c, "GET", f"/api/battles/{bid}", out, retry_cap_s)
                if b.status_code == 200 and b.json().get("reveal", {}).get("winner") == VOTE_CHOICES[choice]:
                    out["acked"][bid], out["acked_at"][bid] = choice, time.monotonic()
                    out["resolved_409"] += 1
                else:
                    out["errors"].append(f"vote 409 after 503: {b.text[:100]}")
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
    return {
        "acknowledged": len(acked),
        "stored": len(stored),
        "lost": lost,
        "unacknowledged": sum(1 for b in stored if b not in acked),
        "double_counted": counted - len(stored),
    }


def measure_arena_perf(
    db: str,
    *,
    workers: int = 4,
    voters: int = 50,
    duration_s: float = 20.0,
    warmup_s: float = 5.0,
    baseline_inserts: int = 200,
    start_timeout_s: float = 120.0,
) -> dict[str, Any]:
    """Run the load (see the module docstring) against a fresh arena on ``db`` (a SQLAlchemy URL or
    SQLite path; its arena tables should be empty). Returns the report.

    The first ``warmup_s`` seconds of load are not measured (each worker imports the model client
    and opens its connections on its first battles: a few seconds of CPU that a running arena has
    long paid), and the voters arrive one by one over its first half, as people do: a voter's
    keep-alive connection stays with the worker that accepted it, and 50 connections opened at
    the same instant mostly land on one worker (measured: one worker at 20 s of CPU, three at 8 s).
    The integrity check covers every vote, the warm-up's too. ``cpu_ms_per_vote`` is the
    CPU time the arena's processes (server and workers) and the load generator used in the
    measured window, per vote measured: what a vote costs, whatever else the machine runs.

    Raises: RuntimeError when the arena does not start; ValueError for bad arguments.
    """
    from pointlab.benchmark.perfstats import summarize

    if workers < 1 or voters < 1 or duration_s <= 0 or warmup_s < 0:
        raise ValueError("workers >= 1, voters >= 1, duration_s > 0, warmup_s >= 0 required")
    if "://" not in db:  # the arena runs in a temp folder: a relative SQLite path would be another file there
        db = str(Path(db).resolve())
    require_empty_store(db)
    base_times = bare_insert_times(db, baseline_inserts)
    out, wall = _run_load(db, workers, voters, duration_s, start_timeout_s, warmup_s=warmup_s)
    check = _check(db, out["acked"])
    ms = ("n", "p50", "p90", "p99", "max")
    n_votes = len(out["vote_s"])
    cpu = {
        k: round((out["cpu_to"][k] - out["cpu_from"][k]) / n_votes * 1e3, 2)
        for k in ("arena", "load_generator")
        if n_votes and out.get("cpu_from", {}).get(k) is not None and out.get("cpu_to", {}).get(k) is not None
    }
    return {
        "db": _shown(db),
        "workers": workers,
        "voters": voters,
        "warmup_s": warmup_s,
        "workers_seen": out.get("workers_seen"),
        "duration_s": round(wall, 2),
        "votes_per_s": round(n_votes / wall, 1),
        "cpu_ms_per_vote": cpu,
        "battle_create_ms": summarize(out["battle_s"], ms, scale=1e3, digits=1),
        "vote_ms": summarize(out["vote_s"], ms, scale=1e3, digits=1),
        "baseline_bare_insert_ms": summarize(base_times, ms, scale=1e3, digits=2),
        "vote_p50_over_insert_p50": (
            round(float(summarize(out["vote_s"], ("p50",))["p50"]) / float(summarize(base_times, ("p50",))["p50"]), 1)
            if out["vote_s"]
            else None
        ),
        "integrity": check,
        "errors": len(out["errors"]),
        "first_errors": out["errors"][:5],
    }


def measure_arena_outage(
    db: str,
    pause,
    resume,
    *,
    workers: int = 2,
    voters: int = 10,
    duration_s: float = 20.0,
    outage_at_s: float = 5.0,
    outage_s: float = 5.0,
    retry_cap_s: float = 1.0,
    start_timeout_s: float = 120.0,
) -> dict[str, Any]:
    """The voters of ``measure_arena_perf`` while the database goes away: ``pause()`` is called
    ``outage_at_s`` into the load and ``resume()`` ``outage_s`` later (from a thread), and one more
    voter arrives once ``pause()`` returned, so that a request surely meets the outage (the others
    may all be waiting on battles in flight then, which ride it out without a request). Voters wait
    at most ``retry_cap_s`` between tries (the server's Retry-After is longer; a test need not wait
    it). Returns ``{"outage_s", "status": {code: n}, "server_errors": 5xx other than 503, "ws_1013",
    "resolved_409", "votes_after" (acknowledged after the database came back), "across_outage"
    (battles started before it went away and voted on after it came back), "integrity", "errors",
    "first_errors"}``."""
    marks: dict[str, float] = {}
    down = threading.Event()

    def outage() -> None:
        time.sleep(outage_at_s)
        marks["down"] = time.monotonic()
        pause()
        down.set()
        time.sleep(outage_s)
        resume()
        marks["up"] = time.monotonic()

    t = threading.Thread(target=outage, name="db-outage", daemon=True)
    out, wall = _run_load(
        db, workers, voters, duration_s, start_timeout_s, retry_cap_s=retry_cap_s, start=t.start, late_voter=down
    )
    t.join(timeout=outage_at_s + outage_s + 120)
    return {
        "duration_s": round(wall, 2),
        "outage_s": round(marks["up"] - marks["down"], 2) if "up" in marks else None,
        "status": dict(sorted(out["status"].items())),
        "server_errors": sum(n for code, n in out["status"].items() if code >= 500 and code != 503),
        "ws_1013": out["ws_1013"],
        "resolved_409": out["resolved_409"],
        "votes_after": sum(1 for w in out["acked_at"].values() if w > marks.get("up", float("inf"))),
        # battles started before the database went away and voted on after it came back
        "across_outage": sum(
            1
            for b, w in out["acked_at"].items()
            if out["created_at"].get(b, w) < marks.get("down", 0) and w > marks.get("up", w)
        ),
        "integrity": _check(db, out["acked"]),
        "errors": len(out["errors"]),
        "first_errors": out["errors"][:5],
    }


def _run_load(
    db: str,
    workers: int,
    voters: int,
    duration_s: float,
    start_timeout_s: float,
    *,
    retry_cap_s: float = 30.0,
    start=None,
    warmup_s: float = 0.0,
    late_voter: threading.Event | None = None,
) -> tuple[dict, float]:
    """Start ``pointlab bench arena`` on ``db``, run ``voters`` for ``warmup_s`` (not measured) then
    ``duration_s``, stop it. ``start``: called once the arena answers (the outage thread);
    ``late_voter``: one more voter starts once it is set (the database is down). Returns
    the voters' record (with the CPU seconds used by the arena's processes and by this one, at the
    end of the warm-up and at the end: ``cpu_from``, ``cpu_to``) and the measured wall time."""
    import httpx

    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="pointlab-perf-arena-"))
    cmd = [
        sys.executable,
        "-c",
        "from pointlab.bridge.cli import main; main()",
        "bench",
        "arena",
        "--db",
        db,
        "--workers",
        str(workers),
        "--port",
        str(port),
        "--demo-dir",
        str(tmp / "demo"),
        "--rate-limit",
        "100000",
        "--address-rate-limit",
        "1000000",
    ]
    log = (tmp / "arena.log").open("w")
    stack = contextlib.ExitStack()
    stack.enter_context(_stopped_on_sigterm())
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
        out_workers = _wait_all_workers(base, workers, t0 + start_timeout_s)
        images = [i["name"] for i in httpx.get(base + "/api/images").json()["images"]]
        out: dict = {
            "workers_seen": out_workers,
            "battle_s": [],
            "vote_s": [],
            "acked": {},
            "acked_at": {},
            "created_at": {},
            "errors": [],
            "status": {},
            "ws_1013": 0,
            "resolved_409": 0,
        }

        async def load() -> float:
            measure_from = time.monotonic() + warmup_s
            deadline = measure_from + duration_s
            if start is not None:
                start()

            async def cpu_at_measure_start() -> None:
                await asyncio.sleep(warmup_s)
                out["cpu_from"] = _cpu_now(proc.pid)

            async def late() -> None:
                if late_voter is not None and await asyncio.to_thread(late_voter.wait, deadline - time.monotonic()):
                    await _voter(base, voters, deadline, images, out, retry_cap_s, measure_from)

            snap = asyncio.create_task(cpu_at_measure_start())
            await asyncio.gather(
                *(
                    _voter(base, k, deadline, images, out, retry_cap_s, measure_from, ramp_s=k * warmup_s / 2 / voters)
                    for k in range(voters)
                ),
                late(),
            )
            await snap
            out["cpu_to"] = _cpu_now(proc.pid)
            return time.monotonic() - measure_from

        from .context import new_event_loop

        with asyncio.Runner(loop_factory=new_event_loop) as runner:  # the voters cost less on uvloop
            wall = runner.run(load())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)  # the arena's log (read above on failure) and its demo set
        stack.close()
    return out, wall
