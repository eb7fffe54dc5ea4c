"""Errors of the video spatial benchmark (frames, generation, scoring)."""

from __future__ import annotations

__all__ = ["VideoBenchError", "FrameSourceError", "RecordError", "SceneDataError"]


class VideoBenchError(Exception):
    """Base class of every error raised by ``pointlab.benchmark.video``."""


class FrameSourceError(VideoBenchError):
    """A video or frame folder is missing, empty, unreadable or corrupt, or a frame index is out of range."""


class RecordError(VideoBenchError, ValueError):
    """A JSONL record (ground truth, prediction, visibility table) is malformed; the message names the line."""


class SceneDataError(VideoBenchError, ValueError):
    """Scene metadata cannot be used to generate questions (no objects, bad boxes)."""
