"""The participant page of ``pointlab act`` served by a study server (``pointlab act server``), in
Chromium: one participant runs a whole two-agent study on a station joined over Zenoh, by clicking.

What is checked against the store, not the page: both trials stored with the station's name and the
participant's judgements, both questionnaires. What is checked of the page: the live view shows the
station's frames, the judgement shows the before/after pair the station delivered, every request goes
to the server (none to a station) and no agent name reaches the page.
"""

from __future__ import annotations

import httpx
import pytest

from pointlab.benchmark.serving import serve_in_thread
from pointlab.bridge.stations.journal import Journal
from pointlab.bridge.stations.server import StudyServer
from pointlab.bridge.stations.station_node import StationNode
from pointlab.bridge.stations.wire import Offer
from pointlab.bridge.study.store import Store
from pointlab.sim_mock.scripted_station import ScriptedWorld
from pointlab.ui.serve import free_port
from pointlab.ui.stations_app import create_server_app
from tests.bridge.stations.support import wait_for

pytestmark = pytest.mark.slow

TOKEN = "operator-token-pages"
AGENTS = ["sim-oracle", "sim-noisy"]


@pytest.fixture
def served(tmp_path):
    """A study server (SQLite) with one scripted station joined over Zenoh on 127.0.0.1."""
    store = Store(tmp_path / "study.sqlite")
    endpoint = f"tcp/127.0.0.1:{free_port()}"
    server = StudyServer(store, listen=[endpoint])
    root, stop = serve_in_thread(create_server_app(server, operator_token=TOKEN), lifespan="on")
    base = root.removesuffix("/v1")
    world = ScriptedWorld(trial_delay_s=0.2, motion_s=0.2)
    offer = Offer(name="s1", scene="tabletop", arm="sim", camera="sim", sim=True, agents=world.agent_names)
    node = StationNode(world.station(), offer, Journal(tmp_path / "s1.sqlite", "s1"), connect=[endpoint], live_hz=5)
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        wait_for(
            lambda: (
                [s["status"] for s in httpx.get(f"{base}/api/console", headers=auth).json()["stations"]] == ["idle"]
            ),
            30,
            "the station to join",
        )
        yield base, store, auth
    finally:
        node.close()
        stop()
        store.close()


def test_a_participant_runs_a_study_on_a_station_from_the_page(served, chromium):
    base, store, auth = served
    study = httpx.post(
        f"{base}/api/studies",
        headers=auth,
        json={"agents": AGENTS, "trials_per_agent": 1, "participants": 1, "reveal_low_s": 0, "reveal_high_s": 0},
    ).json()
    token = study["tokens"][0]
    page = chromium.new_page(viewport={"width": 1200, "height": 1000})
    requests: list[str] = []
    bodies: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("websocket", lambda ws: requests.append(ws.url))
    page.on(
        "response",
        lambda r: bodies.append(r.url) if "image/" in r.headers.get("content-type", "") else bodies.append(r),
    )
    try:
        page.goto(f"{base}/p/{token}")
        for block in range(len(AGENTS)):
            page.click("#start-block")
            page.wait_for_selector("#instruction:enabled", timeout=30_000)
            page.fill("#instruction", "pick up the red block")
            page.click("#send")
            page.wait_for_selector("#judge-succeeded:visible", timeout=30_000)
            # the before/after pair the station delivered with its record
            page.wait_for_function("document.getElementById('after').naturalWidth > 0", timeout=30_000)
            assert page.evaluate("window.__pl.judging") is not None
            page.click("#judge-succeeded" if block == 0 else "#judge-failed")
            page.wait_for_selector("#sus-box:visible", timeout=30_000)
            for i in range(1, 11):
                page.check(f"input[name=sus{i}][value='{4 if i % 2 else 2}']")
            page.click("#sus-submit")
            if block == 0:
                page.wait_for_selector("#setup-box:visible", timeout=30_000)
        page.wait_for_selector("#done-box:visible", timeout=30_000)
        assert page.evaluate("window.__pl.frames") > 0  # the station's live view reached the page
        texts = [b.text() for b in bodies if not isinstance(b, str)]
    finally:
        page.close()

    rows = store.trials(study_id=study["study_id"])
    assert [(r["station"], r["judgement"]) for r in sorted(rows, key=lambda r: r["block"])] == [
        ("s1", "succeeded"),
        ("s1", "failed"),
    ]
    surveys = store.surveys(participant_id=rows[0]["participant_id"])
    # answers 4,2,4,2,...: odd items (4-1)=3 each, even items (5-2)=3 each -> 30 x 2.5 = 75
    assert sorted((s["block"], s["score"]) for s in surveys) == [(0, 75.0), (1, 75.0)]
    # (blob: is the judgement's after-frame, already fetched from the server, shown from memory)
    assert requests and all(u.startswith((base, "data:", "blob:")) for u in requests), requests
    assert not any(u.startswith("ws") for u in requests)
    assert not any(name in t for t in texts for name in AGENTS)
