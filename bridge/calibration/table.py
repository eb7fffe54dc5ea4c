"""A stand-in calibration for recorded frames driven with the sim arm: put the recording's table
on the sim table.

Recorded frames (``replay:DIR``) have no hand-eye calibration to a robot. ``fit_table_calibration``
finds the dominant plane of the depth (the table) by RANSAC and places the robot base frame so that

- the table plane is ``z = 0`` (z up, towards the camera side of the plane);
- the camera looks along ``-x`` (it stands in front of the robot, as the sim camera does);
- the optical axis meets the table at ``(table_x_m, 0, 0)``.

Objects on the recorded table then become targets at their real heights above ``z = 0``, in front
of the base. It is not a calibration of any real robot: use it only with ``--robot sim``.
"""

from __future__ import annotations

import numpy as np

from pointlab.perception.extrinsics import Calibration, RigidTransform
from pointlab.perception.frame import RGBDFrame
from pointlab.bridge.errors import BridgeError

__all__ = ["fit_table_calibration", "TableFitError"]


class TableFitError(BridgeError, ValueError):
    """No table plane could be found (too few valid depth pixels, or the plane faces away)."""


def fit_table_calibration(
    frame: RGBDFrame,
    table_x_m: float = 0.29,
    *,
    step_px: int = 4,
    iterations: int = 300,
    inlier_m: float = 0.01,
    seed: int = 0,
) -> Calibration:
    """``T_base_camera`` that puts the frame's dominant depth plane at base ``z = 0`` (see module docstring).

    Args:
        frame: an RGB-D frame (depth aligned to colour).
        table_x_m: base-frame ``x`` (metres) where the optical axis meets the table.
        step_px: pixel subsampling of the depth for the fit.
        iterations: RANSAC iterations; inlier_m: plane distance of an inlier, metres.
        seed: RANSAC seed (the fit is reproducible).

    Raises:
        TableFitError: fewer than 100 valid depth samples, or fewer than 20 % of them on one plane,
            or an optical axis parallel to the plane.
    """
    intr = frame.intrinsics
    v, u = np.mgrid[0 : intr.height : step_px, 0 : intr.width : step_px]
    z = frame.depth[v, u].astype(np.float64) * frame.depth_scale_m
    ok = (z > 0.1) & (z < 4.0)
    if ok.sum() < 100:
        raise TableFitError(f"only {int(ok.sum())} valid depth samples")
    u, v, z = u[ok], v[ok], z[ok]
    pts = np.stack([(u - intr.ppx) / intr.fx * z, (v - intr.ppy) / intr.fy * z, z], axis=1)
    rng = np.random.default_rng(seed)
    best = None
    for _ in range(iterations):
        a, b, c = pts[rng.choice(len(pts), 3, replace=False)]
        n = np.cross(b - a, c - a)
        norm = np.linalg.norm(n)
        if norm < 1e-12:
            continue
        n /= norm
        inliers = np.abs((pts - a) @ n) < inlier_m
        if best is None or inliers.sum() > best.sum():
            best = inliers
    if best is None or best.mean() < 0.2:
        raise TableFitError("no plane holds 20 % of the depth samples")
    q = pts[best]
    centre = q.mean(axis=0)
    n = np.linalg.svd(q - centre, full_matrices=False)[2][2]  # least-squares normal of the inliers
    if n @ (-centre) < 0:  # normal towards the camera (the camera is above the table)
        n = -n
    zc = np.array([0.0, 0.0, 1.0])
    if abs(n @ zc) < 1e-3:
        raise TableFitError("the optical axis is parallel to the table")
    hit = zc * ((n @ centre) / (n @ zc))  # optical axis meets the plane
    ex = -(zc - (zc @ n) * n)  # the optical axis along the table, reversed: base +x points back at the camera
    ex /= np.linalg.norm(ex)
    ey = np.cross(n, ex)
    R = np.stack([ex, ey, n])  # rows: base axes in camera coordinates
    origin = hit - table_x_m * ex
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, -R @ origin
    residual_mm = float(np.sqrt(np.mean(((q - centre) @ n) ** 2)) * 1e3)
    return Calibration(
        RigidTransform(T),
        method="table_fit",
        residuals={"plane_rms_mm": round(residual_mm, 3), "inlier_fraction": round(float(best.mean()), 3)},
    )
