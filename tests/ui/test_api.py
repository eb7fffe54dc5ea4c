"""The web app's HTTP and websocket API against the real station over the scripted world (sim_mock.scripted_station)."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient

from pointlab.bridge.study.store import Store
from pointlab.sim_mock.scripted_station import ScriptedWorld
from pointlab.ui.app import UiSettings, create_app

OP = "operator-secret-token"
H = {"Authorization": f"Bearer {OP}"}
# no reveal wait in these tests (docs/trials.md "Timing" has its own tests)
NO_WAIT = {"reveal_low_s": 0, "reveal_high_s": 0}
NO_POINT = "The robot did not move: the agent gave no point. This trial counts as not carried out."
AGENTS = ["sim-oracle", "sim-noisy", "human"]


@pytest.fixture
def env(tmp_path):
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0), "sim-noisy": None})
    store = Store(tmp_path / "ui.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=20, status_interval_s=0.05)
    )
    with TestClient(app) as client:
        yield client, world, store
    store.close()


def _study(client, tpa=1, agents=AGENTS):
    r = client.post(
        "/api/studies", json={"agents": agents, "trials_per_agent": tpa, "scene": "tabletop", **NO_WAIT}, headers=H
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _invite(client, sid):
    r = client.post(f"/api/studies/{sid}/participants", json={}, headers=H)
    assert r.status_code == 201, r.text
    return r.json()


def recv(ws, want: str | tuple, limit: int = 400) -> dict:
    """Next JSON message of type ``want`` (skipping frames and other types)."""
    want = (want,) if isinstance(want, str) else want
    for _ in range(limit):
        m = ws.receive()
        if m.get("text") is None:
            continue
        ws.__dict__.setdefault("seen", []).append(m["text"])  # every text message, for blinding checks
        obj = json.loads(m["text"])
        if obj["type"] in want:
            return obj
    raise AssertionError(f"no {want} message")


def start_block(ws) -> dict:
    """Start the participant's next agent block (the sim resets the arm and the scene) and wait for it."""
    ws.send_text(json.dumps({"type": "start_block"}))
    got = recv(ws, ("block_started", "error"))
    assert got["type"] == "block_started", got
    return got


def recv_state(ws, pred, limit: int = 400) -> dict:
    for _ in range(limit):
        s = recv(ws, "state")
        if pred(s):
            return s
    raise AssertionError("state never matched")


