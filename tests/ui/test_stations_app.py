"""The study server's web app (ui/stations_app.py) on its own: a study is checked against what the
known stations offer, the console's Release frees a station, the operator routes need the token."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from pointlab.bridge.stations.server import StudyServer
from pointlab.bridge.study.store import Store
from pointlab.ui.serve import free_port
from pointlab.ui.stations_app import create_server_app

TOKEN = "operator-token-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
OFFER = {"name": "s1", "scene": "tabletop", "arm": "sim", "camera": "sim", "sim": True, "agents": ["a", "b"]}


@pytest.fixture
def client(tmp_path):
    port = free_port()
    store = Store(tmp_path / "study.sqlite")
    server = StudyServer(store, listen=[f"tcp/127.0.0.1:{port}"])
    with TestClient(create_server_app(server, operator_token=TOKEN)) as c:
        yield c, server
    store.close()


def test_a_study_no_known_station_can_run_is_refused(client):
    client, server = client
    server.dispatch.station_up("s1", OFFER)
    study = {"agents": ["a", "b"], "trials_per_agent": 2}
    bad_scene = client.post("/api/studies", headers=AUTH, json={**study, "scene": "kitchen"})
    assert bad_scene.status_code == 422 and "no station offers scene 'kitchen'" in bad_scene.json()["detail"]
    bad_agent = client.post("/api/studies", headers=AUTH, json={**study, "agents": ["a", "gpt-9"]})
    assert bad_agent.status_code == 422 and "['a', 'b']" in bad_agent.json()["detail"]
    ok = client.post("/api/studies", headers=AUTH, json={**study, "participants": 2})
    assert ok.status_code == 201 and len(ok.json()["tokens"]) == 2


def test_release_frees_a_station_held_by_a_participant_who_left(client):
    client, server = client
    server.dispatch.station_up("s1", OFFER)
    tokens = client.post(
        "/api/studies", headers=AUTH, json={"agents": ["a"], "trials_per_agent": 1, "participants": 2}
    ).json()["tokens"]
    first, second = (server.store.participant_by_token(t)["id"] for t in tokens)
    assert server.dispatch.request(first, "tabletop") == "s1" and server.dispatch.request(second, "tabletop") is None
    r = client.post("/api/console/stations/s1/release", headers=AUTH)
    assert r.json() == {"ok": True, "released_participant": first}
    assert server.dispatch.station_of(second) == "s1"  # the next in line has it now
    assert client.post("/api/console/stations/s1/release").status_code == 401
    assert client.post("/api/console/stations/s1/fly", headers=AUTH).status_code == 422
    assert client.post("/api/console/stations/zz/reset", headers=AUTH).status_code == 404


def test_the_page_says_pick_until_the_given_station_is_reset_for_the_block(client):
    """A participant given a station after a loss: that station may still hold the last participant's
    object (its status says place), but the block's reset comes before the next trial and empties
    the gripper, so the page must say pick until then (a newcomer typed a place instruction and got a
    pick charged to the model)."""
    client, server = client
    server.dispatch.station_up("s1", OFFER)
    token = client.post("/api/studies", headers=AUTH, json={"agents": ["a"], "trials_per_agent": 1}).json()["tokens"][0]
    pid = server.store.participant_by_token(token)["id"]
    server.status["s1"] = {"next_action": "place", "stopped": False, "needs_reset": False, "human_waiting": 0}
    assert server.dispatch.request(pid, "tabletop") == "s1"
    assert client.get(f"/api/p/{token}").json()["action"] == "pick"
    server._ready[pid] = ("s1", 0)  # reset for its block 0: the station's own next action holds now
    assert client.get(f"/api/p/{token}").json()["action"] == "place"
    # the console lists the study's invitation (a reload of the console loses no link) and the stop
    (study,) = client.get("/api/studies", headers=AUTH).json()
    assert [p["token"] for p in study["participants"]] == [token]
    assert client.get("/api/studies").status_code == 401
    server.status["s1"]["stopped"] = True
    (row,) = client.get("/api/console", headers=AUTH).json()["stations"]
    assert (row["status"], row["stopped"]) == ("idle", True)


def test_texts_the_store_cannot_keep_and_long_inputs_are_a_422_that_echoes_little(client):
    """A lone surrogate (valid JSON, not UTF-8) in a scene or an instruction used to pass to the store
    (a 500); a 5,000-character instruction came back whole in the 422. Now: 422, input cut to 200."""
    client, server = client
    h = {**AUTH, "content-type": "application/json"}
    r = client.post("/api/studies", headers=h, content='{"agents": ["a"], "trials_per_agent": 1, "scene": "x \\ud800"}')
    assert r.status_code == 422, r.text
    token = client.post("/api/studies", headers=AUTH, json={"agents": ["a"], "trials_per_agent": 1}).json()["tokens"][0]
    bad = client.post(f"/api/p/{token}/trial", content='{"instruction": "pick \\udfff"}', headers=h)
    assert bad.status_code == 422, bad.text
    long = client.post(f"/api/p/{token}/trial", json={"instruction": "x" * 5000})
    assert long.status_code == 422 and len(long.text) < 1000 and "..." in long.text
    assert server.store.studies()[-1]["scene"] == "tabletop" and len(server.store.studies()) == 1


def test_a_pairwise_study_is_created_with_its_settings_and_one_agent_is_refused(client):
    client, server = client
    server.dispatch.station_up("s1", OFFER)
    body = {"agents": ["a", "b"], "trials_per_agent": 2, "mode": "pairwise", "pair_sampling": "adaptive"}
    r = client.post("/api/studies", headers=AUTH, json=body)
    assert r.status_code == 201, r.text
    study = server.store.study(r.json()["study_id"])
    assert (study["mode"], study["pair_sampling"]) == ("pairwise", "adaptive")
    state = client.get(f"/api/p/{r.json()['tokens'][0]}").json()
    assert state["mode"] == "pairwise" and state["step"]["kind"] == "trial" and len(state["progress_anchors"]) == 5
    one = client.post("/api/studies", headers=AUTH, json={**body, "agents": ["a"]})
    assert one.status_code == 422 and "at least two agents" in one.json()["detail"]
    bad = client.post("/api/studies", headers=AUTH, json={**body, "pair_sampling": "ucb"})
    assert bad.status_code == 422
