"""fit_table_calibration: recovers a known camera pose from a flat table, and fits the real table of
uoc_tabletop frame 000003."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.bridge.calibration.table import TableFitError, fit_table_calibration
from pointlab.perception.frame import Intrinsics, RGBDFrame
from pointlab.perception.replay import load_rgbd_frame


def _flat_table_frame(T_base_camera: np.ndarray, intr: Intrinsics) -> RGBDFrame:
    """Depth (mm) of the plane z_base = 0 seen from T_base_camera: for the ray d = ((u - ppx)/fx,
    (v - ppy)/fy, 1) the range along the optical axis is t = -eye_z / (R d)_z."""
    v, u = np.mgrid[0 : intr.height, 0 : intr.width].astype(np.float64)
    d = np.stack([(u - intr.ppx) / intr.fx, (v - intr.ppy) / intr.fy, np.ones_like(u)], axis=-1)
    dz = d @ T_base_camera[2, :3]
    t = np.where(dz < 0, -T_base_camera[2, 3] / np.where(dz < 0, dz, -1), 0.0)
    depth = np.rint(t * 1000).astype(np.uint16)
    return RGBDFrame(np.zeros((intr.height, intr.width, 3), np.uint8), depth, 0.001, intr, 0)


def test_recovers_the_sim_camera_pose_from_a_flat_table():
    # The sim camera: eye (0.78, 0, 0.52) looking at (0.29, 0, 0), image up towards +z. Its optical
    # axis meets the table at x = 0.29 and it looks along -x: exactly the convention of the fit.
    eye, target = np.array([0.78, 0.0, 0.52]), np.array([0.29, 0.0, 0.0])
    z = (target - eye) / np.linalg.norm(target - eye)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = np.stack([x, y, z], axis=1), eye
    intr = Intrinsics(640, 480, 615.0, 615.0, 321.0, 239.0)
    cal = fit_table_calibration(_flat_table_frame(T, intr), table_x_m=0.29)
    # depth is quantised to 1 mm, hence millimetre-level agreement
    np.testing.assert_allclose(cal.T_base_camera.translation_m, eye, atol=3e-3)
    np.testing.assert_allclose(cal.T_base_camera.rotation, T[:3, :3], atol=3e-3)
    assert cal.residuals["inlier_fraction"] > 0.99 and cal.method == "table_fit"


def test_real_table_becomes_z_zero(uoc_tabletop):
    f = load_rgbd_frame(uoc_tabletop, 3, stamp_ns=0)
    cal = fit_table_calibration(f)
    assert cal.residuals["plane_rms_mm"] < 5.0 and cal.residuals["inlier_fraction"] > 0.5
    # the camera is above the table (z > 0) and in front of the base (x > 0.29)
    cam = cal.T_base_camera.translation_m
    assert cam[2] > 0.2 and cam[0] > 0.29 and abs(cam[1]) < 1e-9
    # the optical axis meets the table at (0.29, 0, 0): the principal-point ray, scaled to the
    # plane, maps there (the camera origin plus a ray along its optical axis)
    R, t = cal.T_base_camera.rotation, cam
    axis_base = R @ np.array([0.0, 0.0, 1.0])
    hit = t + axis_base * (-t[2] / axis_base[2])
    np.testing.assert_allclose(hit, [0.29, 0.0, 0.0], atol=1e-9)


def test_no_depth_is_an_error():
    intr = Intrinsics(64, 48, 60.0, 60.0, 32.0, 24.0)
    f = RGBDFrame(np.zeros((48, 64, 3), np.uint8), np.zeros((48, 64), np.uint16), 0.001, intr, 0)
    with pytest.raises(TableFitError):
        fit_table_calibration(f)
