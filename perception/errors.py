"""Errors of the perception package, and ``PointlabError``, the base of every error pointlab raises on
purpose.

Why ``PointlabError`` lives here: ``pointlab`` is an implicit namespace package with a fixed set of
root folders (docs/architecture.md), and perception is the bottom of the package graph (everything
else may import it; it imports none of ours). Each package has one base under it:
``PerceptionError``, ``robot.errors.RobotError``, ``benchmark.errors.BenchmarkError``,
``bridge.errors.BridgeError``, ``ui.errors.UiError``; ``tests/test_errors.py`` checks every error
class. A caller that must tell pointlab's refusals from bugs catches ``PointlabError``, never a
message: no code matches error text.
"""

__all__ = [
    "PointlabError",
    "PerceptionError",
    "CameraNotConnectedError",
    "CameraSourceError",
    "EndOfRecording",
    "CalibrationFileError",
]


class PointlabError(Exception):
    """Base class of every error pointlab raises on purpose (bad input, a refused action, a part that
    failed); anything else that escapes is a bug."""


class PerceptionError(PointlabError):
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
