"""The Lite 6 model data the MuJoCo sim ships as package data, and the build step that makes it.

Source: ``../shared/data/robots/lite6_meshes/`` (xArm-Developer/xarm_ros2 ``xarm_description``,
Copyright (c) 2018, UFACTORY Inc., BSD-3-Clause; the licence is shipped beside the output as
``LICENSE.xarm_ros2``). ``build_lite6_assets(src, out)`` writes into ``sim_mock/assets/lite6/``:

- ``visual/<link>.stl``: the visual meshes decimated with fast-simplification (quadric error
  metric, through trimesh) to about ``VISUAL_KEEP`` of their triangles: the camera sees the arm at
  0.5-1 m where the removed detail is below a pixel, and software rendering (Mesa llvmpipe) costs
  time per triangle;
- ``collision/<link>.stl``: the convex hull of each collision mesh (MuJoCo collides a mesh as its
  convex hull anyway, so shipping the hull loses nothing the physics uses), hull vertices reduced
  to at most ``HULL_MAX_FACES`` faces;
- the Lite gripper's mesh is one body with its two finger plates cast in (open, 43.6 mm apart):
  every triangle below ``GRIPPER_FINGER_Z_M`` (the gripper frame's z, i.e. the finger plates) is
  removed from both its meshes, because the sim models the fingers as two actuated geoms;
- ``inertials.json``: mass (kg), centre of mass (m, link frame) and full inertia (kg m^2, MuJoCo
  order ``ixx iyy izz ixy ixz iyz``) of every link, read from the xacro files.

Units: metres (the STL files are in metres, each in its link's frame with zero visual origin).
The build needs trimesh and fast-simplification; the sim at run time needs neither.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "LINK_MESHES",
    "ASSET_DIR",
    "asset_dir",
    "read_xacro_inertials",
    "build_lite6_assets",
    "load_inertials",
    "VISUAL_KEEP",
    "HULL_MAX_FACES",
    "GRIPPER_FINGER_Z_M",
]

# mesh file stem -> link name in the xacro (prefix removed)
LINK_MESHES: dict[str, str] = {
    "base": "link_base",
    "link1": "link1",
    "link2": "link2",
    "link3": "link3",
    "link4": "link4",
    "link5": "link5",
    "link6": "link6",
    "gripper_lite": "uflite_gripper_link",
    "vacuum_gripper_lite": "uflite_vacuum_gripper_link",
}
_XACROS = ("lite6.urdf.xacro", "lite_gripper.urdf.xacro", "lite_vacuum_gripper.urdf.xacro")
VISUAL_KEEP = 0.25
HULL_MAX_FACES = 200
# The gripper body ends at z = 0.058 m in its frame; the finger plates hang from 0.0636 to 0.0836 m.
GRIPPER_FINGER_Z_M = 0.0585
ASSET_DIR = "assets/lite6"


def asset_dir() -> Path:
    """The shipped ``assets/lite6`` folder inside the installed package."""
    return Path(str(resources.files("pointlab.sim_mock").joinpath(ASSET_DIR)))


def read_xacro_inertials(src_dir: str | Path) -> dict[str, dict]:
    """``{link: {"mass_kg", "com_m": [x, y, z], "inertia": [ixx, iyy, izz, ixy, ixz, iyz]}}`` of
    every link with an ``<inertial>`` in the three xacro files of ``src_dir`` (``${prefix}``
    removed from names).

    Raises:
        FileNotFoundError: a xacro file is missing. ValueError: an inertial is malformed.
    """
    out: dict[str, dict] = {}
    for name in _XACROS:
        root = ET.parse(Path(src_dir) / name).getroot()
        for link in root.iter("link"):
            inertial = link.find("inertial")
            if inertial is None:
                continue
            lname = link.get("name", "").replace("${prefix}", "")
            origin, mass, inertia = inertial.find("origin"), inertial.find("mass"), inertial.find("inertia")
            if origin is None or mass is None or inertia is None:
                raise ValueError(f"{name}: link {lname} has an incomplete <inertial>")
            if any(float(c) != 0.0 for c in origin.get("rpy", "0 0 0").split()):
                raise ValueError(f"{name}: link {lname}: rotated inertial frames are not supported")
            keys = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
            value, xyz, moments = mass.get("value"), origin.get("xyz"), [inertia.get(k) for k in keys]
            if value is None or xyz is None or None in moments:
                raise ValueError(f"{name}: link {lname} has an incomplete <inertial>")
            out[lname] = {
                "mass_kg": float(value),
                "com_m": [float(c) for c in xyz.split()],
                "inertia": [float(m) for m in moments if m is not None],
            }
    return out


def load_inertials() -> dict[str, dict]:
    """The shipped ``inertials.json`` (format of ``read_xacro_inertials``)."""
    return json.loads((asset_dir() / "inertials.json").read_text(encoding="utf-8"))


def _strip_fingers(mesh):
    keep = mesh.triangles_center[:, 2] < GRIPPER_FINGER_Z_M
    mesh.update_faces(keep)
    mesh.remove_unreferenced_vertices()
    return mesh


def _hull(mesh):
    hull = mesh.convex_hull
    if len(hull.faces) > HULL_MAX_FACES:
        hull = hull.simplify_quadric_decimation(face_count=HULL_MAX_FACES).convex_hull
    return hull


def build_lite6_assets(src_dir: str | Path, out_dir: str | Path | None = None) -> dict:
    """Write the shipped model data (see the module docstring) from the xarm_ros2 meshes in
    ``src_dir`` into ``out_dir`` (default: the package's ``assets/lite6``).

    Returns:
        ``{"visual": {stem: [faces_in, faces_out]}, "collision": {...}, "bytes": total size}``.

    Raises:
        FileNotFoundError: a mesh or xacro file is missing.
    """
    import trimesh

    src, out = Path(src_dir), Path(out_dir) if out_dir is not None else asset_dir()
    report: dict = {"visual": {}, "collision": {}}
    for kind in ("visual", "collision"):
        (out / kind).mkdir(parents=True, exist_ok=True)
        for stem in LINK_MESHES:
            mesh = trimesh.load(src / kind / f"{stem}.stl", force="mesh")
            assert isinstance(mesh, trimesh.Trimesh)  # what force="mesh" returns
            n_in = len(mesh.faces)
            if stem == "gripper_lite":
                mesh = _strip_fingers(mesh)
            if kind == "visual":
                target = max(200, int(len(mesh.faces) * VISUAL_KEEP))
                mesh = mesh.simplify_quadric_decimation(face_count=target)
            else:
                mesh = _hull(mesh)
            mesh.export(out / kind / f"{stem}.stl", file_type="stl")
            report[kind][stem] = [n_in, int(len(mesh.faces))]
    (out / "inertials.json").write_text(json.dumps(read_xacro_inertials(src), indent=1) + "\n", encoding="utf-8")
    licence = src / "LICENSE.xarm_ros2"
    if licence.exists():
        shutil.copyfile(licence, out / "LICENSE.xarm_ros2")
    report["bytes"] = int(sum(p.stat().st_size for p in out.rglob("*") if p.is_file()))
    return report


def mesh_bounds_m(path: str | Path) -> np.ndarray:
    """``(2, 3)`` min/max corner of a binary STL's vertices, metres (no trimesh needed)."""
    data = Path(path).read_bytes()
    n = int(np.frombuffer(data, dtype="<u4", count=1, offset=80)[0])
    rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]), count=n, offset=84)
    v = rec["v"].reshape(-1, 3)
    return np.stack([v.min(axis=0), v.max(axis=0)]).astype(np.float64)
