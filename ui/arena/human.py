"""Human baseline routes: Point-Bench items without masks, clicks scored by the model rules."""

from __future__ import annotations

import io
import json

from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse, Response
from PIL import Image
from pydantic import BaseModel

from pointlab.benchmark.pointbench.dataset import DatasetError
from pointlab.benchmark.pointbench.human import page_item, score_clicks
from pointlab.benchmark.pointbench.scoring import ItemScore, summarize
from pointlab.benchmark.pointbench.steer import draw_reference

from .battles import Arena, Sid

__all__ = ["router"]

router = APIRouter(prefix="/api/human")


def _item(arena, item_id: str):
    for it in arena.bench_items:
        if it.id == item_id:
            return it
    raise HTTPException(404, "unknown item")


@router.get("/items")
def items(arena: Arena) -> dict:
    return {"items": [dict(page_item(it), image_url=f"/api/human/image?item={it.id}") for it in arena.bench_items]}


@router.get("/image")
def image(item: str, arena: Arena) -> Response:
    """The item's image; a steerable item's reference point is drawn on it (people need to see it)."""
    it = _item(arena, item)
    try:
        rgb = it.load_image_rgb()
    except DatasetError as e:
        raise HTTPException(404, str(e)) from None
    if it.reference_points_px:
        rgb = draw_reference(rgb, it.reference_points_px)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    return Response(buf.getvalue(), media_type="image/png")


class ClicksIn(BaseModel):
    item_id: str
    points: list[list[float]]


@router.post("/answers")
def answer(body: ClicksIn, arena: Arena, sid: Sid) -> dict:
    it = _item(arena, body.item_id)
    if len(body.points) > 100 or any(len(p) != 2 for p in body.points):
        raise HTTPException(400, "points must be at most 100 [u, v] pairs")
    s = score_clicks(it, body.points)
    arena.store.add_human_click(sid, it.id, it.category, s.points, s.success, s.reason)
    return s.to_dict()


@router.get("/summary")
def summary(arena: Arena) -> dict:
    return summarize(ItemScore(r["id"], r["category"], r["success"], r["points"], r["reason"])
                     for r in arena.store.human_clicks())


@router.get("/pred.jsonl", response_class=PlainTextResponse)
def pred_jsonl(arena: Arena) -> str:
    """Every human answer as PRED JSONL ``{id, points}`` (re-score with ``pointlab score pointing``)."""
    return "".join(json.dumps({"id": r["id"], "points": r["points"]}) + "\n" for r in arena.store.human_clicks())
