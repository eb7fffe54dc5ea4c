"""``pointlab act recordings --check``: the recordings folder against the trials of a store.

A session killed mid-trial (or a trial whose row could not be stored) leaves files that no trial
names; a file deleted by hand leaves a trial whose recording is gone; a killed writer leaves an MCAP
without its summary. This module lists all three, and ``prune`` removes the first kind only (files
no stored trial names: never a file of a stored trial).

What a recordings folder holds per trial (``layout.RecordingLayout``): ``<uid>/`` (rosbag2 folder
with ``<uid>.mcap``), ``<uid>.mp4``, ``<uid>.json``. An MCAP is **whole** when it begins and ends
with the MCAP magic ``\\x89MCAP0\\r\\n`` (MCAP specification, "File structure": a writer that was
killed never wrote the footer and the closing magic; plain readers then refuse the file).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from pointlab.bridge.recording.layout import RecordingLayout, check_trial_id, recording_of
from pointlab.bridge.recording.recorder import image_frames

__all__ = [
    "MCAP_MAGIC",
    "mcap_is_whole",
    "RecordingsCheck",
    "check_recordings",
    "prune_orphans",
    "recover_truncated",
    "other_stores",
]

STORE_SUFFIXES = (".sqlite", ".sqlite3", ".db")

MCAP_MAGIC = b"\x89MCAP0\r\n"


def mcap_is_whole(path: Path) -> bool:
    """``path`` starts and ends with the MCAP magic (a closed file); ``False`` when unreadable."""
    try:
        size = path.stat().st_size
        if size < 2 * len(MCAP_MAGIC):
            return False
        with path.open("rb") as f:
            head = f.read(len(MCAP_MAGIC))
            f.seek(size - len(MCAP_MAGIC))
            return head == MCAP_MAGIC and f.read() == MCAP_MAGIC
    except OSError:
        return False


@dataclass
class RecordingsCheck:
    """The result of ``check_recordings``.

    Attributes:
        trials: stored trials looked at (rows with a ``trial_uid``).
        linked: trials whose recording is present (its MCAP whole).
        missing: ``{"trial", "uid", "why"}`` per trial whose recording files are gone (``why`` says
            which) or that was never recorded (``"no recording"``: a recorder that was off is not a
            problem, so these are listed apart in ``unrecorded``).
        truncated: ``{"trial", "uid", "mcap"}`` per stored trial whose MCAP is not whole.
        orphans: ``{"uid", "paths", "bytes", "whole"}`` per trial id in the folder that no stored
            trial names (``whole``: its MCAP is whole, ``None`` without one).
        unrecorded: trial row ids with no recording at all.
        dead_clips: ``{"trial", "uid", "clip", "bytes"}`` per stored trial whose record names no clip
            while ``<uid>.mp4`` is there: the clip a killed session was writing (an MP4 gets its
            index when it is closed, so it plays nowhere). ``prune_orphans`` removes them too.
    """

    root: str
    trials: int = 0
    linked: int = 0
    missing: list[dict] = field(default_factory=list)
    truncated: list[dict] = field(default_factory=list)
    orphans: list[dict] = field(default_factory=list)
    unrecorded: list[int] = field(default_factory=list)
    dead_clips: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing missing, truncated, orphaned or left dead."""
        return not (self.missing or self.truncated or self.orphans or self.dead_clips)

    def to_dict(self) -> dict:
        return {
            "root": self.root,
            "ok": self.ok,
            "trials": self.trials,
            "linked": self.linked,
            "missing": self.missing,
            "truncated": self.truncated,
            "orphans": self.orphans,
            "orphan_bytes": sum(o["bytes"] for o in self.orphans),
            "unrecorded": self.unrecorded,
            "dead_clips": self.dead_clips,
        }


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _uid_of(path: Path) -> str | None:
    """The trial id a folder entry belongs to (``<uid>/``, ``<uid>.mp4``, ``<uid>.json``,
    ``<uid>.json.tmp``), or ``None`` for anything else (left alone)."""
    name = path.name
    if path.is_dir():
        uid = name
    elif name.endswith(".json.tmp"):
        uid = name[: -len(".json.tmp")]
    elif path.suffix in (".mp4", ".json"):
        uid = path.stem
    else:
        return None
    try:
        return check_trial_id(uid)
    except ValueError:
        return None


def _is_recording(layout: RecordingLayout, uid: str) -> bool:
    """``uid`` is a recording the recorder wrote: a bag folder holding ``<uid>.mcap`` or
    ``metadata.yaml``, or a valid record JSON naming it. A folder or a lone ``.mp4`` of any other
    kind (a user's ``export_tmp/``) is not one, and is never listed or pruned."""
    bag = layout.bag(uid)
    if bag.is_dir() and ((bag / f"{uid}.mcap").is_file() or (bag / "metadata.yaml").is_file()):
        return True
    rec = layout.load(uid)
    return rec is not None and rec.trial_id == uid


