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

from pointlab.benchmark.points import PointEntry, parse_points
from pointlab.bridge.trials.outcomes import Refusal
from pointlab.bridge.study.store import SCHEMA_VERSION, Store, StoreError
from pointlab.bridge.study.sus import SusError
from pointlab.bridge.trials.targeting import Target
from pointlab.bridge.trials.record import TrialResult
from pointlab.robot.arm import MotionReport, TcpPose
from pointlab.bridge.study.trial_table import STORE_COLUMNS


def _full_trial(uid: str = "a" * 32) -> TrialResult:
    return TrialResult(
        trial_id=uid,
        agent="sim-oracle",
        instruction="pick up the red cube",
        action="pick",
        raw_answer='<point x="51.0" y="42.5" alt="red cube">red cube</point>',
        points=[PointEntry(u_px=326.4, v_px=204.0), PointEntry(u_px=10.0, v_px=20.0)],
        points_px=[(326.4, 204.0), (10.0, 20.0)],
        parse_error=None,
        frame_index=17,
        frame_size=(640, 480),
        target=Target(
            valid=True,
            pixel=(326.4, 204.0),
            point_camera_m=(0.01, 0.02, 0.6),
            point_base_m=(0.3, -0.05, 0.02),
            depth_m=0.6,
        ),
        robot_outcome="done",
        robot_error=None,
        motion=MotionReport(
            action="pick",
            target_m=[0.3, -0.05, 0.02],
            waypoints=[TcpPose(position_m=(0.3, -0.05, 0.12), rpy_deg=(180.0, 0.0, 0.0))],
            tool_commands=["open", "close"],
            duration_s=3.5,
        ),
        sim_success=True,
        sim_detail="holding red_cube",
        timings_s={"agent": 0.12, "targeting": 0.01, "motion": 3.5, "total": 3.7},
        expected={"action": "pick", "object": "red_cube", "container": None},
    )


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
    assert store.trial_result(row_id) == t  # the typed record comes back equal, field for field


def test_the_trials_table_is_derived_from_the_record(tmp_path):
    # every TrialResult field is a column, plus the store's own, and nothing else
    Store(tmp_path / "d.sqlite").close()
    con = sqlite3.connect(tmp_path / "d.sqlite")
    cols = {r[1] for r in con.execute("PRAGMA table_info(trials)")}
    fields = {("trial_uid" if f == "trial_id" else f) for f in TrialResult.model_fields}
    assert cols == fields | set(STORE_COLUMNS)


def test_a_refusal_is_stored_as_code_and_detail(store):
    refusal = Refusal(code="no_depth", detail="3 valid depth pixels within 4 px (need 5)")
    t = TrialResult(
        trial_id="r" * 32,
        agent="a",
        instruction="x",
        action="pick",
        robot_outcome="refused",
        refusal=refusal,
        target=Target(valid=False, pixel=(1.0, 2.0), refusal=refusal),
    )
    row = store.trial(store.save_trial(t))
    assert row["refusal"] == {
        "code": "no_depth",
        "detail": "3 valid depth pixels within 4 px (need 5)",
        "stage": "depth",
    }
    assert store.trial_result(row["id"]).refusal == refusal


def test_numpy_values_are_stored_as_plain_json(store):
    t = TrialResult(
        trial_id="b" * 32,
        agent="sim-noisy",
        instruction="place it in the bowl",
        action="place",
        points_px=[(np.float64(1.5), np.float64(2.0))],
        target=Target(valid=False, depth_m=np.float64(0.25), refusal=Refusal(code="no_depth")),
        timings_s={"agent": np.float64(0.5)},
        frame_size=(np.int64(640), np.int64(480)),
    )
    row = store.trial(store.save_trial(t))
    assert row["points_px"] == [[1.5, 2.0]]
    assert row["target"]["depth_m"] == 0.25 and row["timings_s"] == {"agent": 0.5} and row["frame_size"] == [640, 480]


