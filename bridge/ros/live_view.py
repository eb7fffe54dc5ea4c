"""The live view: the newest colour frame as JPEG, encoded on a thread of its own while watched.

Encoding 640x480 to JPEG costs a few milliseconds per frame; it runs only while someone asked for
the view in the last ``idle_after_s`` seconds (a page polls ``latest_jpeg`` or a websocket pushes
it), at most ``max_fps`` times a second, and never twice for the same frame.
"""

from __future__ import annotations

import logging
import threading
import time

from pointlab.bridge.ros.frames import RecentFrames
from pointlab.bridge.ros.msgs import image_to_rgb

__all__ = ["RosLiveView", "encode_jpeg"]

log = logging.getLogger(__name__)


def encode_jpeg(rgb, quality: int = 80) -> bytes:
    """``(H, W, 3)`` uint8 RGB -> JPEG bytes (OpenCV).

    Raises:
        ValueError: the encoder refused the image.
    """
    import cv2

    ok, buf = cv2.imencode(".jpg", rgb[:, :, ::-1], [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return buf.tobytes()


class RosLiveView:
    """``bridge.trials.record.LiveView`` over ``RecentFrames``.

    Args:
        frames: the frames to encode.
        max_fps: upper bound of the encoding rate.
        jpeg_quality: 1-100.
        idle_after_s: stop encoding this long after the last ``latest_jpeg`` call.
    """

    def __init__(self, frames: RecentFrames, *, max_fps: float = 30.0, jpeg_quality: int = 80,
                 idle_after_s: float = 3.0) -> None:
        self.frames, self.max_fps, self.jpeg_quality, self.idle_after_s = frames, max_fps, jpeg_quality, idle_after_s
        self._lock = threading.Lock()
        self._jpeg: tuple[bytes, int] | None = None
        self._jpeg_stamp: int | None = None
        self._viewer_t = 0.0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pointlab-liveview", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        min_period = 1.0 / self.max_fps if self.max_fps > 0 else 0.0
        while not self._closed.is_set():
            if not self.frames.new_frame.wait(0.5):
                continue
            self.frames.new_frame.clear()
            if time.monotonic() - self._viewer_t > self.idle_after_s:  # nobody watches: spare the CPU
                continue
            t0 = time.monotonic()
            self._encode_latest()
            time.sleep(max(0.0, min_period - (time.monotonic() - t0)))

    def _encode_latest(self) -> None:
        latest = self.frames.latest()
        if latest is None:
            return
        stamp, msg, index = latest
        with self._lock:
            if stamp == self._jpeg_stamp:
                return
        try:
            jpeg = encode_jpeg(image_to_rgb(msg), self.jpeg_quality)
        except ValueError as e:
            log.warning("live view frame dropped: %s", e)
            return
        with self._lock:
            self._jpeg, self._jpeg_stamp = (jpeg, index), stamp

    def latest_jpeg(self) -> tuple[bytes, int] | None:
        """The newest colour frame as JPEG bytes and its frame index, or ``None`` before the first.

        Never blocks and never encodes on the caller's thread (the web app's event loop): a call
        wakes the encoding thread, so the first call after an idle spell may return ``None`` or an
        older frame, and the next one a frame period later the newest."""
        idle = time.monotonic() - self._viewer_t > self.idle_after_s
        self._viewer_t = time.monotonic()
        if idle:
            self.frames.new_frame.set()  # encode the newest frame now rather than at the next one
        return self._jpeg

    def jpeg_of(self, msg, quality: int | None = None) -> bytes | None:
        """One colour message as JPEG (trial frames), or ``None`` when it cannot be encoded."""
        try:
            return encode_jpeg(image_to_rgb(msg), quality or self.jpeg_quality)
        except ValueError:
            return None

    def close(self) -> None:
        self._closed.set()
        self.frames.new_frame.set()
        self._thread.join(timeout=2.0)
