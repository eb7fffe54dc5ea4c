"""Blinding: nothing a participant's browser receives (HTML, JS, CSS, JSON, websocket messages,
headers) names an agent config, a model id, a point format or the agent kind. Issue 2: "Agents
appear only as Agent 1, 2, 3 ... nothing sent to a participant's browser names a model"."""

from __future__ import annotations

import base64
import json
import re
import time

import httpx
import pytest

from .act_live import decode_jpeg, live_act

pytestmark = [pytest.mark.browser, pytest.mark.ros, pytest.mark.slow]


def _secret_words(agents_config=None) -> set[str]:
    from pointlab.benchmark.agents_config import load_agents_config

    words = {"oracle", "noisy", "openai"}
    for a in load_agents_config(agents_config).agents:
        words |= {a.name, a.kind, a.point_format}
        if a.model:
            words.add(a.model)
    return {w.lower() for w in words if w}


def _leaks(blob: str | bytes, words: set[str]) -> list[str]:
    text = blob.decode("latin-1") if isinstance(blob, bytes) else blob
    low = text.lower()
    return sorted(w for w in words if re.search(r"(?<![a-z0-9])" + re.escape(w) + r"(?![a-z0-9])", low))


def test_leak_detector_finds_names():
    words = _secret_words()
    assert {"sim-oracle", "sim-noisy", "human", "molmo", "gemini"} <= words
    assert _leaks('{"current": {"agent": "sim-noisy"}}', words) == ["noisy", "sim-noisy"]
    assert _leaks(b"...HUMAN...", words) == ["human"]
    assert _leaks("Agent 1 carried out the pick", words) == []


def test_participant_browser_receives_no_agent_names(chromium, tmp_path, ros_env):
    from pointlab.sim_mock.oracle import SceneOracle

    words = _secret_words()
    with live_act(tmp_path / "blind.sqlite", ros_env) as live:
        op = httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {live.operator_token}"})
        # a short reveal range keeps the test quick; the rule is the same for any range
        sid = op.post(
            "/api/studies",
            json={
                "agents": ["sim-oracle", "sim-noisy", "human"],
                "trials_per_agent": 1,
                "reveal_low_s": 2,
                "reveal_high_s": 4,
            },
        ).json()["id"]
        inv = op.post(f"/api/studies/{sid}/participants", json={}).json()
        # The operator side does name the agents (so the detector has something to find there).
        assert "sim-oracle" in _leaks(op.get(f"/api/studies/{sid}/participants").text, words)

        ctx = chromium.new_context(viewport={"width": 980, "height": 720})
        responses, ws_text, ws_binary = [], [], []
        ctx.on("response", lambda r: responses.append(r))
        page = ctx.new_page()

        def on_ws(ws):
            def got(payload):
                (ws_binary if isinstance(payload, bytes) else ws_text).append(payload)

            ws.on("framereceived", got)

        page.on("websocket", on_ws)
        page.goto(inv["url"])
        world = live.session.world.sim
        oracle = SceneOracle(world)
        picks = iter(["pick up the red cube", "pick up the yellow block", "pick up the green cube"])
        for block in range(3):
            page.wait_for_selector("#setup-box:not(.hidden)", timeout=20000)
            page.click("#start-block")
            page.wait_for_selector("#trial-box:not(.hidden)", timeout=20000)
            text = next(picks) if page.inner_text("#action") == "pick" else "put it in the blue bowl"
            page.fill("#instruction", text)
            page.click("#send")
            if block == 2:  # human reference: answered by the operator API with the true pixel
                deadline = time.monotonic() + 20
                while not (reqs := op.get("/api/human-requests").json()):
                    assert time.monotonic() < deadline, "no human request"
                    time.sleep(0.05)
                u, v = oracle.points(text, decode_jpeg(base64.b64decode(reqs[0]["jpeg_b64"])))[0]
                assert (
                    op.post(f"/api/human-requests/{reqs[0]['request_id']}/answer", json={"u": u, "v": v}).status_code
                    == 200
                )
            # a completed motion is judged; a refusal is failed at once and only told (no question)
            page.wait_for_selector("#judge-box:not(.hidden), #sus-box:not(.hidden)", timeout=60000)
            if page.is_visible("#judge-box"):
                page.click("#judge-failed" if block == 1 else "#judge-succeeded")
            page.wait_for_selector("#sus-box:not(.hidden)")
            for i in range(1, 11):
                page.check(f"input[name=sus{i}][value='3']")
            page.click("#sus-submit")
            page.wait_for_function(
                f"document.querySelector('#notice').textContent.includes('Agent {block + 1} are saved')"
            )
        page.wait_for_selector("#done-box:not(.hidden)")
        # The participant's own JSON API, fetched from the page (so it is captured too)
        me = page.evaluate(
            "t => fetch('/api/me', {headers: {Authorization: 'Bearer ' + t}}).then(r => r.text())", inv["token"]
        )
        assert '"kind": "done"' in me or '"kind":"done"' in me
        page.wait_for_timeout(300)

        bodies = []
        for r in responses:
            try:
                bodies.append((r.url, r.body()))
            except Exception:  # a body the browser discarded (e.g. a redirect) has nothing to read
                continue
            bodies.append((r.url + " [headers]", repr(r.all_headers())))
        trial_rows = live.store.trials(study_id=sid)
        ctx.close()
        op.close()

    # The capture saw the whole session: pages, scripts, the blinded aliases, the live view.
    urls = " ".join(u for u, _ in bodies)
    assert "/p/" in urls and "participant.js" in urls and "common.js" in urls
    joined = "\n".join(t for t in ws_text)
    for alias in ("Agent 1", "Agent 2", "Agent 3"):
        assert alias in joined
    assert '"trial_result"' in joined and '"sus_saved"' in joined and len(ws_binary) > 10
    leaks = {}
    for url, body in bodies:
        if found := _leaks(body, words):
            leaks[url] = found
    for i, t in enumerate(ws_text):
        if found := _leaks(t, words):
            leaks[f"ws text #{i}: {t[:120]}"] = found
    for i, b in enumerate(ws_binary):
        if found := _leaks(b, words):
            leaks[f"ws binary #{i}"] = found
    assert leaks == {}

    # The message stream looks the same for every agent, the human reference included: the same
    # fields with the same types, integer pixels (no model's native grid, no half-pixel clicks).
    results = [json.loads(t) for t in ws_text if '"type": "trial_result"' in t or '"type":"trial_result"' in t]
    assert [r["alias"] for r in results] == ["Agent 1", "Agent 2", "Agent 3"]
    shapes = [{k: type(v).__name__ for k, v in r.items() if k not in ("points_px", "judgement")} for r in results]
    assert shapes[0] == shapes[1] == shapes[2], shapes
    for r in results:
        assert all(isinstance(c, int) for p in r["points_px"] for c in p), r["points_px"]
    # and no answer took effect before its trial's drawn reveal time, drawn from the study's range
    for t in trial_rows:
        tm = t["timings_s"]
        assert 2.0 <= tm["reveal"] <= 4.0 and tm["total"] >= tm["reveal"], tm
        if "to_motion" in tm:
            assert tm["to_motion"] >= tm["reveal"] - 1e-3, tm
