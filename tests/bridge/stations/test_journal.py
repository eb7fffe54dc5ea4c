"""A station's journal (bridge/stations/journal.py): kept until acknowledged, across a restart."""

from __future__ import annotations

from pointlab.bridge.stations.journal import Journal, JournalStorePort
from pointlab.bridge.trials.ports import Slot
from pointlab.bridge.trials.record import TrialResult

SLOT = Slot(3, 7, 1)


def _result(uid: str) -> TrialResult:
    return TrialResult(trial_id=uid, agent="sim-oracle", instruction="pick up the red cube", action="pick")


def test_a_finished_trial_is_kept_with_its_frames_until_acknowledged(tmp_path):
    j = Journal(tmp_path / "j.sqlite", "s1")
    port = JournalStorePort(j)
    port.begin("a" * 32, SLOT, agent="sim-oracle", instruction="pick up the red cube", action="pick")
    assert j.undelivered() == []  # begun, not finished: nothing to deliver yet
    port.save(_result("a" * 32), SLOT, {"before": b"\xff\xd8jpeg-1", "after": b"\xff\xd8jpeg-2"})
    (rec,) = j.undelivered()
    assert rec.station == "s1" and rec.result["station"] == "s1"
    assert rec.slot.model_dump() == {"study_id": 3, "participant_id": 7, "block": 1}
    assert port.frame("a" * 32, "after") == b"\xff\xd8jpeg-2"
    j.delivered("a" * 32)
    assert j.undelivered() == []
    # acknowledged; its recording (none here) is the next thing to send, then nothing is left
    assert j.counts() == {"finished": 1, "undelivered": 0, "refused": 0, "recordings_undelivered": 1}
    assert j.undelivered_recordings() == [("a" * 32, None)]
    j.recording_delivered("a" * 32)
    assert j.undelivered_recordings() == [] and j.counts()["recordings_undelivered"] == 0


def test_a_trial_cut_by_a_kill_is_delivered_as_interrupted_after_the_restart(tmp_path):
    j = Journal(tmp_path / "j.sqlite", "s1")
    j.begin("b" * 32, SLOT, agent="sim-noisy", instruction="put it in the blue bowl", action="place")
    j.begin("c" * 32, SLOT, agent="sim-noisy", instruction="pick up the cube", action="pick")
    j.finish(_result("c" * 32), SLOT, {})
    j.close()  # the process dies here; a new one opens the same file
    again = Journal(tmp_path / "j.sqlite", "s1")
    assert len(again.close_interrupted()) == 1
    recs = {r.result["trial_id"]: r for r in again.undelivered()}
    assert set(recs) == {"b" * 32, "c" * 32}
    cut = recs["b" * 32].result
    assert (cut["outcome"], cut["abort"]["code"], cut["robot_outcome"], cut["action"]) == (
        "aborted",
        "interrupted",
        "interrupted",
        "place",
    )
    assert again.close_interrupted() == []  # once


def test_a_record_the_server_refused_for_good_is_set_aside_and_the_rest_goes_on(tmp_path):
    j = Journal(tmp_path / "j.sqlite", "s1")
    for uid in ("1" * 32, "2" * 32):
        j.finish(_result(uid), SLOT, {})
    j.refused("1" * 32, "unknown participant")
    assert [r.result["trial_id"] for r in j.undelivered()] == ["2" * 32]
    assert j.counts() == {"finished": 2, "undelivered": 1, "refused": 1, "recordings_undelivered": 0}


def test_a_journal_from_before_recordings_were_delivered_gains_the_column(tmp_path):
    import sqlite3

    old = sqlite3.connect(tmp_path / "j.sqlite")
    old.execute(
        "CREATE TABLE journal (trial_uid VARCHAR(64) PRIMARY KEY, begun TEXT, record TEXT, "
        "begun_unix_s FLOAT, delivered_unix_s FLOAT, refused TEXT)"
    )
    old.execute("INSERT INTO journal VALUES ('d' || hex(zeroblob(15)) || 'd', '{}', NULL, 1.0, NULL, NULL)")
    old.commit()
    old.close()
    j = Journal(tmp_path / "j.sqlite", "s1")
    assert j.counts() == {"finished": 0, "undelivered": 0, "refused": 0, "recordings_undelivered": 0}
