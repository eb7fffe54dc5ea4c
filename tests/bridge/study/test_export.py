"""``pointlab act export``: a study's CSVs, clips and recordings in one folder (real recordings made by
the engine from real frames, a real SQLite store)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import build_app
from pointlab.bridge.study.export import ExportError, export_study
from pointlab.bridge.recording.layout import default_recordings_dir
from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.record import TrialResult
from pointlab.perception import make_camera

from tests.bridge.recording.test_recorder import T0, decode_clip, record, trial_stream


@pytest.fixture(scope="module")
def study_db(tmp_path_factory, real_frames):
    """A study of two agents, one participant, three trials (two recorded) and two SUS surveys."""
    root = tmp_path_factory.mktemp("lab")
    db = root / "act.sqlite"
    store = Store(db)
    sid = store.create_study(agents=["sim-oracle", "sim-noisy"], trials_per_agent=2, name="pilot")
    pid = store.add_participant(sid, token="tok-123456", agent_order=["sim-oracle", "sim-noisy"], label="P1")
    rec_dir = default_recordings_dir(db)
    for uid, agent, block in (("a1", "sim-oracle", 0), ("a2", "sim-noisy", 1)):
        r = record(rec_dir, list(trial_stream(real_frames, 0.6, T0)), trial_id=uid)
        assert r.complete
        tid = store.save_trial(
            TrialResult(trial_id=uid, agent=agent, instruction='=HYPERLINK("x") pick the cube', action="pick"),
            study_id=sid,
            participant_id=pid,
            block=block,
        )
        store.set_judgement(tid, "succeeded" if agent == "sim-oracle" else "failed")
    store.save_trial(
        TrialResult(trial_id="unrecorded", agent="sim-noisy", instruction="place it", action="place"),
        study_id=sid,
        participant_id=pid,
        block=1,
    )
    other = store.create_study(agents=["sim-oracle"], trials_per_agent=1)
    store.save_trial(
        TrialResult(trial_id="elsewhere", agent="sim-oracle", instruction="x", action="pick"), study_id=other
    )
    store.save_survey([5, 1, 5, 1, 5, 1, 5, 1, 5, 1], study_id=sid, participant_id=pid, block=0, agent="sim-oracle")
    store.save_survey([3, 3, 3, 3, 3, 3, 3, 3, 3, 3], study_id=sid, participant_id=pid, block=1, agent="sim-noisy")
    store.close()
    return db, sid


def test_the_export_folder_holds_the_csvs_clips_and_recordings(study_db, tmp_path):
    db, sid = study_db
    out = tmp_path / "export"
    r = CliRunner().invoke(build_app(), ["act", "export", "--db", str(db), "--study", str(sid), "--out", str(out)])
    assert r.exit_code == 0, r.output
    index = json.loads(r.stdout)
    assert index == json.loads((out / "export.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == [
        "blocks.csv",
        "clips",
        "export.json",
        "recordings",
        "sus.csv",
        "trials.csv",
    ]
    assert sorted(p.name for p in (out / "clips").iterdir()) == ["a1.mp4", "a2.mp4"]
    assert sorted(p.name for p in (out / "recordings").iterdir()) == ["a1", "a1.json", "a2", "a2.json"]
    assert (index["n_trials"], index["n_clips"], index["n_recordings"]) == (3, 2, 2)
    assert index["missing"] == [
        {
            "id": 3,
            "trial_uid": "unrecorded",
            "missing": ["recording"],
            "why": ["recording: the trial was not recorded (no recorder)"],
        }
    ]
    a1 = index["trials"][0]
    assert a1 == {
        "id": 1,
        "trial_uid": "a1",
        "number": 1,
        "agent": "sim-oracle",
        "participant": "P1",
        "block": 1,
        "judgement": "succeeded",
        "clip": "clips/a1.mp4",
        "bag": "recordings/a1",
        "mcap": "recordings/a1/a1.mcap",
        "complete": True,
    }

    trials = list(csv.DictReader(io.StringIO((out / "trials.csv").read_text())))
    assert [t["trial_uid"] for t in trials] == ["a1", "a2", "unrecorded"]  # this study's only
    assert trials[0]["instruction"].startswith("'=HYPERLINK")  # CSV injection guard
    sus = list(csv.DictReader(io.StringIO((out / "sus.csv").read_text())))
    # Brooke (1996): all-best answers score 100, all-neutral 50
    assert [(s["agent"], s["block"], s["participant"], float(s["score"])) for s in sus] == [
        ("sim-oracle", "1", "P1", 100.0),
        ("sim-noisy", "2", "P1", 50.0),
    ]
    assert [int(sus[0][f"q{i}"]) for i in range(1, 11)] == [5, 1] * 5

    from pointlab.bridge.study.results import BLOCK_COLUMNS

    blocks = list(csv.DictReader(io.StringIO((out / "blocks.csv").read_text())))
    assert tuple(blocks[0]) == BLOCK_COLUMNS and {b["participant"] for b in blocks} == {"P1"}
    assert index["short_blocks"] == [
        {k: b[k] for k in ("participant", "block", "agent", "kept", "aborted")} for b in blocks if b["short"] == "True"
    ]

    # the exported files are usable where they are: the clip decodes, the bag plays as a camera
    _, size, frames = decode_clip(out / "clips" / "a1.mp4")
    assert size == (640, 480) and len(frames) > 0
    with make_camera(f"bag:{out / 'recordings' / 'a1'}") as cam:
        assert cam.read().color.shape == (480, 640, 3)


def test_export_refuses_a_used_folder_and_an_unknown_study(study_db, tmp_path):
    db, sid = study_db
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine")
    store = Store(db, create=False)
    try:
        with pytest.raises(ExportError, match="not an empty folder"):
            export_study(store, sid, used, recordings_dir=default_recordings_dir(db))
        with pytest.raises(ExportError, match="unknown study"):
            export_study(store, 99, tmp_path / "new", recordings_dir=default_recordings_dir(db))
    finally:
        store.close()
    r = CliRunner().invoke(
        build_app(),
        ["act", "export", "--db", str(tmp_path / "none.sqlite"), "--study", "1", "--out", str(tmp_path / "o")],
    )
    assert r.exit_code == 2 and "does not exist" in r.output


def test_a_stored_path_that_leaves_the_recordings_folder_is_not_followed(study_db, tmp_path):
    db, sid = study_db
    secret = db.parent / "secret.mp4"
    secret.write_bytes(b"not yours")
    rec_dir = default_recordings_dir(db)
    record_file = rec_dir / "a2.json"
    saved = record_file.read_text()
    try:
        record_file.write_text(saved.replace('"clip": "a2.mp4"', '"clip": "../secret.mp4"'))
        store = Store(db, create=False)
        try:
            index = export_study(store, sid, tmp_path / "out", recordings_dir=rec_dir)
        finally:
            store.close()
    finally:
        record_file.write_text(saved)
    assert (
        index["trials"][1]["clip"] is None
        and {
            "id": 2,
            "trial_uid": "a2",
            "missing": ["clip"],
            "why": ["clip: ../secret.mp4 is outside the recordings folder (not followed)"],
        }
        in index["missing"]
    )
    assert not (tmp_path / "out" / "clips" / "a2.mp4").exists()
