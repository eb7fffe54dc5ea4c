"""The arena store on SQLite and PostgreSQL: the same rules on both, the schema upgrade of a
database written by the previous pointlab (no meta table, no vote counters), a newer schema refused;
the real-photo curated set with its hand masks."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import text

from pointlab.ui.arena import ArenaError, ArenaStore
from pointlab.ui.arena.store import RateLimit
from pointlab.ui.arena.curated import CuratedSet

from .helpers import new_battle


def _battle(store, sid, shown=True, limits=()):
    bid = new_battle(store, sid, client_addr="10.0.0.1", rate_limits=limits)
    store.record_answer(bid, "A", {"points_px": []})
    store.record_answer(bid, "B", {"points_px": [[1, 1]]})
    if shown:
        store.mark_shown(bid)
    return bid


def _rules(store: ArenaStore) -> None:
    sid, other = store.ensure_session(None, "10.0.0.1"), store.ensure_session(None)
    b1, b2 = _battle(store, sid), _battle(store, sid, shown=False)
    for bid, who, choice, status in (
        (b1, other, "A", 403),
        (b2, sid, "A", 409),
        (b1, sid, "C", 400),
        ("nope", sid, "A", 404),
    ):
        with pytest.raises(ArenaError) as e:
            store.vote(bid, who, choice)
        assert e.value.status == status
    assert store.vote(b1, sid, "B")["vote"] == "model_b"
    with pytest.raises(ArenaError) as e:
        store.vote(b1, sid, "A")
    assert e.value.status == 409 and store.battle(b1)["vote"] == "model_b"
    assert store.battles_since(0.0, client_addr="10.0.0.1") == 2
    assert store.battles_since(0.0, session_id=sid, source="upload") == 0
    # rate limits are counted in the battle's own transaction: 2 battles from 10.0.0.1 this minute
    per_addr = RateLimit({"client_addr": "10.0.0.1"}, 2, "battles a minute per address")
    with pytest.raises(ArenaError) as e:
        _battle(store, sid, limits=[RateLimit({"session_id": sid}, 3, "per session"), per_addr])
    assert e.value.status == 429 and "at most 2 battles a minute per address" in str(e.value)
    assert store.battles_since(0.0, client_addr="10.0.0.1") == 2  # nothing stored
    with pytest.raises(ArenaError) as e:
        store.check_rate_limits([per_addr])
    assert e.value.status == 429
    store.check_rate_limits([RateLimit({"client_addr": "10.0.0.1", "source": "upload"}, 1, "uploads")])
    for _ in range(2):
        store.vote(_battle(store, sid), sid, "B", flag_min_votes=3)
    s = store.session(sid)
    assert s["votes"] == 3 and s["flagged"] and "side B" in s["flag_reason"]
    assert store.votes() == [] and len(store.votes(include_flagged=True)) == 3
    assert store.battle_counts() == {"m1": 4, "m2": 4}


def _answers_stored(store: ArenaStore) -> None:
    """What a worker that did not ask the models polls: which answers are stored."""
    sid = store.ensure_session(None)
    b1 = _battle(store, sid)
    b3 = new_battle(store, sid, client_addr="10.0.0.2")
    assert store.answers_stored(b3) == (False, False)
    store.record_answer(b3, "B", {"points_px": []})  # an empty answer is an answer
    assert store.answers_stored(b3) == (False, True) and store.answers_stored(b1) == (True, True)
    with pytest.raises(ArenaError) as e:
        store.answers_stored("nope")
    assert e.value.status == 404
    # the watcher's poll: every known id of the list in one statement, unknown ids left out
    got = store.answers_of([b1, b3, "nope"])
    assert set(got) == {b1, b3}
    assert got[b3] == (None, {"points_px": []})
    assert got[b1] == ({"points_px": []}, {"points_px": [[1, 1]]})
    assert store.answers_of([]) == {}


def test_a_known_session_is_answered_without_a_statement(tmp_path):
    """Every request checks its cookie: a session id this process has seen stored costs no statement;
    an unknown or forged id still goes to the store (and gets a new session)."""
    from sqlalchemy import event

    store = ArenaStore(tmp_path / "s.db")
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda _c, _cur, sql, *a: statements.append(sql))
    sid = store.ensure_session(None)
    assert any(q.lstrip().upper().startswith("INSERT INTO SESSIONS") for q in statements)
    statements.clear()
    assert store.ensure_session(sid) == sid and statements == []
    forged = store.ensure_session("f" * 32)
    assert forged != "f" * 32 and statements  # looked up, not found: a new session
    other = ArenaStore(tmp_path / "s.db")  # another worker: reads it once, then remembers it
    n = []
    event.listen(other.engine, "before_cursor_execute", lambda _c, _cur, sql, *a: n.append(sql))
    assert other.ensure_session(sid) == sid and len(n) == 1
    assert other.ensure_session(sid) == sid and len(n) == 1
    store.close()
    other.close()


def test_rules_sqlite(tmp_path):
    _rules(ArenaStore(tmp_path / "a.db"))
    _answers_stored(ArenaStore(tmp_path / "b.db"))


@pytest.mark.slow
def test_rules_postgresql(pg_url):
    store = ArenaStore(pg_url)
    _rules(store)
    _answers_stored(store)
    store.close()


V1_SCHEMA = """
CREATE TABLE sessions (id VARCHAR(64) PRIMARY KEY, created_unix_s FLOAT, flagged BOOLEAN, flag_reason TEXT);
CREATE TABLE battles (id VARCHAR(64) PRIMARY KEY, session_id VARCHAR(64), created_unix_s FLOAT, image_sha256 VARCHAR(64),
  image_path TEXT, image_source VARCHAR(16), width INTEGER, height INTEGER, instruction TEXT, model_a TEXT, model_b TEXT,
  sampler VARCHAR(16), answer_a JSON, answer_b JSON, shown_unix_s FLOAT, vote VARCHAR(16), voted_unix_s FLOAT);
