"""The arena while its PostgreSQL server is stopped and started again under voters (issue 25, "Arena
under outage"): 2 uvicorn workers (``pointlab bench arena``), 10 voters behaving as the page does,
the server stopped 4 s into the load for 5 s. Every request during the outage gets 503 with
Retry-After (never a 500), battles in flight are answered and voted on once the database is back,
and the store holds every acknowledged vote once and nothing else."""

from __future__ import annotations

import json

import pytest

from pointlab.ui.arena.perf import measure_arena_outage
from tests.pgcluster import PgCluster, PgUnavailable

pytestmark = pytest.mark.slow


@pytest.fixture
def own_pg():
    """A cluster of this test's own: it is stopped and started, which the shared one must not be."""
    try:
        cluster = PgCluster().start()
    except PgUnavailable as e:
        pytest.skip(f"PostgreSQL server unavailable: {e}")
    yield cluster
    cluster.stop()


def test_voters_through_a_postgresql_outage_lose_nothing_and_see_no_500(own_pg):
    rep = measure_arena_outage(own_pg.url, own_pg.pause, own_pg.resume, workers=2, voters=10, duration_s=16.0,
                               outage_at_s=4.0, outage_s=5.0)
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
def test_the_page_says_the_database_is_away_and_sends_the_vote_when_it_is_back(chromium, own_pg, uoc_tabletop,
                                                                              tmp_path):
    """In Chromium: with PostgreSQL stopped, the page shows a readable message (not "HTTP 500") and
    sends the same vote again after Retry-After; once the server is back the vote is stored once and
    the names are revealed."""
    from pointlab.sim_mock.model_server import serve_in_thread
    from pointlab.ui.arena import ArenaSettings, create_arena_app
    from pointlab.ui.arena.store import ArenaStore

    from .helpers import NAME_A, NAME_B, curated, start_models

    agents, stop_models = start_models(tmp_path)
    app = create_arena_app(agents, db_path=own_pg.url, curated_dir=curated(uoc_tabletop, tmp_path),
                           settings=ArenaSettings(seed=1, bootstrap_rounds=20))
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
            page.wait_for_function("document.getElementById('status').textContent.includes('unreachable')",
                                   timeout=20000)
            shown = page.inner_text("#status")
            assert "database is unreachable for the moment; sending your vote again in 3 s" in shown, shown
            assert page.inner_text("#name-A") == ""
            own_pg.resume()
            resumed = True
        finally:
            if not resumed:
                own_pg.resume()
        page.wait_for_function("document.getElementById('name-A').textContent.length > 0", timeout=30000)
        assert {page.inner_text("#name-A").removeprefix("Model A was "),
                page.inner_text("#name-B").removeprefix("Model B was ")} == {NAME_A, NAME_B}
        assert page.inner_text("#status") == "Vote recorded. Start another battle!"
    finally:
        stop()
        stop_models()
    store = ArenaStore(own_pg.url)
    try:
        assert [v["winner"] for v in store.votes(include_flagged=True)] == ["model_b"]
    finally:
        store.close()
