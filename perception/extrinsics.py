"""Rigid transforms and the hand-eye calibration file the targeting node reads.

Calibration file (JSON, version 1)::

    {
      "format": "pointlab.calibration/1",
      "parent_frame": "link_base",                 # the robot base frame
      "child_frame": "camera_color_optical_frame", # the colour optical frame
      "T_parent_child": [[r11, r12, r13, tx],      # 4x4 row-major, rotation + translation in METRES:
                         [r21, r22, r23, ty],      # p_base = T @ [p_camera; 1]
                         [r31, r32, r33, tz],
                         [0, 0, 0, 1]],
      "setup": "eye_to_hand",                      # or "eye_in_hand" (then parent is the flange)
      "method": "PARK", "created": "2026-11-29T12:00:00Z",   # optional provenance
      "residuals": {...}                                    # optional, from `pointlab calibrate`
    }

A translation above 5 m is refused: it is almost always millimetres written where metres belong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation

from .errors import CalibrationFileError

__all__ = [
    "RigidTransform",
    "Calibration",
    "load_calibration",
    "load_camera_to_base",
    "save_calibration",
    "CALIBRATION_FORMAT",
    "look_at_rotation",
    "optical_pose",
    "unit_vector",
]

CALIBRATION_FORMAT = "pointlab.calibration/1"
_MAX_TRANSLATION_M = 5.0


@dataclass(frozen=True)
class RigidTransform:
    """A rigid transform ``T_parent_child`` (4x4 float64, metres): maps points expressed in the
    child frame to the parent frame."""

    matrix: np.ndarray

    def __post_init__(self) -> None:
        m = np.asarray(self.matrix, dtype=np.float64)
        if m.shape != (4, 4) or not np.all(np.isfinite(m)):
            raise ValueError(f"transform must be a finite 4x4 matrix, got shape {m.shape}")
        if not np.allclose(m[3], [0, 0, 0, 1], atol=1e-9):
            raise ValueError("last row of a rigid transform must be [0, 0, 0, 1]")
        r = m[:3, :3]
        if not np.allclose(r @ r.T, np.eye(3), atol=1e-4) or np.linalg.det(r) < 0.999:
            raise ValueError("rotation part is not orthonormal with determinant +1")
        object.__setattr__(self, "matrix", m)

    @classmethod
    def from_rt(cls, rotation: ArrayLike, translation_m: ArrayLike) -> "RigidTransform":
        m = np.eye(4)
        m[:3, :3] = np.asarray(rotation, dtype=np.float64)
        m[:3, 3] = np.asarray(translation_m, dtype=np.float64).reshape(3)
        return cls(m)

    @classmethod
    def from_xyz_rpy(cls, xyz_m, rpy_rad) -> "RigidTransform":
        """From a translation (metres) and fixed-axis roll, pitch, yaw (radians, URDF convention)."""
        return cls.from_rt(Rotation.from_euler("xyz", rpy_rad).as_matrix(), xyz_m)

    @property
    def rotation(self) -> np.ndarray:
        return self.matrix[:3, :3]

    @property
    def translation_m(self) -> np.ndarray:
        return self.matrix[:3, 3]

    def inverse(self) -> "RigidTransform":
        return RigidTransform.from_rt(self.rotation.T, -self.rotation.T @ self.translation_m)

    def __matmul__(self, other: "RigidTransform") -> "RigidTransform":
        return RigidTransform(self.matrix @ other.matrix)

    def apply(self, points_m: np.ndarray) -> np.ndarray:
        """Transform points ``(3,)`` or ``(N, 3)`` (metres); returns the same shape."""
        p = np.asarray(points_m, dtype=np.float64)
        out = p.reshape(-1, 3) @ self.rotation.T + self.translation_m
        return out.reshape(p.shape)


def unit_vector(v, what: str = "vector") -> np.ndarray:
    """``v`` (3,) scaled to length 1 (float64).

    Raises:
        ValueError: zero, non-finite or not 3 values (the message names ``what``).
    """
    a = np.asarray(v, dtype=np.float64).reshape(3)
    n = float(np.linalg.norm(a))
    if not np.isfinite(n) or n < 1e-9:
        raise ValueError(f"{what} must be a non-zero finite 3-vector, got {a.tolist()}")
    return a / n


def look_at_rotation(forward, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """Look-at rotation (EgoPoint-Bench eq. 1): ``R_cam = [ f x u / |f x u|, (f x u) x f / |f x u|, -f ]^T``.

    Args:
        forward: (3,) view direction ``P_obj - P_agent`` (normalised here).
        up: (3,) global up vector ``u_w``.
    Returns:
        (3, 3) float64 rotation, rows = camera right, camera up, camera back (-f) in world
        coordinates; ``R_cam @ f == (0, 0, -1)``.
    Raises:
        ValueError: zero vectors, or ``forward`` parallel to ``up`` (eq. 1 is undefined there).
    """
    f = unit_vector(forward, "forward")
    u = unit_vector(up, "up")
    s = np.cross(f, u)
    n = float(np.linalg.norm(s))
    if n < 1e-6:
        raise ValueError("forward is parallel to up: the look-at rotation (eq. 1) is undefined")
    return np.stack([s / n, np.cross(s, f) / n, -f])


def optical_pose(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """(4, 4) ``T_world_camera`` of a camera at ``eye`` facing ``target`` in the optical convention
    (x right, y down, z forward) built from eq. (1): columns ``[right, -up_cam, f]``."""
    eye = np.asarray(eye, dtype=np.float64).reshape(3)
    R = look_at_rotation(np.asarray(target, dtype=np.float64) - eye, up)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([R[0], -R[1], -R[2]])
    T[:3, 3] = eye
    return T


@dataclass(frozen=True)
class Calibration:
    """The camera's pose in the robot base frame (eye-to-hand) plus provenance."""

    T_base_camera: RigidTransform
    parent_frame: str = "link_base"
    child_frame: str = "camera_color_optical_frame"
    setup: str = "eye_to_hand"
    method: str | None = None
    created: str | None = None
    residuals: dict = field(default_factory=dict)

    def camera_to_base(self, point_camera_m: np.ndarray) -> np.ndarray:
        """A point ``(3,)`` in the camera optical frame (m) -> the base frame (m)."""
        return self.T_base_camera.apply(point_camera_m)

    def to_dict(self) -> dict:
        d = {
            "format": CALIBRATION_FORMAT,
            "parent_frame": self.parent_frame,
            "child_frame": self.child_frame,
            "T_parent_child": self.T_base_camera.matrix.round(9).tolist(),
            "setup": self.setup,
        }
        for k in ("method", "created"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        if self.residuals:
            d["residuals"] = self.residuals
        return d


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file (format in the module docstring).

    Raises:
        CalibrationFileError: missing file, bad JSON, wrong format tag, non-rigid matrix, or a
            translation larger than 5 m (units are metres).
    """
    path = Path(path)
    try:
        d = json.loads(path.read_text(encoding="utf-8-sig"))  # -sig: a BOM (Windows editors) is not an error
    except FileNotFoundError as e:
        raise CalibrationFileError(f"calibration file {path} not found") from e
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CalibrationFileError(f"calibration file {path} is not valid JSON: {e}") from e
    if not isinstance(d, dict) or d.get("format") != CALIBRATION_FORMAT:
        raise CalibrationFileError(f'{path}: expected "format": "{CALIBRATION_FORMAT}"')
    try:
        T = RigidTransform(np.array(d["T_parent_child"], dtype=np.float64))
    except (KeyError, ValueError, TypeError) as e:
        raise CalibrationFileError(f"{path}: T_parent_child is not a rigid 4x4 transform ({e})") from e
    if np.linalg.norm(T.translation_m) > _MAX_TRANSLATION_M:
        raise CalibrationFileError(
            f"{path}: translation {T.translation_m.tolist()} is over {_MAX_TRANSLATION_M} m; the file must be in metres"
        )
    if d.get("setup", "eye_to_hand") not in ("eye_to_hand", "eye_in_hand"):
        raise CalibrationFileError(f"{path}: setup must be eye_to_hand or eye_in_hand")
    for key in ("parent_frame", "child_frame"):  # TF frame ids: a number or null would fail in ROS later
        if key in d and not (isinstance(d[key], str) and d[key].strip()):
            raise CalibrationFileError(f"{path}: {key} must be a non-empty frame name, got {d[key]!r}")
    return Calibration(
        T,
        d.get("parent_frame", "link_base"),
        d.get("child_frame", "camera_color_optical_frame"),
        d.get("setup", "eye_to_hand"),
        d.get("method"),
        d.get("created"),
        d.get("residuals", {}),
    )


def load_camera_to_base(path: str | Path) -> Calibration:
    """Load a calibration that targeting can use: a fixed camera's pose in the base frame.

    Raises:
        CalibrationFileError: as ``load_calibration``, and for an ``eye_in_hand`` file (its transform
            is camera-to-tool, not camera-to-base: every target would land in the wrong place).
    """
    cal = load_calibration(path)
    if cal.setup != "eye_to_hand":
        raise CalibrationFileError(
            f"{path}: setup {cal.setup!r} gives the camera in the {cal.parent_frame} frame; Point-Act targeting "
            "needs an eye_to_hand calibration (camera fixed, T_base_camera)"
        )
    return cal


def save_calibration(cal: Calibration, path: str | Path) -> None:
    """Write ``cal`` as a version-1 calibration file (atomically: write then rename)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(cal.to_dict(), indent=2) + "\n")
    tmp.replace(path)
