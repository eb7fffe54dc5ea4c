"""Point-Bench scoring: a prediction's points against an item's target masks, under a rule set.

``--rules pointlab`` (the default), PointArena sec. 3.1 and 4.1:
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

Every item is the one score contract, ``scorers.ItemScore`` (``point_score`` builds it): ``value`` 1.0 on
success and 0.0 otherwise, ``parsed`` the points used (``[[u, v], ...]``, or the released reader's own
answer under ``--rules reference``), ``reason`` from ``REASONS``, ``metadata`` ``{"category", "success",
"detail"?, "reader"?}`` (``detail`` and ``reader`` only when known). ``item_record(score, rules)`` is the
older per-item form ``{"id", "category", "success", "points", "reason", "detail"?, "rules", "reader"?}``
that ``score_predictions`` returns and a run's ``items.json`` holds (unchanged, so saved runs still read).

``--rules reference``: PointArena's released ``model_evaluator.py`` item for item
(``pointbench.reference``: its answer readers, ``int()`` pixels, its mask reading); the differences are
the ``pointbench.*`` rows of ``scorers.RULES`` (docs/scoring.md). Answers are always re-read from their
raw text, so a parser or rule change reaches every saved run.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..points import (
    POINT_FORMATS,
    QWEN_MAX_PIXELS,
    QWEN_MIN_PIXELS,
    PointEntry,
    inside_image,
    parse_points,
    qwen_model_size,
)
from ..scorers import ItemScore, ScoreReport, check_rules, register_scorer
from .dataset import CATEGORIES, BenchItem, DatasetError, Prediction
from .maskcache import PackedMask
from .reference import RefAnswer, pixel_points_answer, point_pixel, ref_score, reference_answer

__all__ = [
    "REASONS",
    "point_score",
    "item_record",
    "pixel_index",
    "score_points",
    "score_entries",
    "score_item",
    "score_prediction",
    "score_predictions",
    "summarize",
    "pixel_entries",
]

# Every reason an item can carry. Success: "hit" (non-counting) or "all_targets" (counting).
REASONS = (
    "hit",
    "all_targets",
    "miss",
    "outside_image",
    "no_points",
    "unparseable",
    "count_mismatch",
    "point_outside_targets",
    "instance_uncovered",
    "model_error",
    "no_prediction",
    "bad_ground_truth",
    "invalid_prediction",
)


def point_score(
    item_id: str,
    category: str,
    success: bool,
    points: Sequence[Any] = (),
    reason: str = "",
    *,
    detail: str | None = None,
    reader: str | None = None,
) -> ItemScore:
    """One Point-Bench item as the score contract (module docstring): ``value`` 1.0 or 0.0, ``parsed`` the
    points used, ``metadata`` ``{"category", "success", "detail"?, "reader"?}`` in that order."""
    meta: dict[str, Any] = {"category": category, "success": bool(success)}
    if detail is not None:
        meta["detail"] = detail
    if reader is not None:
        meta["reader"] = reader
    return ItemScore(id=item_id, value=1.0 if success else 0.0, parsed=list(points), reason=reason, metadata=meta)


def _success(s: ItemScore) -> bool:
    return s.value == 1.0


def item_record(s: ItemScore, rules: str) -> dict[str, Any]:
    """The per-item form of ``score_predictions`` and a run's ``items.json``: ``{"id", "category", "success",
    "points", "reason", "detail"?, "rules", "reader"?}`` (``detail`` and ``reader`` only when known)."""
    d: dict[str, Any] = {
        "id": s.id,
        "category": s.metadata["category"],
        "success": _success(s),
        "points": s.parsed,
        "reason": s.reason,
    }
    if s.metadata.get("detail") is not None:
        d["detail"] = s.metadata["detail"]
    d["rules"] = rules
    if s.metadata.get("reader") is not None:
        d["reader"] = s.metadata["reader"]
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


def score_points(
    points_px: Sequence[Sequence[float]] | np.ndarray,
    category: str,
    mask: np.ndarray | PackedMask | None,
    *,
    instance_masks: Sequence[np.ndarray | PackedMask] = (),
    count: int | None = None,
) -> tuple[bool, str, list]:
    """Score pixel points for one item (rules in the module docstring).

    Args:
        points_px: ``(N, 2)`` points ``(u, v)`` in original-image pixels (N may be 0).
        category: one of ``CATEGORIES``; ``counting`` uses the counting rule.
        mask: union target mask ``(H, W)`` bool, an array or a ``maskcache.PackedMask`` (may be ``None``
            when instance masks are given).
        instance_masks: one ``(H, W)`` bool mask per target instance (arrays or ``PackedMask``).
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
        inside = bool(mask[ix]) if mask is not None else any(bool(m[ix]) for m in instance_masks)
        return (True, "hit", used) if inside else (False, "miss", used)

    used = pts.tolist()
    k_star = count if count is not None else (len(instance_masks) if instance_masks else 1)
    idx = [i for u, v in pts if (i := pixel_index(u, v, width, height)) is not None]
    if len(idx) < len(pts):  # a point outside the image
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
    assert mask is not None  # no instance masks: checked above
    if not all(bool(mask[r, c]) for r, c in idx):
        return False, "point_outside_targets", used
    return True, "all_targets", used


