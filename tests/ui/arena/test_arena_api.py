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


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    agents, stop = start_models(tmp_path_factory.mktemp("models"))
    yield agents
    stop()


def make_client(models, tmp_path, uoc_tabletop, items=(), **settings):
    app = create_arena_app(models, db_path=tmp_path / "arena.db", curated_dir=curated(uoc_tabletop, tmp_path),
                           settings=ArenaSettings(seed=0, bootstrap_rounds=10, **settings), bench_items=items)
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
            (("a.png", _png(100, 100), "image/png"), 413),        # 30 kB of noise > 20 kB
            (("a.png", _png(250, 10), "image/png"), 400),         # side 250 > 200
            (("a.png", _png(40, 30), "image/png"), 200),
        ]
        for upload, status in cases:
            r = c.post("/api/battles", data={"instruction": "Point"}, files={"upload": upload})
            assert r.status_code == status, (upload[0], r.text)
        assert c.post("/api/battles", data={"instruction": "Point"}).status_code == 400       # no image
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
    # adaptive, no votes: p = 0.5 everywhere -> weight 0.25 for every pair
    assert pair_weights(["a", "b", "c"], []) == {("a", "b"): 0.25, ("a", "c"): 0.25, ("b", "c"): 0.25}
    # a beat b 30-10: BT gives p = 0.75 -> 0.75 * 0.25 / sqrt(41); c is unseen (rating 1000, 0 games)
    votes = [{"model_a": "a", "model_b": "b", "winner": "model_a"}] * 30 + \
            [{"model_a": "a", "model_b": "b", "winner": "model_b"}] * 10
    w = pair_weights(["a", "b", "c"], votes)
    assert w[("a", "b")] == pytest.approx(0.1875 / 41 ** 0.5, rel=1e-3)
    assert w[("a", "c")] < 0.25 and w[("b", "c")] < 0.25   # a is above 1000, b below
    picks = [tuple(sorted(sample_pair(["a", "b", "c"], "adaptive", rng, votes))) for _ in range(200)]
    assert picks.count(("a", "b")) < picks.count(("a", "c"))
    with pytest.raises(ValueError):
        sample_pair(["a"], "uniform", rng)


def test_human_baseline_routes(models, tmp_path, uoc_tabletop):
    mask = np.zeros((480, 640), np.uint8)
    mask[300:440, 160:300] = 255
    Image.fromarray(mask).save(tmp_path / "m.png")
    item = BenchItem("s1", uoc_tabletop / "000000-color.png", "Point to the leftmost bowl.", "steerable", 640, 480,
                     tmp_path / "m.png", reference_points_px=[(100.0, 100.0)])
    c, _ = make_client(models, tmp_path, uoc_tabletop, items=[item])
    with c:
        items = c.get("/api/human/items").json()["items"]
        assert items == [{"id": "s1", "query": "Point to the leftmost bowl.", "category": "steerable", "width": 640,
                          "height": 480, "points_expected": 1, "image_url": "/api/human/image?item=s1"}]
        img = np.asarray(Image.open(io.BytesIO(c.get(items[0]["image_url"]).content)).convert("RGB"))
        assert tuple(img[100, 100]) == (255, 0, 0)  # the reference point is drawn for people too
        assert c.post("/api/human/answers", json={"item_id": "s1", "points": [[230, 380]]}).json()["success"] is True
        assert c.post("/api/human/answers", json={"item_id": "s1", "points": [[100, 100]]}).json()["reason"] == "miss"
        assert c.post("/api/human/answers", json={"item_id": "s1", "points": []}).json()["reason"] == "no_points"
        assert c.post("/api/human/answers", json={"item_id": "x", "points": []}).status_code == 404
        s = c.get("/api/human/summary").json()
        assert s["categories"]["steerable"] == {"n": 3, "success": 1, "accuracy": pytest.approx(1 / 3)}
        assert [json.loads(x)["points"] for x in c.get("/api/human/pred.jsonl").text.splitlines()] == \
            [[[230, 380]], [[100, 100]], []]
