"""``BoardCamera``: the sim camera with a ChArUco calibration board in view (the ``sim-board`` source).

The test double for a lab calibrating a RealSense against a Lite 6: the tabletop of a ``SimWorld``
rendered as by the ``sim`` camera, with a printed ChArUco board drawn over it by
``charuco_render.render_board`` (homography of the board picture, intensity noise and blur, so the
detected corners carry realistic sub-pixel noise). Three mounts:

- ``hand`` (eye-to-hand, the default): the camera is the world's fixed camera and the board is
  rigidly mounted on the TCP at ``T_tcp_board``; its pose follows the sim arm's TCP.
- ``table``: the camera is the world's fixed camera and the board lies on the table at
  ``T_base_board`` (a fixed board in a fixed camera: for checks, not for hand-eye).
- ``wrist`` (eye-in-hand): the camera rides on the TCP at ``T_tcp_camera`` and the board lies on the
  table at ``T_base_board``; the cleared table is drawn from the moving camera (a plane: flat colour, exact depth).

The truth the calibration must recover: ``world.T_base_camera`` (``hand``) or ``T_tcp_camera``
(``wrist``). The TCP pose used is the one the sim controller reports (``world.arm``), so in sim the
arm reports its pose exactly and all error comes from the image.

Depth: where the board plate is in front of the scene, the depth is the plate's (plane through the
board, ray by ray), so a depth reading on the board is right too. A board on the table lies on a
cleared table, as a lab would calibrate: connecting a ``table`` or ``wrist`` camera sets the scene's
objects aside (``SimWorld.clear_table``; the arm must not hit them while hovering over the board),
and the wrist camera draws the table plane alone.

Spec: ``sim-board`` or ``sim-board:OPTIONS``, comma-separated options: one mount (``hand``, ``table``,
``wrist``), ``clean`` (no pixel noise, no depth noise), ``board=SX x SY:SQUARE_M:MARKER_M:DICT``
(as ``pointlab calibrate --board``, e.g. ``board=5x7:0.04:0.03:DICT_5X5_100``). Registered as the
``sim-board`` entry point of ``pointlab.camera_sources`` (pyproject.toml).
"""

from __future__ import annotations

import time
from typing import Callable

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

from pointlab.perception.camera import Camera
from pointlab.perception.errors import CameraSourceError
from pointlab.perception.extrinsics import RigidTransform
from pointlab.perception.frame import RGBDFrame
from pointlab.perception.handeye import CharucoBoardSpec

from .camera import DEPTH_SCALE_M, SimCamera
from .charuco_render import render_board
from .world import SimWorld, default_world

__all__ = [
    "BoardCamera",
    "MOUNTS",
    "board_mounted_at",
    "DEFAULT_T_TCP_BOARD",
    "DEFAULT_T_BASE_BOARD",
    "DEFAULT_T_TCP_CAMERA",
    "tcp_transform",
]

MOUNTS = ("hand", "table", "wrist")
_MARGIN_PX = 9  # render_board's white paper margin (15x15 dilation) plus its blur


def _plane_depth(intr, normal_cam: np.ndarray, point_cam: np.ndarray) -> np.ndarray:
    """``(H, W)`` optical z of a plane (normal and a point in the camera frame) at every pixel, by
    ray-plane intersection: ``n . (z * ray) = n . point`` with ``ray = (x_n, y_n, 1)``; inf where
    the ray is parallel to it."""
    u, v = np.meshgrid(np.arange(intr.width), np.arange(intr.height))
    n = normal_cam
    denom = n[0] * (u - intr.ppx) / intr.fx + n[1] * (v - intr.ppy) / intr.fy + n[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(denom) > 1e-9, float(n @ point_cam) / denom, np.inf)


