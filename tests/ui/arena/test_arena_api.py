"""Point-Battle API rules over HTTP (real app, real SQLite, real agents against the sim model server):
no vote before both answers are shown, one vote per battle, the battle's own session only, upload
checks, the per-session rate limit, flagging of one-sided sessions, the human baseline routes."""

from __future__ import annotations

import io
import json
import random
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from pointlab.benchmark.pointbench import BenchItem
from pointlab.ui.arena import ArenaSettings, create_arena_app
from pointlab.ui.arena.sampling import pair_weights, sample_pair

from .helpers import NAME_A, NAME_B, curated, start_models

# real HTTP agents against a sim model server, a few seconds each on a busy machine
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    agents, stop = start_models(tmp_path_factory.mktemp("models"))
    yield agents
    stop()


def make_client(models, tmp_path, uoc_tabletop, items=(), **settings):
    app = create_arena_app(
        models,
        db_path=tmp_path / "arena.db",
        curated_dir=curated(uoc_tabletop, tmp_path),
        settings=ArenaSettings(seed=0, bootstrap_rounds=10, **settings),
        bench_items=items,
    )
    return TestClient(app), app


def start(c, image="000000-color.png", **files):
    return c.post("/api/battles", data={"instruction": "Point to the bowl", "image_name": image}, files=files or None)


