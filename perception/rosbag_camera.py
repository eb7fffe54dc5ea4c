"""``bag:PATH`` for ROS 2 bags: a recording of the realsense-ros topics played back as a ``Camera``.

Plays a rosbag2 folder (``metadata.yaml`` + ``.mcap`` or ``.db3``) or a bare ``.mcap`` file that holds
the realsense-ros 4.x topics (``image_msgs.REALSENSE_TOPICS``: colour, aligned depth, colour
camera_info), as written by pointlab's trial recorder or by a lab's own ``ros2 bag record`` of
realsense-ros with ``align_depth.enable:=true``. Read with ``rosbags`` (no ROS install); message
definitions embedded in the bag are used, else rosbags' Kilted type store.

Playback, in the bag's log-time order, once, not in real time (no frame is skipped for being late):

- each colour frame is paired with the aligned depth of the same header stamp (realsense-ros gives a
  capture one stamp on all its topics), else the nearest within ``max_pair_gap_ms``; a colour frame
  with no depth near it is skipped (counted in ``skipped``, logged once), never served without depth;
- intrinsics are those of the latest ``camera_info`` (a colour frame before the first one waits for it);
- depth ``16UC1`` is millimetres (``depth_scale_m`` 0.001), ``32FC1`` metres converted to millimetres
  (``image_msgs.image_to_depth``);
- ``stamp_ns`` is the recorded header stamp; ``index`` counts the frames served from 0;
- after the last frame ``read()`` raises ``CameraSourceError("end of recording ...")``, as the
  RealSense ``.bag`` source does.

A message that does not decode or an image whose buffer does not match its size is skipped and
logged; it never ends the playback.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from pathlib import Path
from typing import Iterator

from .camera import Camera
from .errors import CameraSourceError
from .frame import CAMERA_OPTICAL_FRAME, RGBDFrame
from .image_msgs import REALSENSE_TOPICS, camera_info_to_intrinsics, image_to_depth, image_to_rgb, stamp_to_ns

__all__ = ["RosbagCamera", "bag_camera", "holds_topic"]

log = logging.getLogger(__name__)

_KEEP_DEPTHS = 90  # depth frames kept for pairing: 3 s at 30 fps


def _open_reader(path: Path):
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
    """

    def __init__(self, path: str | Path, topics: dict[str, str] | None = None, max_pair_gap_ms: float = 20.0) -> None:
        super().__init__()
        self.path = Path(path)
        self.topics = dict(REALSENSE_TOPICS if topics is None else topics)
        self.max_gap_ns = int(max_pair_gap_ms * 1e6)
        self.skipped = 0  # colour frames skipped: no aligned depth near them
        self.bad_messages = 0
        self._reader = None
        self._frames: Iterator[RGBDFrame] | None = None

    @classmethod
    def from_spec(cls, arg: str | None, **kwargs) -> "RosbagCamera":
        if not arg:
            raise CameraSourceError("bag needs a file or folder: bag:PATH")
        return cls(arg, **kwargs)

    def _connect(self) -> None:
        if not self.path.exists():
            raise CameraSourceError(f"recording {self.path} not found")
        self._reader = _open_reader(self.path)
        have = {c.topic for c in self._reader.connections}
        missing = [self.topics[k] for k in ("color", "depth", "camera_info") if self.topics[k] not in have]
        if missing:
            self._reader.close()
            self._reader = None
            raise CameraSourceError(f"{self.path} lacks {', '.join(missing)} (it has: {', '.join(sorted(have))})")
        self._frames = self._iterate()

    def _read(self) -> RGBDFrame:
        try:
            return next(self._frames)
        except StopIteration:
            raise CameraSourceError(f"end of recording {self.path}") from None

    def _disconnect(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        self._frames = None

    # -- pairing --------------------------------------------------------------------------------
    def _decode(self, conn, raw):
        try:
            return self._reader.deserialize(raw, conn.msgtype)
        except Exception as e:  # rosbags' SerdeError, struct.error... on a corrupt message
            self._note_bad(f"{conn.topic}: {type(e).__name__}: {e}")
            return None

    def _note_bad(self, why: str) -> None:
        self.bad_messages += 1
        if self.bad_messages == 1:
            log.warning("%s: skipping a message that is not valid (%s)", self.path, why)

    def _iterate(self) -> Iterator[RGBDFrame]:
        t = self.topics
        conns = [c for c in self._reader.connections if c.topic in (t["color"], t["depth"], t["camera_info"])]
        pending: deque = deque()  # (stamp_ns, colour msg) waiting for their depth or intrinsics
        depths: OrderedDict[int, object] = OrderedDict()
        intr = None
        index = 0
        for conn, _log_ns, raw in self._reader.messages(connections=conns):
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
                pending.append((stamp, msg))
            newest_depth = next(reversed(depths)) if depths else None
            while pending and intr is not None:
                s = pending[0][0]
                # ready: its depth is here, or a later depth came, so no nearer one will
                if s not in depths and (newest_depth is None or newest_depth <= s + self.max_gap_ns):
                    break
                frame = self._frame(*pending.popleft(), depths, intr, index)
                if frame is not None:
                    index += 1
                    yield frame
        while pending and intr is not None:
            frame = self._frame(*pending.popleft(), depths, intr, index)
            if frame is not None:
                index += 1
                yield frame
        if pending:
            log.warning("%s: %d colour frames came before any camera_info on %s and were not played",
                        self.path, len(pending), t["camera_info"])

    def _frame(self, stamp: int, color_msg, depths: OrderedDict, intr, index: int) -> RGBDFrame | None:
        depth_msg = depths.get(stamp)
        if depth_msg is None and depths:
            near = min(depths, key=lambda d: abs(d - stamp))
            depth_msg = depths[near] if abs(near - stamp) <= self.max_gap_ns else None
        if depth_msg is None:
            self.skipped += 1
            if self.skipped == 1:
                log.warning("%s: a colour frame has no aligned depth within %.0f ms; skipped",
                            self.path, self.max_gap_ns / 1e6)
            return None
        try:
            rgb = image_to_rgb(color_msg)
            depth, scale = image_to_depth(depth_msg)
            return RGBDFrame(rgb, depth, scale, intr, stamp, index,
                             color_msg.header.frame_id or CAMERA_OPTICAL_FRAME)
        except ValueError as e:  # a buffer that does not match, or intrinsics of another size
            self._note_bad(f"frame at {stamp}: {e}")
            return None


def _librealsense(path: Path, **kwargs) -> Camera:
    from .realsense import BagCamera

    return BagCamera(path, **kwargs)


def _db3(path: Path, **kwargs) -> Camera:
    # librealsense 2.5x also writes sqlite3 bags, with its own topic layout: those go to pyrealsense2
    if holds_topic(path, REALSENSE_TOPICS["color"]):
        return RosbagCamera(path, **kwargs)
    return _librealsense(path, **kwargs)


# What a bag path holds, by suffix (rosbags' style: a dict, not an if-chain); a folder is a rosbag2 bag.
_BY_SUFFIX = {".mcap": RosbagCamera, ".db3": _db3, ".bag": _librealsense}


def bag_camera(arg: str | None, **kwargs) -> Camera:
    """``bag:PATH``: a ROS 2 bag of the realsense-ros topics (a rosbag2 folder, ``.mcap``, or a
    ``.db3`` holding them) -> ``RosbagCamera``; a librealsense recording (``.bag``, or a ``.db3``
    without them) -> ``realsense.BagCamera``.

    Raises:
        CameraSourceError: no path, or a suffix that is neither.
    """
    if not arg:
        raise CameraSourceError("bag needs a file or folder: bag:PATH")
    path = Path(arg)
    if path.is_dir():
        return RosbagCamera(path, **kwargs)
    factory = _BY_SUFFIX.get(path.suffix.lower())
    if factory is None:
        raise CameraSourceError(f"bag:{arg}: expected a rosbag2 folder, .mcap, .db3 or .bag")
    return factory(path, **kwargs)
