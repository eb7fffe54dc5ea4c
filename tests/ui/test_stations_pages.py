"""The participant page of ``pointlab act`` served by a study server (``pointlab act server``), in
Chromium: one participant runs a whole two-agent study on a station joined over Zenoh, by clicking.

What is checked against the store, not the page: both trials stored with the station's name and the
participant's judgements, both questionnaires. What is checked of the page: the live view shows the
station's frames, the judgement shows the before/after pair the station delivered, every request goes
to the server (none to a station) and no agent name reaches the page.
"""

from __future__ import annotations

import time

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
    node = StationNode(
        world.station(), offer, Journal(tmp_path / "s1.sqlite", "s1"), connect=[endpoint], live_hz=5, human=world
    )
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


def _judge_and_survey(page, judgement: str, answer_of, block: int) -> None:
    """Judge the shown trial, answer the ten SUS items (``answer_of(item)``), submit; after the first
    of the two blocks, wait for the next block's Start."""
    page.click(f"#judge-{judgement}")
    page.wait_for_selector("#sus-box:visible", timeout=30_000)
    for i in range(1, 11):
        page.check(f"input[name=sus{i}][value='{answer_of(i)}']")
    page.click("#sus-submit")
    if block == 0:
        page.wait_for_selector("#setup-box:visible", timeout=30_000)


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
            _judge_and_survey(page, "succeeded" if block == 0 else "failed", lambda i: 4 if i % 2 else 2, block)
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


def test_the_console_creates_a_study_and_its_human_reference_answers_a_station_s_request(served, chromium):
    """The operator creates a study on the console (agents human and sim-oracle, one trial each), opens
    the invitation link it lists, and, when the participant reaches the human block, answers the
    station's request by clicking the centre of the image on the console: for the 320 x 240 frame
    that is (320/2 - 0.5, 240/2 - 0.5) = (159.5, 119.5) in pixels (docs/ui.md, "click mapping")."""
    base, store, _auth = served
    console = chromium.new_page(viewport={"width": 1200, "height": 1400})
    page = chromium.new_page(viewport={"width": 1200, "height": 1000})
    try:
        console.goto(f"{base}/stations#token={TOKEN}")
        console.fill("#study-agents", "human, sim-oracle")
        console.fill("#study-trials", "1")
        console.fill("#study-reveal-low", "0")  # (the default 10-26 s would only make the test wait)
        console.fill("#study-reveal-high", "0")
        console.click("#create-study")
        link = console.locator("#invites a").first
        link.wait_for(timeout=30_000)
        page.goto(link.inner_text())
        human_points = None
        for block in range(2):
            page.click("#start-block")
            page.wait_for_selector("#instruction:enabled", timeout=30_000)
            page.fill("#instruction", "pick up the red block")
            page.click("#send")
            # the human block: its request reaches the console; other blocks are answered by the model
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not page.is_visible("#judge-succeeded"):
                if console.is_visible("#human-img"):
                    console.wait_for_function("document.getElementById('human-img').naturalWidth > 0")
                    console.click("#human-img")
                    human_points = block
                time.sleep(0.1)
            page.wait_for_selector("#judge-succeeded:visible", timeout=30_000)
            _judge_and_survey(page, "succeeded", lambda i: 3, block)
        page.wait_for_selector("#done-box:visible", timeout=30_000)
        assert "human" not in page.content()  # blinded: the page names aliases only
    finally:
        page.close()
        console.close()
    assert human_points is not None
    (human,) = [r for r in store.trials() if r["agent"] == "human"]
    (u, v), *_ = human["points_px"]
    assert abs(u - 159.5) <= 1.0 and abs(v - 119.5) <= 1.0, (u, v)
    assert human["outcome"] == "succeeded" and human["station"] == "s1"


