"""``FrameLog``: which physics state each sim camera frame shows, its segmentation masks, and the
frame an image (as a model received it) came from.

The sim camera records every frame it produces (``record``): its stamp and index, and the
``physics.Capture`` it was rendered from (frames of an unchanged world share one capture). Masks are
rendered on demand by MuJoCo's segmentation pass from that capture (``MjRenderer``; cached per
capture), so every frame's masks are available for ``HISTORY_FRAMES`` frames without rendering a
segmentation for frames nobody asks about.

An image sent to a model has lost the stamp: it may be JPEG-compressed (the live view, the OpenAI
client's data URL) and resized. ``match_image`` maps it back to a frame by a small thumbnail
(``THUMB_SIZE``, area-averaged RGB, which averages the JPEG error and the sensor noise away) compared
with each recorded capture's clean-render thumbnail; the nearest (mean absolute difference) wins if
that mean is below ``MATCH_MAX_DIFF`` grey levels and no thumbnail pixel differs by more than
``MATCH_MAX_PIXEL_DIFF`` (an object 3 cm away from where it is in every recorded state changes a few
thumbnail pixels by ~100 levels but the mean by ~1). Frames of one capture show the same state, so
the nearest capture is the state the image shows; an image of any other state matches nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import cv2
import numpy as np

from .physics import ROBOT_LABEL, Capture

__all__ = [
    "FrameLog",
    "FrameLabels",
    "HISTORY_FRAMES",
    "THUMB_SIZE",
    "MATCH_MAX_DIFF",
    "MATCH_MAX_PIXEL_DIFF",
    "thumbnail",
    "thumb_difference",
]

HISTORY_FRAMES = 900  # 30 s at 30 fps
HISTORY_CAPTURES = 400
THUMB_SIZE = (64, 48)
MATCH_MAX_DIFF = 6.0
MATCH_MAX_PIXEL_DIFF = 30.0
_SEG_CACHE = 24


def thumbnail(image_rgb: np.ndarray) -> np.ndarray:
    """``(48, 64, 3)`` float32 area-average of an RGB image of any size."""
    return cv2.resize(np.ascontiguousarray(image_rgb), THUMB_SIZE, interpolation=cv2.INTER_AREA).astype(np.float32)


def thumb_difference(a: np.ndarray, b: np.ndarray, *, strict: bool = True) -> tuple[float, bool]:
    """Mean absolute difference of two thumbnails (grey levels) and whether they show the same
    picture: mean <= ``MATCH_MAX_DIFF`` and, if ``strict``, every pixel <= ``MATCH_MAX_PIXEL_DIFF``
    (not strict: a few marks drawn on the image, e.g. Point-Bench's steering dot, still match)."""
    diff = np.abs(a - b)
    mean = float(diff.mean())
    return mean, mean <= MATCH_MAX_DIFF and (not strict or float(diff.max()) <= MATCH_MAX_PIXEL_DIFF)


@dataclass(frozen=True)
class FrameLabels:
    """Segmentation of one capture.

    Attributes:
        labels: ``(H, W)`` int16: ``k`` = the k-th scene object, -2 robot, -3 table/floor, -1 nothing.
        depth_m: ``(H, W)`` float32 clean optical-axis depth of the same render, metres (0 = none).
        names: scene object names, index = label.
        capture: the state rendered.
        geom_ids: ``(H, W)`` int32 model geom id of each pixel (-1: nothing), for object parts.
    """

    labels: np.ndarray
    depth_m: np.ndarray
    names: tuple[str, ...]
    capture: Capture
    geom_ids: np.ndarray | None = None

    def mask(self, name: str) -> np.ndarray:
        """``(H, W)`` bool mask of an object name or ``"robot"``. Raises ``KeyError``."""
        if name == ROBOT_LABEL:
            return self.labels == -2
        return self.labels == self.names.index(name) if name in self.names else _missing(name)

    def masks(self) -> dict[str, np.ndarray]:
        out = {n: self.labels == k for k, n in enumerate(self.names)}
        out[ROBOT_LABEL] = self.labels == -2
        return out


def _missing(name: str):
    raise KeyError(f"no object {name!r} in the segmentation")


class FrameLog:
    """Frames of one ``SimWorld`` (thread-safe)."""

    def __init__(self, world) -> None:
        self.world = world
        self._lock = threading.Lock()
        self._frames: OrderedDict[int, int] = OrderedDict()  # stamp_ns -> capture version
        self._captures: OrderedDict[int, tuple[Capture, np.ndarray | None]] = OrderedDict()
        self._seg: OrderedDict[int, FrameLabels] = OrderedDict()

    def record(self, stamp_ns: int, capture: Capture, clean_color: np.ndarray | None = None) -> None:
        """Note that the frame stamped ``stamp_ns`` shows ``capture`` (rendered as ``clean_color``)."""
        with self._lock:
            if capture.version not in self._captures or (
                clean_color is not None and self._captures[capture.version][1] is None
            ):
                self._captures[capture.version] = (capture, None if clean_color is None else thumbnail(clean_color))
            self._captures.move_to_end(capture.version)
            self._frames[int(stamp_ns)] = capture.version
            while len(self._frames) > HISTORY_FRAMES:
                self._frames.popitem(last=False)
            while len(self._captures) > HISTORY_CAPTURES:
                self._captures.popitem(last=False)

    def capture_of(self, frame) -> Capture:
        """The capture a frame (``RGBDFrame`` or its ``stamp_ns``) shows.

        Raises:
            KeyError: not a recorded frame (another world's, or older than the history).
        """
        stamp = int(getattr(frame, "stamp_ns", frame))
        with self._lock:
            version = self._frames.get(stamp)
            entry = self._captures.get(version) if version is not None else None
        if entry is None:
            raise KeyError(f"frame stamped {stamp} was not produced by this world's sim camera (or is too old)")
        return entry[0]

    def labels_of_capture(self, capture: Capture) -> FrameLabels:
        """Segmentation of a capture (MuJoCo's segmentation pass; cached)."""
        with self._lock:
            hit = self._seg.get(capture.version)
            if hit is not None:
                self._seg.move_to_end(capture.version)
                return hit
        r = self.world.renderer().render(capture.qpos, color=False, segmentation=True)
        lut = self.world.physics.geom_label
        labels = np.where(r.geom_ids >= 0, lut[np.clip(r.geom_ids, 0, None)], -1).astype(np.int16)
        out = FrameLabels(labels, r.depth_m, tuple(self.world.physics.object_names), capture, r.geom_ids)
        with self._lock:
            self._seg[capture.version] = out
            while len(self._seg) > _SEG_CACHE:
                self._seg.popitem(last=False)
        return out

    def labels(self, frame) -> FrameLabels:
        """Segmentation of a recorded frame. Raises ``KeyError`` as ``capture_of``."""
        return self.labels_of_capture(self.capture_of(frame))

    def masks(self, frame) -> dict[str, np.ndarray]:
        """``{object name: (H, W) bool, "robot": ...}`` of a recorded frame. Raises ``KeyError``."""
        return self.labels(frame).masks()

    def match_image(self, image_rgb: np.ndarray) -> tuple[Capture | None, float]:
        """The recorded capture an image shows (see the module docstring) and its mean absolute
        thumbnail difference; ``(None, diff)`` when nothing is within ``MATCH_MAX_DIFF``."""
        img = np.asarray(image_rgb)
        if img.ndim != 3 or img.shape[2] != 3 or img.shape[0] < 8 or img.shape[1] < 8:
            return None, float("inf")
        t = thumbnail(img.astype(np.uint8, copy=False))
        with self._lock:
            items = [(c, th) for c, th in self._captures.values() if th is not None]
        best, best_d, best_ok = None, float("inf"), False
        for cap, th in reversed(items):  # newest first: ties go to the latest state
            d, ok = thumb_difference(th, t)
            if d < best_d:
                best, best_d, best_ok = cap, d, ok
        return (best, best_d) if best_ok else (None, best_d)