def test_a_non_finite_point_is_kept_as_null_with_its_reason(store):
    # the model's own answer is kept, invalid entries included (issue 14): strict JSON has no NaN
    t = TrialResult(
        trial_id="n" * 32,
        agent="a",
        instruction="x",
        action="pick",
        points=[
            PointEntry(u_px=float("nan"), v_px=float("nan"), valid=False, reason="not a finite number"),
            PointEntry(u_px=452.0, v_px=148.0),
        ],
        points_px=[(452.0, 148.0)],
    )
    row = store.trial(store.save_trial(t))
    assert row["points"][0] == {"u_px": None, "v_px": None, "valid": False, "reason": "not a finite number"}
    assert row["points"][1]["u_px"] == 452.0


# A stored trial's ``points`` and ``motion`` columns as pointlab wrote them while the record had its own
# types (bridge.trials.outcomes.PointEntry, bridge.trials.record.Motion and Waypoint), written out by hand:
# positions rounded to 1e-6 m, angles to 1e-4 deg, the duration to 1e-4 s, a NaN coordinate as null.
STORED_POINTS = (
    '[{"u_px": 326.4, "v_px": 204.0, "valid": true, "reason": null}, '
    '{"u_px": null, "v_px": null, "valid": false, "reason": "non-finite coordinate"}, '
    '{"u_px": 700.0, "v_px": 10.0, "valid": true, "reason": "outside_image: (700, 10) is outside the 640x480 image"}]'
)
STORED_MOTION = (
    '{"action": "pick", "target_m": [0.3, -0.051235, 0.02], "waypoints": ['
    '{"position_m": [0.3, -0.051235, 0.123457], "rpy_deg": [180.0, 0.0, -90.1235]}, '
    '{"position_m": [0.3, -0.05, 0.12], "rpy_deg": [180.0, 0.0, 0.0]}], '
    '"tool_commands": ["open", "close"], "duration_s": 3.1416}'
)


def test_a_stored_trials_points_and_motion_are_the_json_written_before(tmp_path):
    parsed = parse_points("[[326.4, 204.0], [NaN, NaN], [700, 10]]", "xy_pixels", 640, 480)
    motion = MotionReport(
        action="pick",
        target_m=[0.30000000123, -0.0512345678, 0.02],
        waypoints=[
            TcpPose.at([0.30000000123, -0.0512345678, 0.1234567891], (180.0, 1.2e-5, -90.123456)),
            TcpPose((0.3, -0.05, 0.12)),
        ],
        tool_commands=["open", "close"],
        duration_s=3.14159265,
    )
    t = TrialResult(
        trial_id="j" * 32,
        agent="a",
        instruction="x",
        action="pick",
        points=list(parsed.entries),
        points_px=parsed.points_px.tolist(),
        motion=motion,
    )
    s = Store(tmp_path / "s.sqlite")
    row_id = s.save_trial(t)
    con = sqlite3.connect(tmp_path / "s.sqlite")
    assert con.execute("SELECT points, motion FROM trials").fetchone() == (STORED_POINTS, STORED_MOTION)
    # the stored row loads back as the typed record, and so does one written before
    back = s.trial_result(row_id)
    assert back.motion == MotionReport.model_validate_json(STORED_MOTION) and back.motion.waypoints[1] == TcpPose(
        (0.3, -0.05, 0.12)
    )
    assert back.points[0] == parsed.entries[0] and back.points[1].u_px is None and not back.points[2].inside
    con.close()
    s.close()


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
        from pointlab.bridge.study.store import Store
        from pointlab.bridge.trials.record import TrialResult
        s = Store({str(path)!r})
        for i in range(3):
            tid = s.save_trial(TrialResult(trial_id=f"{{i:032d}}", agent="sim-oracle", instruction=f"pick {{i}}",
                                           action="pick"))
            s.set_judgement(tid, "succeeded" if i % 2 == 0 else "failed")
        s.save_survey([5, 1, 5, 1, 5, 1, 5, 1, 5, 1], agent="sim-oracle", block=0)
        os._exit(9)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 9, r.stderr
    s = Store(path, create=False)
    assert [(t["instruction"], t["judgement"]) for t in s.trials()] == [
        ("pick 0", "succeeded"),
        ("pick 1", "failed"),
        ("pick 2", "succeeded"),
    ]
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


