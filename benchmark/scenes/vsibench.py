"""Reader of the VSI-Bench meta format (``*_meta_info_*.json``; thinking-in-space data/meta_info).

One file maps ``scene_id -> {dataset, room_size, room_center, object_counts, object_bbox}``;
``object_bbox[label]`` is a list of boxes ``{centroid, axesLengths, normalizedAxes, min, max}``
in metres. ``normalizedAxes`` is a row-major 3x3 whose ROWS are the box axes (checked on all
3197 boxes of the shared files: the corners built this way reproduce ``min``/``max`` to 1e-15,
the column reading misses by up to 1.8 m).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._io import read_json
from .errors import SceneFormatError
from .model import OrientedBox, Scene, SceneObject

__all__ = ["is_vsibench_meta", "read_vsibench_meta"]


def is_vsibench_meta(data: object) -> bool:
    """True when parsed JSON looks like a VSI-Bench meta file (scene id -> dict with object_bbox)."""
    return (
        isinstance(data, dict) and bool(data) and all(isinstance(v, dict) and "object_bbox" in v for v in data.values())
    )


def _box(entry: dict, where: str) -> OrientedBox:
    try:
        axes = np.asarray(entry["normalizedAxes"], dtype=np.float64).reshape(3, 3)
        return OrientedBox(center=entry["centroid"], extent=entry["axesLengths"], rotation=axes.T)
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, SceneFormatError):
            raise SceneFormatError(f"{where}: {e}") from e
        raise SceneFormatError(f"{where}: malformed box ({e!r})") from e


def read_vsibench_meta(path: Path | str, data: dict | None = None) -> list[Scene]:
    """Read every scene of one VSI-Bench meta file, in file order.

    Object ids are ``<label>#<index>`` (the file has no instance ids). ``source_dataset`` is the
    file's ``dataset`` field.

    Raises:
        SceneFormatError: unreadable file or a malformed scene / box.
    """
    path = Path(path)
    if data is None:
        data = read_json(path)
    if not is_vsibench_meta(data):
        raise SceneFormatError(f"{path}: not a VSI-Bench meta file (scene id -> {{object_bbox, ...}})")
    scenes = []
    for scene_id, meta in data.items():
        objects = []
        bboxes = meta.get("object_bbox") or {}
        if not isinstance(bboxes, dict):
            raise SceneFormatError(f"{path}: scene {scene_id}: object_bbox is not a mapping")
        for label, entries in bboxes.items():
            if not isinstance(entries, list):
                raise SceneFormatError(f"{path}: scene {scene_id}: object_bbox[{label!r}] is not a list")
            for i, entry in enumerate(entries):
                where = f"{path}: scene {scene_id}: {label}[{i}]"
                box = _box(entry, where)
                objects.append(SceneObject(object_id=f"{label}#{i}", label=label, centroid=box.center, box=box))
        room_center = meta.get("room_center")
        scenes.append(
            Scene(
                scene_id=str(scene_id),
                source_dataset=str(meta.get("dataset", "unknown")),
                objects=objects,
                room_size_m2=float(meta["room_size"]) if meta.get("room_size") is not None else None,
                room_center=np.asarray(room_center, dtype=np.float64) if room_center is not None else None,
                source_path=str(path),
                extra={"video_path": meta.get("video_path", "")},
            )
        )
    return scenes