def pixel_entries(points_px: Sequence[Sequence[float]] | np.ndarray, width: int, height: int) -> list[PointEntry]:
    """``PointEntry`` per pixel point ``(u, v)`` (finite, and whether inside the image, as ``parse_points``)."""
    out = []
    for p in np.asarray(points_px, dtype=np.float64).reshape(-1, 2):
        u, v = float(p[0]), float(p[1])
        if not (math.isfinite(u) and math.isfinite(v)):
            out.append(PointEntry(u_px=None, v_px=None, valid=False, reason="non-finite coordinate"))
        elif inside_image(u, v, width, height):
            out.append(PointEntry(u_px=u, v_px=v))
        else:
            out.append(
                PointEntry(
                    u_px=u, v_px=v, reason=f"outside_image: ({u:g}, {v:g}) is outside the {width}x{height} image"
                )
            )
    return out


def score_entries(
    entries: Sequence[PointEntry],
    category: str,
    mask: np.ndarray | PackedMask | None,
    *,
    instance_masks: Sequence[np.ndarray | PackedMask] = (),
    count: int | None = None,
) -> tuple[bool, str, list, str | None]:
    """pointlab rules over the model's entries, in its order: ``(success, reason, points_used, detail)``.

    Non-counting: the FIRST entry is the answer; a non-finite or overflowing first point fails
    (``unparseable``) however good the next one is (PointArena sec. 4.1). Counting: every entry must be a
    finite point, then ``score_points``.
    """
    if not entries:
        return False, "no_points", [], None
    if category != "counting":
        first = entries[0]
        if first.u_px is None or first.v_px is None:  # (both or neither)
            return False, "unparseable", [], f"first point: {first.reason}"
        ok, reason, used = score_points(
            [[first.u_px, first.v_px]], category, mask, instance_masks=instance_masks, count=count
        )
        return ok, reason, used, None
    bad = [e for e in entries if e.u_px is None or e.v_px is None]  # (both or neither)
    finite = [[u, v] for e in entries if (u := e.u_px) is not None and (v := e.v_px) is not None]
    if bad:
        return False, "unparseable", finite, bad[0].reason
    ok, reason, used = score_points(finite, category, mask, instance_masks=instance_masks, count=count)
    return ok, reason, used, None


def score_item(
    item: BenchItem,
    points_px: Sequence[Sequence[float]] | np.ndarray | None,
    *,
    failure: str | None = None,
    detail: str | None = None,
    entries: Sequence[PointEntry] | None = None,
) -> ItemScore:
    """Score one item under the pointlab rules given its pixel points (or the parser's ``entries``), or
    record ``failure`` (e.g. ``unparseable``, ``model_error``, ``no_prediction``) when there are no usable
    points. Never raises: an unreadable mask becomes ``bad_ground_truth``; a non-finite coordinate makes
    the item ``unparseable``."""
    if failure is not None:
        pts = [] if points_px is None else np.asarray(points_px, dtype=float).reshape(-1, 2).tolist()
        if not np.isfinite(pts).all():
            pts = []  # the record must stay strict JSON
        return point_score(item.id, item.category, False, pts, failure, detail=detail)
    if entries is None:
        entries = pixel_entries(points_px if points_px is not None else [], item.width, item.height)
    try:
        mask, inst = item.packed_masks()  # one bit read per point: no mask is unpacked
        ok, reason, used, why = score_entries(entries, item.category, mask, instance_masks=inst, count=item.count)
    except DatasetError as e:
        return point_score(item.id, item.category, False, [], "bad_ground_truth", detail=str(e))
    return point_score(item.id, item.category, ok, used, reason, detail=detail if why is None else why)


