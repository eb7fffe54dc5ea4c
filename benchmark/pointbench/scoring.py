"""Point-Bench scoring: a prediction's points against an item's target masks.

PointArena sec. 3.1 and 4.1:
- non-counting: only the FIRST predicted point is evaluated (the model's highest-confidence answer);
  success when it lies inside the target mask;
- counting: the number of points equals the target count ``K*`` and every point lies inside a
  target; with instance masks every instance is covered, by a one-to-one assignment of points to
  instances (``M_j[y_i, x_i] = 1`` for the assigned pair);
- a point outside the image, or no (parseable) point, fails.

Pixel convention (docs/architecture.md): ``(u, v)`` continuous with pixel centres at integers, so
pixel column ``c`` covers ``[c - 0.5, c + 0.5)``; a point is inside the image when
``-0.5 <= u < W - 0.5`` and ``-0.5 <= v < H - 0.5``, and it hits mask pixel
``[floor(v + 0.5), floor(u + 0.5)]``.

Per category accuracy and the unweighted mean of the categories present (the paper's "Average"
over the five categories).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..points import POINT_FORMATS, parse_points
from .dataset import CATEGORIES, BenchItem, DatasetError, Prediction

__all__ = ["REASONS", "ItemScore", "pixel_index", "score_points", "score_item", "score_prediction",
           "score_predictions", "summarize"]

# Every reason an item can carry. Success: "hit" (non-counting) or "all_targets" (counting).
REASONS = ("hit", "all_targets", "miss", "outside_image", "no_points", "unparseable", "count_mismatch",
           "point_outside_targets", "instance_uncovered", "model_error", "no_prediction", "bad_ground_truth")


@dataclass
class ItemScore:
    """One scored item: ``success``, the points used (pixels), a ``reason`` from ``REASONS``."""

    id: str
    category: str
    success: bool
    points: list[list[float]] = field(default_factory=list)
    reason: str = ""
    detail: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["detail"] is None:
            del d["detail"]
        return d


def pixel_index(u: float, v: float, width: int, height: int) -> tuple[int, int] | None:
    """Mask index ``(row, col)`` for continuous pixel ``(u, v)``, or ``None`` when outside the image
    (or not finite)."""
    if not (math.isfinite(u) and math.isfinite(v)):
        return None
    c, r = math.floor(u + 0.5), math.floor(v + 0.5)
    if 0 <= c < width and 0 <= r < height:
        return r, c
    return None


def score_points(points_px: Sequence[Sequence[float]] | np.ndarray, category: str, mask: np.ndarray | None, *,
                 instance_masks: Sequence[np.ndarray] = (), count: int | None = None) -> tuple[bool, str, list]:
    """Score pixel points for one item (rules in the module docstring).

    Args:
        points_px: ``(N, 2)`` points ``(u, v)`` in original-image pixels (N may be 0).
        category: one of ``CATEGORIES``; ``counting`` uses the counting rule.
        mask: union target mask ``(H, W)`` bool (may be ``None`` when instance masks are given).
        instance_masks: one ``(H, W)`` bool mask per target instance.
        count: target count ``K*`` (counting); defaults to the number of instance masks, else 1.

    Returns: ``(success, reason, points_used)``; ``points_used`` is ``[[u, v], ...]``, only the
    first point for non-counting items.
    Raises: DatasetError when there is neither a mask nor instance masks.
    """
    if mask is None and not instance_masks:
        raise DatasetError("no target mask")
    shape = mask.shape if mask is not None else instance_masks[0].shape
    height, width = shape
    pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 2)
    if len(pts) == 0:
        return False, "no_points", []
    if category != "counting":
        u, v = pts[0]
        used = [[float(u), float(v)]]
        ix = pixel_index(u, v, width, height)
        if ix is None:
            return False, "outside_image", used
        target = mask if mask is not None else np.logical_or.reduce(instance_masks)
        return (True, "hit", used) if bool(target[ix]) else (False, "miss", used)

    used = pts.tolist()
    k_star = count if count is not None else (len(instance_masks) if instance_masks else 1)
    idx = [pixel_index(u, v, width, height) for u, v in pts]
    if any(i is None for i in idx):
        return False, "outside_image", used
    if len(pts) != k_star:
        return False, "count_mismatch", used
    if instance_masks:
        # hit[i, j]: point i lies in instance j; a perfect one-to-one matching must cover every instance
        hit = np.array([[bool(m[r, c]) for m in instance_masks] for r, c in idx], dtype=bool)
        if not hit.any(axis=1).all():
            return False, "point_outside_targets", used
        rows, cols = linear_sum_assignment(-hit.astype(np.int64))
        matched = int(hit[rows, cols].sum())
        if matched < len(instance_masks):
            return False, "instance_uncovered", used
        return True, "all_targets", used
    if not all(bool(mask[r, c]) for r, c in idx):
        return False, "point_outside_targets", used
    return True, "all_targets", used


def score_item(item: BenchItem, points_px: Sequence[Sequence[float]] | np.ndarray | None, *,
               failure: str | None = None, detail: str | None = None) -> ItemScore:
    """Score one item given its pixel points, or record ``failure`` (e.g. ``unparseable``,
    ``model_error``, ``no_prediction``) when there are no usable points. Never raises: an unreadable
    mask becomes ``bad_ground_truth``; a non-finite coordinate makes the item ``unparseable``."""
    if failure is not None:
        pts = [] if points_px is None else np.asarray(points_px, dtype=float).reshape(-1, 2).tolist()
        if not np.isfinite(pts).all():
            pts = []  # the record must stay strict JSON
        return ItemScore(item.id, item.category, False, pts, failure, detail)
    if points_px is not None and not np.isfinite(np.asarray(points_px, dtype=float)).all():
        # a NaN / infinite coordinate is not a point: the whole answer is invalid (and would put
        # NaN into the results JSON)
        return ItemScore(item.id, item.category, False, [], "unparseable", "non-finite point coordinate")
    try:
        inst = item.load_instance_masks()
        mask = item.target_mask() if item.mask is not None or inst else None
        ok, reason, used = score_points(points_px if points_px is not None else [], item.category, mask,
                                        instance_masks=inst, count=item.count)
    except DatasetError as e:
        return ItemScore(item.id, item.category, False, [], "bad_ground_truth", str(e))
    return ItemScore(item.id, item.category, ok, used, reason, detail)


def score_prediction(item: BenchItem, pred: Prediction | None) -> ItemScore:
    """Score one PRED record: pixel points directly, or raw text parsed with ``parse_points`` in the
    record's format (``auto`` allowed). Missing prediction -> ``no_prediction``; unknown format or
    unparseable text -> ``unparseable`` with the parser's reason in ``detail``. Never raises."""
    if pred is None:
        return score_item(item, None, failure="no_prediction")
    if pred.error:
        return score_item(item, None, failure="model_error", detail=pred.error)
    if pred.points_px is not None:
        return score_item(item, pred.points_px)
    fmt = pred.format or "auto"
    if fmt == "invalid_points":  # set by load_pred_jsonl for points that are not finite [[u, v], ...]
        return score_item(item, None, failure="unparseable",
                          detail="points must be [[u, v], ...] of finite numbers")
    if fmt not in POINT_FORMATS:
        return score_item(item, None, failure="unparseable", detail=f"unknown point format {fmt!r}")
    parsed = parse_points(pred.prediction or "", fmt, item.width, item.height)
    if not parsed.ok:
        return score_item(item, None, failure="unparseable", detail=parsed.reason)
    return score_item(item, parsed.points_px)