_V2_TRIALS = """CREATE TABLE trials (id INTEGER NOT NULL, trial_uid VARCHAR(64) NOT NULL, study_id INTEGER,
 participant_id INTEGER, block INTEGER, agent TEXT NOT NULL, instruction TEXT NOT NULL, action VARCHAR(8) NOT NULL,
 raw_answer TEXT NOT NULL, points_px JSON NOT NULL, parse_error TEXT, frame_index INTEGER, frame_size JSON,
 target JSON, robot_outcome VARCHAR(32) NOT NULL, robot_error TEXT, agent_error TEXT, motion JSON,
 sim_success BOOLEAN, sim_detail TEXT, timings_s JSON NOT NULL, expected JSON, judgement VARCHAR(16),
 created_unix_s FLOAT NOT NULL, judged_unix_s FLOAT, PRIMARY KEY (id), UNIQUE (trial_uid))"""


def test_a_version_2_database_is_migrated_in_place_and_loses_nothing(tmp_path):
    # a file as pointlab wrote it before typed records (schema 2, the CREATE TABLE of that release)
    path = tmp_path / "v2.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE meta (key VARCHAR(64) PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.execute(_V2_TRIALS)
    rows = [
        (
            "u1",
            "done",
            None,
            {"valid": True, "pixel": [1.0, 2.0], "point_base_m": [0.3, 0.0, 0.02], "reason": None},
            [[1.0, 2.0]],
            "succeeded",
        ),
        (
            "u2",
            "refused",
            None,
            {"valid": False, "pixel": [5.0, 6.0], "reason": "no_depth: 0 valid depth pixels"},
            [[5.0, 6.0]],
            "failed",
        ),
        ("u3", "refused", "unsafe_target: beyond_reach: 0.471 m", {"valid": True, "reason": None}, [[7.0, 8.0]], None),
        (
            "u4",
            "robot_failure",
            "ArmFaultError: set_position returned code 31",
            {"valid": True, "reason": None},
            [[9.0, 1.0]],
            "failed",
        ),
    ]
    for uid, outcome, error, target, pts, judgement in rows:
        con.execute(
            "INSERT INTO trials (trial_uid, agent, instruction, action, raw_answer, points_px, target, "
            "robot_outcome, robot_error, timings_s, judgement, created_unix_s) VALUES "
            "(?, 'a', 'pick it', 'pick', 'x', ?, ?, ?, ?, '{}', ?, 1.8e9)",
            (uid, json.dumps(pts), json.dumps(target), outcome, error, judgement),
        )
    con.commit()
    con.close()
    s = Store(path)
    got = {t["trial_uid"]: t for t in s.trials()}
    assert [got[u]["judgement"] for u in ("u1", "u2", "u3", "u4")] == ["succeeded", "failed", None, "failed"]
    assert got["u1"]["refusal"] is None and got["u1"]["target"]["point_base_m"] == [0.3, 0.0, 0.02]
    assert got["u2"]["refusal"] == {"code": "no_depth", "detail": "0 valid depth pixels", "stage": "depth"}
    assert got["u2"]["target"]["refusal"]["code"] == "no_depth" and "reason" not in got["u2"]["target"]
    assert got["u3"]["refusal"] == {"code": "workspace", "detail": "beyond_reach: 0.471 m", "stage": "reach"}
    assert got["u3"]["robot_error"] is None
    assert got["u4"]["robot_error"]["detail"] == "ArmFaultError: set_position returned code 31"
    assert got["u4"]["points"] == [{"u_px": 9.0, "v_px": 1.0, "valid": True, "reason": None}]
    assert [s.trial_result(got[u]["id"]).robot_outcome for u in ("u1", "u2", "u3", "u4")] == [
        "done",
        "refused",
        "refused",
        "robot_failure",
    ]
    s.close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    con.close()


# The version-4 tables as pointlab 40ba181 created them (the CREATE statements of that release).
_V4_STUDIES = """CREATE TABLE studies (id INTEGER NOT NULL, name TEXT NOT NULL, scene TEXT NOT NULL, agents JSON NOT NULL,
 trials_per_agent INTEGER NOT NULL, design TEXT NOT NULL, created_unix_s FLOAT NOT NULL, max_repeats INTEGER NOT NULL,
 reveal_floor_s FLOAT NOT NULL, PRIMARY KEY (id))"""
