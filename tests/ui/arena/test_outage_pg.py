"""The arena while its PostgreSQL server is stopped and started again under voters (issue 25, "Arena
under outage"): 2 uvicorn workers (``pointlab bench arena``), 10 voters behaving as the page does
and one more arriving once the server is down, the server stopped 4 s into the load for 5 s. Every
request during the outage gets 503 with Retry-After (never a 500), battles in flight are answered
and voted on once the database is back, and the store holds every acknowledged vote once and
nothing else."""

from __future__ import annotations

import json
import time

import pytest

from pointlab.ui.arena.perf import measure_arena_outage

pytestmark = pytest.mark.slow


@pytest.mark.xdist_group("arena_load")  # not beside the other arena load tests: tests/ui/arena/conftest.py
def test_voters_through_a_postgresql_outage_lose_nothing_and_see_no_500(own_pg):
    rep = measure_arena_outage(
        own_pg.url, own_pg.pause, own_pg.resume, workers=2, voters=10, duration_s=16.0, outage_at_s=4.0, outage_s=5.0
    )
    print(json.dumps(rep))
    assert rep["outage_s"] is not None and rep["outage_s"] >= 5.0
    assert rep["status"].get(503, 0) + rep["ws_1013"] > 0, "the outage was not seen by any voter"
    assert rep["server_errors"] == 0, rep["status"]
    assert rep["errors"] == 0, rep["first_errors"]
    check = rep["integrity"]
    assert check["lost"] == 0 and check["unacknowledged"] == 0 and check["double_counted"] == 0, check
    assert check["stored"] == check["acknowledged"]
    assert rep["votes_after"] >= 5, rep  # voting went on once the database was back
    assert rep["across_outage"] >= 1, rep  # battles in flight were answered and voted on


@pytest.mark.browser
def test_the_page_says_the_database_is_away_and_sends_the_vote_when_it_is_back(
    chromium, own_pg, uoc_tabletop, tmp_path
):
    """In Chromium: with PostgreSQL stopped, the page shows a readable message (not "HTTP 500") and
    sends the same vote again after Retry-After; once the server is back the vote is stored once and
    the names are revealed."""
    from pointlab.sim_mock.model_server import serve_in_thread
    from pointlab.ui.arena import ArenaSettings, create_arena_app
    from pointlab.ui.arena.store import ArenaStore

    from .helpers import NAME_A, NAME_B, curated, start_models

    agents, stop_models = start_models(tmp_path)
    app = create_arena_app(
        agents,
        db_path=own_pg.url,
        curated_dir=curated(uoc_tabletop, tmp_path),
        settings=ArenaSettings(seed=1, bootstrap_rounds=20),
    )
    url, stop = serve_in_thread(app)
    try:
        page = chromium.new_context().new_page()
        page.goto(url.removesuffix("/v1") + "/")
        page.click("#gallery img >> nth=0")
        page.fill("#instruction", "Point to the teal bowl")
        page.click("#start")
        page.wait_for_selector('#votes button[data-choice="B"]:not([disabled])', timeout=20000)
        own_pg.pause()
        resumed = False
        try:
            page.click('#votes button[data-choice="B"]')
            page.wait_for_function(
                "document.getElementById('status').textContent.includes('unreachable')", timeout=20000
            )
            shown = page.inner_text("#status")
            assert "database is unreachable for the moment; sending your vote again in 3 s" in shown, shown
            assert page.inner_text("#name-A") == ""
            own_pg.resume()
            resumed = True
        finally:
            if not resumed:
                own_pg.resume()
        page.wait_for_function("document.getElementById('name-A').textContent.length > 0", timeout=30000)
        assert {
            page.inner_text("#name-A").removeprefix("Model A was "),
            page.inner_text("#name-B").removeprefix("Model B was "),
        } == {NAME_A, NAME_B}
        assert page.inner_text("#status") == "Vote recorded. Start another battle!"
    finally:
        stop()
        stop_models()
    store = ArenaStore(own_pg.url)
    try:
        assert [v["winner"] for v in store.votes(include_flagged=True)] == ["model_b"]
    finally:
        store.close()


