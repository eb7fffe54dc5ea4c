"""What a trial recording is: its settings, its typed record, and where its files live.

Every trial writes, in the recordings folder (default: ``recordings/`` beside the SQLite file):

==============================  ===========================================================
``<trial_id>/``                 a rosbag2 folder: ``metadata.yaml`` + ``<trial_id>.mcap`` (ROS 2
                                CDR messages, zstd-compressed chunks); ``ros2 bag play <trial_id>``
``<trial_id>.mp4``              the clip: H.264 colour, the agent's points drawn (``bridge.recording.clip``)
``<trial_id>.json``             the ``Recording`` below (written when the recording ends)
==============================  ===========================================================

Paths inside a ``Recording`` are relative to the recordings folder, so a folder can be moved or
exported whole. The writing is done by ``bridge.recording.recorder.Recorder`` (fed by
``bridge.ros.recorder.TrialRecorder``); see docs/recording.md for the topics, rates and sizes.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pointlab.bridge.recording.clip import ClipSettings

__all__ = [
    "Recording",
    "RecordingConfig",
    "RecordingLayout",
    "default_recordings_dir",
    "recording_of",
    "check_trial_id",
    "EndedBy",
]

log = logging.getLogger(__name__)

_TRIAL_ID = re.compile(r"^[A-Za-z0-9_-]{1,80}$")

# interrupted: the session was killed during the recording; recovered at the next start
EndedBy = Literal["end", "max_duration", "disk_floor", "close", "failed", "interrupted"]


def check_trial_id(trial_id: str) -> str:
    """``trial_id`` if it is usable as a file name (``[A-Za-z0-9_-]``, 1-80 characters).

    Raises:
        ValueError: anything else (a path separator, dots, an empty id).
    """
    if not isinstance(trial_id, str) or not _TRIAL_ID.match(trial_id):
        raise ValueError(f"trial id must be 1-80 characters of [A-Za-z0-9_-], got {trial_id!r}")
    return trial_id


def default_recordings_dir(db_path: str | Path) -> Path:
    """``recordings/`` in the folder of the SQLite file ``db_path``."""
    return Path(db_path).resolve().parent / "recordings"


class RecordingConfig(BaseModel):
    """Settings of the trial recorder.

    Attributes:
        dir: the recordings folder (``None``: ``default_recordings_dir`` of the session's db, or
            ``./recordings`` without one).
        image_fps: colour and aligned-depth frames per second kept in the MCAP, chosen by header
            stamp (frames of one capture stay together); ``None`` keeps every frame. Every message
            of the other topics is kept.
        depth_fps: aligned-depth frames per second kept (default 1; ``None``: every kept colour
            frame's). A depth is kept when it opens a new colour window and a new depth window, so each
            kept depth is a kept colour frame's capture and the rate is at most ``image_fps``. The
            capture the agent pointed on is kept whole whatever the rates (``Recording.agent_frame_ns``):
            that is the depth a reviewer checks the target against; the others are context for a 3D
            view. Why 1 by default: depth is most of a bag (a lossless PNG of a noisy 640x480 depth
            is 100-130 kB, no lossless coder goes much lower; the colour JPEG about 20 kB), and at 1
            fps a 20 s sim trial's bag is 4.8 MB instead of 15.2 MB (docs/recording.md, measured).
        clip: the clip's encoding (``bridge.recording.clip.ClipSettings``).
        max_duration_s: a recording nobody ends is ended this long after it began: a safety net only
            (the station ends every recording with its trial), so it is above the longest trial the
            trial rules allow (a human reference's 900 s answer time, then targeting, motion, homing).
        max_queued: images waiting for the writer thread beyond which new ones are dropped
            (counted in ``Recording.dropped``) rather than the trial loop slowed down (other
            messages may queue up to 100 times as many).
        min_free_mb: free space the recordings' disk must keep (the SQLite store is usually on it):
            no recording starts below it, and a running one ends (``ended_by = "disk_floor"``).
        compress: zstd-compress the MCAP's chunks (readers decompress transparently).
        images: ``"compressed"`` (default): colour is written as image_transport's ``compressed``
            (JPEG, ``jpeg_quality``) on ``<colour topic>/compressed`` and aligned depth as
            ``compressedDepth`` (lossless 16-bit PNG, ``png_level``) on
            ``<depth topic>/compressedDepth`` (``perception.image_codecs``); ``"raw"``: the
            ``sensor_msgs/Image`` bytes as they arrived, on the raw topics (about 10 times larger).
        jpeg_quality: 1-100, the colour's JPEG quality (compressed_image_transport's parameter name).
        png_level: 0-9, zlib effort of the depth PNG (compressed_depth_image_transport's name;
            sizes and times per level in ``perception.image_codecs.encode_depth``).
        robot: ``"lite6"``: every recording carries ``/robot_description`` (the Lite 6 URDF with
            ``tool``) and a ``/tf`` per ``/joint_states`` message (``bridge.recording.robot_tf``), so a
            3D viewer shows the arm; ``"none"``: neither (another robot).
        tool: the tool drawn on the flange in ``/robot_description``.
    """

    model_config = ConfigDict(frozen=True)

    dir: Path | None = None
    image_fps: float | None = Field(5.0, gt=0, le=120)
    depth_fps: float | None = Field(1.0, gt=0, le=120)
    clip: ClipSettings = ClipSettings()
    max_duration_s: float = Field(1200.0, gt=0)
    max_queued: int = Field(32, ge=2)
    min_free_mb: float = Field(200.0, ge=0)
    compress: bool = True
    images: Literal["compressed", "raw"] = "compressed"
    jpeg_quality: int = Field(80, ge=1, le=100)
    png_level: int = Field(4, ge=0, le=9)
    robot: Literal["lite6", "none"] = "lite6"
    tool: Literal["lite_gripper", "lite_vacuum"] = "lite_gripper"

    def resolved_dir(self, db_path: str | Path | None = None) -> Path:
        """The recordings folder: ``dir``, else beside ``db_path``, else ``./recordings``."""
        if self.dir is not None:
            return Path(self.dir)
        return default_recordings_dir(db_path) if db_path is not None else Path("recordings").resolve()


class Recording(BaseModel):
    """One trial's recording, as returned by ``end`` and stored beside the files as JSON.

    Attributes:
        trial_id: the id the recording was begun with (also its file names).
        bag: the rosbag2 folder, relative to the recordings folder (``None``: none was written).
        mcap: the MCAP file inside it, relative to the recordings folder.
        clip: the MP4, relative to the recordings folder (``None``: no colour frame, or it failed).
        started_unix_ns: wall time ``begin`` was called, ns since the epoch.
        duration_s: ``begin`` to the end of the recording, seconds.
        color_frames, depth_frames: image messages kept in the MCAP; ``clip_frames``: frames in the clip.
        agent_frame_ns: header stamp (ns) of the capture the agent pointed on (``point_frame``), when
            its colour and its depth are both in the MCAP (kept whatever ``image_fps``/``depth_fps``,
            the depth lossless): the frame a reviewer checks the points and the target against.
            ``None``: no point request during the recording, or the frames had left the recorder's
            short buffer (about a second) before the request was seen.
        messages: messages in the MCAP per topic name.
        mcap_bytes, clip_bytes: file sizes, bytes (the bag's ``metadata.yaml`` included in ``mcap_bytes``).
        points_drawn: the agent's answer arrived during the recording and its points are on the clip.
        dropped: messages dropped because the writer thread was behind (never slows the trial).
        complete: every output was written and no message was bad; ``errors`` says what was not.
        ended_by: ``end`` (the caller), ``max_duration``, ``disk_floor`` (free space below the
            floor), ``close`` (the recorder shut down) or ``failed`` (nothing could be written).
    """

    model_config = ConfigDict(extra="ignore")

    trial_id: str
    bag: str | None = None
    mcap: str | None = None
    clip: str | None = None
    started_unix_ns: int
    duration_s: float = 0.0
    color_frames: int = 0
    depth_frames: int = 0
    clip_frames: int = 0
    agent_frame_ns: int | None = None
    messages: dict[str, int] = Field(default_factory=dict)
    mcap_bytes: int = 0
    clip_bytes: int = 0
    points_drawn: bool = False
    dropped: int = 0
    complete: bool = False
    ended_by: EndedBy = "end"
    errors: list[str] = Field(default_factory=list)


class RecordingLayout:
    """File names of the trials' recordings in one recordings folder ``root``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def bag(self, trial_id: str) -> Path:
        return self.root / check_trial_id(trial_id)

    def mcap(self, trial_id: str) -> Path:
        return self.bag(trial_id) / f"{trial_id}.mcap"

    def clip(self, trial_id: str) -> Path:
        return self.root / f"{check_trial_id(trial_id)}.mp4"

    def record(self, trial_id: str) -> Path:
        return self.root / f"{check_trial_id(trial_id)}.json"

    def relative(self, path: Path) -> str:
        """``path`` relative to the root, with ``/`` separators."""
        return path.relative_to(self.root).as_posix()

    def resolve(self, relative: str) -> Path | None:
        """The absolute path of a ``Recording`` path, or ``None`` when it would leave the folder
        (a stored path is data: ``../`` or an absolute path is never followed)."""
        root = self.root.resolve()
        p = (root / relative).resolve()
        return p if p.is_relative_to(root) and p != root else None

    def load(self, trial_id: str) -> Recording | None:
        """The ``Recording`` stored beside the files of ``trial_id``, or ``None`` (missing, or not a
        valid record: logged)."""
        try:
            path = self.record(trial_id)
        except ValueError:
            return None
        if not path.is_file():
            return None
        try:
            return Recording.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as e:
            log.warning("recording record %s is unreadable: %s", path, e)
            return None

    def save(self, rec: Recording) -> None:
        """Write ``rec`` beside its files (atomically: a crash leaves the old file or none).

        Raises:
            OSError: the folder is not writable or the disk is full.
        """
        path = self.record(rec.trial_id)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(rec.model_dump_json(indent=1))
        tmp.replace(path)


def recording_of(row: dict[str, Any], layout: RecordingLayout) -> Recording | None:
    """The recording of a stored trial row: its ``recording`` column when the row has one, else the
    record beside the files named by its ``trial_uid`` (a row stored before its recording ended
    finds it too); ``None`` when there is neither."""
    stored = row.get("recording")
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            stored = None
    if isinstance(stored, dict):
        try:
            return Recording.model_validate(stored)
        except ValidationError as e:
            log.warning(
                "trial %s: stored recording is not valid (%s); looking beside the files",
                row.get("id"),
                e.errors()[0]["msg"],
            )
    uid = row.get("trial_uid")
    return layout.load(uid) if isinstance(uid, str) else None