def _model_size(pred: Prediction, fmt: str, item: BenchItem, qwen: tuple[int, int]) -> tuple[int, int] | None:
    """The frame absolute coordinates refer to: the sent image (run records) through Qwen's resize."""
    if pred.sent_size is None or tuple(pred.sent_size) == (item.width, item.height):
        return None
    if fmt in ("qwen", "auto"):
        try:
            return qwen_model_size(*pred.sent_size, min_pixels=qwen[0], max_pixels=qwen[1])
        except ValueError:
            return None
    w, h = pred.sent_size
    return (w, h)


def _score_reference(item: BenchItem, pred: Prediction, fmt: str | None) -> ItemScore | None:
    """``--rules reference`` for one prediction with points or raw text; ``None`` when the released
    evaluators have no reader for ``fmt`` (pointlab's is used then)."""
    ans: RefAnswer | None
    if pred.points_px is not None:
        ans = pixel_points_answer(pred.points_px)
    else:
        ans = reference_answer(pred.prediction or "", fmt or "", item.width, item.height, item.category)
    if ans is None:
        return None
    try:
        mask = item.target_mask(rule="lmms-eval" if ans.evaluator == "lmms-eval" else "pointarena")
    except DatasetError as e:
        return point_score(item.id, item.category, False, [], "bad_ground_truth", detail=str(e))
    ok, reason, used, detail = ref_score(ans, item.category, mask, item.count)
    return point_score(item.id, item.category, ok, used, reason, detail=detail, reader=f"{ans.evaluator}:{ans.reader}")


def score_prediction(
    item: BenchItem, pred: Prediction | None, *, rules: str = "pointlab", qwen_pixels: tuple[int, int] | None = None
) -> ItemScore:
    """Score one PRED record under ``rules``: pixel points directly, or raw text read by the rule set's
    reader in the record's format (``auto`` allowed under pointlab). Missing prediction ->
    ``no_prediction``; an unusable line -> ``invalid_prediction``; unknown format or unparseable text ->
    ``unparseable`` with the parser's reason in ``metadata["detail"]``. Never raises.

    Args:
        qwen_pixels: ``(min_pixels, max_pixels)`` of the served Qwen checkpoint (default the record's, else
            the released checkpoints').
    """
    check_rules(rules)
    return _score_prediction(item, pred, rules, qwen_pixels)


def _score_prediction(item: BenchItem, pred: Prediction | None, rules: str, qwen_pixels) -> ItemScore:
    if pred is None:
        return score_item(item, None, failure="no_prediction")
    if pred.problem:
        return score_item(item, None, failure="invalid_prediction", detail=pred.problem)
    if pred.error:
        return score_item(item, None, failure="model_error", detail=pred.error)
    fmt = pred.format or "auto"
    if pred.points_px is None and fmt not in POINT_FORMATS:
        return score_item(item, None, failure="unparseable", detail=f"unknown point format {fmt!r}")
    if rules == "reference":
        ref = _score_reference(item, pred, fmt)
        if ref is not None:
            return ref
    if pred.points_px is not None:
        return score_item(item, pred.points_px)
    qwen = qwen_pixels or pred.qwen_pixels or (QWEN_MIN_PIXELS, QWEN_MAX_PIXELS)
    parsed = parse_points(
        pred.prediction or "",
        fmt,
        item.width,
        item.height,
        model_size=_model_size(pred, fmt, item, qwen),
        qwen_min_pixels=qwen[0],
        qwen_max_pixels=qwen[1],
    )
    if not parsed.entries:
        return score_item(item, None, failure="unparseable", detail=parsed.reason)
    out = score_item(item, None, entries=parsed.entries)
    out.metadata["reader"] = "pointlab:parse_points"
    return out


def score_predictions(items: Sequence[BenchItem], preds: dict[str, Prediction], *, rules: str = "pointlab") -> dict:
    """``{"items": [item_record dicts], "summary": summarize(...)}`` over every GT item (a GT item
    without a prediction fails with ``no_prediction``; predictions for unknown ids are counted in
    ``summary["unknown_prediction_ids"]``); the summary names ``rules``."""
    scores = [score_prediction(it, preds.get(it.id), rules=rules) for it in items]
    summary = summarize(scores)
    known = {it.id for it in items}
    summary["rules"] = rules
    summary["unknown_prediction_ids"] = sorted(set(preds) - known)
    summary["unreadable_prediction_lines"] = list(getattr(preds, "unreadable", []))
    return {"items": [item_record(s, rules) for s in scores], "summary": summary}


