"""Human baseline (the "Human" bar of PointArena Fig. 3): page data and scoring of clicks.

People click points on the same items the models see (steerable reference drawn on the image), and
their clicks are scored by exactly the model rules (``scoring.score_item``). Saved clicks export as
PRED JSONL ``{id, points}`` so ``pointlab score pointing`` re-scores them like any model run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from .dataset import BenchItem
from ..scorers import ItemScore
from .scoring import score_item

__all__ = ["page_item", "score_clicks", "clicks_to_pred_jsonl"]


def page_item(item: BenchItem) -> dict:
    """What the clicking page needs (no masks): id, query, category, size, how many points to click."""
    n = item.count if item.count is not None else (len(item.instance_masks) if item.category == "counting" else 1)
    return {
        "id": item.id,
        "query": item.query,
        "category": item.category,
        "width": item.width,
        "height": item.height,
        "points_expected": n if item.category == "counting" else 1,
    }


def score_clicks(item: BenchItem, points_px: Sequence[Sequence[float]]) -> ItemScore:
    """Score a person's clicks ``[[u, v], ...]`` (original pixels) with the model rules."""
    if not len(points_px):
        return score_item(item, None, failure="no_points")
    return score_item(item, points_px)


def clicks_to_pred_jsonl(rows: Sequence[dict], path: str | Path) -> Path:
    """Write ``[{"id", "points"}]`` rows as PRED JSONL. Returns the path."""
    p = Path(path)
    p.write_text("".join(json.dumps({"id": r["id"], "points": r["points"]}) + "\n" for r in rows), encoding="utf-8")
    return p
