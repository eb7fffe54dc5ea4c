"""A RealSense that exists only in software: ``rs.software_device`` with a depth (z16) and a colour
(rgb8) sensor, fed synthetic frames of a known scene by a background thread.

It lets the real ``pointlab.perception.realsense.RealSenseCamera`` (and the real ``rs.align``)
run without a camera. The scene, in the COLOUR optical frame (metres): a plane at
``z = plane_m`` and a square box top at ``z = box_top_m`` over ``|x|, |y| <= box_half_m``. The depth
sensor sits at ``depth_to_color_m`` (translation) from the colour sensor, rotation identity
(a default-constructed ``rs.extrinsics()`` has an all-zero rotation, and then the aligned depth
comes out all zeros: seen with pyrealsense2 2.55).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["SyntheticRealSense", "SwScene"]


@dataclass(frozen=True)
class SwScene:
    plane_m: float = 0.8
    box_top_m: float = 0.6
    box_half_m: float = 0.05
    depth_to_color_m: tuple[float, float, float] = (0.015, 0.0, 0.0)


def _intr(rs, w, h, f, ppx, ppy):
    i = rs.intrinsics()
    i.width, i.height, i.fx, i.fy, i.ppx, i.ppy = w, h, f, f, ppx, ppy
    i.model, i.coeffs = rs.distortion.none, [0.0] * 5
    return i


class SyntheticRealSense:
    """Builds the software device and pushes frames at ``fps`` until ``stop()``.

    Args:
        depth_units_m: metres per depth unit the device reports (0.001 D4xx, 0.0001 D405).
        scene: the synthetic scene.
    Attributes:
        device: the ``rs.software_device`` to pass as ``RealSenseCamera(device=...)``.
        color_intrinsics, depth_intrinsics: the ``rs.intrinsics`` of each stream.
    """

    def __init__(
        self,
        depth_units_m: float = 0.001,
        scene: SwScene = SwScene(),
        fps: int = 30,
        width: int = 640,
        height: int = 480,
    ) -> None:
        import pyrealsense2 as rs

        self.rs, self.scene, self.fps, self.units = rs, scene, fps, depth_units_m
        self.w, self.h = width, height
        self.depth_intrinsics = _intr(rs, width, height, 380.0, width / 2, height / 2)
        self.color_intrinsics = _intr(rs, width, height, 615.0, width / 2 + 1.5, height / 2 + 3.2)
        self.device = rs.software_device()
        self._depth_sensor = self.device.add_sensor("Depth")
        self._color_sensor = self.device.add_sensor("Color")
        self._depth_profile = self._add_stream(
            self._depth_sensor, rs.stream.depth, rs.format.z16, 2, self.depth_intrinsics, 0
        )
        self._color_profile = self._add_stream(
            self._color_sensor, rs.stream.color, rs.format.rgb8, 3, self.color_intrinsics, 1
        )
        self._depth_sensor.add_read_only_option(rs.option.depth_units, depth_units_m)
        ext = rs.extrinsics()
        ext.rotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        ext.translation = list(scene.depth_to_color_m)
        self._depth_profile.register_extrinsics_to(self._color_profile, ext)
        self.device.create_matcher(rs.matchers.default)
        self._depth_img, self._color_img = self._render()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._n = 0

    def _add_stream(self, sensor, kind, fmt, bpp, intr, uid):
        vs = self.rs.video_stream()
        vs.type, vs.fmt, vs.bpp, vs.index, vs.uid = kind, fmt, bpp, 0, uid
        vs.width, vs.height, vs.fps, vs.intrinsics = self.w, self.h, self.fps, intr
        return sensor.add_video_stream(vs)

    def _render(self) -> tuple[np.ndarray, np.ndarray]:
        s = self.scene
        t = np.array(s.depth_to_color_m)
        # depth image: rays from the depth origin (at t in the colour frame)
        u, v = np.meshgrid(np.arange(self.w, dtype=np.float64), np.arange(self.h, dtype=np.float64))
        di = self.depth_intrinsics
        rx, ry = (u - di.ppx) / di.fx, (v - di.ppy) / di.fy
        x_box, y_box = t[0] + rx * s.box_top_m, t[1] + ry * s.box_top_m
        on_box = (np.abs(x_box) <= s.box_half_m) & (np.abs(y_box) <= s.box_half_m)
        z = np.where(on_box, s.box_top_m, s.plane_m) - t[2]
        depth = np.round(z / self.units).astype(np.uint16)
        ci = self.color_intrinsics
        rx, ry = (u - ci.ppx) / ci.fx, (v - ci.ppy) / ci.fy
        on_box_c = (np.abs(rx * s.box_top_m) <= s.box_half_m) & (np.abs(ry * s.box_top_m) <= s.box_half_m)
        color = np.full((self.h, self.w, 3), 128, np.uint8)
        color[on_box_c] = (200, 30, 30)
        return depth, color

    def _push(self) -> None:
        rs = self.rs
        ts = time.time() * 1000
        for sensor, profile, img, bpp in (
            (self._depth_sensor, self._depth_profile, self._depth_img, 2),
            (self._color_sensor, self._color_profile, self._color_img, 3),
        ):
            f = rs.software_video_frame()
            f.pixels = img
            f.stride, f.bpp = self.w * bpp, bpp
            f.timestamp, f.frame_number = ts, self._n
            f.domain = rs.timestamp_domain.hardware_clock
            f.profile = profile.as_video_stream_profile()
            if bpp == 2:
                f.depth_units = self.units
            sensor.on_video_frame(f)
        self._n += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._push()
            self._stop.wait(1.0 / self.fps)

    def start(self) -> "SyntheticRealSense":
        self._thread = threading.Thread(target=self._loop, name="sw-realsense", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