def score_predictions(items: Sequence[BenchItem], preds: dict[str, Prediction]) -> dict:
    """``{"items": [ItemScore dicts], "summary": summarize(...)}`` over every GT item (a GT item
    without a prediction fails with ``no_prediction``; predictions for unknown ids are counted in
    ``summary["unknown_prediction_ids"]``)."""
    scores = [score_prediction(it, preds.get(it.id)) for it in items]
    summary = summarize(scores)
    known = {it.id for it in items}
    summary["unknown_prediction_ids"] = sorted(set(preds) - known)
    return {"items": [s.to_dict() for s in scores], "summary": summary}


def summarize(scores: Iterable[ItemScore]) -> dict:
    """``{"categories": {cat: {n, success, accuracy}}, "average": unweighted mean of per-category
    accuracies (categories with items), "overall": micro accuracy, "n": items}``; accuracies are
    fractions in [0, 1]; ``average`` is ``None`` when there are no items."""
    per = {c: [0, 0] for c in CATEGORIES}
    for s in scores:
        per.setdefault(s.category, [0, 0])
        per[s.category][0] += 1
        per[s.category][1] += int(s.success)
    cats = {c: {"n": n, "success": k, "accuracy": (k / n if n else None)} for c, (n, k) in per.items()}
    present = [v["accuracy"] for v in cats.values() if v["n"]]
    n_all = sum(v["n"] for v in cats.values())
    return {"categories": cats,
            "average": float(np.mean(present)) if present else None,
            "overall": (sum(v["success"] for v in cats.values()) / n_all) if n_all else None,
            "n": n_all}
