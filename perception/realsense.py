"""Intel RealSense sources: ``realsense[:SERIAL]`` (live device) and ``bag:PATH`` (a librealsense recording).

Both deliver depth aligned to colour with the real ``rs.align(rs.stream.color)``, the colour
stream's intrinsics, and the depth scale read from the device (0.001 m/unit on most D4xx, 0.0001 on
a D405, per Intel's D400/D405 datasheets; never hard-coded: ``first_depth_sensor().get_depth_scale()``).

``RealSenseCamera(device=...)`` also accepts an already-built ``rs.device`` whose depth and colour
sensors we open ourselves (a ``rs.software_device`` in tests: ``pointlab.sim_mock.realsense_sw``),
so the alignment and conversion code under test is the code that runs on a real camera.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .camera import Camera
from .errors import CameraSourceError, EndOfRecording
from .frame import Intrinsics, RGBDFrame
from .playback import Laps, PlaybackClock, PlaybackOptions

__all__ = ["RealSenseCamera", "BagCamera", "intrinsics_from_rs"]

log = logging.getLogger(__name__)


def _rs():
    try:
        import pyrealsense2 as rs
    except ImportError as e:  # libusb-1.0-0 missing is the usual cause on Debian
        raise CameraSourceError(f"pyrealsense2 cannot be imported ({e}); apt-get install libusb-1.0-0") from e
    return rs


def intrinsics_from_rs(ri) -> Intrinsics:
    """``rs.intrinsics`` -> ``Intrinsics``. Distortion coefficients are kept for the Brown-Conrady
    model (OpenCV's); for other models they must be zero (true of the D4xx colour stream)."""
    rs = _rs()
    coeffs = tuple(float(c) for c in ri.coeffs)
    if any(coeffs) and ri.model not in (rs.distortion.brown_conrady, rs.distortion.none):
        log.warning("distortion model %s with non-zero coefficients is treated as undistorted", ri.model)
        coeffs = (0.0,) * 5
    return Intrinsics(int(ri.width), int(ri.height), float(ri.fx), float(ri.fy), float(ri.ppx), float(ri.ppy), coeffs)


def _device_depth_scale(rs, device) -> float:
    """Metres per depth unit from the device's depth sensor (a recorder or playback device exposes
    it only as the ``depth_units`` option of the sensor that streams depth)."""
    try:
        return float(device.first_depth_sensor().get_depth_scale())
    except RuntimeError:
        for sensor in device.query_sensors():
            if sensor.supports(rs.option.depth_units):
                return float(sensor.get_option(rs.option.depth_units))
    raise CameraSourceError("device reports no depth scale (no depth sensor with depth_units)")


class _FrameSource(Protocol):
    """Where frame sets come from: an ``rs.pipeline``, a ``_SensorSource`` or a ``_PlaybackPipeline``."""

    def wait_for_frames(self, timeout_ms: int) -> Any: ...

    def stop(self) -> None: ...


class _SensorSource:
    """Opens the depth and colour sensors of a device (no pipeline) into one ``rs.syncer``."""

    def __init__(self, device, width: int, height: int, fps: int) -> None:
        rs = _rs()
        self.syncer = rs.syncer()
        self.sensors = []
        for sensor in device.query_sensors():
            profiles = [
                p for p in sensor.get_stream_profiles() if p.stream_type() in (rs.stream.depth, rs.stream.color)
            ]
            if not profiles:
                continue
            sensor.open(profiles[0])
            sensor.start(self.syncer)
            self.sensors.append(sensor)
        if len(self.sensors) < 2:
            raise CameraSourceError("device needs a depth and a colour sensor")

    def wait_for_frames(self, timeout_ms: int):
        return self.syncer.wait_for_frames(timeout_ms)

    def stop(self) -> None:
        for s in self.sensors:
            s.stop()
            s.close()


class RealSenseCamera(Camera):
    """A RealSense device, depth aligned to colour.

    Args:
        serial: device serial number (``None``: the first device found).
        width, height, fps: stream mode requested for both streams.
        timeout_ms: longest wait for a frameset before ``CameraSourceError``.
        device: an already-built ``rs.device`` (e.g. ``rs.software_device``) to open instead of a
            pipeline.
    """

    def __init__(
        self,
        serial: str | None = None,
        width: int = 640,
        height: int = 480,
        fps: int = 30,
        timeout_ms: int = 5000,
        device=None,
    ) -> None:
        super().__init__()
        self.serial, self.width, self.height, self.fps = serial, width, height, fps
        self.timeout_ms = timeout_ms
        self._device = device
        self._source: _FrameSource | None = None

    @classmethod
    def from_spec(cls, arg: str | None, **kwargs) -> "RealSenseCamera":
        return cls(serial=arg or None, **kwargs)

    def _start_pipeline(self, rs):
        pipeline = rs.pipeline()
        config = rs.config()
        if self.serial:
            config.enable_device(self.serial)
        config.enable_stream(rs.stream.depth, self.width, self.height, rs.format.z16, self.fps)
        config.enable_stream(rs.stream.color, self.width, self.height, rs.format.rgb8, self.fps)
        try:
            profile = pipeline.start(config)
        except RuntimeError as e:
            raise CameraSourceError(f"cannot start RealSense {self.serial or '(first device)'}: {e}") from e
        return pipeline, profile.get_device()

    def _connect(self) -> None:
        rs = _rs()
        if self._device is not None:
            device = self._device
            self._source = _SensorSource(device, self.width, self.height, self.fps)
        else:
            self._source, device = self._start_pipeline(rs)
        self._depth_scale_m = _device_depth_scale(rs, device)
        self._align = rs.align(rs.stream.color)

    def _read(self) -> RGBDFrame:
        frames = self._wait_frameset()
        return self._to_frame(frames, time.time_ns(), int(frames.get_color_frame().get_frame_number()))

    def _wait_frameset(self):
        """The next ``rs.composite_frame`` holding both depth and colour.

        Raises:
            CameraSourceError: none within ``timeout_ms``.
        """
        rs = _rs()
        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            source = self._source
            assert source is not None  # connected (the base class reads only then)
            try:
                frames = source.wait_for_frames(self.timeout_ms)
            except RuntimeError as e:
                raise CameraSourceError(f"no frames from {self.spec or 'realsense'}: {e}") from e
            # The first synced set may hold only one stream: wait for a set with both.
            if frames.first_or_default(rs.stream.depth) and frames.first_or_default(rs.stream.color):
                return frames
            if time.monotonic() > deadline:
                raise CameraSourceError("timed out waiting for a frameset with both depth and colour")

    def _to_frame(self, frames, stamp_ns: int, index: int) -> RGBDFrame:
        """Align a frameset's depth to its colour and convert it (``stamp_ns`` and ``index`` as given).

        Raises:
            CameraSourceError: no aligned pair, or a colour format other than rgb8/bgr8.
        """
        rs = _rs()
        aligned = self._align.process(frames)
        color, depth = aligned.get_color_frame(), aligned.get_depth_frame()
        if not color or not depth:
            raise CameraSourceError("alignment produced no colour or depth frame")
        intr = intrinsics_from_rs(color.profile.as_video_stream_profile().intrinsics)
        rgb = np.asanyarray(color.get_data())
        if color.profile.format() == rs.format.bgr8:
            rgb = rgb[:, :, ::-1]
        elif color.profile.format() != rs.format.rgb8:
            raise CameraSourceError(f"unsupported colour format {color.profile.format()}")
        # depth units may change per frame on some devices; the frame's own value wins
        scale = float(depth.get_units()) or self._depth_scale_m
        return RGBDFrame(
            np.ascontiguousarray(rgb).copy(),
            np.asanyarray(depth.get_data()).astype(np.uint16, copy=True),
            scale,
            intr,
            stamp_ns,
            index,
        )

    def _disconnect(self) -> None:
        if self._source is not None:
            self._source.stop()
            self._source = None

    @property
    def depth_scale_m(self) -> float:
        """Metres per depth unit as read from the device's depth sensor."""
        return self._depth_scale_m


class _PlaybackPipeline:
    """A playback's pipeline whose ``wait_for_frames`` ends as soon as the file is played out (the
    SDK's status turns ``stopped`` once the last frame is delivered) instead of after the timeout."""

    _POLL_MS = 50

    def __init__(self, pipeline, playback, path: Path) -> None:
        self.pipeline, self.playback, self.path = pipeline, playback, path

    def wait_for_frames(self, timeout_ms: int):
        """Raises ``EndOfRecording`` when played out, ``RuntimeError`` (as the SDK) after ``timeout_ms``."""
        rs = _rs()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            ok, frames = self.pipeline.try_wait_for_frames(self._POLL_MS)
            if ok:
                return frames
            if self.playback.current_status() == rs.playback_status.stopped:
                raise EndOfRecording(f"end of recording {self.path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Frame didn't arrive within {timeout_ms}")

    def stop(self) -> None:
        self.pipeline.stop()


class BagCamera(RealSenseCamera):
    """Plays a RealSense recording through ``config.enable_device_from_file``.

    librealsense 2.5x writes recordings as ROS 2 bags (``.db3``; older versions wrote ROS 1 ``.bag``);
    both play. The SDK plays in non-real-time mode (``set_real_time(False)``, set before the start:
    it waits for us, so no frame is dropped) and ``playback.PlaybackClock`` paces the frames by the
    colour frame's recorded timestamp, so ``rate`` and the pacing rule are those of the ROS 2 bag
    source. (The SDK's real-time mode drops frames when the reader is late, and pyrealsense2 2.59
    binds no playback speed.) ``read()`` knows the file is played out as soon as the SDK's status
    turns ``stopped``. Then, with ``loop``, the playback is started again and ``playback.Laps`` keeps
    ``index`` increasing (the SDK's own ``repeat_playback`` is not used: with it, pyrealsense2 2.59
    crashed here, 2 runs in 3, when a pipeline was stopped mid-lap, a frame callback running into the
    stopping pipeline); without it, ``read()`` raises ``EndOfRecording``, and again on every later call.

    ``index`` is the colour frame number of the recording (continued across laps); ``stamp_ns`` the
    wall-clock time the frame was served (nanoseconds since the epoch), as for a live RealSense: the
    recorded timestamps may be on the device's hardware clock, not the epoch.

    Args:
        path: the recording (``.bag`` or ``.db3``).
        timeout_ms: longest wait for a frameset; a ``CameraSourceError`` with ``loop``, the end without
            it (when the SDK did not report the file played out first).
        rate: recorded seconds played per second (``0``: unpaced); ``playback.PlaybackOptions``.
        loop: start over after the last frame instead of raising ``EndOfRecording``.

    Raises:
        CameraSourceError: a bad ``rate`` (here); on ``connect()``, a missing or unplayable file.
    """

    def __init__(self, path: str | Path, timeout_ms: int = 2000, rate: float = 1.0, loop: bool = True) -> None:
        super().__init__(timeout_ms=timeout_ms)
        self.path = Path(path)
        self.playback = PlaybackOptions(rate=rate, loop=loop)
        self._clock: PlaybackClock | None = None
        self._laps: Laps | None = None
        self._lap_frames = 0  # frames served in this lap
        self._ended = False

    def _connect(self) -> None:
        # a (re)connect plays from the start, on a new schedule
        self._clock, self._laps, self._lap_frames, self._ended = PlaybackClock(self.playback.rate), Laps(), 0, False
        super()._connect()

    def _start_pipeline(self, rs):
        if not self.path.is_file():
            raise CameraSourceError(f"recording {self.path} not found")
        pipeline, config = rs.pipeline(), rs.config()
        config.enable_device_from_file(str(self.path), repeat_playback=False)
        try:
            # non-real-time before the start (the resolved device is the one started): switched after
            # it, the playback runs ahead in real time meanwhile and its first frames can be lost
            config.resolve(pipeline).get_device().as_playback().set_real_time(False)
            profile = pipeline.start(config)
        except RuntimeError as e:
            raise CameraSourceError(f"cannot play {self.path}: {e}") from e
        device = profile.get_device()
        return _PlaybackPipeline(pipeline, device.as_playback(), self.path), device

    def _read(self) -> RGBDFrame:
        if self._ended:
            raise EndOfRecording(f"end of recording {self.path}")
        while True:
            if self._source is None:  # a lap's restart failed (raised then)
                raise CameraSourceError(f"{self.path}: the playback did not start again")
            assert self._laps is not None and self._clock is not None  # set by _connect
            try:
                frames = self._wait_frameset()
            except EndOfRecording:
                if self.playback.loop and self._lap_frames:  # (a lap of no frame would spin)
                    self._next_lap()
                    continue
                self._ended = True
                raise
            except CameraSourceError as e:
                if self.playback.loop:  # a looping playback has no end: this is a failure
                    raise CameraSourceError(f"{self.path}: no frame within {self.timeout_ms} ms ({e})") from e
                self._ended = True
                raise EndOfRecording(f"end of recording {self.path} ({e})") from e
            color = frames.get_color_frame()
            number, t_ns = int(color.get_frame_number()), round(color.get_timestamp() * 1e6)  # ms -> ns
            index, t_ns = self._laps.place(number, t_ns)
            self._lap_frames += 1
            # converted before the wait: alignment (slow on the first frame) must not delay the serve
            frame = self._to_frame(frames, 0, index)
            if not self._clock.wait(t_ns):
                raise CameraSourceError(f"{self.path}: disconnected during playback")
            return dataclasses.replace(frame, stamp_ns=time.time_ns())

    def _next_lap(self) -> None:
        """Start the played-out file again (stopping a played-out pipeline is the SDK's safe case)."""
        assert self._source is not None and self._laps is not None  # connected: _read calls this
        self._source.stop()
        self._source = None
        self._source, _ = self._start_pipeline(_rs())
        self._laps.next_lap()
        log.info("%s: end of lap %d (%d frames); playing it again", self.path, self._laps.lap + 1, self._lap_frames)
        self._lap_frames = 0

    def _disconnect(self) -> None:
        if self._clock is not None:
            self._clock.interrupt()
        super()._disconnect()
