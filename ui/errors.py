"""The base of every error the ui package raises on purpose (``UiError``, a ``PointlabError``)."""

from __future__ import annotations

from pointlab.perception.errors import PointlabError

__all__ = ["UiError"]


class UiError(PointlabError):
    """Base class of the web layer's errors (arena store, uploads, flows, websocket messages)."""
