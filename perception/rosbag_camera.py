"""``bag:PATH`` for ROS 2 bags: a recording of the realsense-ros topics played back as a ``Camera``.

Plays a rosbag2 folder (``metadata.yaml`` + ``.mcap`` or ``.db3``) or a bare ``.mcap`` file that holds
the realsense-ros 4.x topics (``image_msgs.REALSENSE_TOPICS``: colour, aligned depth, colour
camera_info), as written by pointlab's trial recorder or by a lab's own ``ros2 bag record`` of
realsense-ros with ``align_depth.enable:=true``. Read with ``rosbags`` (no ROS install); message
definitions embedded in the bag are used, else rosbags' Kilted type store.

Playback, in the bag's log-time order, no frame skipped for being late:

- paced at the recorded rate times ``rate`` by ``playback.PlaybackClock`` on the frames' header
  stamps (the capture times realsense-ros gives); when the first colour frame's header stamp is 0
  (a publisher that never stamps) the whole playback uses the colour messages' log times instead,
  for pacing and for ``stamp_ns``; ``rate=0`` does not pace;
- ``loop`` (default): after the last frame the bag is read again from the start (``playback.Laps``:
  ``index`` and ``stamp_ns`` keep increasing, the wrap is one mean frame period long); without it
  ``read()`` raises ``EndOfRecording("end of recording ...")`` after the last frame, and again on
  every later call;
- each colour frame is paired with the aligned depth of the same header stamp (realsense-ros gives a
  capture one stamp on all its topics), else the nearest within ``max_pair_gap_ms``; a colour frame
  with no depth near it is skipped (counted in ``skipped``, logged once), never served without depth;
- intrinsics are those of the latest ``camera_info`` (a colour frame before the first one waits for it);
- each stream is read from its raw topic, else from image_transport's compressed one
  (``<colour>/compressed`` JPEG, ``<depth>/compressedDepth`` PNG; ``image_codecs``), so pointlab's
  compressed recordings and a lab's bag of compressed transports play alike;
- depth ``16UC1`` is millimetres (``depth_scale_m`` 0.001), ``32FC1`` metres converted to millimetres
  (``image_msgs.image_to_depth``);
- ``stamp_ns`` is the recorded header stamp (nanoseconds; on later laps shifted forward);
  ``index`` counts the frames served from 0.

A message that does not decode or an image whose buffer does not match its size is skipped and
logged; it never ends the playback.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict, deque
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from .camera import Camera
from .errors import CameraSourceError, EndOfRecording
from .frame import CAMERA_OPTICAL_FRAME, RGBDFrame
from .image_msgs import (
    REALSENSE_COMPRESSED_TOPICS,
    REALSENSE_TOPICS,
    camera_info_to_intrinsics,
    image_to_depth,
    image_to_rgb,
    stamp_to_ns,
)
from .playback import Laps, PlaybackClock, PlaybackOptions, split_playback_spec

if TYPE_CHECKING:
    from rosbags.highlevel import AnyReader

__all__ = ["RosbagCamera", "bag_camera", "holds_topic"]

log = logging.getLogger(__name__)

_KEEP_DEPTHS = 90  # depth frames kept for pairing: 3 s at 30 fps


def _open_reader(path: Path) -> AnyReader:
    """An opened rosbags ``AnyReader`` on ``path``. Raises ``CameraSourceError``."""
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.rosbag2 import ReaderError
    from rosbags.typesys import Stores, get_typestore

    reader = AnyReader([path], default_typestore=get_typestore(Stores.ROS2_KILTED))
    try:
        reader.open()
    except (AnyReaderError, ReaderError, OSError, ValueError) as e:
        raise CameraSourceError(f"cannot read ROS 2 bag {path}: {e}") from e
    return reader


def _streams_in(have: set[str]) -> dict[str, str]:
    """The realsense-ros topic of each stream that a bag holding ``have`` plays: the raw image, else
    image_transport's compressed one (``compressed`` colour, ``compressedDepth`` depth: what
    pointlab's recorder writes and what a lab records to keep bags small)."""
    return {
        k: raw if raw in have or REALSENSE_COMPRESSED_TOPICS[k] not in have else REALSENSE_COMPRESSED_TOPICS[k]
        for k, raw in REALSENSE_TOPICS.items()
    }


def holds_topic(path: str | Path, topic: str) -> bool:
    """Whether the ROS 2 bag at ``path`` (folder, ``.mcap`` or ``.db3``) has ``topic``; ``False`` for
    anything rosbags cannot open as one (a librealsense recording, a missing file)."""
    try:
        reader = _open_reader(Path(path))
    except (CameraSourceError, Exception):  # any unreadable file is simply not such a bag
        return False
    try:
        return any(c.topic == topic for c in reader.connections)
    finally:
        reader.close()


