"""``replay:DIR``: recorded RGB-D frames from a folder, looping.

Folder format (the one of ``shared/data/rgbd/uoc_tabletop``):

- ``NNNNNN-color.png``: 8-bit RGB (or RGBA; alpha is dropped);
- ``NNNNNN-depth.png``: 16-bit depth, aligned to the colour image, 0 = no data;
- ``camera_params.json``: ``{"img_width", "img_height", "fx", "fy", "x_offset", "y_offset"}`` in
  pixels, optionally ``"depth_scale"`` in metres per unit (default 0.001, i.e. millimetres) and
  ``"coeffs"`` (5 Brown-Conrady coefficients).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import cv2
import numpy as np

from .camera import Camera
from .errors import CameraSourceError
from .frame import Intrinsics, RGBDFrame

__all__ = ["ReplayCamera", "load_camera_params", "load_rgbd_frame", "list_frame_ids"]

_COLOR_RE = re.compile(r"^(\d+)-color\.png$")
DEFAULT_DEPTH_SCALE_M = 0.001


def load_camera_params(folder: Path) -> tuple[Intrinsics, float]:
    """Read ``camera_params.json``: returns the colour intrinsics and the depth scale (m/unit).

    Raises:
        CameraSourceError: missing file, bad JSON or missing keys.
    """
    path = Path(folder) / "camera_params.json"
    try:
        d = json.loads(path.read_text())
        intr = Intrinsics(
            width=int(d["img_width"]),
            height=int(d["img_height"]),
            fx=float(d["fx"]),
            fy=float(d["fy"]),
            ppx=float(d["x_offset"]),
            ppy=float(d["y_offset"]),
            coeffs=tuple(float(c) for c in d.get("coeffs", (0.0,) * 5)),
        )
        scale = float(d.get("depth_scale", DEFAULT_DEPTH_SCALE_M))
    except FileNotFoundError as e:
        raise CameraSourceError(f"{path} not found") from e
    except OSError as e:  # the folder is a file, the params file is a folder, no permission
        raise CameraSourceError(f"{path}: cannot read camera parameters ({e.strerror or e})") from e
    except (ValueError, KeyError, TypeError) as e:
        raise CameraSourceError(f"{path}: malformed camera parameters ({e})") from e
    return intr, scale


def list_frame_ids(folder: Path) -> list[str]:
    """Frame ids (the ``NNNNNN`` prefixes) that have both a colour and a depth file, sorted."""
    folder = Path(folder)
    ids = []
    for p in sorted(folder.iterdir()):
        m = _COLOR_RE.match(p.name)
        if m and (folder / f"{m.group(1)}-depth.png").exists():
            ids.append(m.group(1))
    return ids


def load_rgbd_frame(
    folder: Path,
    frame_id: str | int,
    *,
    intrinsics: Intrinsics | None = None,
    depth_scale_m: float | None = None,
    stamp_ns: int | None = None,
) -> RGBDFrame:
    """Load one frame of a replay folder. ``frame_id`` is ``"000003"`` or ``3``.

    Raises:
        CameraSourceError: missing or unreadable file, wrong dtype, or size not matching the intrinsics.
    """
    folder = Path(folder)
    if intrinsics is None or depth_scale_m is None:
        intrinsics, depth_scale_m = load_camera_params(folder)
    fid = f"{int(frame_id):06d}" if isinstance(frame_id, int) or str(frame_id).isdigit() else str(frame_id)
    cpath, dpath = folder / f"{fid}-color.png", folder / f"{fid}-depth.png"
    for p in (cpath, dpath):  # checked here so OpenCV does not also print a warning of its own
        if not p.is_file():
            raise CameraSourceError(f"no frame {fid}: {p} does not exist")
    color = cv2.imread(str(cpath), cv2.IMREAD_COLOR)
    depth = cv2.imread(str(dpath), cv2.IMREAD_UNCHANGED)
    if color is None:
        raise CameraSourceError(f"cannot read colour image {cpath}")
    if depth is None:
        raise CameraSourceError(f"cannot read depth image {dpath}")
    if depth.dtype != np.uint16 or depth.ndim != 2:
        raise CameraSourceError(f"{dpath}: depth must be a 16-bit single-channel PNG, got {depth.dtype} {depth.shape}")
    color = cv2.cvtColor(color, cv2.COLOR_BGR2RGB)  # OpenCV decodes to BGR; frames travel as RGB
    try:
        return RGBDFrame(
            color=color,
            depth=depth,
            depth_scale_m=depth_scale_m,
            intrinsics=intrinsics,
            stamp_ns=time.time_ns() if stamp_ns is None else stamp_ns,
            index=int(fid),
        )
    except ValueError as e:
        raise CameraSourceError(f"frame {fid} in {folder}: {e}") from e


class ReplayCamera(Camera):
    """Plays the frames of a folder in file order, looping forever.

    Args:
        folder: the replay folder.
        fps: frames per second to pace ``read()`` at (``None`` or 0: as fast as asked).
        frame_ids: restrict to these ids (e.g. ``["000003"]`` to hold one still scene).
    """

    def __init__(self, folder: str | Path, fps: float | None = 15.0, frame_ids: list[str] | None = None) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.fps = fps
        self._ids = frame_ids
        self._cache: dict[str, RGBDFrame] = {}
        self._pos = 0
        self._last_t = 0.0

    @classmethod
    def from_spec(cls, arg: str | None, **kwargs) -> "ReplayCamera":
        if not arg:
            raise CameraSourceError("replay needs a folder: replay:DIR")
        folder, _, ids = arg.partition("#")  # replay:DIR#000003,000004 holds a subset
        if ids:
            kwargs.setdefault("frame_ids", ids.split(","))
        return cls(folder, **kwargs)

    def _connect(self) -> None:
        if not self.folder.is_dir():
            raise CameraSourceError(f"replay folder {self.folder} does not exist")
        self._intr, self._scale = load_camera_params(self.folder)
        ids = self._ids or list_frame_ids(self.folder)
        missing = [i for i in ids if i not in set(list_frame_ids(self.folder))]
        if not ids or missing:
            raise CameraSourceError(
                f"replay folder {self.folder}: no frames" if not ids else f"missing frames {missing}"
            )
        self._ids = ids
        self._pos = 0

    def _read(self) -> RGBDFrame:
        if self.fps:
            wait = self._last_t + 1.0 / self.fps - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        self._last_t = time.monotonic()
        assert self._ids is not None  # _connect resolved them (the base class reads only when connected)
        fid = self._ids[self._pos % len(self._ids)]
        self._pos += 1
        if fid not in self._cache:  # PNG decoding costs ~10 ms a frame: decode each file once
            self._cache[fid] = load_rgbd_frame(self.folder, fid, intrinsics=self._intr, depth_scale_m=self._scale)
        f = self._cache[fid]
        return RGBDFrame(f.color, f.depth, f.depth_scale_m, f.intrinsics, time.time_ns(), f.index, f.frame_id)
