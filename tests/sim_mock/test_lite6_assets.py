"""The Lite 6 model data shipped in the package against the xarm_ros2 sources in ../shared/data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pointlab.sim_mock.lite6_assets import LINK_MESHES, asset_dir, load_inertials, mesh_bounds_m, read_xacro_inertials


@pytest.fixture(scope="module")
def meshes(shared_data):
    p = shared_data / "robots" / "lite6_meshes"
    if not (p / "lite6.urdf.xacro").exists():
        pytest.skip(f"{p} is absent")
    return p


def test_shipped_inertials_are_the_xacro_values(meshes):
    shipped = load_inertials()
    assert shipped == read_xacro_inertials(meshes)
    # spot values read off the xacro by hand
    assert shipped["link2"]["mass_kg"] == 1.192 and shipped["link2"]["com_m"] == [0.178, 0.0, 0.0576]
    assert shipped["uflite_gripper_link"]["mass_kg"] == 0.28
    assert shipped["uflite_vacuum_gripper_link"]["mass_kg"] == 0.14


def test_shipped_meshes_keep_the_source_extent(meshes):
    for stem in LINK_MESHES:
        for kind in ("visual", "collision"):
            src, out = mesh_bounds_m(meshes / kind / f"{stem}.stl"), mesh_bounds_m(asset_dir() / kind / f"{stem}.stl")
            if stem == "gripper_lite":  # the finger plates were cut off (triangles centred above GRIPPER_FINGER_Z_M)
                assert out[1, 2] < 0.0636 and src[1, 2] > 0.08  # the plates start at 0.0636 m
                src[1, 2] = out[1, 2]
            # decimation moves the extent by at most a millimetre, the reduced hulls by at most two
            np.testing.assert_allclose(out, src, atol=1e-3 if kind == "visual" else 2e-3, err_msg=f"{kind}/{stem}")


def test_shipped_data_is_small_and_licensed():
    d = asset_dir()
    total = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    assert total < 1_200_000
    assert "BSD" in (d / "LICENSE.xarm_ros2").read_text() or "Redistribution" in (d / "LICENSE.xarm_ros2").read_text()
    assert json.loads((d / "inertials.json").read_text())
