"""Recordings from the stations to the study server: which files a trial's recording is, and how the
server keeps a station's copy.

A station records each trial into its own folder (``pointlab act station --recordings``,
docs/recording.md): the bag folder ``<trial>/`` (the MCAP and its ``metadata.yaml``), the clip
``<trial>.mp4`` and the recording's record ``<trial>.json`` (``bridge.recording.layout``). Once the
server has acknowledged the trial's record, the station sends each of those files on
``pointlab/server/files/NAME`` (payload: the bytes; attachment: ``{"trial_id", "path", "sha256"}``),
and the server writes it under ``<--recordings>/NAME/<path>``: to a temporary name, fsync'd, checked
against its SHA-256, then renamed into place, so a file there is always whole. The journal marks the
trial's recording delivered when every file was acknowledged (docs/stations.md, "Recordings").
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path, PurePosixPath

from pointlab.bridge.recording.layout import RecordingLayout
from pointlab.bridge.stations.wire import NAME_RE, StationsError

__all__ = ["RecordingSink", "recording_files", "ChecksumMismatch", "MAX_FILE_BYTES"]

# One file is one Zenoh message (Zenoh fragments it; its default limit is 1 GiB): a RealSense trial's
# MCAP at the default rates is tens of megabytes.
MAX_FILE_BYTES = 512 * 1024 * 1024
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class ChecksumMismatch(StationsError):
    """A file's bytes are not those its SHA-256 says (cut on the way): worth sending again."""


def recording_files(root: str | Path, trial_id: str, recording: dict | None) -> list[tuple[str, Path]]:
    """``(path relative to root, file)`` of every file of trial ``trial_id``'s recording that exists
    under ``root``: the bag folder's files, the clip, the record. Empty when it was not recorded."""
    if not recording:
        return []
    layout = RecordingLayout(Path(root))
    found = []
    bag = layout.bag(trial_id)
    if bag.is_dir():
        found += [f for f in sorted(bag.iterdir()) if f.is_file()]
    found += [f for f in (layout.clip(trial_id), layout.record(trial_id)) if f.is_file()]
    return [(layout.relative(f), f) for f in found]


class RecordingSink:
    """The server's folder of the stations' recordings (``<root>/<station>/<path>``).

    Args:
        root: the folder (created when missing).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def target(self, station: str, trial_id: str, path: str) -> Path:
        """Where ``path`` of station ``station``'s trial ``trial_id`` goes.

        Raises:
            StationsError: a station name or path that could leave the folder or is not one of the
                trial's files (absolute, ``..``, a part with other characters, not under the trial).
        """
        if not NAME_RE.match(station):
            raise StationsError(f"bad station name {station!r}")
        parts = PurePosixPath(path).parts
        if not parts or PurePosixPath(path).is_absolute() or not all(_PART.match(p) for p in parts):
            raise StationsError(f"bad recording path {path!r}")
        if len(parts) > 2 or parts[0].split(".")[0] != trial_id:
            raise StationsError(f"{path!r} is not a file of trial {trial_id!r}")
        return self.root.joinpath(station, *parts)

    def receive(self, station: str, meta: dict, data: bytes) -> Path:
        """Keep one file (module docstring); returns where it is.

        Raises:
            ChecksumMismatch: its SHA-256 is not ``meta["sha256"]`` (nothing is written).
            StationsError: bad metadata or path, or too large (nothing is written).
            OSError: the disk (the station sends it again later).
        """
        trial_id, path, digest = meta.get("trial_id"), meta.get("path"), meta.get("sha256")
        if not all(isinstance(x, str) for x in (trial_id, path, digest)):
            raise StationsError("file metadata needs trial_id, path and sha256 (strings)")
        assert isinstance(trial_id, str) and isinstance(path, str)
        if len(data) > MAX_FILE_BYTES:
            raise StationsError(f"{path}: {len(data)} bytes is over the {MAX_FILE_BYTES} limit")
        if hashlib.sha256(data).hexdigest() != digest:
            raise ChecksumMismatch(f"{path}: the bytes do not match their SHA-256 (cut on the way?)")
        dest = self.target(station, trial_id, path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
        try:
            os.fchmod(fd, 0o644)  # as the recorder writes them (mkstemp's 0600 would hide them from a reviewer)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dirfd = os.open(dest.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)  # the rename itself survives a power cut
        finally:
            os.close(dirfd)
        return dest
