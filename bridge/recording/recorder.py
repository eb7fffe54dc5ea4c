"""The trial recorder's engine: serialized ROS 2 messages in, one MCAP bag and one clip per trial out.

ROS-free: ``offer(topic, log_ns, cdr)`` takes the CDR bytes of a message as they arrived (the ROS side,
``bridge.ros.recorder.TrialRecorder``, feeds it from raw subscriptions; a test can feed it bytes
serialized by rclpy without any DDS). Everything else happens on the engine's own thread:

- ``offer`` never blocks and never raises: with no recording running it keeps only the latest
  message of the state topics (``LATCHED``: camera_info, joint states, TCP pose, arm state) and drops
  the rest; with one running it queues the message (an image only when it is the first of its
  stamp window), or drops it (counted) when ``max_queued`` images are already waiting, so a slow
  disk or a busy machine costs frames, never trial-loop time;
- ``begin(trial_id)`` starts a recording: the latest state messages are written first (their own
  reception times), then every message received until ``end``; colour and aligned depth are kept at
  ``image_fps`` (depth at ``depth_fps``) by header stamp, so the frames of one capture stay together;
- the capture the agent pointed on (``point_frame``'s stamp) is kept whole whatever the rates: its
  colour and its depth (lossless), from a short buffer of the latest frames when they arrived
  before the request (they usually did: the pointing node shows the agent the latest frame), written
  at their own reception times (MCAP readers order by log time);
- ``end(trial_id)`` waits for the engine to finish the files and returns the typed ``Recording``
  (``end_async`` from an event loop). A recording nobody ends stops after ``max_duration_s``;
- a message that does not decode (corrupt CDR) or an image whose buffer does not match its size is
  not written; it is logged and makes the recording ``complete = False``. A write that fails (disk
  full) stops that output, removes its partial file and is recorded; below ``min_free_mb`` of free
  space no recording starts and a running one ends. Nothing here raises into the trial loop.

Kept images are stored as image_transport's ``compressed`` (colour JPEG) and ``compressedDepth``
(lossless depth PNG) ``sensor_msgs/CompressedImage`` on its topic names (``bag_topics``;
``perception.image_codecs``). The colour may be offered either way: as the camera's own
``compressed`` message (``TOPICS["color_compressed"]``, what the ROS recorder subscribes to in this
mode: **written as it arrived, never encoded again**; the clip decodes it), or raw (encoded here, on
the engine's thread); a capture's frame is kept once whichever form comes first. Depth is encoded
here, only for the frames kept. ``RecordingConfig(images="raw")`` writes the raw ``sensor_msgs/Image``
bytes as they arrived instead (``input_topics`` says what to subscribe to).

The clip (``bridge.recording.clip``) gets colour frames at ``clip.fps``; once the trial's answer
(``point_answer`` with the recording's request id, or the first answer when none was given) has
been received, its points are drawn on every later frame.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import shutil
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import ValidationError

from pointlab.perception.image_codecs import COMPRESSED_DEPTH_SUFFIX, COMPRESSED_SUFFIX, encode_color, encode_depth
from pointlab.perception.image_msgs import image_to_depth, image_to_rgb, stamp_to_ns

from pointlab.bridge.recording.clip import ClipError, ClipWriter, draw_points
from pointlab.bridge.recording.annotations import (
    IMAGE_ANNOTATIONS,
    MARKER_ARRAY,
    MARKERS_TOPIC,
    POINTS_TOPIC,
    answer_annotations_cdr,
    first_point_is_target,
    target_markers_cdr,
)
from pointlab.bridge.recording.robot_tf import ROBOT_DESCRIPTION, STRING, TF, robot_description_cdr, tf_of_joint_state
from pointlab.bridge.recording.static_tf import TF_MESSAGE, TF_STATIC, StaticTransform, tf_message_cdr
from pointlab.bridge.recording.layout import EndedBy, Recording, RecordingConfig, RecordingLayout, check_trial_id
from pointlab.bridge.ros.msgs import TOPICS
from pointlab.bridge.ros.payloads import PointAnswer, PointFrame
from pointlab.bridge.recording.trial_bag import BagError, TrialBag, typestore

__all__ = ["Recorder", "RECORDED_TOPICS", "LATCHED", "bag_topics", "input_topics", "image_frames"]

log = logging.getLogger(__name__)

_IMAGE = "sensor_msgs/msg/Image"
_STRING = "std_msgs/msg/String"
_EMPTY = "std_msgs/msg/Empty"

# Every topic of the node set (docs/ros.md) -> its ROS type. The realsense-ros names come first.
RECORDED_TOPICS: dict[str, str] = {
    TOPICS["color"]: _IMAGE,
    TOPICS["depth"]: _IMAGE,
    TOPICS["camera_info"]: "sensor_msgs/msg/CameraInfo",
    TOPICS["depth_camera_info"]: "sensor_msgs/msg/CameraInfo",
    TOPICS["joint_states"]: "sensor_msgs/msg/JointState",
    TOPICS["tcp_pose"]: "geometry_msgs/msg/PoseStamped",
    TOPICS["target"]: "geometry_msgs/msg/PointStamped",
    **{
        TOPICS[k]: _STRING
        for k in (
            "frame_meta",
            "point_request",
            "point_frame",
            "point_answer",
            "target_result",
            "arm_command",
            "arm_result",
            "arm_state",
        )
    },
    TOPICS["arm_estop"]: _EMPTY,
    TOPICS["arm_halt"]: _EMPTY,
    TOPICS["arm_reset"]: _EMPTY,
}
_COMPRESSED = "sensor_msgs/msg/CompressedImage"


def bag_topics(config: RecordingConfig) -> dict[str, str]:
    """The topics a recording's bag holds, ``{name: ROS type}``: ``RECORDED_TOPICS``, with the colour
    and depth images on image_transport's ``compressed``/``compressedDepth`` topics when
    ``config.images == "compressed"``, and the agent's points and the target drawn for a viewer
    (``annotations``). ``/tf_static``, ``/tf`` and ``/robot_description`` are added per recording."""
    out = {}
    for topic, msgtype in RECORDED_TOPICS.items():
        if topic in _STORED_AS and config.images != "raw":
            out[_STORED_AS[topic]] = _COMPRESSED
        else:
            out[topic] = msgtype
    out[POINTS_TOPIC], out[MARKERS_TOPIC] = IMAGE_ANNOTATIONS, MARKER_ARRAY
    return out


def input_topics(config: RecordingConfig) -> dict[str, str]:
    """The topics a recorder subscribes to, ``{name: ROS type}``: ``RECORDED_TOPICS``, with the colour
    taken as the camera's ``compressed`` JPEG (``TOPICS["color_compressed"]``) instead of raw when
    ``config.images == "compressed"``: the bytes the live view shows are the ones stored."""
    if config.images == "raw":
        return dict(RECORDED_TOPICS)
    return {
        (_COLOR_JPEG if t == _COLOR else t): (_COMPRESSED if t == _COLOR else m) for t, m in RECORDED_TOPICS.items()
    }


def image_frames(counts: dict[str, int]) -> tuple[int, int]:
    """``(colour, depth)`` frames in a bag from its messages per topic, raw or compressed."""
    return (
        counts.get(_COLOR, 0) + counts.get(_STORED_AS[_COLOR], 0),
        counts.get(_DEPTH, 0) + counts.get(_STORED_AS[_DEPTH], 0),
    )


# State topics whose latest message opens every recording (a trial starts from a known state).
LATCHED = (
    TOPICS["camera_info"],
    TOPICS["depth_camera_info"],
    TOPICS["joint_states"],
    TOPICS["tcp_pose"],
    TOPICS["arm_state"],
)
_COLOR, _DEPTH, _ANSWER, _TARGET = TOPICS["color"], TOPICS["depth"], TOPICS["point_answer"], TOPICS["target"]
_COLOR_JPEG = TOPICS["color_compressed"]
_JOINTS = TOPICS["joint_states"]
# where a kept colour or depth frame goes in a compressed recording (image_transport's names)
_STORED_AS = {_COLOR: _COLOR + COMPRESSED_SUFFIX, _DEPTH: _DEPTH + COMPRESSED_DEPTH_SUFFIX}
assert _STORED_AS[_COLOR] == _COLOR_JPEG
_COLORS = (_COLOR, _COLOR_JPEG)
_IMAGES = (_COLOR, _COLOR_JPEG, _DEPTH)
_INPUT_TYPES = {**RECORDED_TOPICS, _COLOR_JPEG: _COMPRESSED}  # every form ``offer`` takes
_DISK_CHECK_S = 1.0
_POINT_FRAME = TOPICS["point_frame"]
# frames held for the agent's capture: at 30 fps colour + depth, about a second (the point_frame that
# names it comes a few ms after the frame; the hold costs ~40 MB of references to received bytes)
_RECENT_FRAMES = 64
_MAX_PINS = 8  # agent captures kept per recording (a trial has one; a retried request a few)
_KEEP_FINISHED = 200


def _peek_stamp_ns(cdr: bytes) -> int | None:
    """The header stamp of a serialized stamped message without decoding it, or ``None``.

    A ROS 2 message starts with the 4-byte CDR encapsulation header (byte 1: 0 big-endian, 1
    little-endian; OMG DDS-XTypes 7.6.3.1.2) and a message whose first field is a
    ``std_msgs/Header`` then holds ``stamp.sec`` (int32) and ``stamp.nanosec`` (uint32). Only used to
    skip frames early; the engine decodes every frame it keeps with rosbags."""
    if len(cdr) < 12 or cdr[0] != 0 or cdr[1] not in (0, 1):
        return None
    order: Literal["little", "big"] = "little" if cdr[1] else "big"
    nsec = int.from_bytes(cdr[8:12], order)
    if nsec >= 1_000_000_000:
        return None
    return int.from_bytes(cdr[4:8], order, signed=True) * 1_000_000_000 + nsec


def _point_frame(cdr: bytes) -> PointFrame | None:
    """A serialized ``point_frame`` (``std_msgs/String`` JSON ``PointFrame``), or ``None`` when it is
    not one. CDR of a String: 4-byte encapsulation header, uint32 length (with the NUL), the bytes."""
    if len(cdr) < 8 or cdr[0] != 0 or cdr[1] not in (0, 1):
        return None
    n = int.from_bytes(cdr[4:8], "little" if cdr[1] else "big")
    try:
        return PointFrame.model_validate_json(cdr[8 : 8 + n].rstrip(b"\0"))
    except ValidationError:
        return None


@dataclass
class _Begin:
    trial_id: str
    request_id: str | None
    begin_ns: int
    latched: list[tuple[str, int, bytes]]
    dropped_before: int


@dataclass
class _End:
    trial_id: str
    end_ns: int
    done: concurrent.futures.Future


_STOP = object()


@dataclass
class _Trial:
    """One running recording (engine thread only)."""

    trial_id: str
    request_id: str | None
    begin_ns: int
    dropped_before: int
    bag: TrialBag | None = None
    clip: ClipWriter | None = None
    errors: list[str] = field(default_factory=list)
    bad: dict[str, int] = field(default_factory=dict)
    image_slot: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)  # stored topic -> windows
    kept: dict[str, set[int]] = field(default_factory=dict)  # stored topic -> stamps written
    agent_frame_ns: int | None = None  # the capture the agent was shown (point_frame)
    clip_slot: int = -1
    answer: PointAnswer | None = None  # the trial's own answer, once it came
    waiters: list[concurrent.futures.Future] = field(default_factory=list)

    @property
    def points(self) -> list[tuple[float, float]]:
        """The answer's valid points (pixels of the frame the agent saw); ``[]`` before it came."""
        return [] if self.answer is None else [(p[0], p[1]) for p in self.answer.points_px]

    def fail(self, what: str) -> None:
        log.warning("recording %s: %s", self.trial_id, what)
        self.errors.append(what)


