"""Reader of the ReVSI box format (``<scene>_boxes.json``; 3dlg-hcvc/revsi docs/static).

``objects[id] = {name, obb: {center, extent, rotation}}`` in metres, ``rotation`` a 3x3 whose
COLUMNS are the box axes (Open3D convention: a door's 2 m extent lies along the column that is
world z). Optional ``qa_object_ids``/``category_object_ids`` go to ``Scene.extra``. A file may
instead hold several annotations of one scene (``{"revsi": {objects...}, "vsi": {objects...}}``):
one ``Scene`` per annotation, distinguished by ``Scene.variant``.
"""

from __future__ import annotations

from pathlib import Path

from ._io import dataset_from_scene_id, read_json
from .errors import SceneFormatError
from .model import OrientedBox, Scene, SceneObject

__all__ = ["is_revsi_boxes", "read_revsi_boxes"]


def _is_block(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("objects"), dict)


def is_revsi_boxes(data: object) -> bool:
    """True when parsed JSON is a ReVSI box file (``objects`` at the top or per annotation)."""
    if _is_block(data):
        return True
    return isinstance(data, dict) and bool(data) and all(_is_block(v) for v in data.values())


def _scene(block: dict, scene_id: str, variant: str, path: Path) -> Scene:
    objects = []
    for oid, entry in block["objects"].items():
        where = f"{path}: object {oid}"
        try:
            obb = entry["obb"]
            box = OrientedBox(center=obb["center"], extent=obb["extent"], rotation=obb["rotation"])
            label = entry["name"]
        except SceneFormatError as e:
            raise SceneFormatError(f"{where}: {e}") from e
        except (KeyError, TypeError) as e:
            raise SceneFormatError(f"{where}: malformed entry ({e!r})") from e
        objects.append(SceneObject(object_id=str(oid), label=label, centroid=box.center, box=box))
    extra = {k: v for k, v in block.items() if k != "objects"}
    return Scene(
        scene_id=scene_id,
        source_dataset=dataset_from_scene_id(scene_id),
        objects=objects,
        variant=variant,
        source_path=str(path),
        extra=extra,
    )


def read_revsi_boxes(path: Path | str, data: dict | None = None) -> list[Scene]:
    """Read one ReVSI box file; the scene id is the file name without ``_boxes.json``.

    Raises:
        SceneFormatError: unreadable file or malformed entries.
    """
    path = Path(path)
    if data is None:
        data = read_json(path)
    if not is_revsi_boxes(data):
        raise SceneFormatError(f"{path}: not a ReVSI box file (no 'objects' mapping)")
    name = path.name
    scene_id = name[: -len("_boxes.json")] if name.endswith("_boxes.json") else path.stem
    if _is_block(data):
        return [_scene(data, scene_id, "", path)]
    return [_scene(block, scene_id, variant, path) for variant, block in data.items()]
