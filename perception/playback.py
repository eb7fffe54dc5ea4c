"""Playing a recording as a camera: the ``bag:`` options, the clock that paces frames to their
recorded times, and the laps of a looping playback. Shared by both ``bag:`` back-ends
(``rosbag_camera.RosbagCamera``, ``realsense.BagCamera``), so they pace and loop alike.

Spec: ``bag:PATH#rate=R,loop=L`` (``#`` ends the path as in ``replay:DIR#000003``; options are
``key=value`` separated by commas, in any order, each optional):

- ``rate``: recorded seconds played per second, > 0 (``2`` twice as fast, ``0.5`` half speed);
  ``0`` or ``max``: as fast as the reader asks, no pacing (offline tools, tests). Default ``1``.
- ``loop``: ``1`` (default): after the last frame start over from the first, indices and stamps
  continuing forward (``Laps``); ``0``: ``read()`` raises ``errors.EndOfRecording`` after it.
  Also ``true/false``, ``yes/no``, ``on/off``.

Pacing: frame k is served no earlier than ``t_start + (t_k - t_0) / rate`` on the monotonic clock,
``t_start`` being when the first frame was served and ``t_k`` the frame's recorded time
(nanoseconds, continued across laps). ``read()`` blocks until then; a late frame (the reader was
slow) is served at once and the schedule is kept, so playback catches up rather than drifts.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl

from .errors import CameraSourceError

__all__ = ["PlaybackOptions", "split_playback_spec", "PlaybackClock", "Laps", "DEFAULT_LAP_GAP_NS"]

_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
# The gap after the last frame of a lap when the lap has a single frame (no period to measure):
# replay:'s default 15 fps.
DEFAULT_LAP_GAP_NS = 66_666_667


@dataclass(frozen=True)
class PlaybackOptions:
    """How a recording plays (module docstring).

    Attributes:
        rate: recorded seconds per second of playback, > 0; 0 = unpaced (as fast as read).
        loop: start over after the last frame (``True``) or end with ``EndOfRecording``.

    Raises:
        CameraSourceError: a rate that is negative, NaN or infinite (the message names ``rate``).
    """

    rate: float = 1.0
    loop: bool = True

    def __post_init__(self) -> None:
        if (
            isinstance(self.rate, bool)
            or not isinstance(self.rate, (int, float))
            or not math.isfinite(self.rate)
            or self.rate < 0
        ):
            raise CameraSourceError(f"bag option rate: expected a number >= 0 or 'max', got {self.rate!r}")
        object.__setattr__(self, "rate", float(self.rate))
        object.__setattr__(self, "loop", bool(self.loop))

    @classmethod
    def parse(cls, text: str) -> dict:
        """``"rate=2,loop=0"`` -> ``{"rate": 2.0, "loop": False}``: only the options given, validated.

        Raises:
            CameraSourceError: an unknown or repeated option, a field without ``=``, or a bad value;
                the message names the option.
        """
        try:
            fields = parse_qsl(text, keep_blank_values=True, strict_parsing=True, separator=",")
        except ValueError as e:  # "bad query field: 'rate'"
            raise CameraSourceError(f"bag options {text!r}: expected key=value[,key=value] ({e})") from e
        out: dict = {}
        for key, value in fields:
            if key in out:
                raise CameraSourceError(f"bag option {key} is given twice")
            if key == "rate":
                out[key] = _parse_rate(value)
            elif key == "loop":
                out[key] = _parse_flag(key, value)
            else:
                raise CameraSourceError(f"unknown bag option {key!r}; known: rate, loop")
        return out


def _parse_rate(value: str) -> float:
    if value.strip().lower() == "max":
        return 0.0
    try:
        rate = float(value)
    except ValueError:
        raise CameraSourceError(f"bag option rate: expected a number >= 0 or 'max', got {value!r}") from None
    PlaybackOptions(rate=rate)  # names the option for NaN, inf, negative
    return rate


def _parse_flag(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE or v in _FALSE:
        return v in _TRUE
    raise CameraSourceError(f"bag option {key}: expected 1 or 0 (true/false, yes/no, on/off), got {value!r}")


def split_playback_spec(arg: str) -> tuple[str, dict]:
    """``"PATH#rate=2,loop=0"`` -> ``("PATH", {"rate": 2.0, "loop": False})`` (``PlaybackOptions.parse``).

    Raises:
        CameraSourceError: bad options (see ``PlaybackOptions.parse``).
    """
    path, _, options = arg.partition("#")
    return path, PlaybackOptions.parse(options)


class PlaybackClock:
    """Paces recorded times (nanoseconds) on the monotonic clock at ``rate`` (module docstring).

    The first ``wait`` starts the clock: its recorded time is ``t_0`` and it returns at once.
    ``rate`` 0 never waits. ``interrupt()`` (from another thread, e.g. on disconnect) ends any wait.
    """

    def __init__(self, rate: float) -> None:
        self.rate = float(rate)
        self._origin: tuple[int, float] | None = None  # (t_0 ns, monotonic s at which it was served)
        self._interrupted = threading.Event()

    def due(self, t_ns: int) -> float:
        """Monotonic time (seconds) at which recorded time ``t_ns`` is due; starts the clock if needed."""
        if self._origin is None:
            self._origin = (t_ns, time.monotonic())
        t0_ns, start_s = self._origin
        return start_s + (t_ns - t0_ns) / 1e9 / self.rate if self.rate > 0 else start_s

    def wait(self, t_ns: int) -> bool:
        """Block until recorded time ``t_ns`` is due. Returns ``False`` when interrupted, else ``True``."""
        if self.rate <= 0:
            return not self._interrupted.is_set()
        left = self.due(t_ns) - time.monotonic()
        if left > 0:
            return not self._interrupted.wait(left)
        return not self._interrupted.is_set()

    def interrupt(self) -> None:
        """End the current and every later ``wait`` (it returns ``False``)."""
        self._interrupted.set()


class Laps:
    """Frame indices and recorded times made continuous across the laps of a looping playback.

    Lap 0 keeps the recording's own values. Call ``next_lap()`` when the recording starts over:
    the next frame's index is one more than the last served, and its time is the latest time served
    plus the lap's mean frame period (``DEFAULT_LAP_GAP_NS`` for a one-frame lap), so times keep
    moving forward and the pause at the wrap is one frame long. Every later frame of that lap is
    shifted by the same amounts.
    """

    def __init__(self) -> None:
        self.lap = 0
        self._index_shift = 0
        self._time_shift_ns = 0
        self._new_lap = False
        self._last_index: int | None = None
        self._first_ns: int | None = None  # this lap's first and latest time, shifted
        self._latest_ns: int | None = None
        self._count = 0  # frames placed in this lap

    def next_lap(self) -> None:
        """The recording starts over: the next ``place`` begins a new lap."""
        if self._count:
            self._new_lap = True

    def place(self, index: int, t_ns: int) -> tuple[int, int]:
        """The recording's ``(index, t_ns)`` of a frame -> its continuous ``(index, t_ns)``."""
        if self._new_lap:
            # next_lap sets _new_lap only after a frame was placed: all three are set
            assert self._latest_ns is not None and self._first_ns is not None and self._last_index is not None
            span = self._latest_ns - self._first_ns
            gap = span // (self._count - 1) if self._count > 1 and span > 0 else DEFAULT_LAP_GAP_NS
            self._index_shift = self._last_index + 1 - index
            self._time_shift_ns = self._latest_ns + gap - t_ns
            self.lap += 1
            self._new_lap, self._first_ns, self._latest_ns, self._count = False, None, None, 0
        index, t_ns = index + self._index_shift, t_ns + self._time_shift_ns
        self._last_index = index
        self._first_ns = t_ns if self._first_ns is None else self._first_ns
        self._latest_ns = t_ns if self._latest_ns is None else max(self._latest_ns, t_ns)
        self._count += 1
        return index, t_ns
