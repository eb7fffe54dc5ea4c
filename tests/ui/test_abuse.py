"""Hostile input to the web app (issue 2 standard: bad input gets a clear error, never a crash, never
a robot motion): ids past SQLite's integer range, loosely typed study parameters, a burst of
instructions, other participants' trial frames. Against the scripted world, no ROS, no browser."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from pointlab.bridge.study.store import Store
from pointlab.sim_mock.scripted_station import ScriptedWorld
from pointlab.ui.app import UiSettings, create_app

from .test_api import H, NO_WAIT, OP, _invite, _study, recv, start_block

HUGE = 10**23  # past SQLite's 64-bit INTEGER: the driver raises OverflowError if it reaches a query


@pytest.fixture
def env(tmp_path):
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0), "sim-noisy": None}, trial_delay_s=0.2)
    store = Store(tmp_path / "abuse.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=20, status_interval_s=0.05)
    )
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, world, store
    store.close()


def test_ids_past_the_integer_range_are_client_errors(env):
    client, world, store = env
    _study(client)
    for method, path in (
        ("GET", f"/api/results?study_id={HUGE}"),
        ("GET", f"/api/results.csv?study_id={HUGE}"),
        ("GET", f"/api/studies/{HUGE}/participants"),
        ("POST", f"/api/studies/{HUGE}/participants"),
        ("POST", f"/api/queue/{HUGE}/to-back"),
        ("GET", f"/api/results?study_id=-{HUGE}"),
    ):
        r = client.request(method, path, headers=H, json={} if method == "POST" else None)
        assert r.status_code in (404, 422), (path, r.status_code, r.text)


def test_study_parameters_are_strictly_typed(env):
    client, world, store = env
    for tpa in ("2", True, 2.0, None, []):
        r = client.post("/api/studies", json={"agents": ["sim-oracle"], "trials_per_agent": tpa, **NO_WAIT}, headers=H)
        assert r.status_code == 422, (tpa, r.text)
    for agents in (["sim-oracle", "SIM-ORACLE"], ["sim-oracle", ""], ["sim-oracle", "sim-oracle"]):
        r = client.post("/api/studies", json={"agents": agents, "trials_per_agent": 1, **NO_WAIT}, headers=H)
        assert r.status_code == 422, (agents, r.text)
    assert store.studies() == []


def test_a_burst_of_instructions_starts_one_trial(tmp_path):
    # Over a real server (uvicorn + a real websocket client): messages that arrive together are read
    # before the first trial's task runs, which the in-process TestClient does not reproduce.
    from websockets.sync.client import connect

    from pointlab.sim_mock.model_server import serve_in_thread

    world = ScriptedWorld({"sim-oracle": (100.0, 80.0)}, trial_delay_s=0.2)
    store = Store(tmp_path / "burst.sqlite")
    app = create_app(world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=5))
    url, stop = serve_in_thread(app)
    try:
        with TestClient(app) as client:  # the HTTP setup only; the websocket goes over the socket
            sid = _study(client, tpa=2, agents=["sim-oracle"])
            inv = _invite(client, sid)
        ws_url = url.removesuffix("/v1").replace("http://", "ws://") + f"/ws/participant?token={inv['token']}"
        with connect(ws_url) as ws:

            def next_json(want):
                while True:
                    m = ws.recv(timeout=10)
                    if isinstance(m, str) and json.loads(m)["type"] in want:
                        return json.loads(m)

            next_json(("state",))
            ws.send(json.dumps({"type": "start_block"}))
            next_json(("block_started",))
            for _ in range(5):  # a double click, a held Enter key, a script
                ws.send(json.dumps({"type": "instruction", "text": "pick up the ball"}))
            got = [next_json(("trial_started", "error")) for _ in range(5)]
            assert [m["type"] for m in got].count("trial_started") == 1, got
            assert all("busy" in m["error"] for m in got if m["type"] == "error"), got
            assert next_json(("trial_result",))["outcome"] == "done"
    finally:
        stop()
    assert world.calls == [("sim-oracle", "pick up the ball")] and len(store.trials()) == 1
    store.close()


@pytest.mark.slow  # a sim session over websockets: 1.5-3 s
def test_instructions_that_cannot_be_stored_are_refused_before_the_robot_moves(env):
    # A lone UTF-16 surrogate is valid JSON ("\ud800") but not UTF-8: the trial used to run (the arm
    # could move) and then fail to be stored. A NUL or other control character is refused as well.
    client, world, store = env
    sid = _study(client, tpa=2, agents=["sim-oracle"])
    inv = _invite(client, sid)
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        start_block(ws)
        for raw in ("pick up the cube \\ud800", "pick up \\u0000 the cube", "pick \\u001b[31m up"):
            ws.send_text('{"type": "instruction", "text": "' + raw + '"}')
            assert "cannot be used" in recv(ws, "error")["error"], raw
        # ordinary non-ASCII text (and markup, shown as text by the pages) is fine
        ws.send_text(json.dumps({"type": "instruction", "text": "hebe den Würfel 🟥 <b>hoch</b>"}))
        assert recv(ws, ("trial_result", "error"))["type"] == "trial_result"
    assert world.calls == [("sim-oracle", "hebe den Würfel 🟥 <b>hoch</b>")]
    assert [t["instruction"] for t in store.trials()] == ["hebe den Würfel 🟥 <b>hoch</b>"]


def test_operator_text_fields_that_cannot_be_stored_are_422(env):
    client, world, store = env
    for body in (
        '{"agents": ["sim-oracle"], "trials_per_agent": 1, "scene": "bad \\ud800"}',
        '{"agents": ["sim-oracle"], "trials_per_agent": 1, "name": "x\\u0000y"}',
    ):
        r = client.post("/api/studies", content=body, headers={**H, "content-type": "application/json"})
        assert r.status_code == 422, r.text
    sid = _study(client)
    r = client.post(
        f"/api/studies/{sid}/participants",
        content='{"label": "\\udfff"}',
        headers={**H, "content-type": "application/json"},
    )
    assert r.status_code == 422, r.text
    assert store.participants() == [] and len(store.studies()) == 1


def test_non_finite_points_never_reach_the_browser_as_invalid_json(tmp_path):
    # An agent that answers NaN/inf (a custom agent; the parsers drop them) gave the participant a
    # trial_result with a bare NaN (JSON.parse fails: the page hung on "pointing...") and made
    # /api/results a 500 (Starlette refuses NaN).
    world = ScriptedWorld({"weird": (float("nan"), float("inf"))})
    store = Store(tmp_path / "nan.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=20, status_interval_s=0.05)
    )
    with TestClient(app, raise_server_exceptions=False) as client:
        sid = _study(client, agents=["weird"])
        inv = _invite(client, sid)
        with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
            recv(ws, "state")
            start_block(ws)
            ws.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
            for _ in range(400):
                m = ws.receive()
                if m.get("text") and '"trial_result"' in m["text"]:
                    break
            res = json.loads(m["text"], parse_constant=lambda c: pytest.fail(f"{c} sent to the browser"))
            # a NaN first point is refused at pointing: nothing to judge, "no point" to read
            assert res["points_px"] == [] and res["outcome"] == "refused"
            s = recv(ws, "state")
            assert s["pending_trial"] is None and s["step"]["kind"] == "sus"
        r = client.get(f"/api/results?study_id={sid}", headers=H)
        assert r.status_code == 200, r.text
        json.loads(r.text, parse_constant=lambda c: pytest.fail(f"{c} in /api/results"))
    store.close()


def test_tokens_in_the_wrong_socket_are_refused_with_4401(env):
    from starlette.websockets import WebSocketDisconnect

    client, world, store = env
    sid = _study(client)
    inv = _invite(client, sid)
    for path in (
        f"/ws/participant?token={OP}",
        f"/ws/operator?token={inv['token']}",
        f"/ws/participant?token={inv['token']}x",
        "/ws/operator?token=" + "a" * 5000,
    ):
        with client.websocket_connect(path) as ws:
            assert json.loads(ws.receive_text())["type"] == "error"
            with pytest.raises(WebSocketDisconnect) as e:
                ws.receive_text()
            assert e.value.code == 4401, path
    assert world.calls == [] and client.get("/api/status", headers=H).json()["queue"] == []
