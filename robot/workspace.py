"""The workspace envelope: every target and every waypoint is checked against it before any motion.

All lengths are metres in the robot base frame (``link_base``: z up, origin at the base mounting
face; the Lite 6 stands on the table, so the table top is at ``table_z_m = 0`` by default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import UnsafeTargetError

__all__ = ["Workspace"]


@dataclass(frozen=True)
class Workspace:
    """A box in the base frame, a table plane and a reach annulus around the base axis.

    Attributes:
        x_m, y_m, z_m: ``(min, max)`` of the allowed box, metres (base frame).
        table_z_m: height of the table top; no TCP position (waypoint, pose) may go below
            ``table_z_m + min_table_clearance_m``.
        min_table_clearance_m: smallest allowed TCP height above the table, metres.
        target_tolerance_m: how far below the table top a *target* may be measured and still be
            accepted: a point on the bare table comes back from depth with a few millimetres of
            noise either side (a place "on the table"); the waypoints above it are still kept
            ``min_table_clearance_m`` over the table by ``Arm.plan``.
        max_reach_m: largest horizontal distance from the base z axis, metres (Lite 6: about 0.44).
        min_radius_m: smallest horizontal distance from the base z axis (keeps the tool off the base).
    """

    x_m: tuple[float, float] = (0.10, 0.45)
    y_m: tuple[float, float] = (-0.35, 0.35)
    z_m: tuple[float, float] = (-0.02, 0.40)
    table_z_m: float = 0.0
    min_table_clearance_m: float = 0.005
    target_tolerance_m: float = 0.01
    max_reach_m: float = 0.44
    min_radius_m: float = 0.12

    def __post_init__(self) -> None:
        for name in ("x_m", "y_m", "z_m"):
            lo, hi = getattr(self, name)
            if not lo < hi:
                raise ValueError(f"workspace {name}: min {lo} must be below max {hi}")
        if self.min_table_clearance_m < 0 or self.target_tolerance_m < 0:
            raise ValueError("min_table_clearance_m and target_tolerance_m must be >= 0")
        if not 0 <= self.min_radius_m < self.max_reach_m:
            raise ValueError("need 0 <= min_radius_m < max_reach_m")

    def check(self, point_m: np.ndarray, what: str = "target") -> None:
        """Raise ``UnsafeTargetError`` if the base-frame point ``(3,)`` (metres) is outside.

        ``what`` is ``"target"`` for a pointed surface point (floor: table top minus
        ``target_tolerance_m``) or anything else for a TCP position (floor: table top plus
        ``min_table_clearance_m``). The reason names the first violated limit: ``not_finite``,
        ``outside_box``, ``below_table``, ``beyond_reach`` or ``too_close_to_base``.
        """
        p = np.asarray(point_m, dtype=np.float64).reshape(-1)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise UnsafeTargetError(f"not_finite: {what} {p.tolist()} is not a finite 3D point")
        x, y, z = (float(c) for c in p)
        for axis, val, (lo, hi) in (("x", x, self.x_m), ("y", y, self.y_m), ("z", z, self.z_m)):
            if not lo <= val <= hi:
                raise UnsafeTargetError(f"outside_box: {what} {axis}={val:.3f} m outside [{lo:.3f}, {hi:.3f}] m")
        if what == "target":
            floor = self.table_z_m - self.target_tolerance_m
        else:
            floor = self.table_z_m + self.min_table_clearance_m
        if z < floor:
            raise UnsafeTargetError(f"below_table: {what} z={z:.3f} m below the allowed {floor:.3f} m")
        r = math.hypot(x, y)
        if r > self.max_reach_m:
            raise UnsafeTargetError(
                f"beyond_reach: {what} is {r:.3f} m from the base axis (max {self.max_reach_m:.3f} m)"
            )
        if r < self.min_radius_m:
            raise UnsafeTargetError(
                f"too_close_to_base: {what} is {r:.3f} m from the base axis (min {self.min_radius_m:.3f} m)"
            )

    def contains(self, point_m: np.ndarray) -> bool:
        try:
            self.check(point_m)
        except UnsafeTargetError:
            return False
        return True
