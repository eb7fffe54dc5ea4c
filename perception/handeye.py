"""Hand-eye calibration with a ChArUco board (OpenCV >= 4.7 API: `cv2.aruco.CharucoDetector`, `cv2.calibrateHandEye`).

Two set-ups:

- ``eye_to_hand``: the camera is fixed beside the arm and the board is held by the gripper. The
  result is ``T_base_camera`` (the camera's pose in the base frame), what the targeting node needs.
- ``eye_in_hand``: the camera rides on the flange and the board lies fixed on the table. The result
  is ``T_flange_camera``.

``cv2.calibrateHandEye`` is given, per pose *i*, the flange pose ``T_base_flange_i`` (eye-in-hand) or
its inverse (eye-to-hand, OpenCV's documented trick), and the board pose ``T_camera_board_i`` from
``solvePnP`` on the detected ChArUco corners.

Residuals: with the solved transform X, the quantity that must be the same for every pose (the
board in the flange frame for eye-to-hand, the board in the base frame for eye-in-hand) is computed
per pose; its spread around the mean is reported per pose in millimetres and degrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

from .extrinsics import RigidTransform
from .frame import Intrinsics

__all__ = [
    "CharucoBoardSpec",
    "BoardDetection",
    "detect_board",
    "HandEyeResult",
    "solve_hand_eye",
    "mean_transform",
    "HAND_EYE_METHODS",
]

HAND_EYE_METHODS = {
    "TSAI": cv2.CALIB_HAND_EYE_TSAI,
    "PARK": cv2.CALIB_HAND_EYE_PARK,
    "HORAUD": cv2.CALIB_HAND_EYE_HORAUD,
    "ANDREFF": cv2.CALIB_HAND_EYE_ANDREFF,
    "DANIILIDIS": cv2.CALIB_HAND_EYE_DANIILIDIS,
}


@dataclass(frozen=True)
class CharucoBoardSpec:
    """A ChArUco board: ``squares_x`` x ``squares_y`` squares of ``square_m`` metres with ArUco markers
    of ``marker_m`` metres from ``dictionary`` (an OpenCV ``DICT_*`` name)."""

    squares_x: int = 5
    squares_y: int = 7
    square_m: float = 0.04
    marker_m: float = 0.03
    dictionary: str = "DICT_5X5_100"

    def board(self) -> "cv2.aruco.CharucoBoard":
        d = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary))
        return cv2.aruco.CharucoBoard((self.squares_x, self.squares_y), self.square_m, self.marker_m, d)

    @property
    def size_m(self) -> tuple[float, float]:
        return self.squares_x * self.square_m, self.squares_y * self.square_m


@dataclass(frozen=True)
class BoardDetection:
    """A board found in one image.

    Attributes:
        T_camera_board: board pose in the camera optical frame (metres).
        corners: number of ChArUco corners used.
        reprojection_px: RMS reprojection error of those corners, pixels.
    """

    T_camera_board: RigidTransform
    corners: int
    reprojection_px: float


def detect_board(
    image_rgb: np.ndarray, intrinsics: Intrinsics, spec: CharucoBoardSpec = CharucoBoardSpec(), min_corners: int = 6
) -> BoardDetection | None:
    """Find the board in an ``(H, W, 3)`` uint8 RGB image and solve its pose with ``cv2.solvePnP``.

    Returns ``None`` when fewer than ``min_corners`` ChArUco corners are found."""
    board = spec.board()
    gray = cv2.cvtColor(image_rgb, cv2.COLOR_RGB2GRAY)
    corners, ids, _, _ = cv2.aruco.CharucoDetector(board).detectBoard(gray)
    if corners is None or ids is None or len(ids) < min_corners:
        return None
    obj, img = board.matchImagePoints(corners, ids)  # type: ignore[call-overload]  # cv2 stubs: an (N,1,2) array is an InputArrayOfArrays
    K, dist = intrinsics.K, np.array(intrinsics.coeffs)
    ok, rvec, tvec = cv2.solvePnP(obj, img, K, dist, flags=cv2.SOLVEPNP_ITERATIVE)
    if not ok:
        return None
    proj, _ = cv2.projectPoints(obj, rvec, tvec, K, dist)
    rms = float(np.sqrt(np.mean(np.sum((proj.reshape(-1, 2) - img.reshape(-1, 2)) ** 2, axis=1))))
    T = RigidTransform.from_rt(cv2.Rodrigues(rvec)[0], tvec.reshape(3))
    return BoardDetection(T, int(len(ids)), rms)


@dataclass
class HandEyeResult:
    """Result of ``solve_hand_eye``.

    Attributes:
        transform: ``T_base_camera`` (eye_to_hand) or ``T_flange_camera`` (eye_in_hand), metres.
        setup, method: what was solved and how.
        residual_mm, residual_deg: per pose, the distance of the pose's invariant from the mean.
    """

    transform: RigidTransform
    setup: str
    method: str
    residual_mm: list[float] = field(default_factory=list)
    residual_deg: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "setup": self.setup,
            "method": self.method,
            "poses": len(self.residual_mm),
            "residual_mm": {
                "mean": float(np.mean(self.residual_mm)),
                "max": float(np.max(self.residual_mm)),
                "per_pose": [round(x, 3) for x in self.residual_mm],
            },
            "residual_deg": {
                "mean": float(np.mean(self.residual_deg)),
                "max": float(np.max(self.residual_deg)),
                "per_pose": [round(x, 4) for x in self.residual_deg],
            },
        }


def mean_transform(ts: list[np.ndarray]) -> np.ndarray:
    """The mean of rigid transforms ``ts`` (each ``(4, 4)``): chordal L2 mean of the rotations
    (scipy ``Rotation.mean``), arithmetic mean of the translations (same unit as the inputs)."""
    m = np.eye(4)
    m[:3, :3] = Rotation.from_matrix(np.stack([t[:3, :3] for t in ts])).mean().as_matrix()
    m[:3, 3] = np.mean([t[:3, 3] for t in ts], axis=0)
    return m


def solve_hand_eye(
    T_base_flange: list[RigidTransform],
    T_camera_board: list[RigidTransform],
    setup: str = "eye_to_hand",
    method: str = "PARK",
) -> HandEyeResult:
    """Solve the hand-eye transform from paired flange and board poses (metres).

    Args:
        T_base_flange: flange pose in the base frame per pose (from the arm).
        T_camera_board: board pose in the camera frame per pose (from ``detect_board``).
        setup: ``eye_to_hand`` or ``eye_in_hand``.
        method: one of ``HAND_EYE_METHODS`` (PARK was the most robust in one public comparison).

    Raises:
        ValueError: fewer than 3 pose pairs, mismatched lengths, unknown setup or method.
    """
    if len(T_base_flange) != len(T_camera_board) or len(T_base_flange) < 3:
        raise ValueError("need at least 3 paired poses (10-20 recommended) with non-parallel rotation axes")
    if setup not in ("eye_to_hand", "eye_in_hand"):
        raise ValueError(f"unknown setup {setup!r}")
    if method not in HAND_EYE_METHODS:
        raise ValueError(f"unknown method {method!r}; one of {sorted(HAND_EYE_METHODS)}")
    # eye-to-hand: OpenCV solves it when given base->gripper instead of gripper->base
    arm = [t.inverse() if setup == "eye_to_hand" else t for t in T_base_flange]
    R, t = cv2.calibrateHandEye(
        [a.rotation for a in arm],
        [a.translation_m for a in arm],
        [c.rotation for c in T_camera_board],
        [c.translation_m for c in T_camera_board],
        method=HAND_EYE_METHODS[method],
    )
    X = RigidTransform.from_rt(R, t.reshape(3))
    if setup == "eye_to_hand":  # board in the flange frame must be constant
        inv = [(f.inverse() @ X @ c).matrix for f, c in zip(T_base_flange, T_camera_board)]
    else:  # board in the base frame must be constant
        inv = [(f @ X @ c).matrix for f, c in zip(T_base_flange, T_camera_board)]
    mean = mean_transform(inv)
    res_mm = [float(np.linalg.norm(m[:3, 3] - mean[:3, 3]) * 1000) for m in inv]
    res_deg = [float(np.degrees(Rotation.from_matrix(mean[:3, :3].T @ m[:3, :3]).magnitude())) for m in inv]
    return HandEyeResult(X, setup, method, res_mm, res_deg)
