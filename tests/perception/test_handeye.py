"""Hand-eye calibration: exact synthetic poses, then rendered ChArUco images with pixel noise."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pointlab.perception.extrinsics import RigidTransform
from pointlab.perception.frame import Intrinsics
from pointlab.perception.handeye import CharucoBoardSpec, detect_board, solve_hand_eye
from pointlab.sim_mock.charuco_render import render_board

INTR = Intrinsics(640, 480, 615.0, 615.0, 320.0, 240.0)
# Camera 0.75 m in front of the base (x = 0.75), 0.55 m up, looking back at the arm and down 40 deg.
R_bc = Rotation.from_euler("xyz", [-130, 0, 90], degrees=True).as_matrix()
T_BASE_CAM = RigidTransform.from_rt(R_bc, [0.75, 0.02, 0.55])
# Board on a bracket 0.12 m past the flange, printed face towards the wrist (board z = flange z).
T_FLANGE_BOARD = RigidTransform.from_rt(np.eye(3), [-0.10, -0.14, 0.12])


def flange_poses(n=12, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rpy = np.array([180, 0, 0]) + rng.uniform([-25, -25, -40], [25, 25, 40])
        xyz = rng.uniform([0.20, -0.12, 0.15], [0.32, 0.12, 0.30])
        out.append(RigidTransform.from_rt(Rotation.from_euler("xyz", rpy, degrees=True).as_matrix(), xyz))
    return out


def board_in_camera(f):
    return T_BASE_CAM.inverse() @ f @ T_FLANGE_BOARD


def rot_err_deg(a, b):
    return np.degrees(Rotation.from_matrix(a.rotation.T @ b.rotation).magnitude())


@pytest.mark.parametrize("method", ["PARK", "TSAI", "HORAUD", "DANIILIDIS"])
def test_exact_poses_recover_the_camera(method):
    fl = flange_poses()
    res = solve_hand_eye(fl, [board_in_camera(f) for f in fl], "eye_to_hand", method)
    np.testing.assert_allclose(res.transform.translation_m, T_BASE_CAM.translation_m, atol=1e-6)
    assert rot_err_deg(res.transform, T_BASE_CAM) < 1e-4
    assert max(res.residual_mm) < 1e-3


def test_eye_in_hand_exact():
    T_flange_cam = RigidTransform.from_rt(
        Rotation.from_euler("xyz", [0, 0, 90], degrees=True).as_matrix(), [0.05, 0.0, 0.03]
    )
    T_base_board = RigidTransform.from_rt(np.eye(3), [0.3, -0.1, 0.0])
    fl = flange_poses()
    cams = [(f @ T_flange_cam).inverse() @ T_base_board for f in fl]
    res = solve_hand_eye(fl, cams, "eye_in_hand", "PARK")
    np.testing.assert_allclose(res.transform.matrix, T_flange_cam.matrix, atol=1e-6)


def test_rendered_board_with_pixel_noise_recovers_within_2mm_0_2deg():
    spec = CharucoBoardSpec()
    fl, cams = [], []
    for i, f in enumerate(flange_poses(14)):
        img = render_board(spec, board_in_camera(f), INTR, noise_sigma=3.0, blur_sigma_px=0.7, seed=i)
        det = detect_board(img, INTR, spec)
        assert det is not None, f"board not detected in pose {i}"
        assert det.reprojection_px < 1.0  # sub-pixel corners, as on a real camera
        fl.append(f)
        cams.append(det.T_camera_board)
    res = solve_hand_eye(fl, cams, "eye_to_hand", "PARK")
    err_mm = np.linalg.norm(res.transform.translation_m - T_BASE_CAM.translation_m) * 1000
    assert err_mm < 2.0, err_mm
    assert rot_err_deg(res.transform, T_BASE_CAM) < 0.2
    assert 0 < np.mean(res.residual_mm) < 3.0  # noise shows up in the residuals, but small


def test_too_few_poses():
    with pytest.raises(ValueError, match="at least 3"):
        solve_hand_eye(flange_poses(2), [board_in_camera(f) for f in flange_poses(2)])


def test_no_board_in_an_empty_image():
    assert detect_board(np.full((480, 640, 3), 90, np.uint8), INTR) is None