class RosbagCamera(Camera):
    """A ROS 2 bag of the realsense-ros topics (module docstring).

    Args:
        path: a rosbag2 folder, a ``.mcap`` or a ``.db3`` file.
        topics: ``{"color", "depth", "camera_info"}`` topic names (default: realsense-ros's).
        max_pair_gap_ms: the largest stamp difference at which a depth still pairs with a colour frame.
        rate: recorded seconds played per second (``0``: unpaced); ``playback.PlaybackOptions``.
        loop: start over after the last frame instead of raising ``EndOfRecording``.

    Raises:
        CameraSourceError: a bad ``rate`` (here); on ``connect()``, a missing or unreadable bag, or
            one without the three topics.
    """

    def __init__(
        self,
        path: str | Path,
        topics: dict[str, str] | None = None,
        max_pair_gap_ms: float = 20.0,
        rate: float = 1.0,
        loop: bool = True,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self._topics_given = topics is not None
        self.topics = dict(REALSENSE_TOPICS if topics is None else topics)
        self.max_gap_ns = int(max_pair_gap_ms * 1e6)
        self.playback = PlaybackOptions(rate=rate, loop=loop)
        self.skipped = 0  # colour frames skipped: no aligned depth near them
        self.bad_messages = 0
        self.frames_served = 0
        self._reader: AnyReader | None = None
        self._frames: Iterator[tuple[RGBDFrame, int]] | None = None
        self._clock: PlaybackClock | None = None
        self._laps: Laps | None = None
        self._by_log_time: bool | None = None  # decided on the first frame (module docstring)

    def _connect(self) -> None:
        if not self.path.exists():
            raise CameraSourceError(f"recording {self.path} not found")
        self._reader = reader = _open_reader(self.path)
        have = {c.topic for c in reader.connections}
        if not self._topics_given:
            self.topics = _streams_in(have)
        missing = [self.topics[k] for k in ("color", "depth", "camera_info") if self.topics[k] not in have]
        if missing:
            reader.close()
            self._reader = None
            raise CameraSourceError(f"{self.path} lacks {', '.join(missing)} (it has: {', '.join(sorted(have))})")
        # a reconnect plays from the start again, on a new schedule
        self._clock, self._laps, self._by_log_time = PlaybackClock(self.playback.rate), Laps(), None
        self.frames_served = 0
        self._frames = self._play()

    def _read(self) -> RGBDFrame:
        # set by _connect (the base class reads only when connected)
        assert self._frames is not None and self._laps is not None and self._clock is not None
        try:
            frame, log_ns = next(self._frames)
        except StopIteration:
            raise EndOfRecording(f"end of recording {self.path} ({self.frames_served} frames served)") from None
        if self._by_log_time is None:
            self._by_log_time = frame.stamp_ns == 0
            if self._by_log_time:
                log.warning("%s: header stamps are 0; pacing and stamping frames by the bag's log times", self.path)
        index, t_ns = self._laps.place(frame.index, log_ns if self._by_log_time else frame.stamp_ns)
        if not self._clock.wait(t_ns):
            raise CameraSourceError(f"{self.path}: disconnected during playback")
        self.frames_served += 1
        return dataclasses.replace(frame, stamp_ns=t_ns, index=index)

    def _disconnect(self) -> None:
        if self._clock is not None:
            self._clock.interrupt()  # a read waiting for its frame's time returns now
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._frames = None

    def _play(self) -> Iterator[tuple[RGBDFrame, int]]:
        """``(frame, colour log time ns)`` lap after lap; one lap without ``loop``, none for a bag
        with no playable frame (looping it would spin)."""
        while True:
            served = 0
            for item in self._iterate():
                served += 1
                yield item
            if not self.playback.loop or served == 0:
                return
            assert self._laps is not None  # set by _connect before it started this generator
            self._laps.next_lap()
            log.info("%s: end of lap %d (%d frames); playing it again", self.path, self._laps.lap + 1, served)

    # -- pairing --------------------------------------------------------------------------------
    def _decode(self, conn, raw):
        assert self._reader is not None  # the bag is open while _iterate runs
        try:
            return self._reader.deserialize(raw, conn.msgtype)
        except Exception as e:  # rosbags' SerdeError, struct.error... on a corrupt message
            self._note_bad(f"{conn.topic}: {type(e).__name__}: {e}")
            return None

    def _note_bad(self, why: str) -> None:
        self.bad_messages += 1
        if self.bad_messages == 1:
            log.warning("%s: skipping a message that is not valid (%s)", self.path, why)

    def _iterate(self) -> Iterator[tuple[RGBDFrame, int]]:
        """One pass over the bag: ``(frame, colour log time ns)``, ``index`` from 0."""
        t, reader, laps = self.topics, self._reader, self._laps
        assert reader is not None and laps is not None  # set by _connect before it started _play
        conns = [c for c in reader.connections if c.topic in (t["color"], t["depth"], t["camera_info"])]
        pending: deque = deque()  # (stamp_ns, log_ns, colour msg) waiting for their depth or intrinsics
        depths: OrderedDict[int, object] = OrderedDict()
        intr = None
        index = 0

        def drain(final: bool):
            nonlocal index
            newest_depth = next(reversed(depths)) if depths else None
            while pending and intr is not None:
                s = pending[0][0]
                # ready: its depth is here, or a later depth came, so no nearer one will
                if not final and s not in depths and (newest_depth is None or newest_depth <= s + self.max_gap_ns):
                    break
                stamp, log_ns, msg = pending.popleft()
                frame = self._frame(stamp, msg, depths, intr, index)
                if frame is not None:
                    index += 1
                    yield frame, log_ns

        for conn, log_ns, raw in reader.messages(connections=conns):
            msg = self._decode(conn, raw)
            if msg is None:
                continue
            if conn.topic == t["camera_info"]:
                try:
                    intr = camera_info_to_intrinsics(msg)
                except (ValueError, IndexError) as e:
                    self._note_bad(f"camera_info: {e}")
                continue
            stamp = stamp_to_ns(msg.header.stamp)
            if conn.topic == t["depth"]:
                depths[stamp] = msg
                while len(depths) > _KEEP_DEPTHS:
                    depths.popitem(last=False)
            else:
                pending.append((stamp, log_ns, msg))
            yield from drain(final=False)
        yield from drain(final=True)
        if pending and laps.lap == 0:  # said once, not on every lap
            log.warning(
                "%s: %d colour frames came before any camera_info on %s and were not played",
                self.path,
                len(pending),
                t["camera_info"],
            )

    def _frame(self, stamp: int, color_msg, depths: OrderedDict, intr, index: int) -> RGBDFrame | None:
        depth_msg = depths.get(stamp)
        if depth_msg is None and depths:
            near = min(depths, key=lambda d: abs(d - stamp))
            depth_msg = depths[near] if abs(near - stamp) <= self.max_gap_ns else None
        if depth_msg is None:
            self.skipped += 1
            if self.skipped == 1:
                log.warning(
                    "%s: a colour frame has no aligned depth within %.0f ms; skipped", self.path, self.max_gap_ns / 1e6
                )
            return None
        try:
            rgb = image_to_rgb(color_msg)
            depth, scale = image_to_depth(depth_msg)
            return RGBDFrame(rgb, depth, scale, intr, stamp, index, color_msg.header.frame_id or CAMERA_OPTICAL_FRAME)
        except ValueError as e:  # a buffer that does not match, or intrinsics of another size
            self._note_bad(f"frame at {stamp}: {e}")
            return None


def _librealsense(path: Path, **kwargs) -> Camera:
    from .realsense import BagCamera

    return BagCamera(path, **kwargs)


def _db3(path: Path, **kwargs) -> Camera:
    # librealsense 2.5x also writes sqlite3 bags, with its own topic layout: those go to pyrealsense2
    if holds_topic(path, REALSENSE_TOPICS["color"]) or holds_topic(path, REALSENSE_COMPRESSED_TOPICS["color"]):
        return RosbagCamera(path, **kwargs)
    return _librealsense(path, **kwargs)


# What a bag path holds, by suffix (rosbags' style: a dict, not an if-chain); a folder is a rosbag2 bag.
_BY_SUFFIX: dict[str, Callable[..., Camera]] = {".mcap": RosbagCamera, ".db3": _db3, ".bag": _librealsense}


def bag_camera(arg: str | None, **kwargs) -> Camera:
    """``bag:PATH[#rate=R,loop=L]``: a ROS 2 bag of the realsense-ros topics (a rosbag2 folder,
    ``.mcap``, or a ``.db3`` holding them) -> ``RosbagCamera``; a librealsense recording (``.bag``, or
    a ``.db3`` without them) -> ``realsense.BagCamera``. Options (``playback`` module docstring):
    ``rate`` recorded seconds per second, default 1 (``0``/``max``: unpaced); ``loop`` default 1.
    A keyword argument wins over the same option in the spec (as ``replay:DIR#IDS`` does).

    Raises:
        CameraSourceError: no path, a suffix that is neither, or a bad option (the message names it).
    """
    path_text, options = split_playback_spec(arg or "")
    if not path_text:
        raise CameraSourceError("bag needs a file or folder: bag:PATH[#rate=R,loop=L]")
    kwargs = {**options, **kwargs}
    path = Path(path_text)
    if path.is_dir():
        return RosbagCamera(path, **kwargs)
    factory = _BY_SUFFIX.get(path.suffix.lower())
    if factory is None:
        raise CameraSourceError(f"bag:{arg}: expected a rosbag2 folder, .mcap, .db3 or .bag")
    return factory(path, **kwargs)
