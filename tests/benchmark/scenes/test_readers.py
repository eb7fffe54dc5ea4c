"""Scene readers: real VSI-Bench meta and ReVSI boxes, ScanNet / ScanNet++ fixtures written in
their exact on-disk formats (binary PLY with colours and faces, segs/aggregation JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial import cKDTree

from pointlab.benchmark.scenes import OrientedBox, SceneFormatError, load_scenes


@pytest.fixture(scope="module")
def scenes_dir(shared_data: Path) -> Path:
    return shared_data / "scenes"


# ---------------------------------------------------------------- VSI-Bench meta (real)


def test_vsibench_meta_all_scenes_and_sources(scenes_dir):
    scenes = load_scenes(scenes_dir / "vsibench_meta")
    by_source = {}
    for s in scenes:
        by_source[s.source_dataset] = by_source.get(s.source_dataset, 0) + 1
    # The data README: 288 rooms, 88 ScanNet, 50 ScanNet++, 150 ARKitScenes.
    assert by_source == {"scannet": 88, "scannetpp": 50, "arkitscenes": 150}


def test_vsibench_boxes_reproduce_the_files_min_max(scenes_dir):
    """The file's own min/max are an independent check of the axes convention (rows = axes)."""
    path = scenes_dir / "vsibench_meta" / "scannetpp_meta_info_val.json"
    raw = json.loads(path.read_text())
    scene = next(s for s in load_scenes(path) if s.scene_id == "7b6477cb95")
    assert scene.room_size_m2 == pytest.approx(18.381678883006863)
    assert scene.room_center == pytest.approx([2.859799654671744, 2.1922446330727485, 1.7516181405793323])
    counts = {}
    for o in scene.objects:
        counts[o.label] = counts.get(o.label, 0) + 1
    assert counts == raw["7b6477cb95"]["object_counts"]
    for o in scene.objects:
        label, idx = o.object_id.split("#")
        entry = raw["7b6477cb95"]["object_bbox"][label][int(idx)]
        lo, hi = o.box.aabb()
        assert lo == pytest.approx(entry["min"], abs=1e-9)
        assert hi == pytest.approx(entry["max"], abs=1e-9)
        assert o.centroid == pytest.approx(entry["centroid"])


# ---------------------------------------------------------------- ReVSI boxes (real)


def test_revsi_door_stands_upright(scenes_dir):
    (scene,) = load_scenes(scenes_dir / "revsi_boxes" / "27dd4da69e_boxes.json")
    assert scene.scene_id == "27dd4da69e" and scene.source_dataset == "scannetpp"
    door = next(o for o in scene.objects if o.object_id == "0")
    assert door.label == "door"
    lo, hi = door.box.aabb()
    # extent [0.875, 1.997, 0.061]: the 1.997 m side is vertical (rotation column 1 = world z)
    assert hi[2] - lo[2] == pytest.approx(1.997, abs=1e-3)
    assert door.centroid == pytest.approx([1.01, 3.703, 1.101])
    assert scene.extra["qa_object_ids"]


def test_revsi_file_with_two_annotations_gives_two_variants(scenes_dir):
    scenes = load_scenes(scenes_dir / "revsi_boxes" / "bde1e479ad_boxes.json")
    assert [(s.scene_id, s.variant, len(s.objects)) for s in scenes] == [
        ("bde1e479ad", "revsi", 73),
        ("bde1e479ad", "vsi", 56),
    ]


# ---------------------------------------------------------------- box surface sampling


def test_unit_cube_surface_grid():
    box = OrientedBox(center=[1, 2, 3], extent=[1, 1, 1], rotation=np.eye(3))
    pts = box.sample_surface(0.5)
    # a 3x3x3 lattice minus its centre point: 26 surface points
    assert pts.shape == (26, 3)
    assert np.abs(pts - [1, 2, 3]).max(axis=1) == pytest.approx(np.full(26, 0.5))


def test_sampled_gap_between_two_rotated_boxes_is_exact():
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # 90 deg about z
    a = OrientedBox(center=[0, 0, 0], extent=[0.4, 0.2, 0.2], rotation=rot)  # x-half-width 0.1 after rotation
    b = OrientedBox(center=[0.35, 0, 0], extent=[0.1, 0.1, 0.1], rotation=np.eye(3))  # faces at x=0.3
    d, _ = cKDTree(b.sample_surface(0.01)).query(a.sample_surface(0.01))
    assert d.min() == pytest.approx(0.2, abs=1e-9)


def test_bad_rotation_is_rejected():
    with pytest.raises(SceneFormatError):
        OrientedBox(center=[0, 0, 0], extent=[1, 1, 1], rotation=np.ones((3, 3)))


# ---------------------------------------------------------------- mesh fixtures


def write_binary_ply(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """A binary little-endian PLY shaped like ScanNet's *_vh_clean_2.ply (xyz float, rgba uchar, faces)."""
    vdt = np.dtype(
        [("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1"), ("alpha", "u1")]
    )
    v = np.zeros(len(vertices), dtype=vdt)
    v["x"], v["y"], v["z"] = vertices.T
    v["red"] = 200
    v["alpha"] = 255
    fdt = np.dtype([("n", "u1"), ("i", "<i4", (3,))])
    f = np.zeros(len(faces), dtype=fdt)
    f["n"] = 3
    f["i"] = faces
    header = (
        "ply\nformat binary_little_endian 1.0\ncomment VCGLIB generated\n"
        f"element vertex {len(vertices)}\nproperty float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\n"
        f"element face {len(faces)}\nproperty list uchar int vertex_indices\nend_header\n"
    )
    path.write_bytes(header.encode("ascii") + v.tobytes() + f.tobytes())


# 8 vertices: a "table" quad at z=0.7 (0-3), a "cup" triangle above it (4-6), one unlabelled vertex (7)
VERTS = np.array(
    [
        [0, 0, 0.7],
        [1, 0, 0.7],
        [1, 1, 0.7],
        [0, 1, 0.7],
        [0.5, 0.5, 0.72],
        [0.6, 0.5, 0.72],
        [0.5, 0.6, 0.8],
        [5, 5, 5],
    ],
    dtype=np.float64,
)
FACES = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6]])