CREATE TABLE human_clicks (id INTEGER PRIMARY KEY, session_id VARCHAR(64), item_id TEXT, category VARCHAR(16),
  points_px JSON, success BOOLEAN, reason VARCHAR(32), created_unix_s FLOAT);
INSERT INTO sessions VALUES ('s1', 1.0, 0, NULL);
INSERT INTO battles VALUES ('b1', 's1', 1.0, 'x', 'p', 'curated', 4, 4, 'Point', 'm1', 'm2', 'uniform', '{}', '{}', 2.0, 'model_a', 3.0);
INSERT INTO battles VALUES ('b2', 's1', 1.0, 'x', 'p', 'curated', 4, 4, 'Point', 'm1', 'm2', 'uniform', '{}', '{}', 2.0, 'both_bad', 4.0);
"""


def test_upgrade_of_a_previous_database_and_newer_schema_refused(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as c:
        c.executescript(V1_SCHEMA)
    store = ArenaStore(db)
    s = store.session("s1")
    assert s["votes"] == 2 and [v["winner"] for v in store.votes()] == ["model_a", "both_bad"]
    with store.engine.begin() as c:
        c.execute(text("UPDATE meta SET value = '99' WHERE key = 'schema_version'"))
    store.close()
    with pytest.raises(ArenaError, match="newer"):
        ArenaStore(db)


@pytest.mark.slow
def test_real_photos_with_hand_masks(shared_data):
    root = shared_data / "pointing" / "robot_view_pointing"
    cur = CuratedSet.from_folder(root / "images", masks=root / "hand_masks", names=("hand", "pointing hand"))
    assert len(cur) == 17
    with_mask = [i for i in cur.images.values() if i.targets]
    assert len(with_mask) == 17 and all(i.targets[0]["names"] == ("hand", "pointing hand") for i in with_mask)
    rgb, sha = cur.rgb("frame0.jpg")
    assert rgb.shape == (950, 700, 3) and len(sha) == 64


def test_a_stored_answer_keeps_the_models_reasoning_and_the_page_never_sees_it():
    import numpy as np

    from pointlab.benchmark.agents import AgentAnswer
    from pointlab.ui.arena.battles import answer_record, public_answer

    ans = AgentAnswer(points_px=np.array([[3.0, 4.0]]), raw_text="[3, 4]", reasoning="the red one, not [9, 9]")
    rec = answer_record(ans)
    assert rec["reasoning"] == "the red one, not [9, 9]" and rec["points_px"] == [[3.0, 4.0]]
    assert public_answer("A", rec) == {"type": "answer", "side": "A", "points": [[3.0, 4.0]], "failed": False}