def summarize(scores: Iterable[ItemScore]) -> dict:
    """Point-Bench items (``point_score``: ``metadata["category"]``, success = ``value`` 1.0) ->
    ``{"categories": {cat: {n, success, accuracy}}, "average": unweighted mean of per-category
    accuracies (categories with items), "overall": micro accuracy, "n": items}``; accuracies are
    fractions in [0, 1]; ``average`` is ``None`` when there are no items."""
    per: dict[str, list[int]] = {c: [0, 0] for c in CATEGORIES}
    for s in scores:
        cat = s.metadata["category"]
        per.setdefault(cat, [0, 0])
        per[cat][0] += 1
        per[cat][1] += int(_success(s))
    cats: dict[str, dict[str, Any]] = {
        c: {"n": n, "success": k, "accuracy": (k / n if n else None)} for c, (n, k) in per.items()
    }
    present = [v["accuracy"] for v in cats.values() if v["n"]]
    n_all = sum(v["n"] for v in cats.values())
    return {
        "categories": cats,
        "average": float(np.mean(present)) if present else None,
        "overall": (sum(v["success"] for v in cats.values()) / n_all) if n_all else None,
        "n": n_all,
    }


def lmms_metrics(items: Sequence[BenchItem], scores: Sequence[ItemScore]) -> dict[str, float]:
    """The numbers lmms-eval's ``pointbench`` task reports: ``pointbench_binary_acc`` (mean item success)
    and ``pointbench_acc`` (mean over items of the fraction of scored points that hit the target)."""
    if not scores:
        return {"pointbench_binary_acc": 0.0, "pointbench_acc": 0.0}
    fracs = []
    for it, s in zip(items, scores):
        pts = [p for p in s.parsed if (isinstance(p, (list, tuple)) and len(p) == 2) or isinstance(p, dict)]
        if (
            not pts
            or not _success(s)
            and s.reason
            in ("unparseable", "no_points", "model_error", "no_prediction", "invalid_prediction", "bad_ground_truth")
        ):
            fracs.append(0.0)
            continue
        fracs.append(1.0 if _success(s) else _hit_fraction(it, s))
    return {
        "pointbench_binary_acc": float(np.mean([_success(s) for s in scores])),
        "pointbench_acc": float(np.mean(fracs)),
    }


def _hit_fraction(item: BenchItem, s: ItemScore) -> float:
    # read by a released evaluator's reader (only ever under --rules reference): the mask and the pixel it
    # tests (int() of {"point": [x, y]} for PointArena, lmms-eval's rounded integers); else the pixel-area convention
    evaluator = (s.metadata.get("reader") or "").split(":")[0]
    if evaluator not in ("pointarena", "lmms-eval"):
        evaluator = None  # pointlab's reader (no released one for this format): pointlab's rule
    try:
        mask = item.target_mask(rule=evaluator or "pointlab")
    except DatasetError:
        return 0.0
    hits = []
    for p in s.parsed:
        if evaluator:
            px = point_pixel(p, item.width, item.height, evaluator)
            ix = None if px is None else (px[1], px[0])
        else:
            try:
                ix = pixel_index(float(p[0]), float(p[1]), item.width, item.height)
            except (TypeError, ValueError, KeyError, IndexError, OverflowError):
                ix = None
        hits.append(bool(ix is not None and mask[ix]))
    return float(np.mean(hits)) if hits else 0.0


@register_scorer("pointing", "Point-Bench (PointArena sec. 3.1, 4.1): points against target masks")
def score_pointing(items: Sequence[BenchItem], preds: dict[str, Prediction], *, rules: str = "pointlab") -> ScoreReport:
    """The registered Point-Bench scorer: ``score_predictions`` as a ``ScoreReport`` of ``point_score`` items."""
    scores = [score_prediction(it, preds.get(it.id), rules=rules) for it in items]
    summary = summarize(scores)
    summary["unknown_prediction_ids"] = sorted(set(preds) - {it.id for it in items})
    summary["unreadable_prediction_lines"] = list(getattr(preds, "unreadable", []))
    summary["lmms_eval"] = lmms_metrics(items, scores)
    return ScoreReport(scorer="pointing", rules=rules, items=scores, summary=summary)
