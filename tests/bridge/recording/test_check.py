"""``pointlab act recordings --check/--prune`` on a real store and real recordings (the recorder
engine on real uoc_tabletop frames): linked, orphaned, missing, truncated and unrecorded trials."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from pointlab.bridge.recording.check import check_recordings, mcap_is_whole, prune_orphans
from pointlab.bridge.recording.layout import RecordingConfig
from pointlab.bridge.recording.recorder import Recorder
from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.record import TrialResult

from tests.bridge.recording import cdr

T0 = 1_700_000_000_000_000_000
POINTLAB = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()"]


def recorded(root, real_frames, uids):
    """One short real recording per uid (4 captures each)."""
    rec = Recorder(root, RecordingConfig(min_free_mb=0))
    out = {}
    try:
        for uid in uids:
            rec.begin(uid)
            for k in range(4):
                f = real_frames[k]
                for topic, data in cdr.capture(f.color, f.depth, f.intrinsics, T0 + k * 200_000_000):
                    rec.offer(topic, time.time_ns(), data)  # received now: after begin
            out[uid] = rec.end(uid)
    finally:
        rec.close()
    return out


def store_trial(store, uid, recording):
    return store.save_trial(
        TrialResult(
            trial_id=uid,
            agent="a",
            instruction="pick it",
            action="pick",
            recording=None if recording is None else recording.model_dump(),
        )
    )


@pytest.fixture
def folder(tmp_path, real_frames):
    """A store of four trials and its recordings folder: ``ok`` linked, ``gone`` with its clip
    deleted by hand, ``cut`` with its MCAP cut short (a killed writer), ``none`` never recorded;
    and ``lost``, recorded but never stored (a session killed before the row was written)."""
    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    recs = recorded(root, real_frames, ["ok", "gone", "cut", "lost"])
    store = Store(db)
    ids = {uid: store_trial(store, uid, recs.get(uid)) for uid in ("ok", "gone", "cut", "none")}
    store.close()
    (root / recs["gone"].clip).unlink()
    mcap = root / recs["cut"].mcap
    mcap.write_bytes(mcap.read_bytes()[:-200])  # no footer, no closing magic
    return db, root, ids, recs


def test_every_kind_of_problem_is_listed(folder):
    db, root, ids, recs = folder
    store = Store(db, create=False)
    got = check_recordings(store.trials(), root)
    store.close()
    assert (got.trials, got.linked) == (4, 1)
    assert [(m["trial"], m["uid"]) for m in got.missing] == [(ids["gone"], "gone")]
    assert "gone.mp4" in got.missing[0]["why"]
    assert [(t["trial"], t["mcap"]) for t in got.truncated] == [(ids["cut"], "cut/cut.mcap")]
    assert got.unrecorded == [ids["none"]]
    (orphan,) = got.orphans
    assert orphan["uid"] == "lost" and sorted(orphan["paths"]) == ["lost", "lost.json", "lost.mp4"]
    want = sum(p.stat().st_size for p in (root / "lost").rglob("*") if p.is_file())
    want += (root / "lost.mp4").stat().st_size + (root / "lost.json").stat().st_size
    assert orphan["bytes"] == want and orphan["whole"] is True
    assert not got.ok


def test_a_cut_mcap_is_not_whole_and_plain_readers_refuse_it(folder):
    from mcap.reader import make_reader

    _db, root, _ids, recs = folder
    assert mcap_is_whole(root / recs["ok"].mcap) and not mcap_is_whole(root / recs["cut"].mcap)
    with (root / recs["cut"].mcap).open("rb") as f, pytest.raises(Exception):
        list(make_reader(f).iter_messages())


def test_prune_removes_only_what_no_stored_trial_names(folder):
    db, root, _ids, recs = folder
    store = Store(db, create=False)
    got = check_recordings(store.trials(), root)
    freed = prune_orphans(got)
    after = check_recordings(store.trials(), root)
    store.close()
    assert freed == got.orphans[0]["bytes"] and after.orphans == []
    assert not (root / "lost").exists() and not (root / "lost.mp4").exists()
    # the stored trials' files are untouched, even the cut one
    for uid in ("ok", "cut"):
        assert (root / recs[uid].mcap).exists() and (root / recs[uid].clip).exists()
    assert (root / "gone").is_dir()


@pytest.mark.slow
def test_the_command_prints_the_check_and_exits_1_until_it_is_clean(tmp_path, real_frames):
    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    recs = recorded(root, real_frames, ["ok", "lost"])
    store = Store(db)
    store_trial(store, "ok", recs["ok"])
    store.close()

    def run(*args):
        return subprocess.run(
            POINTLAB + ["act", "recordings", "--db", str(db), *args], capture_output=True, text=True, timeout=120
        )

    first = run("--check")
    assert first.returncode == 1, first.stderr
    assert [o["uid"] for o in json.loads(first.stdout)["orphans"]] == ["lost"]
    pruned = run("--prune")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    out = json.loads(pruned.stdout)
    assert out["ok"] and out["pruned"] == ["lost"] and out["pruned_bytes"] > 0 and out["linked"] == 1
    assert run().returncode == 0
    assert run("--db", str(tmp_path / "nope.sqlite")).returncode == 2  # no such store: bad input


def long_recording(root, real_frames, uid="long", captures=40):
    """A real recording big enough for several MCAP chunks (the writer closes one per 1 MiB)."""
    rec = Recorder(root, RecordingConfig(min_free_mb=0, image_fps=None))
    try:
        rec.begin(uid)
        for k in range(captures):
            f = real_frames[k % len(real_frames)]
            for topic, data in cdr.capture(f.color, f.depth, f.intrinsics, T0 + k * 40_000_000):
                while rec.queued >= rec.config.max_queued // 2:
                    time.sleep(0.002)
                rec.offer(topic, time.time_ns(), data)
        return rec.end(uid)
    finally:
        rec.close()


def test_a_cut_mcap_is_recovered_from_its_whole_chunks(tmp_path, real_frames):
    from mcap.reader import make_reader

    from pointlab.bridge.recording.recover import recover_bag

    root = tmp_path / "recordings"
    r = long_recording(root, real_frames)
    mcap = root / r.mcap
    with mcap.open("rb") as f:
        reader = make_reader(f)
        chunks = sorted(reader.get_summary().chunk_indexes, key=lambda c: c.chunk_start_offset)
        logs = [m.log_time for _s, _c, m in reader.iter_messages(log_time_order=False)]
    assert len(chunks) >= 3, len(chunks)
    # cut in the middle of the third chunk, as a kill -9 during its write would leave the file
    third = chunks[2]
    cut = third.chunk_start_offset + third.chunk_length // 2
    mcap.write_bytes(mcap.read_bytes()[:cut])
    # what a reader can get back: the messages of the two whole chunks before the cut
    want = sum(1 for t in logs if t <= chunks[1].message_end_time)
    got = recover_bag(root / r.bag)
    assert got.total == want and 0 < want < len(logs), (got.total, want, len(logs))
    assert mcap_is_whole(mcap) and not (root / ".recover-long").exists()
    with mcap.open("rb") as f:
        assert sum(1 for _ in make_reader(f).iter_messages()) == want
    from rosbags.highlevel import AnyReader

    with AnyReader([root / r.bag]) as reader:  # metadata.yaml written again: rosbags reads the folder
        assert sum(c.msgcount for c in reader.connections) == want


def test_a_cut_inside_the_first_chunk_recovers_nothing_and_keeps_the_file(tmp_path, real_frames):
    from pointlab.bridge.recording.recover import RecoveryError, recover_bag

    root = tmp_path / "recordings"
    r = long_recording(root, real_frames, captures=8)
    mcap = root / r.mcap
    cut = mcap.read_bytes()[:4000]
    mcap.write_bytes(cut)
    with pytest.raises(RecoveryError, match="no message in a whole chunk"):
        recover_bag(root / r.bag)
    assert mcap.read_bytes() == cut and not (root / ".recover-long").exists()


@pytest.mark.slow
def test_recover_rewrites_a_stored_trials_cut_mcap_and_says_so_in_its_record(tmp_path, real_frames):
    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    r = long_recording(root, real_frames)
    store = Store(db)
    tid = store_trial(store, "long", r)
    store.close()
    mcap = root / r.mcap
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size * 2 // 3])
    run = subprocess.run(
        POINTLAB + ["act", "recordings", "--db", str(db), "--recover"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout)
    (rec,) = out["recovered"]
    assert rec["uid"] == "long" and rec["messages"] > 0 and out["truncated"] == [] and out["linked"] == 1
    store = Store(db, create=False)
    stored = store.trial(tid)["recording"]
    store.close()
    assert stored["complete"] is False and "recovered after its writer stopped" in stored["errors"][-1]
    # the record describes what the file now holds: its frames counted by a plain reader
    from mcap.reader import make_reader

    with mcap.open("rb") as f:
        topics = [ch.topic for _s, ch, _m in make_reader(f).iter_messages()]
    assert stored["color_frames"] == topics.count("/camera/camera/color/image_raw/compressed") > 0
    assert stored["depth_frames"] == topics.count("/camera/camera/aligned_depth_to_color/image_raw/compressedDepth")
    assert 0 < stored["duration_s"] < r.duration_s
    # mcap_bytes is the bag folder's size (MCAP + metadata.yaml), as the recorder counts it
    assert stored["mcap_bytes"] == sum(p.stat().st_size for p in (root / "long").iterdir()) and mcap_is_whole(mcap)


@pytest.mark.slow
def test_prune_is_refused_while_another_store_shares_the_folder_and_leaves_other_folders(tmp_path, real_frames):
    """Two stores in one directory share recordings/ (it is per directory): checking one, the other's
    recordings look like orphans, so --prune is refused until both are given; a folder that is not a
    recording (a user's export_tmp/) is never listed or pruned."""
    a, c, root = tmp_path / "a.sqlite", tmp_path / "c.sqlite", tmp_path / "recordings"
    recs = recorded(root, real_frames, ["ta", "tc"])
    for db, uid in ((a, "ta"), (c, "tc")):
        store = Store(db)
        store_trial(store, uid, recs[uid])
        store.close()
    (root / "export_tmp").mkdir()
    (root / "export_tmp" / "keep.txt").write_text("mine")

    def run(*args):
        return subprocess.run(POINTLAB + ["act", "recordings", *args], capture_output=True, text=True, timeout=120)

    one = run("--db", str(a))
    assert one.returncode == 1 and json.loads(one.stdout)["other_stores"] == ["c.sqlite"]
    assert [o["uid"] for o in json.loads(one.stdout)["orphans"]] == ["tc"]  # export_tmp is not a recording
    refused = run("--db", str(a), "--prune")
    assert refused.returncode == 2 and "c.sqlite" in refused.stderr
    assert (root / "tc").is_dir() and (root / "tc.mp4").exists()
    both = run("--db", str(a), "--db", str(c), "--prune")
    assert both.returncode == 0, both.stdout + both.stderr
    assert json.loads(both.stdout)["linked"] == 2 and (root / "export_tmp" / "keep.txt").read_text() == "mine"


def test_the_dead_clip_of_a_killed_trial_is_listed_and_pruned(tmp_path, real_frames):
    """A trial stored as interrupted keeps its recovered bag, but the clip the kill cut has no index
    and its record names none: the check lists that file (not ok) and --prune removes it, nothing else."""
    db, root = tmp_path / "s.sqlite", tmp_path / "recordings"
    recs = recorded(root, real_frames, ["killed", "fine"])
    killed = recs["killed"].model_copy(update={"clip": None, "clip_bytes": 0})  # as close_interrupted stores it
    (root / recs["killed"].clip).write_bytes((root / recs["killed"].clip).read_bytes()[:3000])  # cut, no moov
    store = Store(db)
    ids = {"killed": store_trial(store, "killed", killed), "fine": store_trial(store, "fine", recs["fine"])}
    got = check_recordings(store.trials(), root)
    assert [(d["trial"], d["clip"], d["bytes"]) for d in got.dead_clips] == [(ids["killed"], "killed.mp4", 3000)]
    assert got.linked == 2 and not got.orphans and not got.ok
    assert prune_orphans(got) == 3000
    after = check_recordings(store.trials(), root)
    store.close()
    assert after.ok and after.dead_clips == [] and not (root / "killed.mp4").exists()
    assert (root / recs["killed"].mcap).exists() and (root / recs["fine"].clip).exists()
