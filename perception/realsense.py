"""Intel RealSense sources: ``realsense[:SERIAL]`` (live device) and ``bag:PATH`` (a recording).

Both deliver depth aligned to colour with the real ``rs.align(rs.stream.color)``, the colour
stream's intrinsics, and the depth scale read from the device (0.001 m/unit on most D4xx, 0.0001 on
a D405; never hard-coded). See FIELD_NOTES "Intel RealSense".

``RealSenseCamera(device=...)`` also accepts an already-built ``rs.device`` whose depth and colour
sensors we open ourselves (a ``rs.software_device`` in tests: ``pointlab.sim_mock.realsense_sw``),
so the alignment and conversion code under test is the code that runs on a real camera.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from .camera import Camera
from .errors import CameraSourceError
from .frame import Intrinsics, RGBDFrame

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


class _SensorSource:
    """Opens the depth and colour sensors of a device (no pipeline) into one ``rs.syncer``."""

    def __init__(self, device, width: int, height: int, fps: int) -> None:
        rs = _rs()
        self.syncer = rs.syncer()
        self.sensors = []
        for sensor in device.query_sensors():
            profiles = [p for p in sensor.get_stream_profiles()
                        if p.stream_type() in (rs.stream.depth, rs.stream.color)]
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

    def __init__(self, serial: str | None = None, width: int = 640, height: int = 480, fps: int = 30,
                 timeout_ms: int = 5000, device=None) -> None:
        super().__init__()
        self.serial, self.width, self.height, self.fps = serial, width, height, fps
        self.timeout_ms = timeout_ms
        self._device = device
        self._source = None

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
        rs = _rs()
        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            try:
                frames = self._source.wait_for_frames(self.timeout_ms)
            except RuntimeError as e:
                raise CameraSourceError(f"no frames from {self.spec or 'realsense'}: {e}") from e
            # The first synced set may hold only one stream: wait for a set with both.
            if frames.first_or_default(rs.stream.depth) and frames.first_or_default(rs.stream.color):
                break
            if time.monotonic() > deadline:
                raise CameraSourceError("timed out waiting for a frameset with both depth and colour")
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
        return RGBDFrame(np.ascontiguousarray(rgb).copy(), np.asanyarray(depth.get_data()).astype(np.uint16, copy=True),
                         scale, intr, time.time_ns(), int(color.get_frame_number()))

    def _disconnect(self) -> None:
        if self._source is not None:
            self._source.stop()
            self._source = None

    @property
    def depth_scale_m(self) -> float:
        """Metres per depth unit as read from the device's depth sensor."""
        return self._depth_scale_m


class BagCamera(RealSenseCamera):
    """Plays a RealSense recording once, not in real time, so no frame is dropped.

    librealsense 2.5x writes recordings as ROS 2 bags (``.db3``; older versions wrote ROS 1 ``.bag``);
    both play through ``config.enable_device_from_file``. ``read()`` raises
    ``CameraSourceError("end of recording ...")`` after the last frame. Frame ``index`` is the
    colour frame number of the recording.
    """

    def __init__(self, path: str | Path, timeout_ms: int = 2000) -> None:
        super().__init__(timeout_ms=timeout_ms)
        self.path = Path(path)

    @classmethod
    def from_spec(cls, arg: str | None, **kwargs) -> "BagCamera":
        if not arg:
            raise CameraSourceError("bag needs a file: bag:PATH")
        return cls(arg, **kwargs)

    def _start_pipeline(self, rs):
        if not self.path.is_file():
            raise CameraSourceError(f"recording {self.path} not found")
        pipeline, config = rs.pipeline(), rs.config()
        config.enable_device_from_file(str(self.path), repeat_playback=False)
        try:
            profile = pipeline.start(config)
        except RuntimeError as e:
            raise CameraSourceError(f"cannot play {self.path}: {e}") from e
        device = profile.get_device()
        device.as_playback().set_real_time(False)
        return pipeline, device

    def _read(self) -> RGBDFrame:
        try:
            return super()._read()
        except CameraSourceError as e:
            raise CameraSourceError(f"end of recording {self.path} ({e})") from e