class _GatedModel:
    """A model that answers "[60, 40]" once ``gate`` is set (served by the sim model server, reached by the
    real OpenAI client): the test decides whether the answers come during the outage."""

    def __init__(self, gate) -> None:
        self.gate = gate

    def answer(self, request) -> str:
        assert self.gate.wait(60)
        return "[60, 40]"


def test_an_outage_longer_than_the_retry_window_leaves_the_battle_votable(own_pg, uoc_tabletop, tmp_path):
    """Found by a breaking session: the answers come while the database is down and their writes give
    up (store_retry_s 1 s); a websocket opened during the outage is closed with 1013 (after the
    handshake, not an HTTP 403); once the database is back, a new websocket stores the answers this
    worker still holds, says "ready", and the vote is stored once."""
    import asyncio
    import concurrent.futures
    import threading

    import httpx
    import websockets
    from websockets.exceptions import ConnectionClosed

    from pointlab.benchmark.agents_config import AgentConfig, build_agent
    from pointlab.sim_mock.model_server import create_model_server, serve_in_thread
    from pointlab.ui.arena import ArenaSettings, create_arena_app

    from .helpers import curated

    gate = threading.Event()
    murl, stop_models = serve_in_thread(create_model_server({n: _GatedModel(gate) for n in ("m1", "m2")}))
    agents = {
        n: build_agent(
            AgentConfig(name=n, kind="openai", base_url=murl, model=n, point_format="xy_pixels", max_retries=0)
        )
        for n in ("m1", "m2")
    }
    app = create_arena_app(
        agents,
        db_path=own_pg.url,
        curated_dir=curated(uoc_tabletop, tmp_path),
        settings=ArenaSettings(seed=1, store_retry_s=1.0),
    )
    url, stop = serve_in_thread(app)
    base = url.removesuffix("/v1")
    store = app.state.arena.store

    async def socket(cookie: str, bid: str) -> list:
        got = []
        try:
            async with websockets.connect(
                base.replace("http", "ws", 1) + f"/api/battles/{bid}/ws",
                additional_headers={"Cookie": f"arena_session={cookie}"},
            ) as ws:
                while (kind := json.loads(await asyncio.wait_for(ws.recv(), 30))["type"]) not in ("ready", "error"):
                    got.append(kind)
                got.append(kind)
        except ConnectionClosed as e:
            got.append(f"closed {e.rcvd.code if e.rcvd else None}")
        return got

    def ws_messages(cookie: str, bid: str) -> list:
        # on a thread of its own: a browser test before this one may leave an event loop in this thread
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, socket(cookie, bid)).result(timeout=60)

    try:
        with httpx.Client(base_url=base, timeout=30) as c:
            r = c.post("/api/battles", data={"instruction": "Point to the bowl", "image_name": "000000-color.png"})
            assert r.status_code == 200, r.text
            bid, cookie = r.json()["battle_id"], c.cookies["arena_session"]
            own_pg.pause()
            try:
                gate.set()  # the answers come now, while nothing can be written
                deadline = time.monotonic() + 30
                while any(t.done() is False for t in app.state.arena.pending[bid].values()):
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
                time.sleep(1.5)  # past store_retry_s: the answers' own writes gave up
                assert ws_messages(cookie, bid) == ["closed 1013"]
                assert c.post(f"/api/battles/{bid}/vote", json={"choice": "A"}).status_code == 503
            finally:
                own_pg.resume()
            assert ws_messages(cookie, bid) == ["answer", "answer", "ready"]
            v = c.post(f"/api/battles/{bid}/vote", json={"choice": "A"})
            assert v.status_code == 200, v.text
        assert [x["winner"] for x in store.votes(include_flagged=True)] == ["model_a"]
    finally:
        stop()
        stop_models()
