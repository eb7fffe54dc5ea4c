"""Targeting: an agent's pixel point on a frame -> a base-frame target, or a refusal with its reason.

This is the pure function the targeting ROS node wraps (PointArena sec. 3.4: "the robot executes a
pick-or-place action at the indicated location using depth sensing"). Rules:

- no point at all (unparseable answer, empty list) -> refusal ``no_point``;
- only the **first** point the model gave is acted on (PointArena sec. 4.1: the first point is
  taken as the most confident one). If that first point is not usable (NaN, infinity, a number too
  large for a float, not a pair), the trial is refused ``invalid_point`` with that reason: the next
  point is *not* taken instead, since it is not what the model ranked first;
- the point goes through ``perception.deproject_pixel`` (refusals ``outside_image``, ``no_depth``);
- the camera-frame point goes through the calibration into the base frame;
- the base-frame point must pass the workspace envelope (refusal ``workspace``).

A refusal never reaches the arm. Refusal codes are those of ``bridge.trials.outcomes``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from pointlab.benchmark.points import PointEntry
from pointlab.perception.deproject import DepthRule, deproject_pixel
from pointlab.perception.extrinsics import Calibration
from pointlab.perception.frame import RGBDFrame
from pointlab.robot.errors import UnsafeTargetError
from pointlab.robot.workspace import Workspace

from pointlab.bridge.trials.outcomes import Refusal

__all__ = ["Target", "compute_target", "first_point", "entries_from_points"]


class Target(BaseModel):
    """Result of targeting.

    Attributes:
        valid: whether the arm may act.
        pixel: the ``(u, v)`` acted on (pixels), or ``None`` when there was no usable point.
        point_camera_m: ``(x, y, z)`` in the camera optical frame, metres, or ``None``.
        point_base_m: ``(x, y, z)`` in the base frame, metres, or ``None``.
        depth_m: depth used, metres, or ``None``.
        refusal: ``None`` when valid, else why not (``bridge.trials.outcomes.Refusal``).
    """

    model_config = ConfigDict(frozen=True)

    valid: bool
    pixel: tuple[float, float] | None = None
    point_camera_m: tuple[float, float, float] | None = None
    point_base_m: tuple[float, float, float] | None = None
    depth_m: float | None = None
    refusal: Refusal | None = None

    @classmethod
    def refused(cls, code: str, detail: str = "", **kw: Any) -> "Target":
        return cls(valid=False, refusal=Refusal(code=code, detail=detail), **kw)


def _vec(a) -> tuple[float, ...] | None:
    return None if a is None else tuple(round(float(c), 6) for c in a)


def entries_from_points(points_px) -> list[PointEntry]:
    """``PointEntry``s for bare ``(N, 2)`` points (an agent that reports no per-point validity): a pair
    of finite numbers is valid, anything else is an invalid entry with its reason, order kept."""
    out = []
    for p in [] if points_px is None else list(points_px):
        try:
            u, v = (float(c) for c in p)
        except (TypeError, ValueError, OverflowError):
            out.append(PointEntry(u_px=None, v_px=None, valid=False, reason="not a pair of numbers"))
            continue
        finite = math.isfinite(u) and math.isfinite(v)
        out.append(PointEntry(u_px=u, v_px=v, valid=finite, reason=None if finite else "not a finite number"))
    return out


def first_point(entries: Sequence[PointEntry]) -> tuple[tuple[float, float] | None, Refusal | None]:
    """The pixel to act on (the model's first point) or the refusal (``no_point``, ``invalid_point``)."""
    if not entries:
        return None, Refusal(code="no_point", detail="the agent gave no parseable point")
    first = entries[0]
    if first.pixel is None:  # not usable
        return None, Refusal(
            code="invalid_point", detail=f"the first point is invalid: {first.reason or 'not a number'}"
        )
    return first.pixel, None


def compute_target(
    frame: RGBDFrame,
    points: Sequence[PointEntry] | Any,
    calibration: Calibration,
    workspace: Workspace,
    rule: DepthRule = DepthRule(),
) -> Target:
    """Turn the first of ``points`` (``PointEntry``s in the model's order, or bare ``(N, 2)``
    original-image pixels, u then v) into a base-frame target. Never raises for bad points: returns
    a refusal instead."""
    if isinstance(points, np.ndarray) or not all(isinstance(p, PointEntry) for p in points or []):
        points = entries_from_points(points)
    pixel, refusal = first_point(points)
    if pixel is None:  # then refusal says why
        return Target(valid=False, refusal=refusal)
    u, v = pixel
    d = deproject_pixel(frame, u, v, rule)
    if not d.valid or d.point_m is None:
        assert d.refusal is not None  # a refused deprojection names why (a valid one has its point)
        return Target.refused(d.refusal, d.detail, pixel=(u, v))
    p_base = calibration.camera_to_base(d.point_m)
    common = dict(pixel=(u, v), point_camera_m=_vec(d.point_m), point_base_m=_vec(p_base), depth_m=d.depth_m)
    try:
        workspace.check(p_base, "target")
    except UnsafeTargetError as e:
        return Target.refused("workspace", e.reason, **common)
    return Target(valid=True, **common)
