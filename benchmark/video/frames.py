"""Frame sources: an encoded video (PyAV) or a folder of image frames, read by frame index.

Frames are ``(H, W, 3)`` uint8 RGB (docs/architecture.md). Frame ``i`` is the ``i``-th frame in
presentation order. ``open_frames(path)`` picks the back-end from a dict keyed by what the path is
(a directory, or the file suffix), so adding a container is one entry.

Videos are indexed once by demuxing (no decoding): the sorted presentation timestamps of the video
packets give ``total`` and the timestamp of every frame index, so a frame can be reached either by
decoding from the start (``method="sequential"``) or by seeking to the key frame before it and
decoding forward (``method="seek"``); ``"auto"`` picks per request (see ``read_many``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import FrameSourceError

if TYPE_CHECKING:
    import av

__all__ = [
    "FrameSource",
    "FolderFrames",
    "VideoFileFrames",
    "open_frames",
    "IMAGE_SUFFIXES",
    "VIDEO_SUFFIXES",
    "write_video",
    "write_frame_folder",
]

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v")


class FrameSource:
    """A sequence of frames read by index; use as a context manager or call ``close()``.

    Attributes:
        path: where the frames come from.
        total: number of frames (>= 1).
        fps: frames per second when known, else None.
    """

    path: Path
    total: int
    fps: float | None = None

    def read(self, index: int) -> np.ndarray:
        """Frame ``index`` as (H, W, 3) uint8 RGB. Raises ``FrameSourceError`` (range, decode)."""
        return self.read_many([index])[0]

    def read_many(self, indices: Sequence[int]) -> list[np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check(self, indices: Sequence[int]) -> list[int]:
        out = [int(i) for i in indices]
        bad = [i for i in out if not 0 <= i < self.total]
        if bad:
            raise FrameSourceError(f"{self.path}: frame indices {bad[:5]} outside 0..{self.total - 1}")
        return out

    def close(self) -> None:
        pass

    def __enter__(self) -> "FrameSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _natural_key(p: Path) -> tuple:
    # frame_9.jpg before frame_10.jpg
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name))


class FolderFrames(FrameSource):
    """The image files of one folder (``IMAGE_SUFFIXES``) in natural name order; frame ``i`` is the
    ``i``-th file. Raises ``FrameSourceError`` when the folder holds no images."""

    def __init__(self, path: str | Path, fps: float | None = None):
        self.path = Path(path)
        if not self.path.is_dir():
            raise FrameSourceError(f"{self.path}: not a folder")
        self.files = sorted((p for p in self.path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES), key=_natural_key)
        if not self.files:
            raise FrameSourceError(f"{self.path}: no image frames ({', '.join(IMAGE_SUFFIXES)})")
        self.total = len(self.files)
        self.fps = fps

    def read_many(self, indices: Sequence[int]) -> list[np.ndarray]:
        import cv2

        out = []
        for i in self._check(indices):
            bgr = cv2.imread(str(self.files[i]), cv2.IMREAD_COLOR)
            if bgr is None:
                raise FrameSourceError(f"{self.files[i]}: unreadable or corrupt image")
            out.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
        return out

    def names(self, indices: Sequence[int]) -> list[str]:
        """File names of the given frame indices."""
        return [self.files[i].name for i in self._check(indices)]


class VideoFileFrames(FrameSource):
    """An encoded video read with PyAV. Raises ``FrameSourceError`` when the file is missing, is not
    a video, or holds no video frames."""

    def __init__(self, path: str | Path):
        import av

        self.path = Path(path)
        if not self.path.is_file():
            raise FrameSourceError(f"{self.path}: no such file")
        try:
            self._container = av.open(str(self.path))
        except (av.FFmpegError, OSError) as e:
            raise FrameSourceError(f"{self.path}: cannot open video ({e})") from e
        if not self._container.streams.video:
            self._container.close()
            raise FrameSourceError(f"{self.path}: no video stream")
        self._stream = self._container.streams.video[0]
        self.fps = float(self._stream.average_rate) if self._stream.average_rate else None
        try:
            pts = [p.pts for p in self._container.demux(self._stream) if p.pts is not None and p.size > 0]
        except av.FFmpegError as e:
            self._container.close()
            raise FrameSourceError(f"{self.path}: corrupt video ({e})") from e
        if not pts:
            self._container.close()
            raise FrameSourceError(f"{self.path}: no video frames")
        self._pts = np.array(sorted(pts), dtype=np.int64)
        self._index_of = {int(p): i for i, p in enumerate(self._pts)}
        self.total = len(self._pts)

    def close(self) -> None:
        self._container.close()

    def _decode_from(self, seek_pts: int | None) -> Iterator[tuple[int, av.VideoFrame]]:
        import av

        try:
            if seek_pts is None:
                self._container.seek(0, stream=self._stream, backward=True, any_frame=False)
            else:
                self._container.seek(int(seek_pts), stream=self._stream, backward=True, any_frame=False)
            for frame in self._container.decode(self._stream):
                if frame.pts is None or int(frame.pts) not in self._index_of:
                    continue
                yield self._index_of[int(frame.pts)], frame
        except av.FFmpegError as e:
            raise FrameSourceError(f"{self.path}: decode failed ({e})") from e

    def read_many(self, indices: Sequence[int], method: str = "auto") -> list[np.ndarray]:
        """Frames at ``indices`` (any order, repeats allowed), (H, W, 3) uint8 RGB each.

        ``method``: ``"sequential"`` decodes from the start up to the last wanted frame;
        ``"seek"`` seeks to the key frame before each wanted frame; ``"auto"`` decodes
        sequentially when the wanted frames are denser than one per 30 frames, else seeks.

        Raises:
            FrameSourceError: an index out of range, a decode error, or a frame never decoded.
            ValueError: unknown ``method``.
        """
        idx = self._check(indices)
        if not idx:
            return []
        wanted = sorted(set(idx))
        if method == "auto":
            method = "sequential" if len(wanted) * 30 >= wanted[-1] + 1 else "seek"
        got: dict[int, np.ndarray] = {}
        if method == "sequential":
            for i, frame in self._decode_from(None):
                if i in wanted and i not in got:
                    got[i] = frame.to_ndarray(format="rgb24")
                if len(got) == len(wanted) or i >= wanted[-1]:
                    break
        elif method == "seek":
            for target in wanted:
                if target in got:
                    continue
                for i, frame in self._decode_from(int(self._pts[target])):
                    if i == target:
                        got[i] = frame.to_ndarray(format="rgb24")
                        break
                    if i > target:
                        break
        else:
            raise ValueError(f"unknown read method {method!r}; use sequential, seek or auto")
        missing = [i for i in wanted if i not in got]
        if missing:
            raise FrameSourceError(f"{self.path}: frames {missing[:5]} could not be decoded")
        return [got[i] for i in idx]


def _open_folder(p: Path) -> FrameSource:
    return FolderFrames(p)


def _open_video(p: Path) -> FrameSource:
    return VideoFileFrames(p)


_BACKENDS: dict[str, Callable[[Path], FrameSource]] = {
    "<dir>": _open_folder,
    **{s: _open_video for s in VIDEO_SUFFIXES},
}


def open_frames(path: str | Path) -> FrameSource:
    """A ``FrameSource`` for a folder of frames or a video file (suffix in ``VIDEO_SUFFIXES``).

    Raises:
        FrameSourceError: missing path, unknown suffix, unreadable or empty source.
    """
    p = Path(path)
    if not p.exists():
        raise FrameSourceError(f"{p}: no such file or folder")
    key = "<dir>" if p.is_dir() else p.suffix.lower()
    if key not in _BACKENDS:
        raise FrameSourceError(
            f"{p}: unknown video type {p.suffix!r}; use a folder of frames or {', '.join(VIDEO_SUFFIXES)}"
        )
    return _BACKENDS[key](p)


def write_video(
    frames: Sequence[np.ndarray] | Iterator[np.ndarray],
    path: str | Path,
    fps: int = 30,
    codec: str = "libx264",
    gop: int = 30,
) -> int:
    """Encode RGB frames (all the same (H, W, 3) uint8 shape, even sides for yuv420p) to ``path``.

    ``gop`` is the key-frame interval in frames. Returns the number of frames written.
    Raises ``ValueError`` for a frame of another shape or dtype.
    """
    import av

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with av.open(str(p), mode="w") as out:
        stream: av.VideoStream | None = None
        shape = None
        for img in frames:
            arr = np.asarray(img)
            if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
                raise ValueError(f"frames must be (H, W, 3) uint8, got {arr.shape} {arr.dtype}")
            if stream is None:
                shape = arr.shape
                added = out.add_stream(codec, rate=fps)
                if not isinstance(added, av.VideoStream):
                    raise ValueError(f"{codec} is not a video codec")
                stream = added
                stream.width, stream.height = arr.shape[1], arr.shape[0]
                stream.pix_fmt = "yuv420p"
                stream.codec_context.gop_size = gop
            elif arr.shape != shape:
                raise ValueError(f"frame {n} has shape {arr.shape}, expected {shape}")
            for packet in stream.encode(av.VideoFrame.from_ndarray(arr, format="rgb24")):
                out.mux(packet)
            n += 1
        if stream is not None:
            for packet in stream.encode():
                out.mux(packet)
    return n


def write_frame_folder(frames: Sequence[np.ndarray], folder: str | Path, prefix: str = "frame_") -> list[Path]:
    """Write RGB frames as ``{prefix}{i:05d}.png`` into ``folder``; returns the paths."""
    import cv2

    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, img in enumerate(frames):
        p = d / f"{prefix}{i:05d}.png"
        if not cv2.imwrite(str(p), cv2.cvtColor(np.asarray(img, dtype=np.uint8), cv2.COLOR_RGB2BGR)):
            raise FrameSourceError(f"{p}: cannot write image")
        paths.append(p)
    return paths
