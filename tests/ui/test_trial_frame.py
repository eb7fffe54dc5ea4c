"""The participant sees the agent's points on the frame the agent saw (issue 2: "the agent's points
drawn on the frame"), not on the live view that moved on: ``GET /api/me/trials/{id}/frame`` and the
participant page freezing that frame until the trial is judged. Also: typed markup stays text on the
participant, operator and results pages (no script injection through an instruction)."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from pointlab.bridge.study.store import Store
from pointlab.sim_mock.scripted_station import ScriptedWorld
from pointlab.ui.app import UiSettings, create_app

from .test_api import H, NO_WAIT, OP, _invite, _study, recv, start_block


@pytest.fixture
def env(tmp_path):
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0), "sim-noisy": None})
    store = Store(tmp_path / "frame.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=20, status_interval_s=0.05)
    )
    with TestClient(app) as client:
        yield client, world, store, app
    store.close()


def test_frame_route_returns_only_the_callers_trial_frame(env):
    client, world, store, _ = env
    sid = _study(client, agents=["sim-oracle"])
    a, b = _invite(client, sid), _invite(client, sid)
    with client.websocket_connect(f"/ws/participant?token={a['token']}") as ws:
        recv(ws, "state")
        start_block(ws)
        ws.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
        res = recv(ws, "trial_result")
    assert res["has_after"]
    uid = store.trial(res["trial_id"])["trial_uid"]
    r = client.get(f"/api/me/trials/{res['trial_id']}/frame", headers={"Authorization": f"Bearer {a['token']}"})
    assert r.status_code == 200 and r.headers["content-type"] == "image/jpeg"
    assert r.content == store.trial_frame(uid, "before") and r.content[:2] == b"\xff\xd8"
    after = client.get(
        f"/api/me/trials/{res['trial_id']}/frame?which=after", headers={"Authorization": f"Bearer {a['token']}"}
    )
    assert after.status_code == 200 and after.content == store.trial_frame(uid, "after") != r.content
    assert (
        client.get(
            f"/api/me/trials/{res['trial_id']}/frame?which=during", headers={"Authorization": f"Bearer {a['token']}"}
        ).status_code
        == 422
    )
    assert "no-store" in r.headers["cache-control"]
    # another participant, the operator, no token, an unknown trial
    assert (
        client.get(
            f"/api/me/trials/{res['trial_id']}/frame", headers={"Authorization": f"Bearer {b['token']}"}
        ).status_code
        == 404
    )
    assert client.get(f"/api/me/trials/{res['trial_id']}/frame", headers=H).status_code == 403
    assert client.get(f"/api/me/trials/{res['trial_id']}/frame").status_code == 401
    assert client.get("/api/me/trials/999/frame", headers={"Authorization": f"Bearer {a['token']}"}).status_code == 404
    # after a restart the frames come from the store: a new app over the same database serves them
    station = ScriptedWorld({"sim-oracle": (100.0, 80.0)}).parts(store)
    with TestClient(create_app(station, store, operator_token=OP)) as again:
        r2 = again.get(
            f"/api/me/trials/{res['trial_id']}/frame?which=after", headers={"Authorization": f"Bearer {a['token']}"}
        )
        assert r2.status_code == 200 and r2.content == after.content


XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


@pytest.mark.browser
@pytest.mark.slow
def test_judgement_shows_before_with_points_beside_after_and_markup_as_text(chromium, tmp_path):
    from pointlab.sim_mock.model_server import serve_in_thread

    world = ScriptedWorld({"sim-oracle": (100.0, 80.0)}, trial_delay_s=0.3)
    store = Store(tmp_path / "page.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=20, status_interval_s=0.1)
    )
    url, stop = serve_in_thread(app)
    base = url.removesuffix("/v1")
    ctx = chromium.new_context(viewport={"width": 980, "height": 720})
    try:
        op = httpx.Client(base_url=base, headers=H)
        sid = op.post(
            "/api/studies", json={"agents": ["sim-oracle", "human"], "trials_per_agent": 1, **NO_WAIT}
        ).json()["id"]
        inv = op.post(f"/api/studies/{sid}/participants", json={}).json()
        assert inv["agent_order"] == ["sim-oracle", "human"]
        page = ctx.new_page()
        page.goto(inv["url"])
        page.click("#start-block")
        page.wait_for_selector("#trial-box:not(.hidden)")
        assert page.get_attribute("#instruction", "placeholder") == "e.g. pick up the red block"
        page.fill("#instruction", XSS)
        page.click("#send")
        page.wait_for_selector("#judge-box:not(.hidden)", timeout=15000)
        trial_id = op.get(f"/api/results?study_id={sid}").json()["trials"][0]["id"]
        page.wait_for_function(f"window.__pl.judging === {trial_id}", timeout=10000)
        page.wait_for_function("document.querySelector('#after').naturalWidth === 320", timeout=10000)
        # the live view keeps moving while the judgement is on screen (the scripted camera draws a counter)
        frames0, live0 = (
            page.evaluate("window.__pl.frames"),
            page.evaluate("document.querySelector('#live').toDataURL()"),
        )
        page.wait_for_timeout(600)
        assert page.evaluate("window.__pl.frames") > frames0 + 3
        assert page.evaluate("document.querySelector('#live').toDataURL()") != live0
        # the agent's first point is drawn in red at (100, 80) + 0.5 on the 320x240 "before" frame
        page.wait_for_function(
            "(() => { const d = document.querySelector('#before').getContext('2d')"
            ".getImageData(100 + 0.5 + 8, 80, 1, 1).data; return d[0] > 200 && d[1] < 90; })()",
            timeout=10000,
        )
        assert page.inner_text("#judge-question") == "Was your instruction carried out?"
        # the typed markup is shown as text; the status of this trial does not linger into the next
        assert XSS in page.inner_text("#judge-text")
        page.click("#judge-succeeded")
        page.wait_for_selector("#sus-box:not(.hidden)")
        page.wait_for_function("window.__pl.judging === null")
        for i in range(1, 11):
            page.check(f"input[name=sus{i}][value='3']")
        page.click("#sus-submit")
        page.wait_for_selector("#setup-box:not(.hidden)")
        assert page.inner_text("#start-block") == "Start Agent 2"
        page.click("#start-block")
        # block 2 = human: the operator console shows the instruction while the request is open
        page.wait_for_selector("#trial-box:not(.hidden)")
        assert page.inner_text("#trial-status") == ""
        page.fill("#instruction", XSS)
        page.click("#send")
        opage = ctx.new_page()
        opage.goto(f"{base}/operator#token={OP}")
        opage.wait_for_selector("#human-box:not(.hidden)", timeout=15000)
        assert XSS in opage.inner_text("#human-instruction") and XSS in opage.inner_text("#current")
        # a click is wanted: said visibly (the action in capitals, the page title) and once audibly
        assert "PICK" in opage.inner_text("#human-title") and opage.title().startswith("CLICK to pick")
        assert opage.evaluate("window.__pl.alerts") == 1
        req = op.get("/api/human-requests").json()[0]
        assert op.post(f"/api/human-requests/{req['request_id']}/answer", json={"u": 10, "v": 10}).status_code == 200
        page.wait_for_selector("#judge-box:not(.hidden)", timeout=15000)
        rpage = ctx.new_page()
        rpage.goto(f"{base}/results#token={OP}&study={sid}")
        rpage.wait_for_function("document.querySelectorAll('#trials tr').length === 2")
        assert rpage.inner_text("#trials").count(XSS) == 2
        time.sleep(0.2)  # a hold period for any injected script to run (absence cannot be polled for)
        for p in (page, opage, rpage):
            assert p.evaluate("window.__xss") is None, p.url
        op.close()
    finally:
        ctx.close()
        stop()
        store.close()
