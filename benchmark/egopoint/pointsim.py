"""Point-Sim geometry (EgoPoint-Bench sec. 3.2.1): the egocentric camera that faces the target,
the hand rotation that aims the index finger at it, the ray-cast validity check, and the target's
2D box in the rendered view.

Conventions. Eq. (1) builds the camera of Habitat-Sim / OpenGL: camera x right, y up, looking
along -z; its rows are those axes in world coordinates, so ``R_cam @ v_world`` gives camera
coordinates. The rest of pointlab uses the optical frame (x right, y down, z forward;
docs/architecture.md); :func:`optical_pose` converts. World up defaults to +z (the scene readers'
z-up frame); pass ``up=(0, 1, 0)`` for Habitat's y-up scenes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pointlab.perception.extrinsics import look_at_rotation, optical_pose, unit_vector

from ..video.visibility import project_box_px

__all__ = [
    "look_at_rotation",
    "optical_pose",
    "skew",
    "rodrigues_alignment",
    "RayCheck",
    "ray_cast_valid",
    "intrinsics_from_vfov",
    "project_point",
    "target_box_2d",
]

_EPS = 1e-9


def skew(k) -> np.ndarray:
    """(3, 3) skew-symmetric ``[k]_x`` with ``[k]_x v = k x v``."""
    x, y, z = np.asarray(k, dtype=np.float64).reshape(3)
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rodrigues_alignment(u_rest, u_target) -> np.ndarray:
    """Eq. (2): the minimal rotation taking the finger direction ``u_rest`` onto ``u_target``,
    ``R = I + [k]_x sin(theta) + [k]_x^2 (1 - cos(theta))``, ``k = u_rest x u_target / |...|``,
    ``theta = arccos(u_rest . u_target)``.

    Parallel vectors give the identity; opposite vectors (k undefined in eq. 2) a half turn about an
    axis perpendicular to ``u_rest``. Returns (3, 3) float64. Raises ``ValueError`` for zero vectors.
    """
    a = unit_vector(u_rest, "u_rest")
    b = unit_vector(u_target, "u_target")
    c = float(np.clip(a @ b, -1.0, 1.0))
    cross = np.cross(a, b)
    n = float(np.linalg.norm(cross))
    if n < 1e-12:
        if c > 0:
            return np.eye(3)
        # antiparallel: any axis perpendicular to a works; take the one from the smallest component
        helper = np.eye(3)[int(np.argmin(np.abs(a)))]
        k = np.cross(a, helper)
        k /= np.linalg.norm(k)
        theta = math.pi
    else:
        k = cross / n
        theta = math.acos(c)
    K = skew(k)
    return np.eye(3) + K * math.sin(theta) + K @ K * (1.0 - math.cos(theta))


@dataclass(frozen=True)
class RayCheck:
    """Result of the validity ray cast: ``valid`` is False when an obstacle is hit before the
    target; ``target_distance_m`` is where the target was reached (its surface when a target mesh
    was given, else its centre); ``blocked_at_m`` the first obstacle hit, ``None`` when clear."""

    valid: bool
    target_distance_m: float
    blocked_at_m: float | None
    blocking_face: int | None


def ray_cast_valid(obstacles, fingertip, target_point, target=None, *, clearance_m: float = 1e-4) -> RayCheck:
    """EgoPoint sec. 3.2.1 "Validation": cast a ray from the index fingertip toward ``P_obj``; the
    instance is discarded if the ray hits any obstacle before reaching the target.

    Args:
        obstacles: ``trimesh.Trimesh`` of the scene without the target (the hand excluded too).
        fingertip: (3,) ray origin, metres.
        target_point: (3,) ``P_obj``, metres.
        target: optional ``trimesh.Trimesh`` of the target; the ray then stops at its first hit
            (a surface in front of the centre), else at ``target_point``.
        clearance_m: hits closer than this to the fingertip are ignored (a tip touching a surface).
    Raises:
        ValueError: fingertip and target coincide.
    """
    o = np.asarray(fingertip, dtype=np.float64).reshape(3)
    d = np.asarray(target_point, dtype=np.float64).reshape(3) - o
    stop = float(np.linalg.norm(d))
    if stop < _EPS:
        raise ValueError("fingertip and target coincide")
    d /= stop
    if target is not None and len(target.faces):
        locs, _, _ = target.ray.intersects_location(o[None], d[None], multiple_hits=True)
        if len(locs):
            stop = min(stop, float(np.min((locs - o) @ d)))
    blocked, face = None, None
    if len(obstacles.faces):
        locs, _, tri = obstacles.ray.intersects_location(o[None], d[None], multiple_hits=True)
        if len(locs):
            t = (locs - o) @ d
            ok = (t > clearance_m) & (t < stop - clearance_m)
            if np.any(ok):
                i = int(np.argmin(np.where(ok, t, np.inf)))
                blocked, face = float(t[i]), int(tri[i])
    return RayCheck(valid=blocked is None, target_distance_m=stop, blocked_at_m=blocked, blocking_face=face)


def intrinsics_from_vfov(vfov_deg: float, width: int, height: int) -> np.ndarray:
    """(3, 3) pinhole K with square pixels for a vertical field of view (Point-Sim samples
    100..115 deg): ``fy = fx = (H / 2) / tan(vfov / 2)``, principal point at the image centre
    ``((W - 1) / 2, (H - 1) / 2)`` (pixel centres at integers). Raises ``ValueError`` outside (0, 180)."""
    if not 0 < vfov_deg < 180:
        raise ValueError(f"vertical field of view must be in (0, 180) degrees, got {vfov_deg}")
    f = (height / 2.0) / math.tan(math.radians(vfov_deg) / 2.0)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def project_point(p_world, T_world_camera: np.ndarray, K: np.ndarray) -> tuple[float, float] | None:
    """Pixel ``(u, v)`` of a world point (``P_2D`` of the exported tuple), optical convention;
    ``None`` when the point is not in front of the camera."""
    T_cw = np.linalg.inv(np.asarray(T_world_camera, dtype=np.float64))
    pc = T_cw[:3, :3] @ np.asarray(p_world, dtype=np.float64).reshape(3) + T_cw[:3, 3]
    if pc[2] <= _EPS:
        return None
    return float(K[0, 0] * pc[0] / pc[2] + K[0, 2]), float(K[1, 1] * pc[1] / pc[2] + K[1, 2])


def target_box_2d(
    points_world, T_world_camera: np.ndarray, K: np.ndarray, width: int, height: int
) -> tuple[float, float, float, float] | None:
    """The target's 2D box ``b_obj = (u_min, v_min, u_max, v_max)`` in pixels, clipped to the image:
    the bounds of its projected box corners (8, 3) or mesh vertices (N, 3). ``None`` when it is
    behind the camera or wholly outside the image."""
    proj = project_box_px(np.asarray(points_world, dtype=np.float64), T_world_camera, K, width, height)
    if proj is None:
        return None
    box = proj[0]
    return box if box[2] > box[0] and box[3] > box[1] else None
