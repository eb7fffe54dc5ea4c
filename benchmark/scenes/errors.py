"""Errors of the scene readers."""

from __future__ import annotations

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["SceneFormatError"]


class SceneFormatError(BenchmarkError, ValueError):
    """A scene file or folder is missing, unreadable, or not in the format it claims to be."""
