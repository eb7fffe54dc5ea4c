"""``pointlab bench arena-publish``: the arena's votes in Chatbot Arena's release form after its
filters (ui/arena/release.py), on a real SQLite arena store."""

from __future__ import annotations

import hashlib
import json

from typer.testing import CliRunner

from pointlab.ui.arena.release import release_votes
from pointlab.ui.arena.store import ArenaStore
from tests.ui.arena.helpers import new_battle


def _answer(points, raw="I point at [[10, 20]]", error=None) -> dict:
    return {"points_px": points, "raw_text": raw, "parse_error": None, "error": error, "latency_s": 0.1}


def _battle(store, sid, vote, *, a=None, b=None, models=("alpha-model", "beta-model"), image="1" * 64, text="the cup"):
    bid = new_battle(store, sid, model_a=models[0], model_b=models[1], image_sha256=image, instruction=text)
    store.record_answer(bid, "A", a or _answer([[1.0, 2.0]]))
    store.record_answer(bid, "B", b or _answer([[3.0, 4.0]]))
    store.mark_shown(bid)
    store.vote(bid, sid, vote, flag_min_votes=3)
    return bid


def _arena(tmp_path):
    store = ArenaStore(tmp_path / "arena.db")
    s1, s2, s3 = (store.ensure_session(None) for _ in range(3))
    kept = [
        _battle(store, s1, "A"),  # released: model_a
        _battle(store, s2, "both_bad", image="2" * 64),  # released: tie (bothbad)
        _battle(store, s2, "B", image="3" * 64, text="the bowl"),  # released: model_b
    ]
    _battle(store, s1, "B", models=("beta-model", "alpha-model"), text="The  cup")  # the same vote again: duplicate
    _battle(store, s2, "A", a=_answer([[1.0, 1.0]], raw="As GPT-4, I point at..."), image="4" * 64)  # identity
    _battle(store, s2, "A", b=_answer([], raw="", error="timeout"), image="5" * 64)  # a failed answer
    _battle(store, s2, "A", b=_answer([[5.0, 5.0]], raw="beta-model thinks: [[5, 5]]"), image="6" * 64)  # its name
    for i in range(3):  # three votes all on side A: the session is flagged, all three left out
        _battle(store, s3, "A", image=f"{7 + i}" * 64)
    return store, kept, (s1, s2, s3)


def test_the_filters_drop_what_chatbot_arena_drops_and_the_records_follow_its_form(tmp_path):
    store, kept, (s1, s2, _s3) = _arena(tmp_path)
    battles = store.voted_battles(include_flagged=True)
    released, counts = release_votes(battles, ["alpha-model", "beta-model"])
    store.close()
    assert counts["votes"] == 10 and counts["released"] == 3
    assert counts["dropped"] == {"flagged": 3, "error": 1, "leaked_identity": 2, "duplicate": 1}
    assert counts["leaked_words"] == {"gpt-4": 1, "beta-model": 1}
    assert [r["question_id"] for r in released] == kept
    assert [r["winner"] for r in released] == ["model_a", "tie (bothbad)", "model_b"]
    first = released[0]
    assert set(first) >= {"question_id", "model_a", "model_b", "winner", "judge", "turn", "anony", "tstamp"}
    # the voter's id: the same for one session, and not the session id
    assert first["judge"] == "arena_user_" + hashlib.sha256(s1.encode()).hexdigest()[:16]
    assert released[1]["judge"] == released[2]["judge"] != first["judge"] and s1 not in json.dumps(released)
    assert (first["points_a"], first["points_b"], first["image_sha256"]) == ([[1.0, 2.0]], [[3.0, 4.0]], "1" * 64)


def test_the_bundle_command_writes_votes_ratings_and_a_manifest(tmp_path):
    from pointlab.bridge.cli import build_app

    store, kept, _ = _arena(tmp_path)
    store.close()
    out = tmp_path / "bundle"
    run = CliRunner().invoke(
        build_app(), ["bench", "arena-publish", "--db", str(tmp_path / "arena.db"), "--out", str(out)]
    )
    assert run.exit_code == 0, run.output
    bundle = json.loads(run.stdout)
    assert (bundle["format"], bundle["votes"], bundle["released"]) == ("pointlab-arena-bundle", 10, 3)
    votes = [json.loads(x) for x in (out / "votes.jsonl").read_text().splitlines()]
    assert [v["question_id"] for v in votes] == kept
    ratings = json.loads((out / "ratings.json").read_text())
    # ties left out: one decided vote each way (alpha won once, beta won once): equal Bradley-Terry
    # ratings, both under 50 votes: marked
    rows = {r["model"]: r for r in ratings["ties_exclude"]["models"]}
    assert rows["alpha-model"]["bt"]["rating"] == rows["beta-model"]["bt"]["rating"]
    assert all(r["few_votes"] for r in rows.values()) and rows["alpha-model"]["votes"] == 3
    for line in (out / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert (out / "plots" / "ratings.png").stat().st_size > 0
    again = CliRunner().invoke(
        build_app(), ["bench", "arena-publish", "--db", str(tmp_path / "arena.db"), "--out", str(out)]
    )
    assert again.exit_code == 2 and "not an empty folder" in again.output
    missing = CliRunner().invoke(
        build_app(), ["bench", "arena-publish", "--db", str(tmp_path / "no.db"), "--out", str(tmp_path / "x")]
    )
    assert missing.exit_code == 2 and not (tmp_path / "no.db").exists()