def _table_view(intr, T_cam_base: RigidTransform, table_z_m: float, table_rgb) -> tuple[np.ndarray, np.ndarray]:
    """Colour and depth (metres) of the cleared table plane seen from a camera (a wrist camera over
    the table sees only the table top): flat table colour, 0 depth where the ray misses it."""
    n = T_cam_base.rotation[:, 2]
    o = T_cam_base.apply(np.array([0.0, 0.0, table_z_m]))
    z = _plane_depth(intr, n, o)
    hit = np.isfinite(z) & (z > 0)
    depth = np.where(hit, z, 0.0).astype(np.float32)
    color = np.zeros((intr.height, intr.width, 3), np.uint8)
    color[hit] = table_rgb
    return color, depth


def board_mounted_at(spec: CharucoBoardSpec, centre_m, rotation: np.ndarray) -> RigidTransform:
    """``T_parent_board`` of a board whose centre is at ``centre_m`` (parent frame, metres) with
    orientation ``rotation`` (3x3; board frame as OpenCV's: origin at the top-left outer corner, z into
    the board)."""
    w_m, h_m = spec.size_m
    R = np.asarray(rotation, dtype=np.float64)
    return RigidTransform.from_rt(R, np.asarray(centre_m, dtype=np.float64) - R @ [w_m / 2, h_m / 2, 0.0])


def _board_in_hand(spec: CharucoBoardSpec) -> RigidTransform:
    # A plate on a bracket 14 cm in front of and 9 cm below the TCP, tilted 45 deg about the tool's y
    # axis, so that with the tool pointing down its printed face looks at the default camera (which
    # stands in front of the table, looking down at ~47 deg); the 7-square side runs along tool y.
    # With the TCP at (0.28, 0, 0.26) m the board's centre is near the image centre.
    return board_mounted_at(spec, [0.14, 0.0, 0.09], Rotation.from_euler("y", -45, degrees=True).as_matrix())


def _board_on_table(spec: CharucoBoardSpec) -> RigidTransform:
    # Face up (board z = -base z), centred at (0.28, 0, 0) on the table, 7-square side along base y.
    return board_mounted_at(spec, [0.28, 0.0, 0.0005], np.diag([1.0, -1.0, -1.0]))


DEFAULT_T_TCP_BOARD = _board_in_hand(CharucoBoardSpec())
DEFAULT_T_BASE_BOARD = _board_on_table(CharucoBoardSpec())
# A wrist camera on a bracket 7 cm beside the tool axis and 12 cm above the TCP (towards the flange),
# looking along the tool (down when the tool points down), image x along tool -y.
DEFAULT_T_TCP_CAMERA = RigidTransform.from_rt(
    Rotation.from_euler("z", 90, degrees=True).as_matrix(), np.array([0.07, 0.0, -0.12])
)


def tcp_transform(tcp_m, rpy_deg) -> RigidTransform:
    """``T_base_tcp`` from a TCP position (metres) and xArm roll/pitch/yaw (degrees, fixed axes)."""
    return RigidTransform.from_xyz_rpy(np.asarray(tcp_m, dtype=np.float64), np.radians(rpy_deg))


