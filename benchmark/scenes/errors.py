"""Errors of the scene readers."""

from __future__ import annotations

__all__ = ["SceneFormatError"]


class SceneFormatError(ValueError):
    """A scene file or folder is missing, unreadable, or not in the format it claims to be."""
