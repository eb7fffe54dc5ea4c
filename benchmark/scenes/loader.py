"""``load_scenes(path)``: any supported scene file or folder to a list of ``Scene``.

The reader is chosen by what the path holds, from two tables (no if/elif chain over formats):
JSON files by their content, folders by their files. A folder holding none of the mesh formats
is searched one level down (a folder of scene folders or of JSON files).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from ._io import read_json
from .errors import SceneFormatError
from .mesh import is_scannet_dir, is_scannetpp_dir, read_scannet_scene, read_scannetpp_scene
from .model import Scene
from .revsi import is_revsi_boxes, read_revsi_boxes
from .vsibench import is_vsibench_meta, read_vsibench_meta

__all__ = ["load_scenes", "JSON_READERS", "DIR_READERS"]

log = logging.getLogger(__name__)

# (format name, detector on parsed JSON, reader(path, data))
JSON_READERS: list[tuple[str, Callable[[object], bool], Callable[[Path, dict], list[Scene]]]] = [
    ("vsibench_meta", is_vsibench_meta, lambda p, d: read_vsibench_meta(p, d)),
    ("revsi_boxes", is_revsi_boxes, lambda p, d: read_revsi_boxes(p, d)),
]
# (format name, detector on a folder, reader(folder))
DIR_READERS: list[tuple[str, Callable[[Path], bool], Callable[[Path], Scene]]] = [
    ("scannet", is_scannet_dir, read_scannet_scene),
    ("scannetpp", is_scannetpp_dir, read_scannetpp_scene),
]


def _load_json(path: Path, *, strict: bool = True) -> list[Scene]:
    data = read_json(path)
    for _name, detect, read in JSON_READERS:
        if detect(data):
            return read(path, data)
    if not strict:
        log.warning("%s: not a scene JSON (VSI-Bench meta / ReVSI boxes); skipped", path)
        return []
    raise SceneFormatError(f"{path}: JSON is neither a VSI-Bench meta file nor a ReVSI box file")


def _load_dir(path: Path) -> list[Scene] | None:
    for _name, detect, read in DIR_READERS:
        if detect(path):
            return [read(path)]
    return None


def load_scenes(path: Path | str) -> list[Scene]:
    """Read every scene at ``path``.

    Args:
        path: a VSI-Bench meta JSON, a ReVSI ``*_boxes.json``, a ScanNet or ScanNet++ scene
            folder, or a folder containing any of these (one level down; JSON files and scene
            folders in sorted order; files that are not scene JSON, e.g. LICENSE, are ignored).
    Returns:
        The scenes, in file order.
    Raises:
        SceneFormatError: the path does not exist, or a file / folder that claims a format is
            malformed, or nothing readable was found.
    """
    path = Path(path)
    if path.is_file():
        return _load_json(path)
    if not path.is_dir():
        raise SceneFormatError(f"{path}: no such file or folder")
    found = _load_dir(path)
    if found is not None:
        return found
    scenes: list[Scene] = []
    for child in sorted(path.iterdir()):
        if child.is_file() and child.suffix.lower() == ".json":
            scenes.extend(_load_json(child, strict=False))
        elif child.is_dir():
            sub = _load_dir(child)
            if sub:
                scenes.extend(sub)
    if not scenes:
        raise SceneFormatError(f"{path}: no scene files (VSI-Bench meta, ReVSI boxes, ScanNet, ScanNet++) found")
    return scenes
