"""Targeting: an agent's pixel point on a frame -> a base-frame target, or a refusal with its reason.

This is the pure function the targeting ROS node wraps (PointArena sec. 3.4: "the robot executes a
pick-or-place action at the indicated location using depth sensing"). Rules:

- no point at all (unparseable answer, empty list) -> refusal ``no_point``;
- only the **first** point is acted on (PointArena sec. 4.1: the first point is taken as the most
  confident one); the others are kept in the record;
- the point goes through ``perception.deproject_pixel`` (refusals ``outside_image``, ``no_depth``);
- the camera-frame point goes through the calibration into the base frame;
- the base-frame point must pass the workspace envelope (refusal ``unsafe_target: <reason>``).

A refusal never reaches the arm.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pointlab.perception.deproject import DepthRule, deproject_pixel
from pointlab.perception.extrinsics import Calibration
from pointlab.perception.frame import RGBDFrame
from pointlab.robot.errors import UnsafeTargetError
from pointlab.robot.workspace import Workspace

__all__ = ["Target", "compute_target", "REFUSALS"]

REFUSALS = ("no_point", "outside_image", "no_depth", "unsafe_target")


@dataclass(frozen=True)
class Target:
    """Result of targeting.

    Attributes:
        valid: whether the arm may act.
        pixel: the ``(u, v)`` acted on (pixels), or ``None`` when there was no point.
        point_camera_m: ``(3,)`` in the camera optical frame, metres, or ``None``.
        point_base_m: ``(3,)`` in the base frame, metres, or ``None``.
        depth_m: depth used, metres, or ``None``.
        reason: ``None`` when valid, else ``"<refusal>: detail"`` with refusal in ``REFUSALS``.
    """

    valid: bool
    pixel: tuple[float, float] | None = None
    point_camera_m: np.ndarray | None = None
    point_base_m: np.ndarray | None = None
    depth_m: float | None = None
    reason: str | None = None

    @property
    def refusal(self) -> str | None:
        """The refusal kind (``no_depth``...), without detail."""
        return None if self.reason is None else self.reason.split(":", 1)[0]

    def to_dict(self) -> dict:
        def lst(a):
            return None if a is None else [round(float(c), 6) for c in a]

        return {"valid": self.valid, "pixel": None if self.pixel is None else [float(c) for c in self.pixel],
                "point_camera_m": lst(self.point_camera_m), "point_base_m": lst(self.point_base_m),
                "depth_m": self.depth_m, "reason": self.reason}


def compute_target(frame: RGBDFrame, points_px, calibration: Calibration, workspace: Workspace,
                   rule: DepthRule = DepthRule()) -> Target:
    """Turn the first of ``points_px`` (``(N, 2)`` original-image pixels, u then v) into a base-frame
    target. Never raises for bad points: returns a refusal instead."""
    try:
        pts = np.asarray([] if points_px is None else points_px, dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError):
        return Target(False, reason="no_point: points are not (N, 2) numbers")
    if len(pts) == 0:
        return Target(False, reason="no_point: the agent gave no parseable point")
    u, v = float(pts[0, 0]), float(pts[0, 1])
    d = deproject_pixel(frame, u, v, rule)
    if not d.valid:
        return Target(False, pixel=(u, v), reason=d.reason)
    p_base = calibration.camera_to_base(d.point_m)
    try:
        workspace.check(p_base, "target")
    except UnsafeTargetError as e:
        return Target(False, (u, v), d.point_m, p_base, d.depth_m, reason=f"unsafe_target: {e.reason}")
    return Target(True, (u, v), d.point_m, p_base, d.depth_m)
