"""The ``pointlab calibrate`` workflow: move the arm through a pose set, detect a ChArUco board in each
colour frame, solve the hand-eye transform, check it at new poses and write the calibration file.

Steps (``run_calibration``; ``calibrate`` builds the arm and camera from specs around it):

1. **Poses**: ``default_poses(setup)`` (14 TCP poses around a centre: tool roughly down, tilts of
   15-25 degrees about x and y, yaw up to +-40 degrees, so the relative rotations have non-parallel
   axes) or ``load_poses(file)``. Every pose, including the verification poses, is checked against
   the ``Workspace`` *before the first motion*: one pose outside the envelope refuses the whole run.
2. **Capture** per pose: ``Arm.move_to``, wait ``settle_s``, read ``flush_frames`` frames and keep the
   last (a camera queues frames; the last one was taken after the arm stopped), ``detect_board``,
   read the arm's reported TCP pose. A pose the arm's planner refuses (``UnreachableTargetError``,
   nothing moved) or where the board is not found is skipped and reported; any other robot error
   aborts the run.
3. **Solve** with ``handeye.solve_hand_eye`` (at least ``min_poses`` detected poses with rotations about
   two non-parallel axes, else ``CalibrationFailedError`` and no file).
4. **Verify** (optional) at poses not used in the solve: the board's inner corners are computed in the
   base frame twice, through the camera and the new calibration, and through the arm's reported TCP
   pose and the board-on-hand transform estimated by the solve (eye-to-hand; eye-in-hand: the
   board-on-table transform); the distances between the two are reported in mm.

Hover check (``hover_check``, ``pointlab calibrate-check``): the end-to-end lab check of an
eye-to-hand file: the board lies on the table, the TCP hovers a set height above its corners as
mapped through the calibration, and the operator looks at the gap.

TCP instead of flange: the arm reports its TCP, and the board (eye-to-hand) or the camera
(eye-in-hand) is rigid to the TCP exactly as to the flange, so the hand-eye problem is the same with
TCP poses. Eye-in-hand therefore returns ``T_tcp_camera`` and the file's parent frame is ``link_tcp``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

from pointlab.robot.arm import Arm, TcpPose
from pointlab.robot.errors import UnreachableTargetError
from pointlab.robot.workspace import Workspace

from pointlab.perception.camera import Camera
from pointlab.perception.errors import CameraSourceError, PerceptionError
from pointlab.perception.extrinsics import Calibration, RigidTransform, save_calibration
from pointlab.perception.handeye import (
    HAND_EYE_METHODS,
    CharucoBoardSpec,
    HandEyeResult,
    detect_board,
    mean_transform,
    solve_hand_eye,
)

__all__ = [
    "CalibrationError",
    "CalibrationInputError",
    "CalibrationFailedError",
    "CalibrateOptions",
    "PoseCapture",
    "CalibrationRun",
    "parse_board_spec",
    "default_poses",
    "load_poses",
    "check_poses",
    "capture_poses",
    "solve_captures",
    "verify_calibration",
    "run_calibration",
    "calibrate",
    "camera_spec_for_calibration",
    "hover_check",
    "check_calibration",
    "SETUPS",
    "DEFAULT_CENTRE_M",
    "tcp_transform",
]

log = logging.getLogger(__name__)

SETUPS = ("eye_to_hand", "eye_in_hand")
# Default pose-set centres (TCP, base frame, metres): eye-to-hand holds the board up in front of a
# camera that faces the arm across the table; eye-in-hand looks down at a board lying on the table
# about 0.3 m in front of the base.
DEFAULT_CENTRE_M = {"eye_to_hand": (0.28, 0.0, 0.26), "eye_in_hand": (0.23, 0.0, 0.31)}
TCP_FRAME = "link_tcp"

# (d_roll, d_pitch, d_yaw) degrees added to tool-down (180, 0, 0), and (dx, dy, dz) metres added to
# the centre. Rotations about x, y and z and mixed ones, so consecutive relative rotations have
# non-parallel axes (what calibrateHandEye needs); positions spread over a 8 x 12 x 6 cm box.
_ROTATIONS_DEG = (
    (0, 0, 0),
    (20, 0, 0),
    (-20, 0, 0),
    (0, 20, 0),
    (0, -20, 0),
    (0, 0, 40),
    (0, 0, -40),
    (15, 15, 25),
    (-15, 15, -25),
    (15, -15, -25),
    (-15, -15, 25),
    (25, -10, 10),
    (-10, 25, -15),
    (10, -20, 35),
)
_OFFSETS_M = (
    (0, 0, 0),
    (0.03, -0.05, 0.02),
    (-0.03, 0.05, -0.02),
    (0.04, 0.04, 0.0),
    (-0.04, -0.04, 0.02),
    (0.0, 0.06, 0.03),
    (0.0, -0.06, -0.03),
    (0.04, 0.0, -0.02),
    (-0.04, 0.0, 0.03),
    (0.02, 0.06, 0.0),
    (-0.02, -0.06, 0.0),
    (0.03, 0.03, 0.03),
    (-0.03, -0.03, -0.03),
    (0.0, 0.0, -0.03),
)
# Verification poses: between the calibration poses (other offsets, other rotations).
_VERIFY_ROTATIONS_DEG = ((10, 10, -20), (-12, -8, 30), (8, -15, 15), (-15, 12, -35))
_VERIFY_OFFSETS_M = ((0.02, 0.03, 0.01), (-0.02, -0.03, -0.01), (0.03, -0.02, 0.02), (-0.03, 0.02, -0.02))
# Eye-in-hand: tilts swing the TCP about a point this far below the centre, so the camera keeps the
# board in view (at 0.3 m a 20 degree tilt would otherwise move the view by 11 cm).
_EYE_IN_HAND_PIVOT_M = 0.15


class CalibrationError(PerceptionError):
    """Base class of calibration workflow errors."""


class CalibrationInputError(CalibrationError, ValueError):
    """Bad input: a malformed board or poses file, an unknown setup or method."""


class CalibrationFailedError(CalibrationError):
    """The run could not produce a calibration (too few detected poses, degenerate rotations)."""


@dataclass(frozen=True)
class CalibrateOptions:
    """Settings of one calibration run.

    Attributes:
        setup: ``eye_to_hand`` (camera fixed, board on the TCP; result ``T_base_camera``) or
            ``eye_in_hand`` (camera on the TCP, board fixed; result ``T_tcp_camera``).
        method: a key of ``handeye.HAND_EYE_METHODS``.
        board: the printed board (measure the square and put the measured size here).
        settle_s: wait after each motion before reading frames, seconds.
        flush_frames: frames read after settling; the last is used (>= 1).
        min_corners: ChArUco corners a detection needs.
        min_poses: detected poses the solve needs.
        max_residual_mm: a mean residual above this fails the run (the board moved on the tool, the
            wrong setup, or a wrong square size; a good run in the lab is 1-3 mm).
        verify: run the verification step.
    """

    setup: str = "eye_to_hand"
    method: str = "PARK"
    board: CharucoBoardSpec = CharucoBoardSpec()
    settle_s: float = 0.5
    flush_frames: int = 2
    min_corners: int = 8
    min_poses: int = 6
    max_residual_mm: float = 15.0
    verify: bool = False

    def __post_init__(self) -> None:
        if self.setup not in SETUPS:
            raise CalibrationInputError(f"unknown setup {self.setup!r}; one of {', '.join(SETUPS)}")
        if self.method not in HAND_EYE_METHODS:
            raise CalibrationInputError(f"unknown method {self.method!r}; one of {', '.join(sorted(HAND_EYE_METHODS))}")
        if (
            self.settle_s < 0
            or self.flush_frames < 1
            or self.min_corners < 4
            or self.min_poses < 3
            or not self.max_residual_mm > 0
        ):
            raise CalibrationInputError(
                "need settle_s >= 0, flush_frames >= 1, min_corners >= 4, min_poses >= 3, max_residual_mm > 0"
            )


# -- inputs ----------------------------------------------------------------------------------------
def parse_board_spec(text: str) -> CharucoBoardSpec:
    """``"SXxSY:SQUARE_M:MARKER_M:DICT"`` (e.g. ``"5x7:0.04:0.03:DICT_5X5_100"``) -> ``CharucoBoardSpec``.

    Sizes are metres (a square over 0.5 m is refused as millimetres).

    Raises:
        CalibrationInputError: malformed text, marker not smaller than the square, unknown dictionary,
            or a dictionary with fewer markers than the board needs.
    """
    parts = text.strip().split(":")
    try:
        if len(parts) != 4:
            raise ValueError("expected 4 fields")
        sx, sy = (int(v) for v in parts[0].lower().split("x"))
        square_m, marker_m = float(parts[1]), float(parts[2])
    except ValueError as e:
        raise CalibrationInputError(
            f"board {text!r}: expected SXxSY:SQUARE_M:MARKER_M:DICT, e.g. 5x7:0.04:0.03:DICT_5X5_100 ({e})"
        ) from e
    name = parts[3].strip()
    if sx < 3 or sy < 3:
        raise CalibrationInputError(f"board {text!r}: need at least 3 x 3 squares")
    if not (0 < marker_m < square_m) or not all(map(math.isfinite, (square_m, marker_m))):
        raise CalibrationInputError(f"board {text!r}: need 0 < marker < square (metres)")
    if square_m > 0.5:
        raise CalibrationInputError(f"board {text!r}: a {square_m} m square is probably millimetres; sizes are metres")
    if not name.startswith("DICT_") or not hasattr(cv2.aruco, name):
        raise CalibrationInputError(f"board {text!r}: unknown ArUco dictionary {name!r} (e.g. DICT_5X5_100)")
    n_markers = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, name)).bytesList.shape[0]
    if n_markers < sx * sy // 2:
        raise CalibrationInputError(f"board {text!r}: {name} has {n_markers} markers, the board needs {sx * sy // 2}")
    return CharucoBoardSpec(sx, sy, square_m, marker_m, name)


def _pose_set(centre_m, rotations, offsets, pivot_depth_m: float = 0.0) -> list[TcpPose]:
    """Poses at ``centre + offset`` with tool-down plus the rotation; with ``pivot_depth_m`` > 0 each
    pose is first swung about a pivot that far below the centre along the tool axis (so a wrist
    camera keeps looking at the same spot of the table while it tilts)."""
    c = np.asarray(centre_m, dtype=np.float64).reshape(3)
    out = []
    for d, r in zip(offsets, rotations):
        rpy = (180.0 + r[0], float(r[1]), float(r[2]))
        tool_z = Rotation.from_euler("xyz", rpy, degrees=True).as_matrix()[:, 2]
        pivot = c - [0.0, 0.0, pivot_depth_m]
        out.append(TcpPose.at(pivot - pivot_depth_m * tool_z + np.asarray(d), rpy))
    return out


def default_poses(setup: str = "eye_to_hand", centre_m=None) -> tuple[list[TcpPose], list[TcpPose]]:
    """The generated pose set: ``(calibration poses (14), verification poses (4))`` around ``centre_m``
    (TCP, base frame, metres; default ``DEFAULT_CENTRE_M[setup]``). Orientations are xArm roll, pitch,
    yaw in degrees: tool-down ``(180, 0, 0)`` plus tilts of up to 25 degrees and yaw up to 40."""
    centre = DEFAULT_CENTRE_M[setup] if centre_m is None else centre_m
    pivot = _EYE_IN_HAND_PIVOT_M if setup == "eye_in_hand" else 0.0
    return (
        _pose_set(centre, _ROTATIONS_DEG, _OFFSETS_M, pivot),
        _pose_set(centre, _VERIFY_ROTATIONS_DEG, _VERIFY_OFFSETS_M, pivot),
    )


def _parse_pose(d, where: str) -> TcpPose:
    if not isinstance(d, dict) or "position_m" not in d:
        raise CalibrationInputError(f'{where}: expected {{"position_m": [x, y, z], "rpy_deg": [r, p, y]}}')
    try:
        p = [float(v) for v in d["position_m"]]
        r = [float(v) for v in d.get("rpy_deg", (180.0, 0.0, 0.0))]
    except (TypeError, ValueError) as e:
        raise CalibrationInputError(f"{where}: position_m and rpy_deg must be lists of numbers ({e})") from e
    if len(p) != 3 or len(r) != 3 or not all(map(math.isfinite, p + r)):
        raise CalibrationInputError(f"{where}: position_m and rpy_deg need 3 finite numbers each")
    if max(abs(v) for v in p) > 5.0:
        raise CalibrationInputError(f"{where}: position {p} is over 5 m; positions are metres")
    return TcpPose.at(p, r)


def load_poses(path: str | Path) -> tuple[list[TcpPose], list[TcpPose] | None]:
    """Read a poses file: a JSON list of ``{"position_m": [x, y, z], "rpy_deg": [roll, pitch, yaw]}``
    (metres, degrees; ``rpy_deg`` defaults to tool-down), or an object ``{"calibrate": [...],
    "verify": [...]}``. Returns ``(calibration poses, verification poses or None)``.

    Raises:
        CalibrationInputError: missing file, bad JSON, malformed or non-finite pose, no poses.
    """
    path = Path(path)
    try:
        d = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise CalibrationInputError(f"poses file {path} not found") from e
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CalibrationInputError(f"poses file {path} is not valid JSON: {e}") from e
    verify = None
    if isinstance(d, dict):
        if "calibrate" not in d:
            raise CalibrationInputError(f'{path}: an object needs a "calibrate" list (and optionally "verify")')
        cal_list, verify_list = d["calibrate"], d.get("verify")
    else:
        cal_list, verify_list = d, None
    if not isinstance(cal_list, list) or not cal_list:
        raise CalibrationInputError(f"{path}: no calibration poses")
    poses = [_parse_pose(p, f"{path} pose {i}") for i, p in enumerate(cal_list)]
    if verify_list is not None:
        if not isinstance(verify_list, list):
            raise CalibrationInputError(f'{path}: "verify" must be a list of poses')
        verify = [_parse_pose(p, f"{path} verify pose {i}") for i, p in enumerate(verify_list)]
    return poses, verify


def check_poses(poses: list[TcpPose], workspace: Workspace, what: str = "calibration pose") -> None:
    """Check every pose's position against the envelope (before any motion).

    Raises:
        UnsafeTargetError: the first pose outside, named by its index.
    """
    for i, p in enumerate(poses):
        workspace.check(p.xyz, f"{what} {i}")


def camera_spec_for_calibration(
    camera_spec: str, setup: str, board: CharucoBoardSpec, table_board: bool = False
) -> str:
    """The camera spec to open for a calibration: ``sim`` (whose tabletop has no board) becomes the
    ``sim-board`` source of ``sim_mock`` with the board on the TCP (eye-to-hand), a wrist camera over
    a board on the table (eye-in-hand), or the fixed camera over a board on the table (``table_board``,
    the hover check), showing the board being calibrated against; any other spec is used as given
    (the sim camera's ``tool`` drawing option is dropped)."""
    kind, _, arg = camera_spec.partition(":")
    if kind != "sim":
        return camera_spec
    mount = "table" if table_board else "hand" if setup == "eye_to_hand" else "wrist"
    board_text = f"{board.squares_x}x{board.squares_y}:{board.square_m}:{board.marker_m}:{board.dictionary}"
    opts = [mount, f"board={board_text}"] + [o for o in arg.split(",") if o.strip() and o.strip() != "tool"]
    return "sim-board:" + ",".join(opts)


# -- capture ---------------------------------------------------------------------------------------
def tcp_transform(pose: TcpPose) -> RigidTransform:
    """``T_base_tcp`` of an arm pose (metres; xArm roll/pitch/yaw degrees are fixed-axis x, y, z)."""
    return RigidTransform.from_xyz_rpy(pose.xyz, np.radians(pose.rpy_deg))


@dataclass
class PoseCapture:
    """What one pose of the run produced.

    Attributes:
        index: position in the pose list.
        commanded: the pose sent to the arm.
        tcp: the TCP pose the arm reported after the motion (``None`` when skipped before reading).
        T_camera_board: board pose from ``detect_board`` (``None`` when not detected).
        corners: ChArUco corners used; reprojection_px: their RMS reprojection error, pixels.
        skipped: why the pose is not used (``None`` when it is).
    """

    index: int
    commanded: TcpPose
    tcp: TcpPose | None = None
    T_camera_board: RigidTransform | None = None
    corners: int = 0
    reprojection_px: float | None = None
    skipped: str | None = None

    def detected(self) -> tuple[TcpPose, RigidTransform] | None:
        """``(tcp, T_camera_board)`` of a pose the run uses, ``None`` for a skipped one."""
        if self.skipped is not None or self.tcp is None or self.T_camera_board is None:
            return None
        return self.tcp, self.T_camera_board

    def to_dict(self) -> dict:
        d = {
            "index": self.index,
            "commanded": self.commanded.to_dict(),
            "tcp": self.tcp.to_dict() if self.tcp else None,
            "corners": self.corners,
            "reprojection_px": None if self.reprojection_px is None else round(self.reprojection_px, 4),
        }
        if self.skipped:
            d["skipped"] = self.skipped
        return d


def capture_poses(arm: Arm, camera: Camera, poses: list[TcpPose], options: CalibrateOptions) -> list[PoseCapture]:
    """Visit each pose and detect the board (module docstring, step 2). ``arm`` and ``camera`` must be
    connected.

    Raises:
        RobotError: any robot error except ``UnreachableTargetError`` (which skips the pose after the
            arm is reset, nothing having moved).
        CameraSourceError: the camera failed.
    """
    out = []
    for i, pose in enumerate(poses):
        cap = PoseCapture(i, pose)
        out.append(cap)
        try:
            arm.move_to(pose)
        except UnreachableTargetError as e:
            # the planner refused before any motion; the arm halted itself, so bring it back up
            log.warning("pose %d skipped: %s", i, e)
            cap.skipped = f"unreachable: {e}"
            arm.reset()
            continue
        time.sleep(options.settle_s)
        for _ in range(options.flush_frames):
            frame = camera.read()
        cap.tcp = arm.state().tcp
        if cap.tcp is None:
            cap.skipped = "arm reported no TCP pose"
            continue
        det = detect_board(frame.color, frame.intrinsics, options.board, min_corners=options.min_corners)
        if det is None:
            cap.skipped = f"board not detected (fewer than {options.min_corners} ChArUco corners)"
            log.warning("pose %d: %s", i, cap.skipped)
            continue
        cap.T_camera_board, cap.corners, cap.reprojection_px = det.T_camera_board, det.corners, det.reprojection_px
    return out


# -- solve -----------------------------------------------------------------------------------------
def _rotation_spread_deg(tcps: list[TcpPose]) -> tuple[float, float]:
    """Largest and second-largest singular value of the relative rotation vectors from the first pose
    (degrees): the second is near 0 when all rotations share one axis (a degenerate set)."""
    R0 = Rotation.from_euler("xyz", tcps[0].rpy_deg, degrees=True)
    vecs = np.array(
        [np.degrees((R0.inv() * Rotation.from_euler("xyz", t.rpy_deg, degrees=True)).as_rotvec()) for t in tcps[1:]]
    )
    s = np.linalg.svd(vecs, compute_uv=False) / math.sqrt(len(vecs))
    return float(s[0]), float(s[1]) if len(s) > 1 else 0.0


def solve_captures(captures: list[PoseCapture], options: CalibrateOptions) -> tuple[HandEyeResult, RigidTransform]:
    """Solve the hand-eye transform from the detected poses.

    Returns:
        ``(result, T_fixed_board)``: ``result.transform`` is ``T_base_camera`` (eye-to-hand) or
        ``T_tcp_camera`` (eye-in-hand); ``T_fixed_board`` the board in the TCP frame (eye-to-hand) or
        in the base frame (eye-in-hand), the mean over the poses.

    Raises:
        CalibrationFailedError: fewer than ``min_poses`` detected poses, rotations that do not span two
            axes (a few degrees at least), or a mean residual over ``max_residual_mm``.
    """
    used = [d for c in captures if (d := c.detected()) is not None]
    if len(used) < options.min_poses:
        skipped = [f"{c.index}: {c.skipped}" for c in captures if c.skipped]
        raise CalibrationFailedError(
            f"board detected in {len(used)} of {len(captures)} poses, need at least {options.min_poses}; "
            f"skipped: {'; '.join(skipped) or 'none'}. Check the board is in view and lit, and the --board size"
        )
    s1, s2 = _rotation_spread_deg([tcp for tcp, _ in used])
    if s2 < 2.0:
        raise CalibrationFailedError(
            f"the detected poses rotate about one axis only (spread {s1:.1f} / {s2:.1f} deg); "
            "hand-eye needs rotations about at least two non-parallel axes (tilt and yaw the tool)"
        )
    tcps = [tcp_transform(tcp) for tcp, _ in used]
    boards = [T_camera_board for _, T_camera_board in used]
    try:
        result = solve_hand_eye(tcps, boards, options.setup, options.method)
    except (ValueError, cv2.error) as e:
        raise CalibrationFailedError(f"hand-eye solve failed: {e}") from e
    mean_mm = float(np.mean(result.residual_mm))
    if not mean_mm <= options.max_residual_mm:
        raise CalibrationFailedError(
            f"mean residual {mean_mm:.1f} mm is over {options.max_residual_mm} mm: the board is not rigid to the "
            f"{'tool' if options.setup == 'eye_to_hand' else 'table'}, the --setup is wrong, or the --board "
            "square size is not what was printed"
        )
    X = result.transform
    if options.setup == "eye_to_hand":
        inv = [(t.inverse() @ X @ b).matrix for t, b in zip(tcps, boards)]
    else:
        inv = [(t @ X @ b).matrix for t, b in zip(tcps, boards)]
    return result, RigidTransform(mean_transform(inv))


# -- verify ----------------------------------------------------------------------------------------
def verify_calibration(
    captures: list[PoseCapture], result: HandEyeResult, T_fixed_board: RigidTransform, board: CharucoBoardSpec
) -> dict:
    """Board corners in the base frame through the camera and the calibration, against the same corners
    through the arm's reported TCP pose and ``T_fixed_board`` (module docstring, step 4).

    Returns:
        ``{"poses": n used, "skipped": [...], "error_mm": {"mean", "max", "per_pose"}}``; ``error_mm``
        is ``None`` when no verification pose saw the board.
    """
    corners = np.asarray(board.board().getChessboardCorners(), dtype=np.float64)
    X = result.transform
    per_pose, all_err = [], []
    for c in captures:
        if (d := c.detected()) is None:
            continue
        tcp, T_camera_board = d
        T_tcp = tcp_transform(tcp)
        if result.setup == "eye_to_hand":
            via_camera, via_arm = X @ T_camera_board, T_tcp @ T_fixed_board
        else:
            via_camera, via_arm = T_tcp @ X @ T_camera_board, T_fixed_board
        err = np.linalg.norm(via_camera.apply(corners) - via_arm.apply(corners), axis=1) * 1000.0
        per_pose.append(
            {"index": c.index, "mean_mm": round(float(err.mean()), 3), "max_mm": round(float(err.max()), 3)}
        )
        all_err.append(err)
    skipped = [{"index": c.index, "reason": c.skipped} for c in captures if c.skipped]
    if not all_err:
        return {"poses": 0, "skipped": skipped, "error_mm": None}
    e = np.concatenate(all_err)
    return {
        "poses": len(per_pose),
        "skipped": skipped,
        "error_mm": {"mean": round(float(e.mean()), 3), "max": round(float(e.max()), 3), "per_pose": per_pose},
    }


# -- the workflow ----------------------------------------------------------------------------------
@dataclass
class CalibrationRun:
    """Everything one run produced (``to_dict`` is what ``pointlab calibrate`` prints).

    Attributes:
        result: the solve (transform, residuals per used pose).
        T_fixed_board: board in the TCP frame (eye-to-hand) or base frame (eye-in-hand), metres.
        captures: every calibration pose, used or skipped.
        calibration: what was (or would be) written.
        verify: the verification report, or ``None``.
        out_path: where the file was written, or ``None``.
    """

    result: HandEyeResult
    T_fixed_board: RigidTransform
    captures: list[PoseCapture]
    calibration: Calibration
    verify: dict | None = None
    out_path: str | None = None

    def to_dict(self) -> dict:
        T = self.result.transform
        used = [c for c in self.captures if c.skipped is None]
        residuals = self.result.summary()
        per_pose = [
            dict(c.to_dict(), residual_mm=round(mm, 3), residual_deg=round(deg, 4))
            for c, mm, deg in zip(used, self.result.residual_mm, self.result.residual_deg)
        ]
        return {
            "method": self.result.method,
            "setup": self.result.setup,
            "parent_frame": self.calibration.parent_frame,
            "child_frame": self.calibration.child_frame,
            "transform": {
                "T_parent_child": T.matrix.round(9).tolist(),
                "translation_m": T.translation_m.round(6).tolist(),
                "rpy_deg": Rotation.from_matrix(T.rotation).as_euler("xyz", degrees=True).round(4).tolist(),
            },
            "residual_mm": {k: round(residuals["residual_mm"][k], 3) for k in ("mean", "max")},
            "residual_deg": {k: round(residuals["residual_deg"][k], 4) for k in ("mean", "max")},
            "poses_used": len(used),
            "poses_total": len(self.captures),
            "poses": per_pose,
            "skipped": [
                {"index": c.index, "pose": c.commanded.to_dict(), "reason": c.skipped}
                for c in self.captures
                if c.skipped
            ],
            "board_in_fixed_frame": {"T": self.T_fixed_board.matrix.round(9).tolist()},
            "verify": self.verify,
            "out": self.out_path,
        }


def _calibration_of(result: HandEyeResult, captures: list[PoseCapture], verify: dict | None) -> Calibration:
    s = result.summary()
    used = [c for c in captures if c.skipped is None]
    residuals = {
        "residual_mm": s["residual_mm"],
        "residual_deg": s["residual_deg"],
        "poses": s["poses"],
        "skipped": len(captures) - len(used),
        "reprojection_px": {
            "mean": round(float(np.mean([c.reprojection_px for c in used])), 4),
            "max": round(float(np.max([c.reprojection_px for c in used])), 4),
        },
    }
    if verify is not None:
        residuals["verify_error_mm"] = verify["error_mm"] and {k: verify["error_mm"][k] for k in ("mean", "max")}
    parent = "link_base" if result.setup == "eye_to_hand" else TCP_FRAME
    created = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Calibration(
        result.transform,
        parent_frame=parent,
        setup=result.setup,
        method=result.method,
        created=created,
        residuals=residuals,
    )


def run_calibration(
    arm: Arm,
    camera: Camera,
    poses: list[TcpPose],
    options: CalibrateOptions,
    out_path: str | Path | None = None,
    verify_poses: list[TcpPose] | None = None,
) -> CalibrationRun:
    """The whole workflow on a connected arm and camera (module docstring). Writes ``out_path`` (if
    given) after a successful solve, and again with the verification numbers after verifying.

    Raises:
        UnsafeTargetError: a pose outside the arm's workspace (nothing moved).
        CalibrationInputError: ``verify`` asked for without verification poses.
        CalibrationFailedError: too few detections or degenerate rotations (no file written).
        RobotError, CameraSourceError: a robot or camera failure during the run (no file written if
            it happens before the solve).
    """
    if options.verify and not verify_poses:
        raise CalibrationInputError("verification needs verification poses")
    check_poses(poses, arm.workspace)
    if options.verify:
        check_poses(verify_poses or [], arm.workspace, "verification pose")
    captures = capture_poses(arm, camera, poses, options)
    result, T_fixed_board = solve_captures(captures, options)
    run = CalibrationRun(result, T_fixed_board, captures, _calibration_of(result, captures, None))
    if out_path is not None:
        save_calibration(run.calibration, out_path)
        run.out_path = str(out_path)
    if options.verify:
        vcaps = capture_poses(arm, camera, verify_poses or [], options)
        run.verify = verify_calibration(vcaps, result, T_fixed_board, options.board)
        run.calibration = _calibration_of(result, captures, run.verify)
        if out_path is not None:
            save_calibration(run.calibration, out_path)
    return run


def calibrate(
    robot_spec: str,
    camera_spec: str,
    out_path: str | Path,
    options: CalibrateOptions = CalibrateOptions(),
    poses_path: str | Path | None = None,
    centre_m=None,
    workspace: Workspace | None = None,
    time_scale: float = 1.0,
) -> CalibrationRun:
    """Build the arm (``robot.make_arm``) and camera (``perception.make_camera``; ``sim`` becomes the
    board-showing ``sim-board``, see ``camera_spec_for_calibration``), connect, run
    ``run_calibration``, move the arm home and disconnect.

    Args:
        robot_spec: ``sim`` or ``xarm:IP[:PORT]``.
        camera_spec: ``sim``, ``realsense[:SERIAL]``, ...
        out_path: the calibration file to write.
        poses_path: a poses file (``load_poses``); ``None``: ``default_poses(setup, centre_m)``.
        centre_m: centre of the generated pose set (TCP, base frame, metres).
        workspace: the envelope (default ``Workspace()``).
        time_scale: the sim arm's motion-time multiplier (ignored for a real arm).

    Raises:
        CalibrationInputError: a bad robot or camera spec, poses file or option (before any motion);
            and everything ``run_calibration`` raises.
    """
    if poses_path is not None:
        poses, verify_poses = load_poses(poses_path)
        if options.verify and not verify_poses:
            verify_poses = default_poses(options.setup, centre_m)[1]
    else:
        poses, verify_poses = default_poses(options.setup, centre_m)
    workspace = workspace or Workspace()
    arm, camera = _build(
        robot_spec, camera_spec_for_calibration(camera_spec, options.setup, options.board), workspace, time_scale
    )
    check_poses(poses, workspace)  # refuse before connecting anything
    if options.verify:
        check_poses(verify_poses or [], workspace, "verification pose")
    with arm, camera:
        try:
            return run_calibration(arm, camera, poses, options, out_path, verify_poses)
        finally:
            _go_home(arm)


# -- hover check ------------------------------------------------------------------------------------
def _outer_corner_ids(board: CharucoBoardSpec) -> list[int]:
    # inner ChArUco corners are numbered row by row, (squares_x - 1) per row
    nx, ny = board.squares_x - 1, board.squares_y - 1
    return [0, nx - 1, nx * (ny - 1), nx * ny - 1]


def hover_check(
    arm: Arm,
    camera: Camera,
    calibration: Calibration,
    board: CharucoBoardSpec = CharucoBoardSpec(),
    hover_m: float = 0.01,
    approach_m: float = 0.05,
    settle_s: float = 0.5,
    flush_frames: int = 2,
    min_corners: int = 8,
) -> dict:
    """The lab's end-to-end check of an eye-to-hand calibration: with the board lying flat on the table
    in view, detect it, map its four outermost inner corners into the base frame through the
    calibration, and hover the TCP (tool down) ``hover_m`` above each, approaching from ``approach_m``
    above. The operator checks the gap under the TCP with a gauge of that height (or a ruler): the
    horizontal offset from the corner is the calibration's error at the table. ``arm`` and ``camera``
    must be connected; the arm is not moved before every waypoint has passed the workspace check.

    Returns:
        ``{"hover_mm", "board_tilt_deg", "corners": [{"id", "corner_base_m", "hover_target_m",
        "tcp_m"}]}``: ``board_tilt_deg`` is the angle of the detected board from horizontal through the
        calibration (a flat board on a level table should read under a degree or two).

    Raises:
        CalibrationInputError: not an eye-to-hand calibration, or a non-positive height.
        CalibrationFailedError: the board is not detected, or one of the corners is not seen.
        UnsafeTargetError: a waypoint outside the workspace (nothing moved).
        RobotError, CameraSourceError: from the arm or camera.
    """
    if calibration.setup != "eye_to_hand":
        raise CalibrationInputError("the hover check needs an eye_to_hand calibration (T_base_camera)")
    if not (hover_m > 0 and approach_m > hover_m):
        raise CalibrationInputError("need 0 < hover height < approach height")
    for _ in range(max(flush_frames, 1)):
        frame = camera.read()
    det = detect_board(frame.color, frame.intrinsics, board, min_corners=min_corners)
    if det is None:
        raise CalibrationFailedError("board not detected: lay it flat on the table in view of the camera")
    T_base_board = calibration.T_base_camera @ det.T_camera_board
    ids = _outer_corner_ids(board)
    corners = T_base_board.apply(np.asarray(board.board().getChessboardCorners(), dtype=np.float64)[ids])
    up = -T_base_board.rotation[:, 2]  # the printed face's normal (board z points into the board)
    tilt_deg = float(np.degrees(np.arccos(np.clip(up[2], -1.0, 1.0))))
    plan = []
    for c in corners:
        hover = TcpPose.at(c + [0.0, 0.0, hover_m])
        above = TcpPose.at(c + [0.0, 0.0, approach_m])
        plan.append((c, hover, [above, hover, above]))
    check_poses([w for _, _, ws in plan for w in ws], arm.workspace, "hover waypoint")
    out = []
    for i, (c, hover, (above, _, _)) in zip(ids, plan):
        arm.move_to(above)
        arm.move_to(hover)
        time.sleep(settle_s)
        tcp = arm.state().tcp
        out.append(
            {
                "id": int(i),
                "corner_base_m": np.round(c, 6).tolist(),
                "hover_target_m": hover.to_dict()["position_m"],
                "tcp_m": None if tcp is None else tcp.to_dict()["position_m"],
            }
        )
        arm.move_to(above)
    return {"hover_mm": round(hover_m * 1000, 3), "board_tilt_deg": round(tilt_deg, 3), "corners": out}


def check_calibration(
    robot_spec: str,
    camera_spec: str,
    calibration_path: str | Path,
    board: CharucoBoardSpec = CharucoBoardSpec(),
    hover_m: float = 0.01,
    settle_s: float = 0.5,
    time_scale: float = 1.0,
    workspace: Workspace | None = None,
) -> dict:
    """Build and connect the arm and camera (``sim`` becomes the fixed camera over a board on the
    table), run ``hover_check`` with the calibration file, go home, disconnect.

    Raises:
        CalibrationFileError: the file is missing or malformed.
        CalibrationInputError: a bad robot or camera spec; and everything ``hover_check`` raises.
    """
    from pointlab.perception.extrinsics import load_calibration

    calibration = load_calibration(calibration_path)
    arm, camera = _build(
        robot_spec,
        camera_spec_for_calibration(camera_spec, calibration.setup, board, True),
        workspace or Workspace(),
        time_scale,
    )
    with arm, camera:
        try:
            return hover_check(arm, camera, calibration, board, hover_m, settle_s=settle_s)
        finally:
            _go_home(arm)


def _build(robot_spec: str, camera_spec: str, workspace: Workspace, time_scale: float) -> tuple[Arm, Camera]:
    from pointlab.robot.arm import MotionConfig, make_arm

    from pointlab.perception.camera import make_camera

    try:
        if robot_spec.partition(":")[0] == "sim":
            arm = make_arm(robot_spec, workspace, replace(MotionConfig(), grip_settle_s=0.0), time_scale=time_scale)
        else:
            arm = make_arm(robot_spec, workspace)
        return arm, make_camera(camera_spec)
    except (ValueError, CameraSourceError) as e:  # a bad spec: nothing is connected yet
        raise CalibrationInputError(str(e)) from e


def _go_home(arm: Arm) -> None:
    # leave the arm where a lab expects it; a failure here must not hide the run's own error
    try:
        if not arm.state().estopped:
            arm.home()
    except Exception:  # noqa: BLE001 - best effort after the run
        log.warning("returning home after calibration failed", exc_info=True)
