"""RGB-D frame and pinhole intrinsics: the unit that every camera source produces.

Conventions (the RealSense ones, so frames from realsense-ros and from our sources mean the same):
- colour is ``H x W x 3`` ``uint8`` in **RGB** order;
- depth is ``H x W`` ``uint16`` aligned to the colour stream, ``0`` means "no data", and metres
  are ``depth * depth_scale_m`` (0.001 m/unit on most D4xx, 0.0001 on a D405: read from the device);
- the optical frame is x right, y down, z forward, in metres;
- pixel coordinates ``(u, v)`` are continuous, ``u`` along the width (column), ``v`` along the height
  (row); the centre of pixel ``(col, row)`` is at ``(col, row)`` exactly, as in librealsense.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Intrinsics", "RGBDFrame", "CAMERA_OPTICAL_FRAME"]

CAMERA_OPTICAL_FRAME = "camera_color_optical_frame"


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of one stream, in pixels.

    Attributes:
        width, height: image size in pixels.
        fx, fy: focal lengths in pixels.
        ppx, ppy: principal point in pixels (``x_offset``/``y_offset`` in ``camera_params.json``).
        coeffs: distortion coefficients ``(k1, k2, p1, p2, k3)`` in OpenCV's Brown-Conrady order;
            all zero for the RealSense colour stream and for the replay and sim sources.
    """

    width: int
    height: int
    fx: float
    fy: float
    ppx: float
    ppy: float
    coeffs: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)  # five, checked by __post_init__

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"image size must be positive, got {self.width}x{self.height}")
        if not (self.fx > 0 and self.fy > 0):
            raise ValueError(f"focal lengths must be positive pixels, got fx={self.fx} fy={self.fy}")
        if len(self.coeffs) != 5:
            raise ValueError("coeffs must hold 5 Brown-Conrady coefficients (k1, k2, p1, p2, k3)")

    @property
    def K(self) -> np.ndarray:
        """3x3 float64 camera matrix."""
        return np.array([[self.fx, 0.0, self.ppx], [0.0, self.fy, self.ppy], [0.0, 0.0, 1.0]])

    @property
    def has_distortion(self) -> bool:
        return any(c != 0.0 for c in self.coeffs)

    def contains(self, u: float, v: float) -> bool:
        """True when ``(u, v)`` (pixels) lies on the image: ``-0.5 <= u < W-0.5`` and
        ``-0.5 <= v < H-0.5``.

        Pixel ``(col, row)`` is the unit square centred on ``(col, row)``, so this is exactly the
        area of the pixels with indices ``0..W-1``, ``0..H-1`` that PointArena sec. 3.1 bounds a
        point by; ``pixel_index`` maps a contained point to its pixel. The same convention is used
        by deprojection, Point-Bench mask scoring and the web pages' clicks."""
        return bool(
            np.isfinite(u) and np.isfinite(v) and -0.5 <= u < self.width - 0.5 and -0.5 <= v < self.height - 0.5
        )

    @staticmethod
    def pixel_index(u: float, v: float) -> tuple[int, int]:
        """``(col, row)`` of the pixel whose area holds ``(u, v)``: ``floor(u + 0.5)``, ``floor(v + 0.5)``."""
        return int(np.floor(u + 0.5)), int(np.floor(v + 0.5))

    def deproject(self, u: float, v: float, depth_m: float) -> np.ndarray:
        """Pixel ``(u, v)`` at range ``depth_m`` (z, metres) to a point ``(3,)`` float64 in the optical
        frame, metres. Same result as ``rs2_deproject_pixel_to_point`` for an undistorted stream;
        with distortion the pixel is first undistorted by OpenCV."""
        x, y = self._normalized(u, v)
        return np.array([x * depth_m, y * depth_m, depth_m], dtype=np.float64)

    def project(self, points_m: np.ndarray) -> np.ndarray:
        """Points ``(N, 3)`` in the optical frame (metres, z > 0) to pixels ``(N, 2)`` float64.

        Points with ``z <= 0`` come back as NaN."""
        p = np.asarray(points_m, dtype=np.float64).reshape(-1, 3)
        z = p[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.has_distortion:
                import cv2

                uv, _ = cv2.projectPoints(p, np.zeros(3), np.zeros(3), self.K, np.array(self.coeffs))
                uv = uv.reshape(-1, 2)
            else:
                uv = np.stack([self.fx * p[:, 0] / z + self.ppx, self.fy * p[:, 1] / z + self.ppy], axis=1)
        uv[z <= 0] = np.nan
        return uv

    def _normalized(self, u: float, v: float) -> tuple[float, float]:
        if not self.has_distortion:
            return (u - self.ppx) / self.fx, (v - self.ppy) / self.fy
        import cv2

        xy = cv2.undistortPoints(np.array([[[u, v]]], dtype=np.float64), self.K, np.array(self.coeffs))
        return float(xy[0, 0, 0]), float(xy[0, 0, 1])

    def scaled(self, width: int, height: int) -> "Intrinsics":
        """The same camera at another resolution (pixels scale with the image)."""
        sx, sy = width / self.width, height / self.height
        return Intrinsics(width, height, self.fx * sx, self.fy * sy, self.ppx * sx, self.ppy * sy, self.coeffs)

    def to_dict(self) -> dict:
        return {
            "width": self.width,
            "height": self.height,
            "fx": self.fx,
            "fy": self.fy,
            "ppx": self.ppx,
            "ppy": self.ppy,
            "coeffs": list(self.coeffs),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Intrinsics":
        return cls(
            int(d["width"]),
            int(d["height"]),
            float(d["fx"]),
            float(d["fy"]),
            float(d["ppx"]),
            float(d["ppy"]),
            tuple(float(c) for c in d.get("coeffs", (0,) * 5)),
        )


@dataclass(frozen=True)
class RGBDFrame:
    """One colour image with depth aligned to it.

    Attributes:
        color: ``(H, W, 3)`` uint8, RGB.
        depth: ``(H, W)`` uint16, aligned to ``color``; 0 = no data.
        depth_scale_m: metres per depth unit (e.g. 0.001).
        intrinsics: intrinsics of the colour stream (the depth is aligned to it).
        stamp_ns: capture time, nanoseconds since the Unix epoch.
        index: frame counter of the source (replay: file number).
        frame_id: TF frame of the optical centre.
    """

    color: np.ndarray
    depth: np.ndarray
    depth_scale_m: float
    intrinsics: Intrinsics
    stamp_ns: int
    index: int = 0
    frame_id: str = field(default=CAMERA_OPTICAL_FRAME)

    def __post_init__(self) -> None:
        h, w = self.intrinsics.height, self.intrinsics.width
        if self.color.shape != (h, w, 3) or self.color.dtype != np.uint8:
            raise ValueError(f"colour must be ({h}, {w}, 3) uint8, got {self.color.shape} {self.color.dtype}")
        if self.depth.shape != (h, w) or self.depth.dtype != np.uint16:
            raise ValueError(f"depth must be ({h}, {w}) uint16, got {self.depth.shape} {self.depth.dtype}")
        if not (0 < self.depth_scale_m < 1):
            raise ValueError(f"depth_scale_m must be metres per unit in (0, 1), got {self.depth_scale_m}")

    @property
    def width(self) -> int:
        return self.intrinsics.width

    @property
    def height(self) -> int:
        return self.intrinsics.height

    def depth_m(self) -> np.ndarray:
        """Depth in metres, ``(H, W)`` float32; 0 where there is no data."""
        return self.depth.astype(np.float32) * np.float32(self.depth_scale_m)
