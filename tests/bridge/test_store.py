"""The SQLite store: every TrialResult field round-trips, every write is committed at once
(a killed process loses nothing), WAL mode, clear errors for missing/corrupt files."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pointlab.bridge.store import SCHEMA_VERSION, Store, StoreError
from pointlab.bridge.sus import SusError
from pointlab.bridge.trial import TrialResult


def _full_trial(uid: str = "a" * 32) -> TrialResult:
    return TrialResult(
        trial_id=uid, agent="sim-oracle", instruction="pick up the red cube", action="pick",
        raw_answer='<point x="51.0" y="42.5" alt="red cube">red cube</point>',
        points_px=[[326.4, 204.0], [10.0, 20.0]], parse_error=None, frame_index=17, frame_size=[640, 480],
        target={"valid": True, "pixel": [326.4, 204.0], "point_camera_m": [0.01, 0.02, 0.6],
                "point_base_m": [0.3, -0.05, 0.02], "depth_m": 0.6, "reason": None},
        robot_outcome="done", robot_error=None,
        motion={"action": "pick", "waypoints": [[0.3, -0.05, 0.12], [0.3, -0.05, 0.02]], "duration_s": 3.5},
        sim_success=True, sim_detail="holding red_cube", timings_s={"agent": 0.12, "targeting": 0.01, "motion": 3.5,
                                                                    "total": 3.7},
        expected={"action": "pick", "object": "red_cube", "container": None})


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "study.sqlite")
    yield s
    s.close()


def test_every_trial_field_round_trips(store):
    t = _full_trial()
    sid = store.create_study(agents=["sim-oracle", "human"], trials_per_agent=2, scene="tabletop")
    pid = store.add_participant(sid, token="tok-1", agent_order=["human", "sim-oracle"])
    row_id = store.save_trial(t, study_id=sid, participant_id=pid, block=1)
    row = store.trial(row_id)
    for k, v in t.to_dict().items():
        key = "trial_uid" if k == "trial_id" else k
        assert row[key] == v, k
    assert (row["study_id"], row["participant_id"], row["block"], row["judgement"]) == (sid, pid, 1, None)
    assert row["created_unix_s"] > 1.7e9 and row["judged_unix_s"] is None


def test_numpy_values_are_stored_as_plain_json(store):
    t = TrialResult("b" * 32, "sim-noisy", "place it in the bowl", "place", points_px=np.array([[1.5, 2.0]]),
                    target={"valid": False, "reason": "no_depth: no valid depth", "depth_m": np.float32(0.25)},
                    timings_s={"agent": np.float64(0.5)}, frame_size=[np.int64(640), np.int64(480)])
    row = store.trial(store.save_trial(t))
    assert row["points_px"] == [[1.5, 2.0]]
    assert row["target"]["depth_m"] == 0.25 and row["timings_s"] == {"agent": 0.5} and row["frame_size"] == [640, 480]


def test_judgement_and_surveys(store):
    tid = store.save_trial(_full_trial())
    store.set_judgement(tid, "failed")
    assert store.trial(tid)["judgement"] == "failed" and store.trial(tid)["judged_unix_s"] is not None
    with pytest.raises(StoreError, match="judgement must be one of"):
        store.set_judgement(tid, "maybe")
    with pytest.raises(StoreError, match="unknown trial 999"):
        store.set_judgement(999, "succeeded")
    sv = store.save_survey([4, 2, 4, 1, 3, 2, 5, 1, 4, 2], agent="human", block=0)
    assert store.surveys()[0]["score"] == 80.0 and store.surveys()[0]["id"] == sv
    with pytest.raises(SusError):
        store.save_survey([4, 2, 4])
    assert len(store.surveys()) == 1


def test_repeated_trial_id_and_unknown_refs_are_errors(store):
    store.save_trial(_full_trial("c" * 32))
    with pytest.raises(StoreError, match="cannot be stored"):
        store.save_trial(_full_trial("c" * 32))
    with pytest.raises(StoreError, match="cannot be stored"):
        store.save_trial(_full_trial("d" * 32), study_id=42)
    with pytest.raises(StoreError, match="unknown study"):
        store.add_participant(42, token="x", agent_order=[])
    with pytest.raises(StoreError, match="survey cannot be stored"):
        store.save_survey([3] * 10, study_id=42)


def test_study_and_participant_validation(store):
    with pytest.raises(StoreError, match="at least one agent"):
        store.create_study(agents=[], trials_per_agent=1)
    with pytest.raises(StoreError, match="repeat"):
        store.create_study(agents=["a", "a"], trials_per_agent=1)
    with pytest.raises(StoreError, match="trials_per_agent"):
        store.create_study(agents=["a"], trials_per_agent=0)
    sid = store.create_study(agents=["a", "b"], trials_per_agent=1)
    with pytest.raises(StoreError, match="not a permutation"):
        store.add_participant(sid, token="t1", agent_order=["a", "c"])
    p1 = store.add_participant(sid, token="t1", agent_order=["b", "a"])
    with pytest.raises(StoreError, match="token already in use"):
        store.add_participant(sid, token="t1", agent_order=["a", "b"])
    p2 = store.add_participant(sid, token="t2", agent_order=["a", "b"])
    assert [p["order_index"] for p in store.participants(sid)] == [0, 1]
    assert store.participant_by_token("t2")["id"] == p2 and store.participant_by_token("nope") is None
    assert store.participant(p1)["label"] == "P1" and store.participant_count(sid) == 2


def test_wal_mode_and_schema_version(tmp_path):
    path = tmp_path / "w.sqlite"
    Store(path).close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="schema version 99"):
        Store(path)


def test_bad_paths_are_clear_errors(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "absent.sqlite", create=False)
    with pytest.raises(StoreError, match="folder .* does not exist"):
        Store(tmp_path / "no" / "such" / "dir.sqlite")
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database, just text\n" * 200)
    with pytest.raises(StoreError, match="corrupt or not SQLite"):
        Store(garbage)


def test_truncated_database_is_a_clear_error(tmp_path):
    path = tmp_path / "t.sqlite"
    s = Store(path)
    for i in range(50):
        s.save_trial(_full_trial(f"{i:032d}"))
    s.close()
    data = path.read_bytes()
    # Keep the valid header page, zero out the rest: the schema pages are gone.
    path.write_bytes(data[:100] + b"\0" * (len(data) - 100))
    with pytest.raises(StoreError):
        Store(path)


def test_a_killed_process_loses_nothing_already_judged(tmp_path):
    """A child saves and judges trials, then dies with os._exit (no close, no cleanup)."""
    path = tmp_path / "crash.sqlite"
    code = textwrap.dedent(f"""
        import os
        from pointlab.bridge.store import Store
        from pointlab.bridge.trial import TrialResult
        s = Store({str(path)!r})
        for i in range(3):
            tid = s.save_trial(TrialResult(f"{{i:032d}}", "sim-oracle", f"pick {{i}}", "pick"))
            s.set_judgement(tid, "succeeded" if i % 2 == 0 else "failed")
        s.save_survey([5, 1, 5, 1, 5, 1, 5, 1, 5, 1], agent="sim-oracle", block=0)
        os._exit(9)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 9, r.stderr
    s = Store(path, create=False)
    assert [(t["instruction"], t["judgement"]) for t in s.trials()] == [
        ("pick 0", "succeeded"), ("pick 1", "failed"), ("pick 2", "succeeded")]
    assert [v["score"] for v in s.surveys()] == [100.0]
    s.close()


def test_second_connection_sees_writes_immediately(tmp_path):
    path = tmp_path / "two.sqlite"
    writer, reader = Store(path), Store(path)
    tid = writer.save_trial(_full_trial())
    writer.set_judgement(tid, "succeeded")
    assert reader.trial(tid)["judgement"] == "succeeded"
    assert json.loads(json.dumps(reader.trials()))  # rows are JSON-ready
    writer.close(), reader.close()