class BoardCamera(Camera):
    """The sim tabletop with a ChArUco board in view (module docstring).

    Args:
        world: the world (default: the process-wide ``default_world()``, shared with ``make_arm("sim")``).
        mount: ``hand``, ``table`` or ``wrist``.
        board: the printed board.
        T_tcp_board: board on the TCP (``hand``), metres (default: a 45-degree bracket, see source).
        T_base_board: board on the table (``table``, ``wrist``), metres.
        T_tcp_camera: camera on the TCP (``wrist``), metres.
        fps: frame rate ``read()`` paces itself to (0 = none).
        seed: noise seed (frame ``k`` uses ``seed + k``, so frames differ but runs repeat).
        noise: pixel noise and blur on the board, and the sim camera's depth/colour noise.
        noise_sigma: board intensity noise (grey levels); blur_sigma_px: board blur (pixels).
        tcp_source: returns the true ``T_base_tcp`` now (default: the world's sim arm); e.g. the xArm
            controller emulator's pose, to calibrate through the real SDK.

    Raises:
        CameraSourceError: unknown mount.
    """

    def __init__(
        self,
        world: SimWorld | None = None,
        mount: str = "hand",
        board: CharucoBoardSpec = CharucoBoardSpec(),
        T_tcp_board: RigidTransform | None = None,
        T_base_board: RigidTransform | None = None,
        T_tcp_camera: RigidTransform = DEFAULT_T_TCP_CAMERA,
        fps: float = 30.0,
        seed: int = 0,
        noise: bool = True,
        noise_sigma: float = 2.0,
        blur_sigma_px: float = 0.6,
        tcp_source: Callable[[], RigidTransform] | None = None,
    ) -> None:
        super().__init__()
        if mount not in MOUNTS:
            raise CameraSourceError(f"sim-board camera: unknown mount {mount!r}; known: {', '.join(MOUNTS)}")
        self.world = world or default_world()
        self.mount, self.board, self.seed = mount, board, int(seed)
        self.T_tcp_board = T_tcp_board or _board_in_hand(board)
        self.T_base_board_table = T_base_board or _board_on_table(board)
        self.T_tcp_camera = T_tcp_camera
        self.noise = bool(noise)
        self.noise_sigma = float(noise_sigma) if noise else 0.0
        self.blur_sigma_px = float(blur_sigma_px) if noise else 0.0
        self.fps = float(fps)
        self._tcp_source = tcp_source
        # the fixed mounts see the scene through the sim camera (its pacing, noise and render cache)
        self._scene = SimCamera(self.world, fps=fps, seed=seed, noise=noise) if mount != "wrist" else None
        self._wrist_cache: tuple | None = None
        self._index = 0
        self._last_read_s = 0.0

    @classmethod
    def from_spec(cls, arg: str | None, **kw) -> "BoardCamera":
        """Build from ``sim-board`` or ``sim-board:OPTIONS`` (module docstring).

        Raises:
            CameraSourceError: an unknown option, two mounts, or a malformed board.
        """
        from pointlab.bridge.calibration.procedure import parse_board_spec

        mounts, opts = [], [o.strip() for o in (arg or "").split(",") if o.strip()]
        for o in opts:
            if o in MOUNTS:
                mounts.append(o)
            elif o == "clean":
                kw.setdefault("noise", False)
            elif o.startswith("board="):
                try:
                    kw.setdefault("board", parse_board_spec(o[len("board=") :]))
                except ValueError as e:
                    raise CameraSourceError(f"sim-board camera: {e}") from e
            else:
                raise CameraSourceError(
                    f"sim-board camera: unknown option {o!r}; known: "
                    f"{', '.join(MOUNTS)}, clean, board=SXxSY:SQUARE_M:MARKER_M:DICT"
                )
        if len(mounts) > 1:
            raise CameraSourceError(f"sim-board camera: one mount, got {mounts}")
        if mounts:
            kw.setdefault("mount", mounts[0])
        return cls(**kw)

    @property
    def intrinsics(self):
        return self.world.intrinsics

    # -- ground truth -------------------------------------------------------------------------------
    def _tcp(self) -> RigidTransform:
        if self._tcp_source is not None:
            return self._tcp_source()
        with self.world.lock:
            return tcp_transform(self.world.arm.tcp_m, self.world.arm.rpy_deg)

    def T_base_camera(self) -> RigidTransform:
        """The camera's true pose in the base frame now (moves with the TCP for ``wrist``)."""
        if self.mount == "wrist":
            return self._tcp() @ self.T_tcp_camera
        return self.world.T_base_camera

    def T_base_board(self) -> RigidTransform:
        """The board's true pose in the base frame now (moves with the TCP for ``hand``)."""
        return self._tcp() @ self.T_tcp_board if self.mount == "hand" else self.T_base_board_table

    def board_corners_base_m(self) -> np.ndarray:
        """True base-frame positions ``(N, 3)`` of the board's inner ChArUco corners (metres), in
        OpenCV's corner-id order."""
        return self.T_base_board().apply(np.asarray(self.board.board().getChessboardCorners(), dtype=np.float64))

    # -- Camera --------------------------------------------------------------------------------------
    def _connect(self) -> None:
        if self.mount != "hand":  # the board lies on the table: a lab clears the table for it
            self.world.clear_table()
        if self._scene is not None:
            self._scene.connect()
        self._wrist_cache = None
        self._last_read_s = 0.0

    def _disconnect(self) -> None:
        if self._scene is not None:
            self._scene.disconnect()

    def _read(self) -> RGBDFrame:
        if self._scene is not None:
            frame = self._scene.read()
            color, depth_m = frame.color, frame.depth_m()
        else:
            self._pace()
            color, depth_m = self._wrist_scene()
        with self.world.lock:  # camera and board poses of the same instant
            T_base_cam, T_base_board = self.T_base_camera(), self.T_base_board()
        self._index += 1
        color, depth_m = self._overlay(color, depth_m, T_base_cam.inverse() @ T_base_board)
        depth = np.clip(np.rint(depth_m / DEPTH_SCALE_M), 0, 65535).astype(np.uint16)
        return RGBDFrame(
            color=color,
            depth=depth,
            depth_scale_m=DEPTH_SCALE_M,
            intrinsics=self.intrinsics,
            stamp_ns=time.time_ns(),
            index=self._index,
        )

    def _pace(self) -> None:
        if self.fps > 0:
            wait = self._last_read_s + 1.0 / self.fps - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last_read_s = time.monotonic()

    def _wrist_scene(self) -> tuple[np.ndarray, np.ndarray]:
        """Colour and depth of the tabletop from the wrist camera (re-rendered when the world changes)."""
        w = self.world
        with w.lock:
            key = (w.version, id(w))
            if self._wrist_cache is not None and self._wrist_cache[0] == key:
                return self._wrist_cache[1]
            T = self.T_base_camera()
        out = _table_view(w.intrinsics, T.inverse(), w.scene.table_z_m, w.scene.table_color_rgb)
        self._wrist_cache = (key, out)
        return out

    def _overlay(self, color: np.ndarray, depth_m: np.ndarray, T_cam_board: RigidTransform):
        """Draw the board (front: the printed pattern; back: a plain plate) over colour and depth."""
        intr = self.intrinsics
        w_m, h_m = self.board.size_m
        outline = T_cam_board.apply(np.array([[0, 0, 0], [w_m, 0, 0], [w_m, h_m, 0], [0, h_m, 0]], dtype=np.float64))
        if np.any(outline[:, 2] <= 0.05):
            return color, depth_m  # behind or (partly) too close to the camera: not drawn
        poly = np.round(intr.project(outline)).astype(np.int32)
        plate = np.zeros(depth_m.shape, np.uint8)
        cv2.fillConvexPoly(plate, poly, 1)
        n, o = T_cam_board.rotation[:, 2], T_cam_board.translation_m
        plate_z = _plane_depth(intr, n, o)
        front = (plate > 0) & (plate_z > 0) & ((depth_m <= 0) | (plate_z < depth_m))
        if self.mount != "hand":  # a board on the table lies on a cleared table: nothing stands on it
            front = (plate > 0) & (plate_z > 0)
        depth_m = np.where(front, plate_z, depth_m).astype(np.float32)
        faces_camera = float(n @ o) > 0  # board z points into the board, away from a camera that sees the print
        color = color.copy()
        if not faces_camera:
            color[front] = (205, 205, 200)  # the back of the plate
            return color, depth_m
        drawn = render_board(
            self.board,
            T_cam_board,
            intr,
            background=color,
            noise_sigma=self.noise_sigma,
            blur_sigma_px=self.blur_sigma_px,
            seed=self.seed + self._index,
        )
        region = cv2.dilate(plate, np.ones((2 * _MARGIN_PX + 1,) * 2, np.uint8)) > 0
        if self.mount == "hand":  # things in front of the held plate stay in front of it
            region &= ~((plate > 0) & ~front)
        color[region] = drawn[region]
        return color, depth_m
