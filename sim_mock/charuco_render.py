"""Renders a ChArUco board into a pinhole camera image at a known pose (the test double for a
printed board in front of a RealSense).

The board is planar, so its image is an exact homography of the board's own picture
(``board.generateImage``): the four outer corners are projected with the intrinsics and the board
picture is warped onto the frame. Pixel noise: Gaussian intensity noise and a slight blur, which
move detected corners by a few tenths of a pixel as on a real camera.
"""

from __future__ import annotations

import cv2
import numpy as np

from pointlab.perception.extrinsics import RigidTransform
from pointlab.perception.frame import Intrinsics
from pointlab.perception.handeye import CharucoBoardSpec

__all__ = ["render_board"]

_PX_PER_M = 6000.0  # board picture resolution: 6 px per mm


def render_board(
    spec: CharucoBoardSpec,
    T_camera_board: RigidTransform,
    intrinsics: Intrinsics,
    background: np.ndarray | None = None,
    noise_sigma: float = 2.0,
    blur_sigma_px: float = 0.6,
    seed: int = 0,
) -> np.ndarray:
    """Return an ``(H, W, 3)`` uint8 RGB image with the board drawn at ``T_camera_board`` (metres).

    Board frame (OpenCV's): origin at the top-left outer corner, x along the squares_x side, y
    along the squares_y side, z into the board (away from a camera that sees its printed face).
    """
    w_m, h_m = spec.size_m
    pic_w, pic_h = int(round(w_m * _PX_PER_M)), int(round(h_m * _PX_PER_M))
    pic = spec.board().generateImage((pic_w, pic_h), marginSize=0)
    corners_board = np.array([[0, 0, 0], [w_m, 0, 0], [w_m, h_m, 0], [0, h_m, 0]], dtype=np.float64)
    cam_pts = T_camera_board.apply(corners_board)
    if np.any(cam_pts[:, 2] <= 0.05):
        raise ValueError("board is behind or too close to the camera")
    img_pts = intrinsics.project(cam_pts).astype(np.float32)
    src = np.array([[0, 0], [pic_w, 0], [pic_w, pic_h], [0, pic_h]], dtype=np.float32)
    H = cv2.getPerspectiveTransform(src, img_pts)
    size = (intrinsics.width, intrinsics.height)
    # a white border around the printed squares, as on a real print
    warped = cv2.warpPerspective(pic, H, size, flags=cv2.INTER_AREA, borderValue=0)
    mask = cv2.warpPerspective(np.full((pic_h, pic_w), 255, np.uint8), H, size, flags=cv2.INTER_NEAREST)
    out: np.ndarray
    if background is None:
        out = np.full((intrinsics.height, intrinsics.width), 90, np.uint8)
    else:
        out = cv2.cvtColor(background, cv2.COLOR_RGB2GRAY)
    margin = cv2.dilate(mask, np.ones((15, 15), np.uint8))
    out = np.where(margin > 0, 255, out)
    out = np.where(mask > 0, warped, out).astype(np.float64)
    if blur_sigma_px > 0:
        out = cv2.GaussianBlur(out, (0, 0), blur_sigma_px)
    rng = np.random.default_rng(seed)
    out = np.clip(out + rng.normal(0, noise_sigma, out.shape), 0, 255).astype(np.uint8)
    return cv2.cvtColor(out, cv2.COLOR_GRAY2RGB)