def check_recordings(rows: Iterable[dict], root: str | Path) -> RecordingsCheck:
    """Compare the trial rows of a store (``Store.trials()``) with the recordings folder ``root``.
    Never raises for what it finds; an absent folder holds nothing."""
    layout = RecordingLayout(root)
    out = RecordingsCheck(str(layout.root))
    named: set[str] = set()
    for row in rows:
        uid = row.get("trial_uid")
        if not uid:
            continue
        out.trials += 1
        named.add(uid)
        rec = recording_of(row, layout)
        dead = layout.clip(uid)
        if (rec is None or rec.clip is None) and dead.is_file():
            out.dead_clips.append({"trial": row["id"], "uid": uid, "clip": layout.relative(dead), "bytes": _size(dead)})
        if rec is None or rec.mcap is None and rec.clip is None:
            out.unrecorded.append(row["id"])
            continue
        gone = [
            rel
            for rel in (rec.mcap, rec.clip)
            if rel is not None and ((p := layout.resolve(rel)) is None or not p.exists())
        ]
        if gone:
            out.missing.append({"trial": row["id"], "uid": uid, "why": f"not found: {', '.join(gone)}"})
            continue
        mcap = layout.resolve(rec.mcap) if rec.mcap else None
        if mcap is not None and not mcap_is_whole(mcap):
            out.truncated.append({"trial": row["id"], "uid": uid, "mcap": rec.mcap})
            continue
        out.linked += 1
    entries: dict[str, list[Path]] = {}
    if layout.root.is_dir():
        for p in sorted(layout.root.iterdir()):
            uid = _uid_of(p)
            if uid is not None and uid not in named:
                entries.setdefault(uid, []).append(p)
    for uid, paths in entries.items():
        if not _is_recording(layout, uid):
            continue
        mcap = layout.mcap(uid)
        out.orphans.append(
            {
                "uid": uid,
                "paths": [layout.relative(p) for p in paths],
                "bytes": sum(_size(p) for p in paths),
                "whole": mcap_is_whole(mcap) if mcap.exists() else None,
            }
        )
    return out


def prune_orphans(check: RecordingsCheck) -> int:
    """Delete the orphans of ``check`` (files no stored trial names) and its dead clips (clips of
    killed trials, which play nowhere); returns the bytes freed.

    Raises:
        OSError: a file could not be removed (those before it are gone).
    """
    layout = RecordingLayout(check.root)
    freed = 0
    for o in [*check.orphans, *({"paths": [d["clip"]]} for d in check.dead_clips)]:
        for rel in o["paths"]:
            p = layout.resolve(rel)
            if p is None or not p.exists():
                continue
            n = _size(p)
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
            freed += n
    return freed


def recover_truncated(check: RecordingsCheck, stored: dict | None = None) -> list[dict]:
    """Rewrite every MCAP of ``check`` that is not whole (stored trials' and orphans') from its whole
    chunks (``recover.recover_bag``), and say so in its ``Recording``: ``complete`` false, an error
    naming what was kept, the new size, frame counts and duration of what was kept; in the JSON
    beside the files and, for a stored trial, in its store: ``stored`` maps a trial uid to
    ``(store, row id)`` (``Store.set_recording``). Returns one ``{"uid", "messages", "stopped_at"}``
    or ``{"uid", "error"}`` per file; never raises for one file's failure."""
    stored = stored or {}
    from pointlab.bridge.recording.recover import RecoveryError, recover_bag

    layout = RecordingLayout(check.root)
    todo = [t["uid"] for t in check.truncated] + [o["uid"] for o in check.orphans if o["whole"] is False]
    out = []
    for uid in todo:
        try:
            got = recover_bag(layout.bag(uid))
        except RecoveryError as e:
            out.append({"uid": uid, "error": str(e)})
            continue
        out.append({"uid": uid, "messages": got.total, "stopped_at": got.stopped_at})
        rec = layout.load(uid)
        if rec is None:
            continue  # the writer died before the record: the bag alone is what there is
        color, depth = image_frames(got.messages)
        rec = rec.model_copy(
            update={
                "complete": False,
                "mcap_bytes": got.mcap_bytes,
                "messages": got.messages,
                "color_frames": color,
                "depth_frames": depth,
                "duration_s": round(max(0, got.last_log_ns - rec.started_unix_ns) / 1e9, 3),
                "errors": [
                    *rec.errors,
                    f"recovered after its writer stopped: {got.total} messages kept ({got.stopped_at})",
                ],
            }
        )
        try:
            layout.save(rec)
            if uid in stored:
                store, row_id = stored[uid]
                store.set_recording(row_id, rec.model_dump())
        except OSError as e:
            out[-1]["error"] = f"the record could not be updated: {e}"
    return out


def other_stores(root: str | Path, given: Iterable[str | Path]) -> list[str]:
    """The SQLite stores in the recordings folder's parent directory other than ``given``: they share
    the folder (``layout.default_recordings_dir`` is ``recordings/`` beside the store), so their trials'
    recordings would look like orphans to a check of ``given`` only."""
    parent = Path(root).resolve().parent
    mine = {Path(g).resolve() for g in given}
    try:
        found = [p for p in sorted(parent.iterdir()) if p.suffix in STORE_SUFFIXES and p.is_file()]
    except OSError:
        return []
    return [p.name for p in found if p.resolve() not in mine]
