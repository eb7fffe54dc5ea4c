"""``pointlab sim snapshot``: the files it writes agree with the JSON it prints."""

from __future__ import annotations

import json

import cv2
import numpy as np
from typer.testing import CliRunner

from pointlab.bridge.cli import app


def test_snapshot_writes_colour_depth_and_a_mask_per_object(tmp_path):
    r = CliRunner().invoke(app, ["sim", "snapshot", "--out", str(tmp_path / "snap")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    snap = tmp_path / "snap"
    color = cv2.imread(str(snap / "color.png"), cv2.IMREAD_UNCHANGED)
    depth = cv2.imread(str(snap / "depth.png"), cv2.IMREAD_UNCHANGED)
    assert color.shape == (480, 640, 3) and depth.dtype == np.uint16 and depth.shape == (480, 640)
    assert out["depth_scale_m"] == 0.001 and out["intrinsics"]["fx"] == 615.0
    # table depth around 0.6-1.3 m, in millimetre units; a few percent of holes
    assert 600 < np.median(depth[depth > 0]) < 1300 and 0.85 < out["depth_valid_fraction"] < 0.99
    names = set(out["files"]["masks"])
    assert {"red cube", "blue bowl", "white mug", "small green cube"} <= names
    for name, path in {**out["files"]["masks"], "robot": "robot.png"}.items():
        m = cv2.imread(str(snap / path), cv2.IMREAD_GRAYSCALE)
        assert int((m == 255).sum()) == out["mask_pixels"][name] > 0, name
        assert set(np.unique(m)) <= {0, 255}
    assert out["mask_pixels"]["robot"] > 10000  # the arm is in the view


def test_snapshot_refuses_a_bad_scene_file(tmp_path):
    bad = tmp_path / "scene.toml"
    bad.write_text("[[objects]]\nname = 3\n")
    r = CliRunner().invoke(app, ["sim", "snapshot", "--out", str(tmp_path / "s"), "--scene", str(bad)])
    assert r.exit_code == 2 and "objects[0]" in r.output
