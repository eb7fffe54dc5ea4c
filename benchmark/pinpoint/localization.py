"""The human localization score of PinpointQA App. D.2.

A response is a frame index and a click ``(x, y)`` normalized by the image width and height. A
wrong frame scores 0; on the right frame, with d the Euclidean distance to the annotated point in
normalized coordinates and r = 0.12, s = max(0, 1 - (d / r)^2). Accuracy = 100 * mean(s).
"""

from __future__ import annotations

import math
from typing import Any

from ..scorers import ItemScore, ScoreReport, register_scorer

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["LOCALIZATION_RADIUS", "LocalizationRecordError", "localization_score", "score_localization"]

#: r of App. D.2, in normalized image coordinates.
LOCALIZATION_RADIUS = 0.12


class LocalizationRecordError(BenchmarkError, ValueError):
    """A ground-truth or response record lacks ``frame_index``/``x``/``y`` or holds non-numbers."""


def localization_score(
    gt_frame: int, gt_x: float, gt_y: float, frame: int, x: float, y: float, radius: float = LOCALIZATION_RADIUS
) -> float:
    """s of App. D.2 for one response (coordinates normalized to [0, 1]); 0 for a wrong frame."""
    if int(frame) != int(gt_frame):
        return 0.0
    d = math.hypot(float(x) - float(gt_x), float(y) - float(gt_y))
    return max(0.0, 1.0 - (d / radius) ** 2)


class _InvalidResponse(Exception):
    """A response whose x or y is a number but not finite or outside [0, 1] (a per-item failure)."""


def _read(rec: dict, source: str) -> tuple[int, float, float]:
    """``(frame_index, x, y)`` of a record.

    Raises: LocalizationRecordError for a missing key, a bad frame, a non-number, or (ground truth)
    a coordinate that is not finite or outside [0, 1]; _InvalidResponse for such a coordinate in a
    response, which scores 0 instead of aborting the whole run.
    """

    def bad(msg: str):
        # one response line never stops the run: it scores 0 with the reason; bad ground truth is an input error
        if source == "response":
            raise _InvalidResponse(msg)
        raise LocalizationRecordError(f"{source} {rec.get('id')!r}: {msg}")

    try:
        frame, x, y = rec["frame_index"], rec["x"], rec["y"]
    except KeyError as e:
        bad(f"missing {e.args[0]!r}")
    if isinstance(frame, bool) or not isinstance(frame, int) or frame < 0:
        bad(f"frame_index must be an integer >= 0, got {str(frame)[:40]!r}")
    for name, v in (("x", x), ("y", y)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            bad(f"{name} must be a number, got {str(v)[:40]!r}")
        try:
            fv = float(v)
        except OverflowError:
            bad(f"{name} is a number too large for a float")
        if not (math.isfinite(fv) and 0.0 <= fv <= 1.0):
            bad(f"{name} must be a finite number in [0, 1] (normalized), got {fv!r}")
    return frame, float(x), float(y)


def score_localization(gt: list[dict], pred: list[dict], radius: float = LOCALIZATION_RADIUS) -> dict:
    """Score human (or model) localization responses: ``{"items", "summary"}``.

    Ground truth and responses are ``{"id", "frame_index", "x", "y"}``. A ground-truth id with no
    response scores 0 (``missing_response``); a response with an unknown id is counted, not scored.
    Summary: ``accuracy`` (100 * mean s, App. D.2), ``frame_accuracy`` (share of right frames),
    ``mean_distance`` over right-frame responses, counts, and the mean ``elapsed_s`` when the
    responses carry it. A response whose ``x`` or ``y`` is not finite or outside [0, 1] scores 0
    (``invalid_response``, with a ``detail``; not a right frame) and the run goes on.

    A response that cannot be used (missing key, bad frame, a non-number or overflowing x/y, a repeated
    id) scores 0 the same way.

    Raises:
        LocalizationRecordError: a ground-truth record is malformed (missing key, bad frame, non-number
        x/y, x/y not finite or outside [0, 1]) or a ground-truth id repeats.
    """
    responses: dict[str, dict] = {}
    duplicated: set[str] = set()
    for rec in pred:
        rid = str(rec.get("id"))
        if rid in responses:
            duplicated.add(rid)  # which of two responses counts is a guess: neither does
        responses[rid] = rec
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    for rec in gt:
        rid = str(rec.get("id"))
        if rid in seen:
            raise LocalizationRecordError(f"duplicate ground-truth id {rid!r}")
        seen.add(rid)
        gf, gx, gy = _read(rec, "ground truth")
        if rid not in responses:
            items.append(
                {"id": rid, "score": 0.0, "frame_correct": False, "distance": None, "reason": "missing_response"}
            )
            continue
        try:
            if rid in duplicated:
                raise _InvalidResponse(f"duplicate response id {rid!r}")
            f, x, y = _read(responses[rid], "response")
        except _InvalidResponse as e:
            items.append(
                {
                    "id": rid,
                    "score": 0.0,
                    "frame_correct": False,
                    "distance": None,
                    "reason": "invalid_response",
                    "detail": str(e),
                }
            )
            continue
        correct = f == gf
        items.append(
            {
                "id": rid,
                "score": localization_score(gf, gx, gy, f, x, y, radius),
                "frame_correct": correct,
                "distance": math.hypot(x - gx, y - gy) if correct else None,
                "reason": "ok" if correct else "wrong_frame",
            }
        )
    n = len(items)
    dists = [it["distance"] for it in items if it["distance"] is not None]
    elapsed = [
        t
        for t in (_seconds(r.get("elapsed_s")) for r in responses.values() if str(r.get("id")) in seen)
        if t is not None
    ]
    summary = {
        "accuracy": 100.0 * sum(it["score"] for it in items) / n if n else None,
        "frame_accuracy": sum(it["frame_correct"] for it in items) / n if n else None,
        "mean_distance": sum(dists) / len(dists) if dists else None,
        "mean_elapsed_s": sum(elapsed) / len(elapsed) if elapsed else None,
        "n": n,
        "missing_responses": sum(it["reason"] == "missing_response" for it in items),
        "invalid_responses": sum(it["reason"] == "invalid_response" for it in items),
        "n_unknown_responses": len(set(responses) - seen),
        "radius": radius,
    }
    return {"items": items, "summary": summary}


@register_scorer("localization", "PinpointQA App. D.2: human localization (right frame, 1 - (d / 0.12)^2)")
def score_localization_contract(gt: list[dict], pred: list[dict], *, rules: str = "pointlab") -> ScoreReport:
    """The registered localization scorer (one rule set: the released study has no scorer to follow)."""
    out = score_localization(gt, pred)
    items = [
        ItemScore(
            id=it["id"],
            value=it["score"],
            parsed=None,
            reason=it["reason"],
            metadata={k: v for k, v in it.items() if k not in {"id", "score", "reason"}},
        )
        for it in out["items"]
    ]
    return ScoreReport(scorer="localization", rules=rules, items=items, summary=out["summary"])


def _seconds(v: Any) -> float | None:
    """A response's ``elapsed_s`` as a finite float, or ``None`` (missing, text, a bool, non-finite, or
    an integer too large for a float: math.isfinite would raise OverflowError on it)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None
