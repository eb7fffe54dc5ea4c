"""``pointlab sim snapshot``: one frame of the sim camera written out with its masks.

Writes into ``out_dir``: ``color.png`` (RGB), ``depth.png`` (uint16 depth units, 0 = no data),
``masks/<name>.png`` for every scene object (spaces in names become ``_``; 255 = the object) and
``robot.png`` (the arm's mask); returns the JSON the command prints: the depth scale, the
intrinsics, the files and the pixel count of each mask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .camera import SimCamera
from .physics import ROBOT_LABEL
from .world import SimWorld

__all__ = ["write_snapshot", "mask_file_name"]


def mask_file_name(name: str) -> str:
    return name.replace(" ", "_").replace("/", "_") + ".png"


def write_snapshot(out_dir: str | Path, world: SimWorld | None = None, *, noise: bool = True, seed: int = 0) -> dict:
    """Render one frame of ``world`` (default: a fresh default world) and write it (module docstring).

    Raises:
        OSError: the folder cannot be written.
    """
    out = Path(out_dir)
    (out / "masks").mkdir(parents=True, exist_ok=True)
    own = world is None
    world = world or SimWorld()
    try:
        with SimCamera(world=world, fps=0, seed=seed, noise=noise) as cam:
            frame = cam.read()
        masks = world.masks(frame)
        files: dict[str, Any] = {"color": "color.png", "depth": "depth.png", "robot": "robot.png", "masks": {}}
        _write(out / "color.png", frame.color[:, :, ::-1])
        _write(out / "depth.png", frame.depth)
        counts = {}
        for name, m in masks.items():
            path = "robot.png" if name == ROBOT_LABEL else f"masks/{mask_file_name(name)}"
            _write(out / path, m.astype(np.uint8) * 255)
            counts[name] = int(m.sum())
            if name != ROBOT_LABEL:
                files["masks"][name] = path
        return {
            "out_dir": str(out),
            "depth_scale_m": frame.depth_scale_m,
            "intrinsics": frame.intrinsics.to_dict(),
            "stamp_ns": frame.stamp_ns,
            "depth_valid_fraction": round(float((frame.depth > 0).mean()), 4),
            "files": files,
            "mask_pixels": counts,
        }
    finally:
        if own:
            world.close()


def _write(path: Path, image: np.ndarray) -> None:
    if not cv2.imwrite(str(path), image):
        raise OSError(f"cannot write {path}")
