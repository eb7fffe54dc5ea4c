"""A trial's video clip: the colour stream as H.264 in MP4 (PyAV, libx264), the agent's points drawn.

Settings (``ClipSettings``) are chosen for the issue's size target, at most 3 MB for a 20 s trial at
640x480, measured (docs/recording.md): 10 fps, constant-quality CRF 23 capped by x264's VBV at
1000 kbit/s (buffer 2000 kbit), so a calm scene costs a few hundred kB and no scene can exceed about
1 Mbit/s (worst case measured: the nine real uoc_tabletop frames cut one after the other every
frame, 2.6 MB per 20 s). ``yuv420p`` and ``+faststart`` (the index first) so a browser's ``<video>``
plays it at once and can seek with range requests. Frame times come from the frames' header stamps
(millisecond time base), so the clip plays at the pace it was recorded even when frames were dropped.

Points (PointArena sec. 3.4: the first point is the one acted on): the first is drawn as a large
magenta disc with a white and a black ring, the others as small cyan discs; colours no tabletop
object of the sim or of the real recordings has, so they stand out and a test can find them.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pointlab.bridge.errors import BridgeError

if TYPE_CHECKING:
    from av.container import OutputContainer
    from av.video.stream import VideoStream

__all__ = ["ClipSettings", "ClipWriter", "ClipError", "draw_points", "FIRST_POINT_RGB", "OTHER_POINT_RGB"]

log = logging.getLogger(__name__)

FIRST_POINT_RGB = (255, 0, 255)
OTHER_POINT_RGB = (0, 255, 255)


class ClipError(BridgeError, RuntimeError):
    """The clip could not be opened or written (codec, disk); the message says which."""


class ClipSettings(BaseModel):
    """How a trial's clip is encoded.

    Attributes:
        fps: frames per second taken from the colour stream (by header stamp); 0 < fps <= 60.
        crf: x264 constant rate factor (0 lossless .. 51 worst; 23 is x264's default quality).
        max_kbps: x264 VBV cap of the bit rate, kbit/s (the buffer is twice this); bounds the size.
        preset: x264 speed preset (``veryfast``: about 5-12 ms per 640x480 frame on this machine).
        max_width: frames wider than this are scaled down (points scale with them).
        threads: encoder threads (1: the encoder never takes a second core from the trial loop).
    """

    model_config = ConfigDict(frozen=True)

    fps: float = Field(10.0, gt=0, le=60)
    crf: int = Field(23, ge=0, le=51)
    max_kbps: int = Field(1000, ge=50)
    preset: str = "veryfast"
    max_width: int = Field(640, ge=64)
    threads: int = Field(1, ge=1, le=16)


def _disc(img: np.ndarray, center: tuple[int, int], radius: int, rgb, shift: int) -> None:
    import cv2

    cv2.circle(img, center, radius << shift, rgb, thickness=-1, lineType=cv2.LINE_AA, shift=shift)


def draw_points(
    rgb: np.ndarray, points_px: Sequence[Sequence[float]], *, first_is_target: bool = True, scale: float = 1.0
) -> np.ndarray:
    """A copy of ``rgb`` ``(H, W, 3)`` uint8 with the points drawn.

    Args:
        points_px: ``[(u, v), ...]`` pixels of the frame the agent saw (pixel centres at integers).
        first_is_target: draw ``points_px[0]`` as the first point (large magenta disc, radius 9 px
            with white and black rings out to 13 px); ``False`` when the model's first point was
            invalid, so no drawn point claims to be the one acted on. The others are cyan discs
            of radius 4 px with a black ring out to 6 px.
        scale: multiply the points by this (the clip's width over the agent's frame's width).

    Points that are not finite are skipped; points off the image are clipped by OpenCV.
    """
    out = np.ascontiguousarray(rgb).copy()
    shift = 4  # sub-pixel centres: OpenCV's fixed-point coordinates, 1/16 px
    pts = [(float(p[0]) * scale, float(p[1]) * scale) for p in points_px]
    order = list(range(len(pts)))[::-1]  # the first point last, on top of any other
    for i in order:
        u, v = pts[i]
        if not (np.isfinite(u) and np.isfinite(v)):
            continue
        c = (int(round(u * (1 << shift))), int(round(v * (1 << shift))))
        if i == 0 and first_is_target:
            _disc(out, c, 13, (0, 0, 0), shift)
            _disc(out, c, 11, (255, 255, 255), shift)
            _disc(out, c, 9, FIRST_POINT_RGB, shift)
        else:
            _disc(out, c, 6, (0, 0, 0), shift)
            _disc(out, c, 4, OTHER_POINT_RGB, shift)
    return out


class ClipWriter:
    """Writes one MP4; the size is fixed by the first frame (scaled to ``max_width``, made even for
    4:2:0). Use from one thread.

    Args:
        path: the ``.mp4`` to create (its folder must exist).
        settings: encoding settings.
    """

    def __init__(self, path: str | Path, settings: ClipSettings = ClipSettings()) -> None:
        self.path = Path(path)
        self.settings = settings
        self.frames = 0
        self.size: tuple[int, int] | None = None  # (width, height) of the clip
        self._container: OutputContainer | None = None
        self._stream: VideoStream | None = None
        self._t0_ns: int | None = None
        self._last_pts = -1

    def _open(self, width: int, height: int) -> None:
        import av

        s = self.settings
        scale = min(1.0, s.max_width / width)
        w, h = int(width * scale) // 2 * 2, int(height * scale) // 2 * 2
        try:
            self._container = container = av.open(str(self.path), "w", format="mp4", options={"movflags": "+faststart"})
            st = container.add_stream("libx264", rate=Fraction(s.fps).limit_denominator(1000))
            st.width, st.height, st.pix_fmt = w, h, "yuv420p"
            st.codec_context.time_base = Fraction(1, 1000)
            st.options = {
                "crf": str(s.crf),
                "preset": s.preset,
                "maxrate": f"{s.max_kbps}k",
                "bufsize": f"{2 * s.max_kbps}k",
                "threads": str(s.threads),
            }
        except Exception as e:  # PyAV raises its own OSError/ValueError subclasses
            self._abandon()
            raise ClipError(f"cannot open clip {self.path}: {type(e).__name__}: {e}") from e
        self._stream, self.size = st, (w, h)

    def add(self, rgb: np.ndarray, stamp_ns: int) -> bool:
        """Encode one ``(H, W, 3)`` uint8 RGB frame taken at ``stamp_ns``; ``False`` (skipped) when
        its time is not after the previous frame's.

        Raises:
            ClipError: the encoder or the file failed (the clip is unusable from then on).
        """
        import av
        import cv2

        if self._container is None:
            self._open(rgb.shape[1], rgb.shape[0])
            self._t0_ns = stamp_ns
        container, stream, size, t0_ns = self._container, self._stream, self.size, self._t0_ns
        assert container is not None and stream is not None and size is not None and t0_ns is not None  # _open's
        pts = (stamp_ns - t0_ns) // 1_000_000
        if pts <= self._last_pts:
            return False
        w, h = size
        if rgb.shape[1] != w or rgb.shape[0] != h:
            rgb = cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA)
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts, frame.time_base = pts, Fraction(1, 1000)
        try:
            for packet in stream.encode(frame):
                container.mux(packet)
        except Exception as e:
            self._abandon()
            raise ClipError(f"writing clip {self.path} failed: {type(e).__name__}: {e}") from e
        self._last_pts = pts
        self.frames += 1
        return True

    def close(self) -> int:
        """Flush and finish the file; returns the number of frames written (0: no file was made).

        Raises:
            ClipError: flushing or finishing the file failed.
        """
        if self._container is None:
            return 0
        assert self._stream is not None  # opened with the container
        try:
            for packet in self._stream.encode():
                self._container.mux(packet)
            self._container.close()
        except Exception as e:
            self._abandon()
            raise ClipError(f"finishing clip {self.path} failed: {type(e).__name__}: {e}") from e
        self._container = None
        return self.frames

    def _abandon(self) -> None:
        """Close whatever is open, ignoring errors (the file is then removed by the caller)."""
        c, self._container = self._container, None
        if c is not None:
            try:
                c.close()
            except Exception:
                log.debug("closing a failed clip container", exc_info=True)
