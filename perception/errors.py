"""Errors of the perception package."""

__all__ = ["PerceptionError", "CameraNotConnectedError", "CameraSourceError", "CalibrationFileError"]


class PerceptionError(Exception):
    """Base class of perception errors."""


class CameraNotConnectedError(PerceptionError, ConnectionError):
    """``read()`` was called on a camera that is not connected."""


class CameraSourceError(PerceptionError):
    """A camera source could not be opened or produced a bad frame (missing file, corrupt PNG,
    unknown source spec, device not found)."""


class CalibrationFileError(PerceptionError):
    """A calibration file is missing, malformed, or holds a transform that is not rigid or not in
    metres."""
