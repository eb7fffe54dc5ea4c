"""``export_study``: one study's data in one folder, for a paper's supplementary material or a reviewer.

``DIR/`` after ``pointlab act export --db FILE --study N --out DIR``:

=========================  =================================================================
``trials.csv``             the trial log (``study_results.trial_log_csv``: every stored field)
``sus.csv``                the SUS surveys (``study_results.sus_csv``: q1..q10 and the score)
``blocks.csv``             every participant's agent blocks (``study_results.blocks_csv``): kept,
                           judged, aborted trials, and ``short`` when the block ended short of its
                           trials because the repeats after aborts ran out
``episodes.csv``           a pairwise study's episodes (``pairwise_results.episodes_csv``): the
                           two agents in the order they acted, the preference, the winner, both
                           progress scores, the reason, and ``void`` for an episode with an aborted half
``clips/<trial_uid>.mp4``  each trial's clip (H.264, the agent's points drawn)
``recordings/<trial_uid>/``  each trial's rosbag2 folder (``metadata.yaml`` + MCAP), beside its
                           ``recordings/<trial_uid>.json`` record; ``--camera bag:recordings/<uid>``
                           plays one back, ``ros2 bag play recordings/<uid>`` too
``export.json``            what was exported: the study, and per trial its row id, uid, number in
                           the study, agent, participant, block, judgement, files and whether its
                           recording is complete; the short blocks; the trials whose files are
                           missing, and why
=========================  =================================================================

The trials' recordings are found with ``bridge.recording.layout.recording_of`` (the row's ``recording``
column, else the record beside the files), in the recordings folder or, for a trial a robot station
ran (its row's ``station``), in that folder's ``STATION/`` subfolder, where a study server keeps them.
Paths stored in a row are data: one that leaves the recordings folder is never followed.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from typing import Any

from pointlab.benchmark.bundle import not_empty
from pointlab.benchmark.records import dumps_json

from pointlab.bridge.recording.layout import RecordingLayout, recording_of
from pointlab.bridge.study.store import Store, StoreError
from pointlab.bridge.study.results import blocks_csv, study_blocks, sus_csv, trial_log, trial_log_csv
from pointlab.bridge.errors import BridgeError

__all__ = ["export_study", "ExportError"]

log = logging.getLogger(__name__)
_STATION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")  # bridge.stations.wire.NAME_RE


class ExportError(BridgeError, ValueError):
    """The study does not exist or the output folder is not empty."""


def _source(layout: RecordingLayout, rel: str | None, never: str) -> tuple[Path | None, str]:
    """The file a record names and why it would be missing (``never``: the record names none)."""
    if rel is None:
        return None, never
    path = layout.resolve(rel)
    if path is None:
        return None, f"{rel} is outside the recordings folder (not followed)"
    return path, f"{rel} is not in the recordings folder (deleted or moved)"


def _copy(source: tuple[Path | None, str], dst: Path, missing: list[str], what: str, why: list[str]) -> str | None:
    """Copy ``source``'s file to ``dst``; when there is none, note ``what`` in ``missing`` and its reason in ``why``."""
    src, reason = source
    if src is None or not src.exists():
        missing.append(what)
        why.append(f"{what}: {reason}")
        return None
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)
    return dst.as_posix()


def export_study(store: Store, study_id: int, out: str | Path, *, recordings_dir: str | Path) -> dict[str, Any]:
    """Write study ``study_id`` of ``store`` into ``out`` (module docstring); returns ``export.json``'s
    content (paths relative to ``out``).

    Raises:
        ExportError: unknown study, or ``out`` exists and is not an empty folder.
        OSError: the output cannot be written (a missing recording is reported, not raised).
    """
    try:
        study = store.study(study_id)
    except StoreError as e:
        raise ExportError(str(e)) from e
    out = Path(out)
    if (problem := not_empty(out)) is not None:
        raise ExportError(problem)
    out.mkdir(parents=True, exist_ok=True)
    trials = store.trials(study_id=study_id)
    participants = store.participants(study_id)
    (out / "trials.csv").write_text(trial_log_csv(trials, participants))
    (out / "sus.csv").write_text(sus_csv(store.surveys(study_id=study_id), participants))
    pairwise = study.get("mode") == "pairwise"
    blocks = [] if pairwise else study_blocks(study, trials, participants)  # a pairwise study has no blocks
    (out / "blocks.csv").write_text(blocks_csv(blocks))
    files = {"trials_csv": "trials.csv", "sus_csv": "sus.csv", "blocks_csv": "blocks.csv"}
    if pairwise:
        from pointlab.bridge.study.pairwise_results import episodes_csv

        (out / "episodes.csv").write_text(episodes_csv(store.episodes(study_id=study_id), trials, participants))
        files["episodes_csv"] = "episodes.csv"

    layouts: dict[str | None, RecordingLayout] = {None: RecordingLayout(recordings_dir)}
    items, missing_trials = [], []
    for row, logged in zip(trials, trial_log(trials, participants)):
        uid = row["trial_uid"]
        # a study server keeps each station's recordings in a folder of that station's name
        # (docs/stations.md, "Recordings"); a single-process session's are in the folder itself
        station = row.get("station")
        if not (isinstance(station, str) and _STATION_NAME.match(station)):
            station = None  # (a name is one path part: anything else is not followed)
        if station and station not in layouts and (Path(recordings_dir) / station).is_dir():
            layouts[station] = RecordingLayout(Path(recordings_dir) / station)
        layout = layouts.get(station, layouts[None])
        rec = recording_of(row, layout)
        missing: list[str] = []
        why: list[str] = []
        item = {k: logged[k] for k in ("id", "trial_uid", "number", "agent", "participant", "block", "judgement")}
        item.update(clip=None, bag=None, mcap=None, complete=None if rec is None else rec.complete)
        if rec is None:
            missing.append("recording")
            why.append("recording: the trial was not recorded (no recorder)")
        else:
            # a recording's own errors say why it has no clip or bag (say, a clip cut by a kill)
            about_clip = [e for e in rec.errors if e.startswith("clip")]
            never_clip = "; ".join(e.removeprefix("clip ") for e in about_clip) or "none was made"
            never_bag = "; ".join(e for e in rec.errors if e not in about_clip) or "none was made"
            if _copy(_source(layout, rec.clip, never_clip), out / "clips" / f"{uid}.mp4", missing, "clip", why):
                item["clip"] = f"clips/{uid}.mp4"
            if _copy(_source(layout, rec.bag, never_bag), out / "recordings" / uid, missing, "bag", why):
                item["bag"] = f"recordings/{uid}"
                item["mcap"] = f"recordings/{uid}/{Path(rec.mcap).name}" if rec.mcap else None
            (out / "recordings").mkdir(exist_ok=True)
            (out / "recordings" / f"{uid}.json").write_text(rec.model_dump_json(indent=1))
        if missing:
            missing_trials.append({"id": row["id"], "trial_uid": uid, "missing": missing, "why": why})
        items.append(item)
    manifest = {
        "study": study,
        "n_trials": len(trials),
        "n_clips": sum(bool(i["clip"]) for i in items),
        "n_recordings": sum(bool(i["bag"]) for i in items),
        "trials": items,
        "missing": missing_trials,
        "short_blocks": [
            {k: b[k] for k in ("participant", "block", "agent", "kept", "aborted")} for b in blocks if b["short"]
        ],
        "files": files,
    }
    (out / "export.json").write_text(dumps_json(manifest, indent=1))
    if missing_trials:
        log.warning("export of study %d: %d trial(s) without all their files", study_id, len(missing_trials))
    return manifest