_V4_TRIALS = """CREATE TABLE trials (id INTEGER NOT NULL, study_id INTEGER, participant_id INTEGER, block INTEGER,
 judgement VARCHAR(16), created_unix_s FLOAT NOT NULL, judged_unix_s FLOAT, trial_uid VARCHAR(64) NOT NULL,
 agent TEXT NOT NULL, instruction TEXT NOT NULL, action VARCHAR(32) NOT NULL, raw_answer TEXT, points JSON,
 points_px JSON, parse_error TEXT, frame_index INTEGER, frame_size JSON, target JSON, robot_outcome VARCHAR(32),
 refusal JSON, robot_error JSON, agent_error TEXT, motion JSON, sim_success BOOLEAN, sim_detail TEXT, timings_s JSON,
 expected JSON, outcome VARCHAR(32), abort JSON, failure_stage VARCHAR(32), point_on_target BOOLEAN, auto_check JSON,
 depth_check JSON, after_frame_index INTEGER, recording JSON, PRIMARY KEY (id), UNIQUE (trial_uid))"""


def test_a_version_4_database_gets_numbers_per_study_and_keeps_its_floor(tmp_path):
    path = tmp_path / "v4.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE meta (key VARCHAR(64) PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '4')")
    con.execute(_V4_STUDIES)
    con.execute(_V4_TRIALS)
    con.execute("INSERT INTO studies VALUES (1, 'pilot', '', '[\"a\", \"b\"]', 2, 'williams', 1.8e9, 2, 4.0)")
    con.execute("INSERT INTO studies VALUES (2, '', '', '[\"a\"]', 1, 'williams', 1.8e9, 2, 0.0)")
    # trials of study 1, none, 2, 1 (row ids 1..5, stored in that order)
    for rid, sid in ((1, 1), (2, 1), (3, None), (4, 2), (5, 1)):
        con.execute(
            "INSERT INTO trials (id, study_id, trial_uid, agent, instruction, action, robot_outcome, "
            "timings_s, created_unix_s) VALUES (?, ?, ?, 'a', 'pick it', 'pick', 'done', '{}', 1.8e9)",
            (rid, sid, f"x{rid}"),
        )
    con.commit()
    con.close()
    s = Store(path)
    assert [(t["id"], t["number"]) for t in s.trials()] == [(1, 1), (2, 2), (3, 1), (4, 1), (5, 3)]
    # a study keeps the fixed floor it was run with as both bounds; it gets the default storage floor
    st1, st2 = s.study(1), s.study(2)
    assert (st1["reveal_low_s"], st1["reveal_high_s"], st2["reveal_low_s"], st2["reveal_high_s"]) == (
        4.0,
        4.0,
        0.0,
        0.0,
    )
    assert st1["min_free_mb"] == 1000  # 1 GB, docs/trials.md "Storage"
    # and new trials continue the numbering of their study
    new = s.save_trial(
        TrialResult(trial_id="y", agent="a", instruction="pick it", action="pick"),
        study_id=1,
        frames={"before": b"\xff\xd8b", "after": b"\xff\xd8a"},
    )
    assert s.trial(new)["number"] == 4 and s.trial_frame("y", "after") == b"\xff\xd8a"
    assert s.trial_frame("x1", "before") is None
    s.close()


@pytest.mark.parametrize("content", [b"", b"not a database at all"])
def test_a_reader_leaves_a_file_that_is_not_a_store_as_it_was(tmp_path, content):
    """``create=False`` (export, reports): an empty file or a non-SQLite file is refused and not
    written to (no schema, no WAL header), and no -wal/-shm files are left beside it."""
    p = tmp_path / "x.sqlite"
    p.write_bytes(content)
    with pytest.raises(StoreError, match="not a pointlab store|cannot be opened"):
        Store(p, create=False)
    assert p.read_bytes() == content and sorted(f.name for f in tmp_path.iterdir()) == ["x.sqlite"]


def test_a_reader_refuses_another_programs_sqlite_without_touching_it(tmp_path):
    import sqlite3

    p = tmp_path / "other.db"
    with sqlite3.connect(p) as c:
        c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    before = p.read_bytes()
    with pytest.raises(StoreError, match="not a pointlab store"):
        Store(p, create=False)
    assert p.read_bytes() == before