def test_scannet_scene_folder(tmp_path):
    sid = "scene0999_00"
    d = tmp_path / sid
    d.mkdir()
    write_binary_ply(d / f"{sid}_vh_clean_2.ply", VERTS, FACES)
    # segments: vertices 0,1 -> seg 10; 2,3 -> seg 11; 4,5,6 -> seg 20; 7 -> seg 99
    segs = {
        "params": {"kThresh": "0.0001", "segMinVerts": "20"},
        "sceneId": sid,
        "segIndices": [10, 10, 11, 11, 20, 20, 20, 99],
    }
    (d / f"{sid}_vh_clean_2.0.010000.segs.json").write_text(json.dumps(segs))
    agg = {
        "sceneId": f"scannet.{sid}",
        "appId": "Aggregator.v2",
        "segmentsFile": f"scannet.{sid}_vh_clean_2.0.010000.segs.json",
        "segGroups": [
            {"id": 0, "objectId": 0, "segments": [10, 11], "label": "Table"},
            {"id": 1, "objectId": 1, "segments": [20], "label": "cup"},
        ],
    }
    (d / f"{sid}.aggregation.json").write_text(json.dumps(agg))
    # axis alignment: rotate 90 deg about z, then shift by (10, 0, -0.5)
    m = [0, -1, 0, 10, 1, 0, 0, 0, 0, 0, 1, -0.5, 0, 0, 0, 1]
    (d / f"{sid}.txt").write_text(
        "colorHeight = 968\naxisAlignment = " + " ".join(map(str, m)) + "\nnumDepthFrames = 5\n"
    )

    (scene,) = load_scenes(d)
    assert (scene.scene_id, scene.source_dataset) == (sid, "scannet")
    table, cup = scene.objects
    assert (table.label, cup.label) == ("table", "cup")
    # table centroid before alignment (0.5, 0.5, 0.7) -> (10 - 0.5, 0.5, 0.2)
    assert table.centroid == pytest.approx([9.5, 0.5, 0.2])
    # cup vertices (0.5,0.5,.72),(0.6,0.5,.72),(0.5,0.6,.8): mean (0.5333, 0.5333, 0.7467) -> x' = 10 - y, y' = x
    assert cup.centroid == pytest.approx([10 - 1.6 / 3, 1.6 / 3, 2.24 / 3 - 0.5], abs=1e-6)
    assert cup.vertices.shape == (3, 3) and cup.box is None
    # the folder of folders form finds it too
    assert [s.scene_id for s in load_scenes(tmp_path)] == [sid]


def test_scannet_segindices_mismatch_is_a_format_error(tmp_path):
    sid = "scene0998_00"
    d = tmp_path / sid
    d.mkdir()
    write_binary_ply(d / f"{sid}_vh_clean_2.ply", VERTS, FACES)
    (d / f"{sid}_vh_clean_2.0.010000.segs.json").write_text(json.dumps({"segIndices": [1, 2]}))
    (d / f"{sid}.aggregation.json").write_text(json.dumps({"segGroups": []}))
    with pytest.raises(SceneFormatError, match="segIndices has 2 entries for 8"):
        load_scenes(d)


def test_scannetpp_scene_folder(tmp_path):
    scans = tmp_path / "0a1b2c3d4e" / "scans"
    scans.mkdir(parents=True)
    write_binary_ply(scans / "mesh_aligned_0.05.ply", VERTS, FACES)
    # ScanNet++: one segment per vertex, and segGroups list vertex (= segment) ids
    (scans / "segments.json").write_text(json.dumps({"segIndices": list(range(8))}))
    anno = {
        "sceneId": "0a1b2c3d4e",
        "segGroups": [
            {"id": 1, "objectId": 1, "label": "desk", "segments": [0, 1, 2, 3], "obb": {}},
            {"id": 2, "objectId": 2, "label": "computer mouse", "segments": [4, 5, 6]},
        ],
    }
    (scans / "segments_anno.json").write_text(json.dumps(anno))
    for path in (tmp_path / "0a1b2c3d4e", scans):
        (scene,) = load_scenes(path)
        assert (scene.scene_id, scene.source_dataset) == ("0a1b2c3d4e", "scannetpp")
        desk, mouse = scene.objects
        assert desk.label == "desk" and desk.centroid == pytest.approx([0.5, 0.5, 0.7])
        assert mouse.label == "computer mouse"
        assert mouse.centroid == pytest.approx([1.6 / 3, 1.6 / 3, 2.24 / 3])


def test_corrupt_and_missing_inputs(tmp_path):
    bad = tmp_path / "x_boxes.json"
    bad.write_text("{not json")
    with pytest.raises(SceneFormatError, match="not readable JSON"):
        load_scenes(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(SceneFormatError, match="neither"):
        load_scenes(other)
    with pytest.raises(SceneFormatError, match="no such file"):
        load_scenes(tmp_path / "absent")
    broken = tmp_path / "y_boxes.json"
    broken.write_text(
        json.dumps(
            {
                "objects": {
                    "1": {"name": "cup", "obb": {"center": [0, 0], "extent": [1, 1, 1], "rotation": np.eye(3).tolist()}}
                }
            }
        )
    )
    with pytest.raises(SceneFormatError, match="object 1"):
        load_scenes(broken)