def wait_ready(c, bid, timeout_s=15.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        r = c.get(f"/api/battles/{bid}")
        if r.json()["ready"]:
            return r
        time.sleep(0.05)
    raise AssertionError("answers never arrived")


def test_vote_rules(models, tmp_path, uoc_tabletop):
    c, app = make_client(models, tmp_path, uoc_tabletop)
    with c:
        r = start(c)
        assert r.status_code == 200, r.text
        bid = r.json()["battle_id"]
        # not shown yet: refused even if the models were fast
        assert c.post(f"/api/battles/{bid}/vote", json={"choice": "A"}).status_code == 409
        state = wait_ready(c, bid)
        assert NAME_A not in state.text and NAME_B not in state.text
        assert {a["side"] for a in state.json()["answers"]} == {"A", "B"}
        other = TestClient(app)
        assert other.post(f"/api/battles/{bid}/vote", json={"choice": "A"}).status_code == 403
        assert other.get(f"/api/battles/{bid}").status_code == 403
        assert c.post(f"/api/battles/{bid}/vote", json={"choice": "C"}).status_code == 400
        v = c.post(f"/api/battles/{bid}/vote", json={"choice": "B"})
        assert v.status_code == 200
        assert set(v.json()["reveal"].values()) == {NAME_A, NAME_B}
        assert c.post(f"/api/battles/{bid}/vote", json={"choice": "A"}).status_code == 409
        assert c.post("/api/battles/nope/vote", json={"choice": "A"}).status_code == 404
        # after the vote the state names the models; the export has the vote
        assert set(c.get(f"/api/battles/{bid}").json()["reveal"].values()) >= {NAME_A, NAME_B}
        line = json.loads(c.get("/api/votes.jsonl").text.splitlines()[0])
        assert line["winner"] == "model_b" and {line["model_a"], line["model_b"]} == {NAME_A, NAME_B}


def _png(w, h):
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (h, w, 3), dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def test_upload_checks(models, tmp_path, uoc_tabletop):
    c, _ = make_client(models, tmp_path, uoc_tabletop, max_upload_bytes=20_000, max_image_side_px=200)
    with c:
        gif = io.BytesIO()
        Image.new("RGB", (10, 10)).save(gif, format="GIF")
        cases = [
            (("a.gif", gif.getvalue(), "image/gif"), 415),
            (("a.png", b"not an image at all", "image/png"), 415),
            (("a.png", _png(100, 100), "image/png"), 413),  # 30 kB of noise > 20 kB
            (("a.png", _png(250, 10), "image/png"), 422),  # side 250 > 200
            (("a.png", _png(40, 30), "image/png"), 200),
        ]
        for upload, status in cases:
            r = c.post("/api/battles", data={"instruction": "Point"}, files={"upload": upload})
            assert r.status_code == status, (upload[0], r.text)
        assert c.post("/api/battles", data={"instruction": "Point"}).status_code == 400  # no image
        assert c.post("/api/battles", data={"instruction": "  ", "image_name": "000000-color.png"}).status_code == 400
        assert c.post("/api/battles", data={"instruction": "x", "image_name": "../arena.db"}).status_code == 404
        assert c.get("/api/images/..%2Farena.db").status_code == 404


def test_rate_limit_and_flagging(models, tmp_path, uoc_tabletop):
    c, app = make_client(models, tmp_path, uoc_tabletop, max_battles_per_minute=3, flag_min_votes=3)
    with c:
        for _ in range(3):
            bid = start(c).json()["battle_id"]
            wait_ready(c, bid)
            assert c.post(f"/api/battles/{bid}/vote", json={"choice": "A"}).status_code == 200
        assert start(c).status_code == 429
        sid = c.cookies.get("arena_session")
        assert app.state.arena.store.session(sid)["flagged"] is True
        board = c.get("/api/leaderboard").json()
        assert board["votes"] == 0  # the flagged session's votes are not counted
        assert len(app.state.arena.store.votes(include_flagged=True)) == 3


def test_mixed_votes_are_not_flagged(models, tmp_path, uoc_tabletop):
    c, app = make_client(models, tmp_path, uoc_tabletop, flag_min_votes=3)
    with c:
        for choice in ("A", "B", "A", "both_bad"):
            bid = start(c).json()["battle_id"]
            wait_ready(c, bid)
            c.post(f"/api/battles/{bid}/vote", json={"choice": choice})
        assert app.state.arena.store.session(c.cookies.get("arena_session"))["flagged"] is False
        assert c.get("/api/leaderboard?method=elo").json()["counted"] == 3


def test_pair_sampling():
    rng = random.Random(0)
    pairs = [sample_pair(["a", "b", "c"], "uniform", rng) for _ in range(600)]
    assert all(x != y for x, y in pairs)
    # uniform over the 3 unordered pairs and both sides: each unordered pair ~200 (binomial sd ~11.5)
    for p in (("a", "b"), ("a", "c"), ("b", "c")):
        n = sum(1 for x in pairs if tuple(sorted(x)) == p)
        assert 150 < n < 250
    # adaptive, no votes: p = 0.5 everywhere -> equal weights, normalised to 1/3 each
    assert pair_weights(["a", "b", "c"], []) == pytest.approx({("a", "b"): 1 / 3, ("a", "c"): 1 / 3, ("b", "c"): 1 / 3})
    # a beat b 30-10: BT puts a and b 400 log10(3) apart, symmetric about 1000 (c unseen: 1000), so
    # p_ab = 0.75 and p_ac = p_cb = 1 / (1 + 3 ** -0.5); raw weight p (1 - p) / sqrt(1 + games),
    # then 90 % of the normalised raw weight plus 10 % of the uniform 1/3
    votes = [{"model_a": "a", "model_b": "b", "winner": "model_a"}] * 30 + [
        {"model_a": "a", "model_b": "b", "winner": "model_b"}
    ] * 10
    w = pair_weights(["a", "b", "c"], votes)
    raw_ab, p_ac = 0.75 * 0.25 / 41**0.5, 1 / (1 + 3**-0.5)
    raw_ac = p_ac * (1 - p_ac)
    total = raw_ab + 2 * raw_ac
    assert w[("a", "b")] == pytest.approx(0.9 * raw_ab / total + 0.1 / 3, rel=1e-3)
    assert w[("a", "c")] == pytest.approx(0.9 * raw_ac / total + 0.1 / 3, rel=1e-3)
    assert w[("b", "c")] == pytest.approx(w[("a", "c")], rel=1e-3)
    picks = [tuple(sorted(sample_pair(["a", "b", "c"], "adaptive", rng, votes))) for _ in range(200)]
    assert picks.count(("a", "b")) < picks.count(("a", "c"))
    with pytest.raises(ValueError):
        sample_pair(["a"], "uniform", rng)


def test_human_baseline_routes(models, tmp_path, uoc_tabletop):
    mask = np.zeros((480, 640), np.uint8)
    mask[300:440, 160:300] = 255
    Image.fromarray(mask).save(tmp_path / "m.png")
    item = BenchItem(
        "s1",
        uoc_tabletop / "000000-color.png",
        "Point to the leftmost bowl.",
        "steerable",
        640,
        480,
        tmp_path / "m.png",
        reference_points_px=[(100.0, 100.0)],
    )
    c, _ = make_client(models, tmp_path, uoc_tabletop, items=[item])
    with c:
        items = c.get("/api/human/items").json()["items"]
        assert items == [
            {
                "id": "s1",
                "query": "Point to the leftmost bowl.",
                "category": "steerable",
                "width": 640,
                "height": 480,
                "points_expected": 1,
                "image_url": "/api/human/image?item=s1",
            }
        ]
        img = np.asarray(Image.open(io.BytesIO(c.get(items[0]["image_url"]).content)).convert("RGB"))
        assert tuple(img[100, 100]) == (255, 0, 0)  # the reference point is drawn for people too
        # no correctness feedback by default (a baseline must not learn from it)
        r = c.post("/api/human/answers", json={"item_id": "s1", "points": [[100, 100]]}).json()
        assert r == {"saved": True, "item_id": "s1", "points": [[100.0, 100.0]]}
        assert c.post("/api/human/answers", json={"item_id": "x", "points": []}).status_code == 404
        # a redo replaces the session's answer: the last one (a hit inside the mask) counts
        c.post("/api/human/answers", json={"item_id": "s1", "points": [[230, 380]]})
        s = c.get("/api/human/summary").json()
        assert s["categories"]["steerable"] == {"n": 1, "success": 1, "accuracy": 1.0}
        assert c.get("/api/human/mine").json() == {"answers": {"s1": [[230.0, 380.0]]}}
        other = TestClient(c.app)
        other.post("/api/human/answers", json={"item_id": "s1", "points": []})
        s = c.get("/api/human/summary").json()
        assert s["categories"]["steerable"] == {"n": 2, "success": 1, "accuracy": 0.5} and s["sessions"] == 2
        assert s["fig3"]["steerable"] == {"mean": 0.5, "std": pytest.approx(2**-0.5), "runs": 2}
        lines = [json.loads(x) for x in c.get("/api/human/pred.jsonl").text.splitlines()]
        assert [x["points"] for x in lines] == [[[230, 380]], []]
        mine = c.cookies.get("arena_session")
        assert [
            x["points"] for x in map(json.loads, c.get(f"/api/human/pred.jsonl?session={mine}").text.splitlines())
        ] == [[[230, 380]]]


def test_human_feedback_option_and_session_exclusion(models, tmp_path, uoc_tabletop):
    mask = np.zeros((480, 640), np.uint8)
    mask[300:440, 160:300] = 255
    Image.fromarray(mask).save(tmp_path / "m.png")
    item = BenchItem(
        "s1", uoc_tabletop / "000000-color.png", "Point to the bowl.", "spatial", 640, 480, tmp_path / "m.png"
    )
    app = create_arena_app(
        models,
        db_path=tmp_path / "arena.db",
        settings=ArenaSettings(human_feedback=True),
        bench_items=[item],
        admin_token="admin-secret-1",
    )
    trainee, other = TestClient(app), TestClient(app)
    with trainee:
        r = trainee.post("/api/human/answers", json={"item_id": "s1", "points": [[100, 100]]}).json()
        assert r["success"] is False and r["reason"] == "miss"  # training sessions get feedback
        other.post("/api/human/answers", json={"item_id": "s1", "points": [[230, 380]]})
        assert trainee.get("/api/human/summary").json()["categories"]["spatial"]["n"] == 2
        assert trainee.get("/api/human/sessions").status_code == 401
        auth = {"Authorization": "Bearer admin-secret-1"}
        sessions = trainee.get("/api/human/sessions", headers=auth).json()["sessions"]
        assert {s["correct"] for s in sessions} == {0, 1}
        sid = trainee.cookies.get("arena_session")
        assert trainee.post(f"/api/human/sessions/{sid}", json={"excluded": True}, headers=auth).status_code == 200
        s = trainee.get("/api/human/summary").json()
        assert s["categories"]["spatial"] == {"n": 1, "success": 1, "accuracy": 1.0}
        assert trainee.get("/api/human/fig3.svg").text.startswith("<?xml")
