"""Readers of the two mesh sources: ScanNet (v2 / ScanNet200 labels) and ScanNet++.

Both store an over-segmented mesh: ``segIndices`` gives a segment id per mesh vertex, and each
annotated instance (``segGroups[i]``: ``objectId``, ``label``, ``segments``) lists the segments it
owns; an instance's vertices are the mesh vertices whose segment is in its list. In ScanNet++
every vertex is its own segment (the ScanNet++ toolkit: "each segment is a vertex"), so the same
rule gives the same vertices there.

- ScanNet (a ``sceneXXXX_YY/`` folder): ``<id>_vh_clean_2.ply``, ``<id>.aggregation.json``,
  ``<id>_vh_clean_2.0.010000.segs.json`` and ``<id>.txt`` whose ``axisAlignment = m00 ... m33``
  (row-major 4x4) maps the mesh into the axis-aligned, z-up frame (identity when absent).
- ScanNet++ (a scene folder, or its ``scans/`` sub-folder): ``mesh_aligned_0.05.ply`` (already
  aligned), ``segments.json``, ``segments_anno.json``.

PLY parsing is trimesh's (ascii and binary), with ``process=False`` so vertex order, which the
segment indices refer to, is kept.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ._io import read_json
from .errors import SceneFormatError
from .model import Scene, SceneObject

__all__ = [
    "read_ply_vertices",
    "read_scannet_scene",
    "read_scannetpp_scene",
    "is_scannet_dir",
    "is_scannetpp_dir",
    "read_axis_alignment",
]

log = logging.getLogger(__name__)


def read_ply_vertices(path: Path) -> np.ndarray:
    """(N, 3) float64 vertex positions of a PLY mesh or point cloud, in file order.

    Raises:
        SceneFormatError: missing file, or not a PLY trimesh can read.
    """
    import trimesh

    if not path.is_file():
        raise SceneFormatError(f"{path}: file not found")
    try:
        geom = trimesh.load(str(path), file_type="ply", process=False)
    except Exception as e:  # trimesh raises many types for a corrupt file
        raise SceneFormatError(f"{path}: not a readable PLY ({e})") from e
    verts = getattr(geom, "vertices", None)
    if verts is None or len(verts) == 0:
        raise SceneFormatError(f"{path}: PLY has no vertices")
    return np.asarray(verts, dtype=np.float64)


def read_axis_alignment(path: Path) -> np.ndarray:
    """The ScanNet ``axisAlignment`` 4x4 (row-major) from ``<scene>.txt``; identity if absent.

    Raises:
        SceneFormatError: the line is present but does not hold 16 numbers.
    """
    if not path.is_file():
        log.warning("%s not found: using the identity axis alignment", path)
        return np.eye(4)
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "axisAlignment":
            try:
                m = np.array([float(x) for x in value.split()], dtype=np.float64)
            except ValueError as e:
                raise SceneFormatError(f"{path}: axisAlignment is not numeric") from e
            if m.size != 16:
                raise SceneFormatError(f"{path}: axisAlignment has {m.size} numbers, expected 16")
            return m.reshape(4, 4)
    log.warning("%s has no axisAlignment line: using the identity", path)
    return np.eye(4)


def _objects(vertices: np.ndarray, seg_indices: object, seg_groups: object, where: str) -> list[SceneObject]:
    if not isinstance(seg_indices, list) or len(seg_indices) != len(vertices):
        n = len(seg_indices) if isinstance(seg_indices, list) else "no"
        raise SceneFormatError(f"{where}: segIndices has {n} entries for {len(vertices)} mesh vertices")
    if not isinstance(seg_groups, list):
        raise SceneFormatError(f"{where}: segGroups is not a list")
    seg = np.asarray(seg_indices, dtype=np.int64)
    objects = []
    for i, group in enumerate(seg_groups):
        try:
            label = group["label"]
            segments = np.asarray(group["segments"], dtype=np.int64)
            oid = group.get("objectId", group.get("id", i))
        except (KeyError, TypeError, ValueError) as e:
            raise SceneFormatError(f"{where}: segGroups[{i}] is malformed ({e!r})") from e
        mask = np.isin(seg, segments)
        if not mask.any():
            log.warning("%s: object %s (%s) owns no mesh vertex; skipped", where, oid, label)
            continue
        objects.append(SceneObject.from_vertices(str(oid), label, vertices[mask]))
    return objects


def is_scannet_dir(path: Path) -> bool:
    return path.is_dir() and (path / f"{path.name}_vh_clean_2.ply").is_file()


def read_scannet_scene(folder: Path | str) -> Scene:
    """Read one ScanNet scene folder (see module docstring); vertices are axis-aligned.

    Raises:
        SceneFormatError: a required file is missing or malformed.
    """
    folder = Path(folder)
    sid = folder.name
    vertices = read_ply_vertices(folder / f"{sid}_vh_clean_2.ply")
    align = read_axis_alignment(folder / f"{sid}.txt")
    vertices = vertices @ align[:3, :3].T + align[:3, 3]
    segs = read_json(folder / f"{sid}_vh_clean_2.0.010000.segs.json")
    agg = read_json(folder / f"{sid}.aggregation.json")
    if not isinstance(segs, dict) or not isinstance(agg, dict):
        raise SceneFormatError(f"{folder}: segs/aggregation JSON must be objects")
    objects = _objects(vertices, segs.get("segIndices"), agg.get("segGroups"), str(folder))
    return Scene(scene_id=sid, source_dataset="scannet", objects=objects, source_path=str(folder))


def _scannetpp_scans(path: Path) -> Path | None:
    for cand in (path, path / "scans"):
        if (cand / "mesh_aligned_0.05.ply").is_file():
            return cand
    return None


def is_scannetpp_dir(path: Path) -> bool:
    return path.is_dir() and _scannetpp_scans(path) is not None


def read_scannetpp_scene(folder: Path | str) -> Scene:
    """Read one ScanNet++ scene (the scene folder or its ``scans/``; the scene id is the name of
    the folder above ``scans``).

    Raises:
        SceneFormatError: a required file is missing or malformed.
    """
    folder = Path(folder)
    scans = _scannetpp_scans(folder)
    if scans is None:
        raise SceneFormatError(f"{folder}: no mesh_aligned_0.05.ply here or in scans/")
    sid = scans.parent.name if scans.name == "scans" else scans.name
    vertices = read_ply_vertices(scans / "mesh_aligned_0.05.ply")
    segs = read_json(scans / "segments.json")
    anno = read_json(scans / "segments_anno.json")
    if not isinstance(segs, dict) or not isinstance(anno, dict):
        raise SceneFormatError(f"{scans}: segments/segments_anno JSON must be objects")
    objects = _objects(vertices, segs.get("segIndices"), anno.get("segGroups"), str(scans))
    return Scene(scene_id=sid, source_dataset="scannetpp", objects=objects, source_path=str(folder))
