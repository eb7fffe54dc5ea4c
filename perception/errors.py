"""Errors of the perception package."""

__all__ = ["PerceptionError", "CameraNotConnectedError", "CameraSourceError", "EndOfRecording", "CalibrationFileError"]


class PerceptionError(Exception):
    """Base class of perception errors."""


class CameraNotConnectedError(PerceptionError, ConnectionError):
    """``read()`` was called on a camera that is not connected."""


class CameraSourceError(PerceptionError):
    """A camera source could not be opened or produced a bad frame (missing file, corrupt PNG,
    unknown source spec, device not found)."""


class EndOfRecording(CameraSourceError):
    """A recording played with ``loop=0`` has no more frames: every ``read()`` after its last frame
    raises it, and no later ``read()`` serves a frame again. Its message starts ``end of recording``."""


class CalibrationFileError(PerceptionError):
    """A calibration file is missing, malformed, or holds a transform that is not rigid or not in
    metres."""