def test_tokens_and_roles(env):
    client, world, store = env
    sid = _study(client)
    inv = _invite(client, sid)
    ph = {"Authorization": f"Bearer {inv['token']}"}
    assert client.get("/api/studies").status_code == 401
    assert client.get("/api/studies", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/api/studies", headers=ph).status_code == 403
    assert client.post("/api/arm/stop", headers=ph).status_code == 403 and world.stops == 0
    assert client.get("/api/me", headers=H).status_code == 403
    me = client.get("/api/me", headers=ph).json()
    assert me["step"]["kind"] == "setup" and me["step"]["alias"] == "Agent 1" and me["action"] == "pick"
    assert client.get(f"/p/{inv['token']}").status_code == 200
    assert client.get("/p/not-a-token").status_code == 404
    for path in ("/ws/participant?token=nope", f"/ws/operator?token={inv['token']}", "/ws/participant"):
        with client.websocket_connect(path) as ws:
            m = json.loads(ws.receive_text())
            assert m["type"] == "error"
    with pytest.raises(ValueError):
        create_app(world.parts(store), store, operator_token="short")


def test_create_study_and_invite(env):
    client, world, store = env
    r = client.post("/api/studies", json={"agents": ["sim-oracle", "gpt-9"], "trials_per_agent": 1}, headers=H)
    assert r.status_code == 422 and "gpt-9" in r.text
    assert client.post("/api/studies", json={"agents": ["human"], "trials_per_agent": 0}, headers=H).status_code == 422
    assert client.get("/api/agents", headers=H).json() == AGENTS
    sid = _study(client)
    invs = [_invite(client, sid) for _ in range(6)]
    assert all(i["url"] == f"http://testserver/p/{i['token']}" for i in invs)
    assert len({tuple(i["agent_order"]) for i in invs}) == 6  # Williams design, 3 agents: all orders
    listed = client.get(f"/api/studies/{sid}/participants", headers=H).json()
    assert [p["label"] for p in listed] == ["P1", "P2", "P3", "P4", "P5", "P6"]
    assert client.post("/api/studies/99/participants", json={}, headers=H).status_code == 404


def test_invite_is_refused_when_the_session_no_longer_runs_the_study_agents(env):
    client, world, store = env
    sid = store.create_study(agents=["sim-oracle", "gpt-9"], trials_per_agent=1, scene="tabletop")  # another config
    r = client.post(f"/api/studies/{sid}/participants", json={}, headers=H)
    assert r.status_code == 409 and "gpt-9" in r.text
    assert store.participants(sid) == []


def _answer_human(client, world, u, v, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reqs = client.get("/api/human-requests", headers=H).json()
        if reqs:
            r = client.post(f"/api/human-requests/{reqs[0]['request_id']}/answer", json={"u": u, "v": v}, headers=H)
            assert r.status_code == 200, r.text
            return reqs[0]
        time.sleep(0.02)
    raise AssertionError("no human request")


def test_full_participant_session_over_websocket(env):
    client, world, store = env
    sid = _study(client, tpa=1)
    inv = _invite(client, sid)  # participant 0: order = AGENTS (Williams row 0)
    assert inv["agent_order"] == AGENTS
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        frame = ws.receive()
        assert frame["bytes"][:2] == b"\xff\xd8"  # a JPEG
        s = recv(ws, "state")
        assert (s["queue_position"], s["step"]["kind"], s["step"]["alias"]) == (0, "setup", "Agent 1")
        ws.send_text(json.dumps({"type": "instruction", "text": "pick it"}))  # not before the block starts
        assert "reset for this agent" in recv(ws, "error")["error"]
        assert start_block(ws) == {"type": "block_started", "block": 0, "alias": "Agent 1"}
        assert world.scene_restores == 1 and world.homes == 1 and world.releases == 1
        assert recv_state(ws, lambda s: s["step"]["kind"] == "trial")["step"]["alias"] == "Agent 1"

        # Block 1 = sim-oracle: a done pick at (100, 80)
        ws.send_text(json.dumps({"type": "instruction", "text": "  pick up   the red ball "}))
        assert recv(ws, "trial_started")["alias"] == "Agent 1"
        res = recv(ws, "trial_result")
        assert res["points_px"] == [[100.0, 80.0]] and res["action"] == "pick" and res["outcome"] == "done"
        assert res["instruction"] == "pick up the red ball" and res["frame_size"] == [320, 240]
        s = recv_state(ws, lambda s: s["step"]["kind"] == "judge")
        assert s["pending_trial"]["trial_id"] == res["trial_id"] and s["action"] == "place"
        ws.send_text(json.dumps({"type": "judge", "trial_id": res["trial_id"], "judgement": "succeeded"}))
        assert recv(ws, ("judged", "error"))["type"] == "judged"
        recv_state(ws, lambda s: s["step"]["kind"] == "sus")
        ws.send_text(json.dumps({"type": "sus", "block": 0, "responses": [4, 2, 4, 1, 3, 2, 5, 1, 4, 2]}))
        saved = recv(ws, ("sus_saved", "error"))
        assert saved == {"type": "sus_saved", "block": 0, "alias": "Agent 1", "score": 80.0}

        # Block 2 = sim-noisy (scripted unparseable answer): refused, no motion. The block starts from
        # the reference scene: the gripper is opened, so the first action is a pick again
        s = recv_state(ws, lambda s: s["step"]["block"] == 1)
        assert (s["step"]["alias"], s["step"]["kind"], s["action"]) == ("Agent 2", "setup", "place")
        start_block(ws)
        assert recv_state(ws, lambda s: s["step"]["kind"] == "trial")["action"] == "pick"
        assert len(store.block_starts(participant_id=inv["participant_id"])) == 2
        ws.send_text(json.dumps({"type": "instruction", "text": "put it in the bowl"}))
        res = recv(ws, "trial_result")
        # an answer that could not be read is told as any answer without a point (it cannot single out a model)
        assert res["outcome"] == "refused" and res["points_px"] == []
        assert res["message"] == NO_POINT
        # a refusal is failed at once (nothing moved at the agent's point): no question, the SUS is next
        recv_state(ws, lambda s: s["step"]["kind"] == "sus")
        ws.send_text(json.dumps({"type": "judge", "trial_id": res["trial_id"], "judgement": "succeeded"}))
        assert "no such trial" in recv(ws, "error")["error"]  # no judgement to give, none taken
        ws.send_text(json.dumps({"type": "sus", "block": 1, "responses": [1, 5, 1, 5, 1, 5, 1, 5, 1, 5]}))
        assert recv(ws, "sus_saved")["score"] == 0.0

        # Block 3 = human: the operator answers the request by clicking
        recv_state(ws, lambda s: s["step"]["block"] == 2)
        start_block(ws)
        ws.send_text(json.dumps({"type": "instruction", "text": "put it in the bowl"}))
        recv(ws, "trial_started")
        req = _answer_human(client, world, 200.25, 60.5)
        assert req["instruction"] == "put it in the bowl" and (req["width"], req["height"]) == (320, 240)
        res = recv(ws, "trial_result")
        # integer pixels for every agent (blinding): 200.25 -> 200, 60.5 -> 61 (halves round up)
        assert res["points_px"] == [[200, 61]] and res["action"] == "pick"
        ws.send_text(json.dumps({"type": "judge", "trial_id": res["trial_id"], "judgement": "succeeded"}))
        recv(ws, "judged")
        ws.send_text(json.dumps({"type": "sus", "block": 2, "responses": [3] * 10}))
        assert recv(ws, "sus_saved")["score"] == 50.0
        s = recv_state(ws, lambda s: s["step"]["kind"] == "done")
        assert s["queue_position"] is None
        # The scripted raw answers say "As model-x ... (agent sim-oracle)": none of it reached the participant.
        seen = "\n".join(ws.seen).lower()
        assert "agent 3" in seen
        for word in ("sim-oracle", "sim-noisy", "human", "model-x", "unparseable"):
            assert word not in seen, word

    assert world.calls == [
        ("sim-oracle", "pick up the red ball"),
        ("sim-noisy", "put it in the bowl"),
        ("human", "put it in the bowl"),
    ]
    trials = store.trials(study_id=sid)
    assert [(t["agent"], t["block"], t["judgement"]) for t in trials] == [
        ("sim-oracle", 0, "succeeded"),
        ("sim-noisy", 1, None),
        ("human", 2, "succeeded"),
    ]
    assert trials[1]["outcome"] == "failed" and trials[1]["failure_stage"] == "no_point"
    # The raw answer (which names the agent in the scripted world) is stored for the operator.
    assert "sim-oracle" in trials[0]["raw_answer"]

    r = client.get(f"/api/results?study_id={sid}", headers=H).json()
    by = {a["agent"]: a for a in r["agents"]}
    assert (by["sim-oracle"]["success_rate"], by["sim-noisy"]["success_rate"]) == (1.0, 0.0)
    # Wilson 1/1: (1 + 1.92073)/(1 + 3.84146) upper 1, lower (2.92073 - 1.96*sqrt(.96037))/4.84146 = 0.2065
    assert by["human"]["ci95"][0] == pytest.approx(0.2065, abs=1e-3) and by["human"]["ci95"][1] == 1.0
    assert [by[a]["mean_sus"] for a in AGENTS] == [80.0, 0.0, 50.0]
    assert len(r["trials"]) == 3
    csv_text = client.get(f"/api/results.csv?study_id={sid}", headers=H)
    assert csv_text.headers["content-type"].startswith("text/csv")
    lines = csv_text.text.strip().splitlines()
    assert lines[0].startswith("id,trial_uid,study_id") and len(lines) == 4
    assert client.get("/api/results?study_id=77", headers=H).status_code == 404


BAD_MESSAGES = [
    ("not json at all", "not valid JSON"),
    ("[1, 2, 3]", "JSON object"),
    ('{"type": "move_arm", "x": 1}', "unknown message type"),
    ('{"text": "pick"}', "unknown message type"),
    ('{"type": "instruction"}', "bad instruction message: text"),
    ('{"type": "instruction", "text": 5}', "bad instruction message: text"),
    ('{"type": "judge", "trial_id": "x", "judgement": "succeeded"}', "bad judge message: trial_id"),
    ('{"type": "judge", "trial_id": 1, "judgement": "meh"}', "judgement must be one of"),
    ('{"type": "judge", "trial_id": 12345, "judgement": "failed"}', "no such trial"),
    ('{"type": "sus", "block": 0, "responses": [3, 3]}', "no questionnaire is due"),
    ('{"type": "instruction", "text": "   "}', "type an instruction"),
    ('{"type": "instruction", "text": "' + "x" * 600 + '"}', "longer than 500"),
    (json.dumps({"type": "instruction", "text": "y" * 5000}), "too large"),
    ("[" * 3000 + "]" * 3000, "too large"),
]


def test_bad_websocket_messages_get_errors_and_never_move_the_robot(env):
    client, world, store = env
    sid = _study(client)
    inv = _invite(client, sid)
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        for text, words in BAD_MESSAGES:
            ws.send_text(text)
            m = recv(ws, "error")
            assert words in m["error"], (text[:40], m)
        ws.send_bytes(b"\x00\x01binary")
        assert "binary" in recv(ws, "error")["error"]
        ws.send_text('{"type": "ping"}')
        assert recv(ws, ("pong", "error"))["type"] == "pong"  # still connected and serving
    assert world.calls == [] and store.trials() == []
    with client.websocket_connect(f"/ws/operator?token={OP}") as ws:
        ws.send_text('{"type": "instruction", "text": "pick"}')
        assert "unknown message type" in recv(ws, "error")["error"]
        ws.send_text("{{{")
        assert recv(ws, "error")
    assert world.calls == []


def test_one_participant_commands_the_arm_at_a_time(env):
    client, world, store = env
    sid = _study(client)
    a, b = _invite(client, sid), _invite(client, sid)
    with client.websocket_connect(f"/ws/participant?token={a['token']}") as wa:
        recv_state(wa, lambda s: s["queue_position"] == 0)
        with client.websocket_connect(f"/ws/participant?token={b['token']}") as wb:
            s = recv_state(wb, lambda s: s["queue_position"] is not None)
            assert (s["queue_position"], s["queue_length"]) == (1, 2)
            wb.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
            assert "not your turn" in recv(wb, "error")["error"]
            assert world.calls == []
            q = client.get("/api/status", headers=H).json()["queue"]
            assert [x["label"] for x in q] == ["P1", "P2"]
            # the operator sends P1 to the back and back again
            pa, pb = q[0]["participant_id"], q[1]["participant_id"]
            assert client.post(f"/api/queue/{pa}/to-back", headers=H).json() == {"queue": [pb, pa]}
            recv_state(wb, lambda s: s["queue_position"] == 0)
            assert client.post(f"/api/queue/{pb}/to-back", headers=H).json() == {"queue": [pa, pb]}
            assert client.post("/api/queue/999/to-back", headers=H).status_code == 404
            recv_state(wb, lambda s: s["queue_position"] == 1)
            wa.close()
            s = recv_state(wb, lambda s: s["queue_position"] == 0)
            assert s["queue_length"] == 1
            start_block(wb)
            wb.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
            assert recv(wb, "trial_result")["alias"] == "Agent 1"
    # B's Williams row 1 starts with sim-noisy
    assert world.calls == [(b["agent_order"][0], "pick up the ball")] and b["agent_order"][0] == "sim-noisy"


def test_human_request_answers_are_checked(env):
    client, world, store = env
    sid = _study(client, agents=["human"])
    inv = _invite(client, sid)
    assert client.post("/api/human-requests/nope/answer", json={"u": 1, "v": 1}, headers=H).status_code == 404
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        start_block(ws)
        ws.send_text(json.dumps({"type": "instruction", "text": "pick the cube"}))
        recv(ws, "trial_started")
        for _ in range(500):
            reqs = client.get("/api/human-requests", headers=H).json()
            if reqs:
                break
            time.sleep(0.01)
        rid = reqs[0]["request_id"]
        status = client.get("/api/status", headers=H).json()
        assert status["human_requests"] == [
            {"request_id": rid, "instruction": "pick the cube", "width": 320, "height": 240, "action": "pick"}
        ]
        assert status["current"]["agent"] == "human" and status["current"]["alias"] == "Agent 1"
        img = client.get(f"/api/human-requests/{rid}/image", headers=H)
        assert img.headers["content-type"] == "image/jpeg" and img.content[:2] == b"\xff\xd8"
        # the image covers u in [-0.5, 319.5), v in [-0.5, 239.5)
        for u, v in ((320.0, 10.0), (10.0, 239.5), (-0.6, 5.0)):
            r = client.post(f"/api/human-requests/{rid}/answer", json={"u": u, "v": v}, headers=H)
            assert r.status_code == 422, (u, v)
        assert client.post(f"/api/human-requests/{rid}/answer", json={"u": "a", "v": 1}, headers=H).status_code == 422
        r = client.post(f"/api/human-requests/{rid}/answer", json={"u": -0.5, "v": 239.4}, headers=H)
        assert r.status_code == 200
        assert recv(ws, "trial_result")["points_px"] == [[0, 239]]  # -0.5 -> 0, 239.4 -> 239


def test_emergency_stop_blocks_trials_until_reset(env):
    client, world, store = env
    sid = _study(client)
    inv = _invite(client, sid)
    assert client.post("/api/arm/stop", headers=H).json() == {"stopped": True} and world.stops == 1
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv_state(ws, lambda s: s["stopped"])
        ws.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
        assert "stopped" in recv(ws, "error")["error"]
        assert world.calls == []
        assert client.post("/api/arm/reset", headers=H).json() == {"stopped": False} and world.resets == 1
        recv_state(ws, lambda s: not s["stopped"])
        start_block(ws)
        ws.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
        assert recv(ws, "trial_result")["outcome"] == "done"


def test_wrong_step_messages(env):
    client, world, store = env
    sid = _study(client, tpa=2, agents=["sim-oracle"])
    inv = _invite(client, sid)
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        start_block(ws)
        ws.send_text(json.dumps({"type": "start_block"}))  # once per block only
        assert "no agent block to start" in recv(ws, "error")["error"]
        ws.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
        res = recv(ws, "trial_result")
        ws.send_text(json.dumps({"type": "instruction", "text": "again"}))
        assert "judge the last trial first" in recv(ws, "error")["error"]
        ws.send_text(json.dumps({"type": "sus", "block": 0, "responses": [3] * 10}))
        assert "no questionnaire" in recv(ws, "error")["error"]
        ws.send_text(json.dumps({"type": "judge", "trial_id": res["trial_id"], "judgement": "failed"}))
        recv(ws, "judged")
        ws.send_text(json.dumps({"type": "judge", "trial_id": res["trial_id"], "judgement": "succeeded"}))
        assert "no such trial" in recv(ws, "error")["error"]
        ws.send_text(json.dumps({"type": "instruction", "text": "place it"}))
        res2 = recv(ws, "trial_result")
        ws.send_text(json.dumps({"type": "judge", "trial_id": res2["trial_id"], "judgement": "failed"}))
        recv(ws, "judged")
        for bad in ([3] * 9, [3] * 9 + [0], [3] * 9 + [True], [3] * 9 + [2.5]):
            ws.send_text(json.dumps({"type": "sus", "block": 0, "responses": bad}))
            assert recv(ws, "error")["error"].startswith("questionnaire:")
        assert store.surveys() == []
    assert [t["judgement"] for t in store.trials()] == ["failed", "failed"]


def test_blinded_trial_copies_no_runner_text():
    from pointlab.ui.flow import blinded_trial

    base = {
        "id": 4,
        "block": 1,
        "instruction": "pick the cup",
        "action": "pick",
        "points_px": [[1.0, 2.0]],
        "frame_size": [640, 480],
        "judgement": None,
        "parse_error": None,
        "raw_answer": "I am GPT-4o",
        "agent": "gpt-4o",
    }
    failure = blinded_trial(
        {
            **base,
            "robot_outcome": "agent_failure",
            "target": None,
            "agent_error": "Error code: 404 - model 'gpt-4o' not found",
        }
    )
    assert failure == {
        "trial_id": 4,
        "number": None,
        "alias": "Agent 2",
        "instruction": "pick the cup",
        "action": "pick",
        "points_px": [[1, 2]],
        "frame_size": [640, 480],
        "outcome": "agent_failure",
        "message": "The agent did not answer.",
        "judgement": None,
        "has_after": False,
    }
    refusal = {"code": "no_depth", "detail": "no valid depth within 5 px of gpt-4o", "stage": "depth"}
    refused = blinded_trial(
        {
            **base,
            "robot_outcome": "refused",
            "robot_error": None,
            "refusal": refusal,
            "target": {"valid": False, "refusal": refusal},
        }
    )
    assert (
        refused["message"]
        == "The robot did not move: there is no depth reading near the point. This trial counts as not carried out."
    )
    unreachable = blinded_trial({**base, "robot_outcome": "refused", "refusal": {"code": "unreachable"}})
    assert (
        unreachable["message"]
        == "The robot did not move: the robot cannot reach that point. This trial counts as not carried out."
    )
    odd = blinded_trial({**base, "robot_outcome": "exploded by gpt-4o", "target": None, "robot_error": "x"})
    assert odd["outcome"] == "robot_failure" and "gpt" not in json.dumps(odd).lower()


def test_failures_inside_a_trial_are_reported_not_fatal(env, monkeypatch):
    client, world, store = env
    sid = _study(client, agents=["sim-oracle"])
    inv = _invite(client, sid)

    def disk_full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "save_trial", disk_full)
    monkeypatch.setattr(world, "emergency_stop", disk_full)
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        start_block(ws)
        ws.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
        assert "could not be stored" in recv(ws, "error")["error"]
        ws.send_text('{"type": "ping"}')
        assert recv(ws, "pong")
        r = client.post("/api/arm/stop", headers=H)
        assert r.status_code == 500 and "hardware stop" in r.json()["detail"]
        s = recv_state(ws, lambda s: s["stopped"])  # trials stay blocked even though the call failed
        assert s["step"]["kind"] == "trial"


def test_open_gripper_is_operator_only_and_refused_during_a_trial_or_a_stop(env):
    client, world, _ = env
    sid = _study(client, tpa=2, agents=["human"])  # a human trial waits for the click: a trial that "runs"
    inv = _invite(client, sid)
    ph = {"Authorization": f"Bearer {inv['token']}"}
    assert client.post("/api/arm/release").status_code == 401
    assert client.post("/api/arm/release", headers=ph).status_code == 403 and world.releases == 0
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        start_block(ws)
        ws.send_text(json.dumps({"type": "instruction", "text": "pick the cube"}))
        _answer_human(client, world, 100.0, 80.0)
        res = recv(ws, "trial_result")
        assert res["outcome"] == "done" and world.last_station.holding()
        assert client.get("/api/me", headers=ph).json()["action"] == "place"
        ws.send_text(json.dumps({"type": "judge", "trial_id": res["trial_id"], "judgement": "failed"}))
        recv(ws, "judged")
        # the cube was taken out by hand: the operator opens the gripper, the next trial is a pick
        assert client.post("/api/arm/release", headers=H).json() == {"released": True, "holding": False}
        assert world.releases == 2 and not world.last_station.holding()  # the block start opened it once already
        assert client.get("/api/me", headers=ph).json()["action"] == "pick"
        ws.send_text(json.dumps({"type": "instruction", "text": "pick the ball"}))
        recv(ws, "trial_started")
        r = client.post("/api/arm/release", headers=H)  # the trial waits for the human click
        assert r.status_code == 409 and "trial is running" in r.json()["detail"] and world.releases == 2
        _answer_human(client, world, 10.0, 10.0)
        assert recv(ws, "trial_result")["outcome"] == "done"
    client.post("/api/arm/stop", headers=H)
    r = client.post("/api/arm/release", headers=H)
    assert r.status_code == 409 and "reset" in r.json()["detail"] and world.releases == 2


def test_operator_scene_tools_reference_and_attribution_click(env):
    client, world, store = env
    sid = _study(client, agents=["sim-oracle"])
    inv = _invite(client, sid)
    ph = {"Authorization": f"Bearer {inv['token']}"}
    for path in ("/api/arm/home", "/api/scene/reset", "/api/trials/abort", f"/api/studies/{sid}/reference"):
        assert client.post(path, headers=ph).status_code == 403, path
    assert client.post("/api/trials/abort", headers=H).status_code == 409  # no trial runs
    assert client.post("/api/arm/home", headers=H).json() == {"homed": True} and world.homes == 1
    # no one waits for a block: with a simulator the scene is restored exactly, the arm reset
    assert client.post("/api/scene/reset", headers=H).json() == {"reset": True} and world.scene_restores == 1
    assert client.get(f"/api/studies/{sid}/reference.jpg", headers=H).status_code == 404
    assert client.get(f"/api/studies/{sid}/reference", headers=H).json() == {"study_id": sid, "captured": False}
    assert client.post(f"/api/studies/{sid}/reference", headers=H).status_code == 200
    ref = client.get(f"/api/studies/{sid}/reference.jpg", headers=H)
    assert ref.status_code == 200 and ref.content[:2] == b"\xff\xd8" and store.scene_reference(sid) == ref.content
    assert client.get(f"/api/studies/{sid}/reference", headers=H).json()["captured"] is True
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        start_block(ws)
        ws.send_text(json.dumps({"type": "instruction", "text": "pick up the ball"}))
        res = recv(ws, "trial_result")
    # the operator clicks the intended object: the red disc the scripted camera draws at (100, 80),
    # where sim-oracle pointed: on target; then a click on the green background: off target
    r = client.post(f"/api/trials/{res['trial_id']}/intended", json={"u": 100, "v": 80}, headers=H).json()
    assert r["point_on_target"] is True and 100 < r["mask_px"] < 2000
    r = client.post(f"/api/trials/{res['trial_id']}/intended", json={"u": 250, "v": 200}, headers=H).json()
    assert r["point_on_target"] is False
    assert (
        client.post(f"/api/trials/{res['trial_id']}/intended", json={"u": 999, "v": 80}, headers=H).status_code == 422
    )
    before = client.get(f"/api/trials/{res['trial_id']}/frame?which=before", headers=H)
    assert before.status_code == 200 and before.content[:2] == b"\xff\xd8"


def test_real_hardware_blocks_wait_for_the_operators_scene_reset(tmp_path):
    world = ScriptedWorld({"sim-oracle": (100.0, 80.0)}, automatic_scene=False)
    store = Store(tmp_path / "real.sqlite")
    app = create_app(
        world.parts(store), store, operator_token=OP, settings=UiSettings(frame_rate_hz=20, status_interval_s=0.05)
    )
    with TestClient(app) as client:
        sid = _study(client, agents=["sim-oracle"])
        inv = _invite(client, sid)
        assert client.post("/api/scene/reset", headers=H).status_code == 409  # nobody waits; a person resets
        with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
            recv(ws, "state")
            ws.send_text(json.dumps({"type": "start_block"}))
            assert recv(ws, "waiting_for_scene")["alias"] == "Agent 1"
            status = client.get("/api/status", headers=H).json()
            assert status["pending_block"]["alias"] == "Agent 1" and status["scene_automatic"] is False
            assert client.post("/api/scene/reset", headers=H).json() == {
                "type": "block_started",
                "block": 0,
                "alias": "Agent 1",
            }
            assert world.scene_restores == 0 and world.homes == 1  # the operator put the scene back
            recv_state(ws, lambda s: s["step"]["kind"] == "trial")
        (start,) = store.block_starts(study_id=sid)
        assert (
            start["method"] == "operator_confirmed"
            and client.get("/api/status", headers=H).json()["pending_block"] is None
        )
    store.close()


def test_the_human_reference_can_give_no_point_told_as_a_model_without_one(env):
    """*No point* on the console: the trial is refused no_point, and the participant reads the same
    message as for sim-noisy's unreadable answer (the blinding must not single out a model)."""
    client, world, store = env
    sid = _study(client, agents=["human", "sim-noisy"])
    inv = _invite(client, sid)  # Williams row 0: human first, then sim-noisy
    assert client.post("/api/human-requests/nope/decline", headers=H).status_code == 404
    messages = []
    with client.websocket_connect(f"/ws/participant?token={inv['token']}") as ws:
        recv(ws, "state")
        for block in range(2):
            start_block(ws)
            ws.send_text(json.dumps({"type": "instruction", "text": "pick up the unicorn"}))
            recv(ws, "trial_started")
            if block == 0:
                deadline = time.monotonic() + 10
                while not (reqs := client.get("/api/human-requests", headers=H).json()):
                    assert time.monotonic() < deadline
                    time.sleep(0.02)
                r = client.post(f"/api/human-requests/{reqs[0]['request_id']}/decline", headers=H)
                assert r.json() == {"request_id": reqs[0]["request_id"], "declined": True}
            res = recv(ws, "trial_result")
            messages.append((res["outcome"], res["points_px"], res["message"]))
            recv_state(ws, lambda s: s["step"]["kind"] == "sus")  # a refusal is not a question
            ws.send_text(json.dumps({"type": "sus", "block": block, "responses": [3] * 10}))
            recv(ws, "sus_saved")
    assert messages[0] == messages[1] == ("refused", [], NO_POINT)
    rows = store.trials(study_id=sid)
    assert [(r["agent"], r["refusal"]["code"], r["outcome"], r["failure_stage"]) for r in rows] == [
        ("human", "no_point", "failed", "no_point"),
        ("sim-noisy", "no_point", "failed", "no_point"),
    ]


def test_the_participant_sees_only_the_first_point_on_the_image_and_model_only_words_read_alike():
    """A human reference clicks exactly one point, on the image: more points, a point off the image or
    an invalid first point would single out a model, so the participant sees the first point when it
    is usable on the image and otherwise reads "no point"."""
    from pointlab.ui.flow import blinded_trial

    base = {
        "id": 9,
        "block": 0,
        "instruction": "pick the cup",
        "action": "pick",
        "frame_size": [640, 480],
        "judgement": None,
        "robot_outcome": "done",
    }
    two = blinded_trial(
        {**base, "points": [{"u_px": 10.4, "v_px": 20.6, "valid": True}, {"u_px": 300.0, "v_px": 200.0, "valid": True}]}
    )
    assert two["points_px"] == [[10, 21]]
    for bad in ({"u_px": 700.0, "v_px": 20.0, "valid": True}, {"u_px": None, "v_px": None, "valid": False}):
        refused = blinded_trial(
            {
                **base,
                "robot_outcome": "refused",
                "points": [bad],
                "refusal": {"code": "outside_image" if bad["valid"] else "invalid_point"},
            }
        )
        assert refused["points_px"] == [] and refused["message"] == NO_POINT
    for code in ("agent_error", "timeout"):
        aborted = blinded_trial(
            {**base, "robot_outcome": "agent_failure", "outcome": "aborted", "abort": {"code": code}}
        )
        assert aborted["message"].startswith("This trial does not count: no answer came in time.")


def test_the_console_form_offers_the_api_defaults():
    """The new-study form's fields start at the API's own defaults (a console that offered another
    floor or reveal range than the API would make the documented defaults untrue for most studies)."""
    import re
    from importlib.resources import files

    from pointlab.ui.routes_studies import StudyIn

    html = files("pointlab.ui").joinpath("static/operator.html").read_text()

    def value(input_id: str) -> float:
        m = re.search(rf'id="{input_id}"[^>]*\bvalue="([^"]+)"', html)
        assert m is not None, input_id
        return float(m.group(1))

    fields = StudyIn.model_fields
    assert value("min-free") == fields["min_free_mb"].default == 1000
    assert (
        (value("reveal-low"), value("reveal-high"))
        == (fields["reveal_low_s"].default, fields["reveal_high_s"].default)
        == (10, 26)
    )
    assert value("max-repeats") == fields["max_repeats"].default == 2
