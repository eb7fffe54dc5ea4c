"""Errors of the video spatial benchmark (frames, generation, scoring)."""

from __future__ import annotations

from ..records import RecordError as BaseRecordError

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["VideoBenchError", "FrameSourceError", "RecordError", "SceneDataError"]


class VideoBenchError(BenchmarkError):
    """Base class of every error raised by ``pointlab.benchmark.video``."""


class FrameSourceError(VideoBenchError):
    """A video or frame folder is missing, empty, unreadable or corrupt, or a frame index is out of range."""


class RecordError(VideoBenchError, BaseRecordError):
    """A video record (ground truth, prediction, visibility table) is malformed. Reading the JSONL
    itself raises the base ``benchmark.records.RecordError``, which this is a kind of."""


class SceneDataError(VideoBenchError, ValueError):
    """Scene metadata cannot be used to generate questions (no objects, bad boxes)."""