class Recorder:
    """The engine (see the module docstring). Thread-safe; start it once, ``close()`` it once.

    Args:
        root: the recordings folder (created when the first recording begins).
        config: rates, clip settings, limits (``RecordingConfig``).
        static_transforms: written on ``/tf_static`` when each recording begins (``static_tf``; the
            session passes its calibration's camera pose).

    Raises:
        ValueError: a static transform that is not a proper rigid transform.
    """

    def __init__(
        self,
        root: str | Path,
        config: RecordingConfig = RecordingConfig(),
        *,
        static_transforms: Sequence[StaticTransform] = (),
    ) -> None:
        self.layout = RecordingLayout(root)
        self.config = config
        # written on /tf_static at the start of every recording (the calibration's camera pose)
        self.static_transforms = list(static_transforms)
        tf_message_cdr(self.static_transforms, 0)  # a bad matrix fails here, not in every recording
        self._lock = threading.Lock()
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._queued = 0
        self._queued_images = 0
        self._dropped = 0
        self._latched: dict[str, tuple[int, bytes]] = {}
        self._last_depth: tuple[int, bytes] | None = None  # the newest depth offered (see ``offer``)
        self._last_color_stamp: int | None = None
        self._offered_slots: dict[str, tuple] = {}  # topic -> stamp windows of the last image offered
        self._offered_depth_window: int | None = None  # depth_fps window of the last depth queued
        # the latest frames (topic, stamp, log_ns, cdr), whatever the rates: the capture the agent is
        # shown arrives before its point_frame, so it is picked from here (``_pin``)
        self._recent: deque[tuple[str, int, int, bytes]] = deque(maxlen=_RECENT_FRAMES)
        self._pins: set[int] = set()  # stamps of the captures agents were shown in this recording (<= _MAX_PINS)
        self._running: set[str] = set()  # begun, not yet finished (caller's view)
        self._finished: OrderedDict[str, Recording] = OrderedDict()
        self._image_period_ns = None if config.image_fps is None else round(1e9 / config.image_fps)
        self._depth_period_ns = None if config.depth_fps is None else round(1e9 / config.depth_fps)
        self._clip_period_ns = round(1e9 / config.clip.fps)
        self._closed = False
        typestore()  # built here, not on the first message
        self._description = robot_description_cdr(config.tool) if config.robot == "lite6" else b""
        self._thread = threading.Thread(target=self._run, name="pointlab-recorder", daemon=True)
        self._thread.start()

    # -- any thread -----------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def queued(self) -> int:
        """Messages waiting for the engine's thread."""
        return self._queued

    @property
    def recording_now(self) -> bool:
        """A recording has begun and not finished."""
        return bool(self._running)

    def has_state(self, topic: str) -> bool:
        """A message of the state topic ``topic`` (one of ``LATCHED``) has been offered."""
        return topic in self._latched

    def offer(self, topic: str, log_ns: int, cdr: bytes) -> None:
        """Hand over one serialized message of ``topic`` received at ``log_ns`` (ns since the
        epoch). Never blocks, never raises; see the module docstring for what is kept."""
        if topic in LATCHED:
            self._latched[topic] = (log_ns, cdr)  # one dict store: atomic under the GIL
        elif topic == _DEPTH:
            # a camera publishes a capture's depth before its colour (camera_node): a recording that
            # begins between the two would keep the colour without its depth, which playback skips
            self._last_depth = (log_ns, cdr)
        image = topic in _IMAGES
        stamp = _peek_stamp_ns(cdr) if image else None  # peeked once: this runs for every frame at camera rate
        if topic in _COLORS:
            self._last_color_stamp = stamp
        if image and stamp is not None:
            self._recent.append((topic, stamp, log_ns, cdr))
        if not self._running or topic not in _INPUT_TYPES:
            return
        if topic == _POINT_FRAME:
            self._pin(log_ns, cdr)
        elif image and stamp is not None and stamp in self._pins:
            self._put(topic, log_ns, cdr, pin_ns=log_ns)  # the agent's capture, arriving after its request
            return
        if image and not self._wanted_image(topic, stamp):
            return  # another frame of a window already taken: never queued, never decoded
        self._put(topic, log_ns, cdr)

    def _put(self, topic: str, log_ns: int, cdr: bytes, pin_ns: int | None = None) -> None:
        """Queue one message for the engine, or count it dropped. ``pin_ns``: the message is a frame of
        the capture the agent saw (kept whatever the rates; the trials running at ``pin_ns`` get it)."""
        image = topic in _IMAGES
        with self._lock:
            # images are bounded by max_queued (about 1.2 MB each); the small messages (answers,
            # commands, states) by far more, so a backlog of frames never costs an arm command. The
            # agent's capture (two frames per trial) is never dropped: it is what a reviewer checks.
            full = pin_ns is None and (
                self._queued_images >= self.config.max_queued if image else self._queued >= 100 * self.config.max_queued
            )
            if full:
                self._dropped += 1
                return
            self._queued += 1
            self._queued_images += image
        self._q.put((topic, log_ns, cdr, pin_ns))

    def _pin(self, log_ns: int, cdr: bytes) -> None:
        """A ``point_frame`` names the capture the agent is shown: queue its frames already received
        (from ``_recent``) and remember its stamp for those still to come. At most ``_MAX_PINS``
        captures per recording (a flood of point_frames must not bypass ``max_queued``)."""
        frame = _point_frame(cdr)
        if frame is None or frame.stamp_ns in self._pins or len(self._pins) >= _MAX_PINS:
            return
        stamp = frame.stamp_ns
        self._pins.add(stamp)
        for topic, frame_stamp, frame_log_ns, frame_cdr in list(self._recent):
            if frame_stamp == stamp:
                self._put(topic, frame_log_ns, frame_cdr, pin_ns=log_ns)

    def _wanted_image(self, topic: str, stamp: int | None) -> bool:
        """Whether an image is the first of its stamp window (``image_fps``, and ``clip.fps`` for
        colour) among those offered: only those can be kept, so only those are queued (a 30 fps
        camera then queues 15 images a second, not 60). The engine thread decides again per
        recording, on the decoded message. ``stamp``: the frame's, peeked (``None``: unreadable)."""
        if stamp is None:
            return True  # let the engine decode it and say what is wrong
        slots = (
            None if self._image_period_ns is None else stamp // self._image_period_ns,
            stamp // self._clip_period_ns if topic in _COLORS else None,
        )
        last = self._offered_slots.get(topic)
        self._offered_slots[topic] = slots
        wanted = (
            self._image_period_ns is None or last is None or any(a is not None and a != b for a, b in zip(slots, last))
        )
        if wanted and topic == _DEPTH and self._depth_period_ns is not None:
            window = stamp // self._depth_period_ns
            wanted = window != self._offered_depth_window
            self._offered_depth_window = window
        return wanted

    def begin(self, trial_id: str, *, request_id: str | None = None) -> None:
        """Start recording trial ``trial_id`` now. ``request_id``: the ``point_answer`` whose points
        are drawn (``None``: the first answer received during the recording; trials are serialised).
        The files are opened on the engine's thread; a failure there (folder not writable, disk
        below the floor) becomes an incomplete ``Recording``, returned by ``end``.

        Raises:
            ValueError: ``trial_id`` is not a usable file name, or was begun before in this recorder.
            RuntimeError: the recorder is closed.
        """
        check_trial_id(trial_id)
        with self._lock:
            if self._closed:
                raise RuntimeError("the recorder is closed")
            if trial_id in self._running or trial_id in self._finished:
                raise ValueError(f"trial {trial_id!r} was already recorded")
            self._running.add(trial_id)
            dropped = self._dropped
            # the early skipping (``_wanted_image``) and the pins start afresh: a capture whose window the
            # last recording took, or that an agent was shown then, is this recording's to take again
            self._offered_slots, self._offered_depth_window, self._pins = {}, None, set()
        held = list(self._latched.items())
        depth = self._last_depth
        if depth is not None and _peek_stamp_ns(depth[1]) != self._last_color_stamp:
            held.append((_DEPTH, depth))  # its capture's colour is still to come: keep them together
        latched = sorted(((t, ns, cdr) for t, (ns, cdr) in held), key=lambda x: x[1])
        self._q.put(_Begin(trial_id, request_id, time.time_ns(), latched, dropped))

    def end(self, trial_id: str, timeout_s: float = 30.0) -> Recording | None:
        """Stop recording ``trial_id`` (messages received from now on are not in it), wait for its
        files to be finished and return its ``Recording``; ``None`` for a trial never begun. A
        recording that already stopped (``max_duration_s``, disk floor) is returned as it ended.
        Blocks for the time the engine needs to catch up and finish the files (typically 10-100
        ms; at most ``timeout_s``, after which an incomplete ``Recording`` says so)."""
        with self._lock:
            if trial_id in self._finished:
                return self._finished[trial_id]
            if trial_id not in self._running:
                return None
        done: concurrent.futures.Future = concurrent.futures.Future()
        end_ns = time.time_ns()
        self._q.put(_End(trial_id, end_ns, done))
        try:
            return done.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            log.error("recording %s was not finished within %.0f s", trial_id, timeout_s)
            return Recording(
                trial_id=trial_id,
                started_unix_ns=end_ns,
                ended_by="failed",
                errors=[f"the recorder did not finish the files within {timeout_s:.0f} s"],
            )

    async def end_async(self, trial_id: str, timeout_s: float = 30.0) -> Recording | None:
        """``end`` without blocking the event loop (it waits on a worker thread)."""
        return await asyncio.to_thread(self.end, trial_id, timeout_s)

    def recording(self, trial_id: str) -> Recording | None:
        """The ``Recording`` of a finished trial (the last 200), else ``None``."""
        return self._finished.get(trial_id)

    def close(self, timeout_s: float = 30.0) -> None:
        """End every running recording (``ended_by = "close"``) and stop the thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._q.put(_STOP)
        self._thread.join(timeout=timeout_s)
        if self._thread.is_alive():
            log.error("the recorder thread did not stop within %.0f s", timeout_s)

    # -- engine thread --------------------------------------------------------------------------
    def _run(self) -> None:
        import av  # noqa: F401  (imported now, not during the first trial)
        import cv2  # noqa: F401

        active: dict[str, _Trial] = {}
        next_disk_check = 0.0
        while True:
            try:
                item = self._q.get(timeout=0.25)
            except queue.Empty:
                item = None
            try:
                if item is _STOP:
                    for t in list(active.values()):
                        self._finish(active, t, "close", time.time_ns())
                    return
                if isinstance(item, tuple):
                    with self._lock:
                        self._queued -= 1
                        self._queued_images -= item[0] in _IMAGES
                    self._on_message(active, *item)
                elif isinstance(item, _Begin):
                    self._on_begin(active, item)
                elif isinstance(item, _End):
                    self._on_end(active, item)
                now_ns = time.time_ns()
                for t in [t for t in active.values() if now_ns - t.begin_ns >= self.config.max_duration_s * 1e9]:
                    self._finish(active, t, "max_duration", t.begin_ns + int(self.config.max_duration_s * 1e9))
                if active and time.monotonic() >= next_disk_check:
                    next_disk_check = time.monotonic() + _DISK_CHECK_S
                    low = self._below_floor()
                    if low:
                        for t in list(active.values()):
                            t.fail(low)
                            self._finish(active, t, "disk_floor", now_ns)
            except Exception:  # a bug here must cost a recording, never the thread (nor the trial)
                log.exception("recorder: handling %r failed", type(item).__name__)
                for t in list(active.values()):
                    t.errors.append("internal error in the recorder (see the log)")

    def _below_floor(self) -> str | None:
        floor = self.config.min_free_mb * 1e6
        if floor <= 0:
            return None
        try:
            free = shutil.disk_usage(self.layout.root).free
        except OSError:
            return None  # the folder itself failing shows up when writing
        return (
            f"free disk space {free / 1e6:.0f} MB is below the floor of {self.config.min_free_mb:.0f} MB"
            if free < floor
            else None
        )

    def _on_begin(self, active: dict[str, _Trial], b: _Begin) -> None:
        t = _Trial(b.trial_id, b.request_id, b.begin_ns, b.dropped_before)
        active[t.trial_id] = t
        try:
            self.layout.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            t.fail(f"recordings folder {self.layout.root} cannot be made: {e}")
            self._finish(active, t, "failed", b.begin_ns)
            return
        low = self._below_floor()
        if low:
            t.fail(low)
            self._finish(active, t, "disk_floor", b.begin_ns)
            return
        try:
            topics = bag_topics(self.config)
            if self.static_transforms:
                topics[TF_STATIC] = TF_MESSAGE
            if self.config.robot == "lite6":
                topics[TF], topics[ROBOT_DESCRIPTION] = TF_MESSAGE, STRING
            t.bag = TrialBag(
                self.layout.bag(t.trial_id),
                topics,
                compress=self.config.compress,
                latched=(TF_STATIC, ROBOT_DESCRIPTION),
            )
        except BagError as e:
            t.fail(str(e))
        t.clip = ClipWriter(self.layout.clip(t.trial_id), self.config.clip)
        for topic, log_ns, cdr in b.latched:
            self._message_to(t, topic, log_ns, cdr, self._decode(topic, cdr))
        if self.static_transforms:
            self._bag_write(t, TF_STATIC, b.begin_ns, tf_message_cdr(self.static_transforms, b.begin_ns))
        if self.config.robot == "lite6":
            self._bag_write(t, ROBOT_DESCRIPTION, b.begin_ns, self._description)

    def _on_end(self, active: dict[str, _Trial], e: _End) -> None:
        t = active.get(e.trial_id)
        if t is None:  # finished meanwhile (max duration, disk floor)
            e.done.set_result(self._finished.get(e.trial_id))
            return
        t.waiters.append(e.done)
        self._finish(active, t, "end", e.end_ns)

    @staticmethod
    def _decode(topic: str, cdr: bytes):
        """The deserialized message, or the exception that says why it is not one."""
        try:
            return typestore().deserialize_cdr(cdr, _INPUT_TYPES[topic])
        except Exception as e:  # rosbags raises SerdeError, struct.error, IndexError... on bad bytes
            return e

    def _on_message(
        self, active: dict[str, _Trial], topic: str, log_ns: int, cdr: bytes, pin_ns: int | None = None
    ) -> None:
        # a frame of the agent's capture belongs to the trials running when its point_frame came,
        # though the frame itself may have arrived just before the recording began
        mine = [t for t in active.values() if t.begin_ns <= (log_ns if pin_ns is None else pin_ns)]
        if not mine:
            return
        msg = self._decode(topic, cdr)
        for t in mine:
            self._message_to(t, topic, log_ns, cdr, msg, pinned=pin_ns is not None)

    def _bad(self, t: _Trial, topic: str, why: str) -> None:
        n = t.bad[topic] = t.bad.get(topic, 0) + 1
        if n == 1:
            log.warning("recording %s: a message on %s is not valid and is not written: %s", t.trial_id, topic, why)

    def _message_to(self, t: _Trial, topic: str, log_ns: int, cdr: bytes, msg, *, pinned: bool = False) -> None:
        if isinstance(msg, Exception):
            self._bad(t, topic, f"{type(msg).__name__}: {msg}")
            return
        if topic in _IMAGES:
            self._image_to(t, topic, log_ns, cdr, msg, pinned=pinned)
            return
        if topic == _POINT_FRAME and t.agent_frame_ns is None:
            frame = _point_frame(cdr)  # the recording's own request's (any, when begun without one)
            if frame is not None and t.request_id in (None, frame.request_id):
                t.agent_frame_ns = frame.stamp_ns
        if topic == _ANSWER and t.answer is None:
            self._answer_to(t, msg)
            if t.answer is not None:  # this trial's answer: its points over the image, for a viewer
                self._bag_write(t, POINTS_TOPIC, log_ns, answer_annotations_cdr(t.answer, log_ns))
        self._bag_write(t, topic, log_ns, cdr)
        if topic == _TARGET:
            markers = target_markers_cdr(msg)
            if markers is not None:
                self._bag_write(t, MARKERS_TOPIC, log_ns, markers)
        if topic == _JOINTS and self.config.robot == "lite6":
            tf = tf_of_joint_state(msg)  # robot_state_publisher's /tf, at the joint state's log time
            if tf is not None:
                self._bag_write(t, TF, log_ns, tf)

    def _windows(self, topic: str, stamp: int) -> tuple[int | None, int | None]:
        """The ``image_fps`` and (depth only) ``depth_fps`` stamp windows of a frame; ``None``: no
        thinning by that rate."""
        return (
            None if self._image_period_ns is None else stamp // self._image_period_ns,
            None if topic != _DEPTH or self._depth_period_ns is None else stamp // self._depth_period_ns,
        )

    def _image_to(self, t: _Trial, topic: str, log_ns: int, cdr: bytes, msg, *, pinned: bool = False) -> None:
        stamp = stamp_to_ns(msg.header.stamp)
        stored = _STORED_AS.get(topic, topic)  # one slot per stored stream: a raw and a JPEG colour share it
        windows = self._windows(topic, stamp)
        last = t.image_slot.get(stored)
        # kept when it opens a new window at every rate that applies (a depth: new colour window and new
        # depth window), or when it is a frame of the agent's capture; once only (the agent's capture may
        # come twice: pinned, and in turn)
        keep = (
            (pinned or last is None or all(w is None or w != lw for w, lw in zip(windows, last)))
            and not (topic == _COLOR_JPEG and self.config.images == "raw")
            and (  # a raw recording keeps raw colour only
                stamp not in t.kept.setdefault(stored, set())
            )
        )
        # the clip takes frames in stamp order; a frame of the agent's capture comes out of turn
        to_clip = (
            not pinned and topic in _COLORS and t.clip is not None and stamp // self._clip_period_ns != t.clip_slot
        )
        if not (keep or to_clip):
            return
        pixels = None
        if to_clip or (keep and self.config.images != "raw"):  # a JPEG kept as it came is decoded too:
            # a frame that does not decode is not written (and says so), whichever form it came in
            try:
                pixels = image_to_rgb(msg) if topic in _COLORS else image_to_depth(msg)[0]
            except (ValueError, TypeError) as e:
                self._bad(t, topic, str(e))
                return
        if keep:
            t.kept[stored].add(stamp)
            if not pinned:
                t.image_slot[stored] = windows
            if self.config.images == "raw" or topic == _COLOR_JPEG:
                self._bag_write(t, topic, log_ns, cdr)  # as it arrived: the camera's own JPEG, or raw
            else:
                self._compressed_write(t, topic, log_ns, msg, pixels)
        if to_clip:
            t.clip_slot = stamp // self._clip_period_ns
            self._clip_add(t, pixels, stamp)

    def _compressed_write(self, t: _Trial, topic: str, log_ns: int, msg, pixels) -> None:
        """Write a kept frame as image_transport's compressed form, with the raw message's header
        (stamp and frame id unchanged)."""
        try:
            fmt, data = (
                encode_color(pixels, self.config.jpeg_quality)
                if topic == _COLOR
                else encode_depth(pixels, self.config.png_level)
            )
        except ValueError as e:
            self._bad(t, topic, str(e))
            return
        store = typestore()
        out = store.types[_COMPRESSED](header=msg.header, format=fmt, data=np.frombuffer(data, dtype=np.uint8))
        self._bag_write(t, _STORED_AS[topic], log_ns, bytes(store.serialize_cdr(out, _COMPRESSED)))

    def _answer_to(self, t: _Trial, msg) -> None:
        try:
            ans = PointAnswer.model_validate_json(msg.data)
        except ValidationError:
            return  # not an answer of ours; written to the bag all the same
        if t.request_id is not None and ans.request_id != t.request_id:
            return
        t.answer = ans

    def _bag_write(self, t: _Trial, topic: str, log_ns: int, cdr: bytes) -> None:
        if t.bag is None:
            return
        try:
            t.bag.write(topic, log_ns, cdr)
        except BagError as e:
            t.fail(f"{e}; the partial bag was removed")
            t.bag.abort()
            t.bag = None

    def _clip_add(self, t: _Trial, rgb, stamp_ns: int) -> None:
        assert t.clip is not None  # to_clip checked it (only this method drops it)
        if t.answer is not None and t.points:  # (points are [] before the answer)
            # points are pixels of the frame the agent saw; drawn on this frame before the clip scales it
            scale = rgb.shape[1] / t.answer.width if t.answer.width else 1.0
            rgb = draw_points(rgb, t.points, first_is_target=first_point_is_target(t.answer), scale=scale)
        try:
            t.clip.add(rgb, stamp_ns)
        except ClipError as e:
            t.fail(f"{e}; the partial clip was removed")
            self._drop_clip(t)

    def _drop_clip(self, t: _Trial) -> None:
        t.clip = None
        try:
            self.layout.clip(t.trial_id).unlink(missing_ok=True)
        except OSError:
            log.debug("removing a failed clip", exc_info=True)

    def _finish(self, active: dict[str, _Trial], t: _Trial, ended_by: EndedBy, end_ns: int) -> None:
        active.pop(t.trial_id, None)
        rec = Recording(
            trial_id=t.trial_id,
            started_unix_ns=t.begin_ns,
            duration_s=round(max(0, end_ns - t.begin_ns) / 1e9, 3),
            ended_by=ended_by,
        )
        if t.bag is not None:
            try:
                rec.mcap_bytes = t.bag.close()
                rec.bag, rec.mcap = self.layout.relative(t.bag.folder), self.layout.relative(t.bag.mcap_path)
                rec.messages = {k: v for k, v in t.bag.counts.items() if v}
                rec.color_frames, rec.depth_frames = image_frames(t.bag.counts)
                if t.agent_frame_ns is not None and all(
                    t.agent_frame_ns in t.kept.get(_STORED_AS[k], ()) for k in (_COLOR, _DEPTH)
                ):
                    rec.agent_frame_ns = t.agent_frame_ns
            except BagError as e:
                t.fail(f"{e}; the partial bag was removed")
                t.bag.abort()
        if t.clip is not None:
            try:
                n = t.clip.close()
                if n:
                    path = self.layout.clip(t.trial_id)
                    rec.clip, rec.clip_frames, rec.clip_bytes = self.layout.relative(path), n, path.stat().st_size
            except (ClipError, OSError) as e:
                t.fail(f"{e}; the partial clip was removed")
                self._drop_clip(t)
        for topic, n in t.bad.items():
            t.errors.append(f"{n} message(s) on {topic} could not be decoded and were not written")
        if ended_by == "max_duration":
            t.errors.append(f"nobody ended the recording within {self.config.max_duration_s:g} s")
        elif ended_by == "close":
            t.errors.append("the recorder was closed during the recording")
        if rec.clip is None and t.clip is not None:
            t.errors.append("no colour frame was received")
        with self._lock:
            rec.dropped = self._dropped - t.dropped_before
        rec.points_drawn = bool(t.points) and rec.clip is not None
        rec.errors = list(t.errors)
        rec.complete = not rec.errors and rec.mcap is not None and ended_by == "end"
        if rec.mcap is not None or rec.clip is not None:
            try:
                self.layout.save(rec)
            except OSError as e:
                log.warning("recording %s: its record could not be written beside the files: %s", t.trial_id, e)
        with self._lock:
            self._finished[t.trial_id] = rec
            while len(self._finished) > _KEEP_FINISHED:
                self._finished.popitem(last=False)
            self._running.discard(t.trial_id)
        for w in t.waiters:
            if not w.done():
                w.set_result(rec)
        log.info(
            "recording %s ended (%s): %.1f s, %d colour frames, %d clip frames, %.1f MB bag, %.2f MB clip%s",
            t.trial_id,
            ended_by,
            rec.duration_s,
            rec.color_frames,
            rec.clip_frames,
            rec.mcap_bytes / 1e6,
            rec.clip_bytes / 1e6,
            "" if rec.complete else f", incomplete: {'; '.join(rec.errors) or ended_by}",
        )
