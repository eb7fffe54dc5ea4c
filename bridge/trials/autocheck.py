"""The automatic outcome check: did the pick or place happen, read from depth before and after.

AutoEval (Zhou et al. 2025) judges real-robot episodes automatically with a learned success
classifier; pointlab uses geometry instead, which needs no training data and says why:

- **pick**: after the arm has lifted the object and moved away (it homes after every action), the
  surface under the target pixel should be *farther* from the camera than before (the object is
  gone): success when the median depth in a window around the target rose by at least
  ``min_change_mm``;
- **place**: new height appears at the place target: the median depth there *fell* by at least
  ``min_change_mm`` (something now stands where the point was).

Where the tool reports holding (the Lite vacuum's sensor), a pick is a success only if it also
reports holding. With a simulator the physics state is the ground truth (``method="physics"``,
from the sim's own judgement) and the depth check is reported beside it.

Limits (docs/trials.md): a window with too few valid depth pixels before or after gives ``None``
(cannot tell); an object thinner than ``min_change_mm`` (a sheet of paper, a coin) cannot be
seen to leave or arrive; anything else that moves under the target (the arm still in view, a
hand, another object knocked over) changes depth too; a place "next to" something puts the object
beside the point rather than on it, so only a window around the point is read, not the object.
"""

from __future__ import annotations

import numpy as np

from pointlab.bridge.trials.outcomes import AutoCheck

__all__ = ["depth_check", "physics_check"]


def _window_median_mm(
    depth: np.ndarray, depth_scale_m: float, u: float, v: float, r: int, min_valid: int
) -> tuple[float | None, int]:
    h, w = depth.shape
    col, row = int(np.floor(u + 0.5)), int(np.floor(v + 0.5))
    if not (0 <= col < w and 0 <= row < h):
        return None, 0
    win = depth[max(0, row - r) : row + r + 1, max(0, col - r) : col + r + 1].astype(np.float64)
    valid = win[win > 0] * depth_scale_m * 1000.0
    if valid.size < min_valid:
        return None, int(valid.size)
    return float(np.median(valid)), int(valid.size)


def depth_check(
    action: str,
    pixel: tuple[float, float],
    before_depth: np.ndarray,
    after_depth: np.ndarray,
    depth_scale_m: float,
    *,
    radius_px: int = 12,
    min_change_mm: float = 15.0,
    min_valid_px: int = 20,
    holding_sensor: bool | None = None,
) -> AutoCheck:
    """The depth check of one trial.

    Args:
        action: ``pick`` or ``place``.
        pixel: the target pixel ``(u, v)`` (the first point), original-image pixels.
        before_depth, after_depth: ``(H, W)`` uint16 aligned depth of the frame the agent saw and of
            a frame taken after the arm stopped (same camera, same scale), 0 = no data.
        depth_scale_m: metres per depth unit.
        radius_px: half-size of the square window, pixels.
        min_change_mm: the smallest change counted as the object leaving or arriving, millimetres.
        min_valid_px: valid depth pixels needed in the window, before and after.
        holding_sensor: the tool's own holding reading after a pick, when it has one.

    Returns:
        ``AutoCheck`` with ``method="depth"``; ``success=None`` when the window has too little depth.

    Raises:
        ValueError: the depth images differ in shape, or ``action`` is not pick/place.
    """
    if action not in ("pick", "place"):
        raise ValueError(f"action must be pick or place, got {action!r}")
    if before_depth.shape != after_depth.shape:
        raise ValueError(f"depth shapes differ: {before_depth.shape} vs {after_depth.shape}")
    u, v = pixel
    before, nb = _window_median_mm(before_depth, depth_scale_m, u, v, radius_px, min_valid_px)
    after, na = _window_median_mm(after_depth, depth_scale_m, u, v, radius_px, min_valid_px)
    if before is None or after is None:
        return AutoCheck(
            success=None,
            method="depth",
            detail=f"too little depth around the target ({nb} before, {na} after; need {min_valid_px})",
        )
    change = after - before
    where = f"median depth {change:+.0f} mm within {radius_px} px of the target"
    if action == "pick":
        ok = change >= min_change_mm
        if holding_sensor is False:
            return AutoCheck(
                success=False,
                method="depth",
                depth_change_mm=round(change, 1),
                detail=f"{where}; the tool reports nothing held",
            )
        return AutoCheck(
            success=ok,
            method="depth",
            depth_change_mm=round(change, 1),
            detail=f"{where} ({'the object left' if ok else 'nothing left'})",
        )
    ok = change <= -min_change_mm
    return AutoCheck(
        success=ok,
        method="depth",
        depth_change_mm=round(change, 1),
        detail=f"{where} ({'something arrived' if ok else 'nothing arrived'})",
    )


def physics_check(sim_success: bool | None, sim_detail: str | None) -> AutoCheck | None:
    """The simulator's own judgement as the check (its physics state is the ground truth)."""
    if sim_success is None:
        return None
    return AutoCheck(success=bool(sim_success), method="physics", detail=sim_detail or "")