def test_a_bad_human_reference_answer_is_refused_and_the_request_stays_open(served):
    """Through the server to the station: a point outside the 320 x 240 frame (u = 319.5 is past the
    last pixel centre's half-pixel edge, 319.5 excluded) is 422, NaN 422, an unknown request 404, an
    unknown verb 422, no token 401; the request stays open and the good click then answers it."""
    import concurrent.futures

    base, store, auth = served
    study = httpx.post(
        f"{base}/api/studies",
        headers=auth,
        json={"agents": ["human"], "trials_per_agent": 1, "reveal_low_s": 0, "reveal_high_s": 0},
    ).json()
    p = f"{base}/api/p/{study['tokens'][0]}"
    assert httpx.post(f"{p}/block", timeout=30).status_code == 200
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        trial = pool.submit(httpx.post, f"{p}/trial", json={"instruction": "pick up the red block"}, timeout=60)
        (req,) = wait_for(lambda: httpx.get(f"{base}/api/console/human", headers=auth).json(), 30, "the request")
        url = f"{base}/api/console/human/s1/{req['request_id']}"
        assert (req["width"], req["height"]) == (320, 240)
        assert httpx.post(f"{url}/answer", headers=auth, json={"u": 319.5, "v": 10}).status_code == 422
        assert httpx.post(f"{url}/answer", headers=auth, content=b'{"u": NaN, "v": 1}').status_code == 422
        assert httpx.post(f"{url}/answer", headers=auth).status_code == 422  # no point
        assert httpx.post(f"{url}/fly", headers=auth).status_code == 422
        assert httpx.post(f"{url}/answer", json={"u": 1, "v": 1}).status_code == 401
        assert (
            httpx.post(f"{base}/api/console/human/s1/nope/answer", headers=auth, json={"u": 1, "v": 1}).status_code
            == 404
        )
        assert httpx.post(f"{base}/api/console/human/s9/x/decline", headers=auth).status_code == 404
        assert httpx.get(f"{base}/api/console/human", headers=auth).json()[0]["request_id"] == req["request_id"]
        assert httpx.post(f"{url}/answer", headers=auth, json={"u": 319.4, "v": 239.4}).status_code == 200
        assert trial.result(60).status_code == 200
    (row,) = store.trials(study_id=study["study_id"])
    assert [list(p) for p in row["points_px"]] == [[319.4, 239.4]]  # (the page is shown it rounded)


def test_a_pairwise_study_runs_on_a_station_for_two_participants(served, chromium):
    """The console creates a pairwise study (two episodes each, two participants); each participant's
    episodes run both halves on the one station it holds (the second waits in line until the first's
    last comparison frees it), and each compares the two halves on the page."""
    base, store, _auth = served
    console = chromium.new_page(viewport={"width": 1200, "height": 1400})
    try:
        console.goto(f"{base}/stations#token={TOKEN}")
        console.fill("#study-agents", ", ".join(AGENTS))
        console.select_option("#study-mode", "pairwise")
        assert console.inner_text("#study-trials-label") == "Episodes per participant"
        console.fill("#study-trials", "2")
        console.fill("#study-participants", "2")
        console.fill("#study-reveal-low", "0")
        console.fill("#study-reveal-high", "0")
        console.click("#create-study")
        console.locator("#invites a").nth(1).wait_for(timeout=30_000)
        links = console.eval_on_selector_all("#invites a", "els => els.map(e => e.href)")
    finally:
        console.close()
    (study,) = store.studies()
    assert (study["mode"], study["trials_per_agent"]) == ("pairwise", 2)
    pages = [chromium.new_page(viewport={"width": 1200, "height": 1000}) for _ in links]
    try:
        for page, link in zip(pages, links):
            page.goto(link)
        for k, page in enumerate(pages):
            for e in range(2):
                page.wait_for_selector("#instruction:enabled", timeout=30_000)
                page.fill("#instruction", "pick up the red block")
                page.click("#send")
                if k == 0 and e == 0:  # the other participant asks meanwhile: it is put in line for the station
                    pages[1].wait_for_selector("#instruction:enabled", timeout=30_000)
                    pages[1].fill("#instruction", "pick up the red block")
                    pages[1].click("#send")
                    pages[1].wait_for_function(
                        "document.getElementById('error').textContent.includes('waiting for a free robot station')",
                        timeout=30_000,
                    )
                    pages[1].wait_for_function(
                        "document.getElementById('queue').textContent.includes('number 1 in line')", timeout=30_000
                    )
                page.wait_for_selector("#compare-box:visible", timeout=30_000)
                for letter in "ab":
                    page.wait_for_function(
                        f"document.getElementById('after-{letter}').naturalWidth > 0", timeout=30_000
                    )
                page.check("input[name=preference][value='A']")
                page.fill("#progress-a", "100")
                page.fill("#progress-b", "25")
                page.click("#compare-submit")
                page.wait_for_selector("#compare-box", state="hidden", timeout=30_000)
            page.wait_for_selector("#done-box:visible", timeout=30_000)
            body = page.inner_text("body") + str(page.evaluate("JSON.stringify(window.__pl.messages)"))
            assert not any(name in body for name in AGENTS)
    finally:
        for page in pages:
            page.close()
    eps = store.episodes(study_id=study["id"])
    assert len(eps) == 4 and all(e["preference"] == "A" and e["progress_b"] == 25 for e in eps)
    for e in eps:
        halves = [store.trial(e["trial_a_id"]), store.trial(e["trial_b_id"])]
        assert [h["agent"] for h in halves] == [e["agent_a"], e["agent_b"]] and {e["agent_a"], e["agent_b"]} == set(
            AGENTS
        )
        assert all(h["station"] == "s1" for h in halves)
        # A's progress 100 made its half a success, B's 25 a failure
        assert [h["outcome"] for h in halves] == ["succeeded", "failed"]
