"""Trials a killed session left unfinished: noted when they begin, stored as aborted (interrupted)
with their recovered recording at the next start; and a real ``kill -9`` of ``pointlab act trials``."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from pointlab.bridge.recording.check import check_recordings, mcap_is_whole
from pointlab.bridge.study.interrupted import close_interrupted
from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.record import TrialResult

from tests.bridge.recording.test_check import POINTLAB, long_recording

COLOR = "/camera/camera/color/image_raw/compressed"


def _topics(mcap):
    from mcap.reader import make_reader

    with mcap.open("rb") as f:  # a plain reader: it refuses a file without its summary and footer
        return [ch.topic for _s, ch, _m in make_reader(f).iter_messages()]


def test_a_stored_trial_leaves_no_note(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.begin_trial("t1", agent="a", instruction="pick it", action="pick")
    assert [n["trial_uid"] for n in store.unfinished_trials()] == ["t1"]
    store.save_trial(TrialResult(trial_id="t1", agent="a", instruction="pick it", action="pick"))
    assert store.unfinished_trials() == []
    assert close_interrupted(store, tmp_path / "recordings") == []
    store.close()


def test_a_killed_trial_is_stored_aborted_with_its_recording_recovered(tmp_path, real_frames):
    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    store = Store(db)
    study = store.create_study(agents=["a"], trials_per_agent=2, scene="s")
    pid = store.add_participant(study, token="tok", agent_order=["a"])
    store.begin_trial(
        "long",
        agent="a",
        instruction="pick up the red cube",
        action="pick",
        study_id=study,
        participant_id=pid,
        block=0,
    )
    store.begin_trial(
        "never", agent="a", instruction="pick up the can", action="pick", study_id=study, participant_id=pid, block=0
    )
    r = long_recording(root, real_frames)  # 40 captures: several 1 MiB chunks
    # what a kill -9 leaves: no record beside the files, an MCAP cut in the middle of a chunk
    (root / "long.json").unlink()
    clip = root / r.clip
    clip.write_bytes(clip.read_bytes()[:2000])  # an MP4 cut before its index
    mcap = root / r.mcap
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size * 2 // 3])
    assert not mcap_is_whole(mcap)

    closed = close_interrupted(store, root)
    assert [(c["trial_uid"], c["recording"]) for c in closed] == [("long", "recovered"), ("never", "none")]
    assert store.unfinished_trials() == [] and close_interrupted(store, root) == []  # once only
    rows = {row["trial_uid"]: row for row in store.trials()}
    for uid in ("long", "never"):
        row = rows[uid]
        assert (row["outcome"], row["abort"]["code"], row["robot_outcome"], row["failure_stage"]) == (
            "aborted",
            "interrupted",
            "interrupted",
            "aborted",
        )
        assert (row["study_id"], row["block"]) == (study, 0)
    rec = rows["long"]["recording"]
    assert rec["ended_by"] == "interrupted" and rec["complete"] is False
    topics = _topics(mcap)  # whole again, and the record counts what it holds
    assert mcap_is_whole(mcap) and 0 < rec["color_frames"] == topics.count(COLOR) < 40
    assert rows["never"]["recording"] is None
    # the export takes both, and says why the killed trial has no clip
    from pointlab.bridge.study.export import export_study

    index = export_study(store, study, tmp_path / "out", recordings_dir=root)
    assert index["n_trials"] == 2 and index["n_recordings"] == 1
    (entry,) = [m for m in index["missing"] if m["trial_uid"] == "long"]
    assert entry["missing"] == ["clip"]
    assert entry["why"] == [
        "clip: long.mp4: cut by the kill before it was closed, so it has no index and cannot be played"
    ]
    found = check_recordings(store.trials(), root)
    assert (
        found.linked == 1
        and found.orphans == []
        and found.truncated == []
        and found.unrecorded == [rows["never"]["id"]]
    )
    store.close()


def test_a_bag_closed_before_the_kill_is_linked_with_what_it_holds(tmp_path, real_frames):
    # killed after the bag was closed and before its record and the trial were written
    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    store = Store(db)
    store.begin_trial("long", agent="a", instruction="pick up the red cube", action="pick")
    r = long_recording(root, real_frames, captures=10)
    (root / "long.json").unlink()
    assert mcap_is_whole(root / r.mcap)
    (closed,) = close_interrupted(store, root)
    assert closed["recording"] == "whole"
    (row,) = store.trials()
    rec = row["recording"]
    topics = _topics(root / r.mcap)
    assert rec["color_frames"] == topics.count(COLOR) == 10 and sum(rec["messages"].values()) == len(topics)
    assert rec["duration_s"] > 0 and rec["mcap_bytes"] == r.mcap_bytes and rec["ended_by"] == "interrupted"
    store.close()


def _notes_and_stored(db):
    """(unfinished trial uids, stored trials) read without writing (the session holds the file)."""
    if not db.exists():
        return [], 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        notes = [r[0] for r in con.execute("SELECT trial_uid FROM trial_starts")]
        stored = con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return [], 0
    finally:
        con.close()
    return notes, stored


@pytest.mark.slow  # a real sim session, killed with SIGKILL in its second trial: about 40 s
def test_kill_9_during_a_trial_then_recover(ros_env, tmp_path):
    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.Popen(
        POINTLAB
        + [
            "act",
            "trials",
            "--agent",
            "sim-oracle",
            "--db",
            str(db),
            "--repeat",
            "3",
            # every colour frame's depth: bags of 4-8 MB, so the kill lands after chunks are flushed
            "--depth-fps",
            "5",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    killed = None
    try:
        deadline = time.monotonic() + 240
        while killed is None:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no trial with a flushed chunk in time"
            notes, stored = _notes_and_stored(db)
            # a trial under way after one stored, whose MCAP has its first chunks on disk (1 MiB each)
            if (
                stored >= 1
                and notes
                and (m := root / notes[0] / f"{notes[0]}.mcap").exists()
                and m.stat().st_size > 2_500_000
            ):
                os.killpg(proc.pid, signal.SIGKILL)
                killed = notes[0]
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    # almost always cut mid-write; whole only if the kill fell between the recording's end and the
    # trial's save (a few ms): then it is linked as it is
    kind = "whole" if mcap_is_whole(root / killed / f"{killed}.mcap") else "recovered"

    def recordings(*args):
        run = subprocess.run(
            POINTLAB + ["act", "recordings", "--db", str(db), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        return run.returncode, json.loads(run.stdout)

    code, out = recordings()  # the check names it and changes nothing
    assert code == 1 and out["interrupted_pending"] == [killed], out
    code, out = recordings("--recover")
    assert [(c["trial_uid"], c["recording"]) for c in out["interrupted_closed"]] == [(killed, kind)]
    # the clip the kill cut plays nowhere: listed until pruned (none when the kill fell after the end)
    dead = [d["uid"] for d in out["dead_clips"]]
    assert dead in ([], [killed]) and (code, out["ok"]) == ((1, False) if dead else (0, True)), out
    assert not out["missing"] and not out["truncated"] and not out["orphans"], out
    code, out = recordings("--prune")
    assert code == 0 and out["ok"] and not (root / f"{killed}.mp4").exists() or not dead, out
    store = Store(db, create=False)
    rows = store.trials()
    store.close()
    for row in rows:  # every recording opens with a plain reader, the killed one included
        assert len(_topics(root / row["recording"]["mcap"])) > 0, row["trial_uid"]
    (row,) = [r for r in rows if r["trial_uid"] == killed]
    assert (row["outcome"], row["abort"]["code"]) == ("aborted", "interrupted")
    assert row["recording"]["color_frames"] > 0


def test_the_agents_answer_kept_in_the_bag_is_stored_with_the_interrupted_trial(tmp_path, real_frames):
    from tests.bridge.recording.test_recorder import FIRST, SECOND, T0, record, trial_stream

    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    store = Store(db)
    store.begin_trial("ans1", agent="a", instruction="pick up the red cube", action="pick")
    # 2 s of a trial whose answer (two points) came at 1 s, recorded under the trial's id
    r = record(root, list(trial_stream(real_frames, 2.0, T0, request_id="ans1")), trial_id="ans1")
    (root / "ans1.json").unlink()
    mcap = root / r.mcap
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size - 300])  # cut in the last chunk
    (closed,) = close_interrupted(store, root)
    (row,) = store.trials()
    store.close()
    assert closed["recording"] == "recovered"
    assert [tuple(p) for p in row["points_px"]] == [FIRST, SECOND] and row["raw_answer"] == "<points/>"
    assert row["outcome"] == "aborted" and row["frame_size"] == [640, 480]
