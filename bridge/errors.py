"""The base of every error the bridge package raises on purpose (``BridgeError``, a
``PointlabError``). The calibration procedure's errors are perception errors (they are about the
camera's pose), so they are ``PerceptionError`` rather than ``BridgeError``."""

from __future__ import annotations

from pointlab.perception.errors import PointlabError

__all__ = ["BridgeError"]


class BridgeError(PointlabError):
    """Base class of the bridge package's errors (session, trials, recordings, study store, ROS graph)."""
