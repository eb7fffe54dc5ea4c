"""Point-Battle in Chromium: two battles (curated image, upload), votes, the leaderboard; model names
never reach the page or the websocket before the vote."""

from __future__ import annotations

import json

import pytest

from pointlab.sim_mock.model_server import serve_in_thread
from pointlab.ui.arena import ArenaSettings, create_arena_app

from .helpers import NAME_A, NAME_B, curated, start_models

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def arena_url(uoc_tabletop, tmp_path):
    agents, stop_models = start_models(tmp_path)
    app = create_arena_app(
        agents,
        db_path=tmp_path / "arena.db",
        curated_dir=curated(uoc_tabletop, tmp_path),
        settings=ArenaSettings(seed=1, bootstrap_rounds=20),
    )
    url, stop = serve_in_thread(app)
    yield url.removesuffix("/v1"), app
    stop()
    stop_models()


def _leaks(texts: list[str]) -> list[str]:
    return [t[:200] for t in texts if NAME_A in t or NAME_B in t]


def test_two_battles_votes_leaderboard_and_no_name_before_vote(chromium, arena_url, uoc_tabletop, tmp_path):
    base, app = arena_url
    ctx = chromium.new_context()
    page = ctx.new_page()
    seen: list[str] = []  # websocket frames the page received
    responses: list = []  # every HTTP response; bodies are read outside the event callback

    page.on("response", lambda r: responses.append(r))
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: seen.append(str(payload))))

    def received() -> list[str]:
        out = list(seen)
        for r in responses:
            if r.status < 300 and not r.headers.get("content-type", "").startswith("image/"):
                out.append(r.text() + json.dumps(r.headers))
        return out

    page.goto(base + "/")
    page.wait_for_selector("#gallery img")

    def battle(choice: str, upload: str | None = None) -> tuple[str, str]:
        if upload:
            page.set_input_files("#upload", upload)
        else:
            page.click("#gallery img >> nth=0")
        page.fill("#instruction", "Point to the teal bowl")
        page.click("#start")
        page.wait_for_selector('#votes button[data-choice="A"]:not([disabled])', timeout=20000)
        # both answers drawn, vote possible: still no name anywhere
        assert len(seen) >= 3  # answer A, answer B, ready
        assert _leaks(received()) == []
        assert _leaks([page.content(), page.inner_text("body")]) == []
        answers = page.evaluate("JSON.stringify(state.answers)")
        assert json.loads(answers).keys() == {"A", "B"}
        page.click(f'#votes button[data-choice="{choice}"]')
        page.wait_for_function("document.getElementById('name-A').textContent.length > 0")
        return page.inner_text("#name-A"), page.inner_text("#name-B")

    a1, b1 = battle("A")
    assert {a1.removeprefix("Model A was "), b1.removeprefix("Model B was ")} == {NAME_A, NAME_B}
    # the reveal came in the vote response, and only then
    assert _leaks(received())
    seen.clear()
    responses.clear()

    up = tmp_path / "upload.png"
    up.write_bytes((uoc_tabletop / "000004-color.png").read_bytes())
    a2, b2 = battle("both_good", upload=str(up))
    assert {a2.removeprefix("Model A was "), b2.removeprefix("Model B was ")} == {NAME_A, NAME_B}

    # the store holds both battles with full records
    votes = app.state.arena.store.votes()
    assert [v["winner"] for v in votes] == ["model_a", "both_good"]
    rec = app.state.arena.store.battle(votes[1]["battle_id"])
    assert rec["image_source"] == "upload" and rec["answer_a"]["raw_text"] in ("[120, 90]", "[400, 300]")

    page.goto(base + "/leaderboard")
    page.wait_for_selector("#board tbody tr >> nth=1")
    rows = page.locator("#board tbody tr").all_inner_texts()
    winner = a1.removeprefix("Model A was ")
    assert winner in rows[0]  # battle 1 winner is first; the tie is excluded by default
    assert page.inner_text("#status") == "1 of 2 votes counted"
    page.select_option("#ties", "half")
    page.wait_for_function("document.getElementById('status').textContent.startsWith('2 of 2 votes')")
    ctx.close()


def test_human_baseline_page_clicks_are_scored(chromium, uoc_tabletop, tmp_path):
    import numpy as np
    from PIL import Image

    from pointlab.benchmark.pointbench import BenchItem

    agents, stop_models = start_models(tmp_path)
    mask = np.zeros((480, 640), np.uint8)
    mask[310:436, 166:302] = 255  # box around the teal bowl of frame 000000
    Image.fromarray(mask).save(tmp_path / "bowl.png")
    items = [
        BenchItem(
            "bowl",
            uoc_tabletop / "000000-color.png",
            "Point to the leftmost bowl.",
            "spatial",
            640,
            480,
            tmp_path / "bowl.png",
        ),
        BenchItem(
            "bowl2",
            uoc_tabletop / "000000-color.png",
            "Point to the leftmost bowl again.",
            "spatial",
            640,
            480,
            tmp_path / "bowl.png",
        ),
    ]
    app = create_arena_app(agents, db_path=tmp_path / "arena.db", bench_items=items)
    url, stop = serve_in_thread(app)
    try:
        page = chromium.new_page()
        page.goto(url.removesuffix("/v1") + "/human")
        page.wait_for_function("document.getElementById('query').textContent.includes('leftmost bowl.')")
        page.wait_for_function("document.getElementById('human-canvas').width === 640")
        box = page.locator("#human-canvas").bounding_box()
        s = box["width"] / 640  # CSS pixels per image pixel

        def click(u, v):
            # image pixel (u, v) has its centre at CSS offset (u + 0.5) * s
            page.click("#human-canvas", position={"x": (u + 0.5) * s, "y": (v + 0.5) * s})

        click(230, 380)  # inside the bowl box
        page.click("#submit")
        # no correctness feedback: only "Saved."
        page.wait_for_function("document.getElementById('status').textContent === 'Saved.'")
        page.wait_for_function("document.getElementById('query').textContent.includes('again')")
        assert "Correct" not in page.inner_text("body")
        page.click("#submit")  # nothing clicked: asks first, stores nothing
        assert page.is_visible("#confirm")
        assert len(app.state.arena.store.human_clicks()) == 1
        page.click("#confirm-yes")
        page.wait_for_function("document.getElementById('query').textContent.startsWith('All items done')")
        assert app.state.arena.store.human_clicks()[1]["points"] == []
        page.click("#back")  # redo the empty answer
        page.wait_for_function("document.getElementById('query').textContent.includes('again')")
        click(600, 50)
        page.click("#submit")
        page.wait_for_function("document.getElementById('query').textContent.startsWith('All items done')")
        clicks = app.state.arena.store.human_clicks()
        assert [c["id"] for c in clicks] == ["bowl", "bowl2"]
        assert clicks[0]["points"][0] == pytest.approx([230, 380], abs=0.6)
        assert clicks[1]["points"][0] == pytest.approx([600, 50], abs=0.6) and clicks[1]["reason"] == "miss"
        # the image fits the 800 px tall window with the buttons in view
        page.set_viewport_size({"width": 1280, "height": 800})
        page.click("#back")
        page.wait_for_function("document.getElementById('human-canvas').width === 640")
        assert page.locator("#submit").bounding_box()["y"] + 30 < 800
        page.close()
    finally:
        stop()
        stop_models()
