"""Human baseline routes: Point-Bench items without masks, clicks scored by the model rules.

The "Human" bar of PointArena Fig. 3. A baseline must not learn from feedback, so an answer's
response carries no correctness unless the arena runs with ``ArenaSettings.human_feedback`` (a
training session). A person may redo an item (the last answer of a session for an item counts).
Sessions can be excluded from the summary (a tester, a training run) by the admin
(``Authorization: Bearer <admin token>``).

``/api/human/summary``: per-category accuracy pooled over the included sessions' answers, plus
``fig3``: the Fig. 3 aggregate (mean over participants, standard deviation across participants)
drawn by ``/api/human/fig3.svg``.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

from fastapi import APIRouter, Header, HTTPException
from fastapi.responses import PlainTextResponse, Response
from PIL import Image
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from .battles import Arena, Sid

# pointlab.benchmark.pointbench (scipy) is imported inside the routes: not on the start path

__all__ = ["router", "human_summary"]

router = APIRouter(prefix="/api/human")


def _item(arena, item_id: str):
    for it in arena.bench_items:
        if it.id == item_id:
            return it
    raise HTTPException(404, "unknown item")


@router.get("/items")
def items(arena: Arena) -> dict:
    from pointlab.benchmark.pointbench.human import page_item

    return {
        "feedback": arena.settings.human_feedback,
        "items": [dict(page_item(it), image_url=f"/api/human/image?item={it.id}") for it in arena.bench_items],
    }


def _image_png(it) -> bytes:
    from pointlab.benchmark.pointbench.steer import draw_reference

    rgb = it.load_image_rgb()
    if it.reference_points_px:
        rgb = draw_reference(rgb, it.reference_points_px)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG", compress_level=3)
    return buf.getvalue()


@router.get("/image")
async def image(item: str, arena: Arena) -> Response:
    """The item's image; a steerable item's reference point is drawn on it (people need to see it)."""
    from pointlab.benchmark.pointbench.dataset import DatasetError

    it = _item(arena, item)
    try:
        data = await run_in_threadpool(_image_png, it)
    except DatasetError as e:
        raise HTTPException(404, str(e)) from None
    return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})


class ClicksIn(BaseModel):
    item_id: str
    points: list[list[float]]


@router.post("/answers")
def answer(body: ClicksIn, arena: Arena, sid: Sid) -> dict:
    """Save (or redo) this session's answer for one item; correctness only with ``human_feedback``."""
    from pointlab.benchmark.pointbench.human import score_clicks

    it = _item(arena, body.item_id)
    if len(body.points) > 100 or any(len(p) != 2 for p in body.points):
        raise HTTPException(400, "points must be at most 100 [u, v] pairs")
    s = score_clicks(it, body.points)
    success = s.metadata["success"]
    arena.store.add_human_click(sid, it.id, it.category, s.parsed, success, s.reason)
    out = {"saved": True, "item_id": it.id, "points": s.parsed}
    if arena.settings.human_feedback:
        out.update(success=success, reason=s.reason)
    return out


@router.get("/mine")
def mine(arena: Arena, sid: Sid) -> dict:
    """This session's saved answers (points only, no correctness): the page resumes and redoes from it."""
    rows = [r for r in arena.store.human_clicks() if r["session_id"] == sid]
    return {"answers": {r["id"]: r["points"] for r in rows}}


def human_summary(rows: list[dict]) -> dict:
    """Pooled per-category summary of ``rows`` (the included answers) plus the Fig. 3 aggregate over sessions."""
    from pointlab.benchmark.pointbench.run import aggregate_runs
    from pointlab.benchmark.pointbench.scoring import point_score, summarize

    scores = [point_score(r["id"], r["category"], r["success"], r["points"], r["reason"]) for r in rows]
    out = summarize(scores)
    by_session: dict[str, list] = {}
    for r, s in zip(rows, scores):
        by_session.setdefault(r["session_id"], []).append(s)
    out["sessions"] = len(by_session)
    out["fig3"] = aggregate_runs([summarize(v) for v in by_session.values()]) if by_session else {}
    return out


@router.get("/summary")
def summary(arena: Arena) -> dict:
    return human_summary(arena.store.human_clicks(include_excluded=False))


def _fig3_svg(agg: dict) -> bytes:
    from pointlab.benchmark.pointbench.report import plot_fig3

    with tempfile.TemporaryDirectory() as d:
        paths = plot_fig3({"Human": agg}, Path(d) / "fig3", title="Point-Bench human baseline")
        return next(p for p in paths if p.suffix == ".svg").read_bytes()


@router.get("/fig3.svg")
async def fig3(arena: Arena) -> Response:
    """The Fig. 3 "Human" bar per category (percent; error bars: standard deviation across participants)."""
    rows = await run_in_threadpool(arena.store.human_clicks, include_excluded=False)
    agg = human_summary(rows)["fig3"]
    if not agg:
        raise HTTPException(404, "no human answers yet")
    return Response(await run_in_threadpool(_fig3_svg, agg), media_type="image/svg+xml")


def _admin(arena, authorization: str | None) -> None:
    if not arena.admin_token:
        raise HTTPException(403, "admin routes are off (no admin token configured)")
    if authorization != f"Bearer {arena.admin_token}":
        raise HTTPException(401, "admin token required")


@router.get("/sessions")
def sessions(arena: Arena, authorization: str | None = Header(None)) -> dict:
    """Admin: every human-baseline session with its answer count and accuracy, and whether it is excluded."""
    _admin(arena, authorization)
    per: dict[str, dict] = {}
    for r in arena.store.human_clicks():
        d = per.setdefault(
            r["session_id"], {"session_id": r["session_id"], "answers": 0, "correct": 0, "excluded": r["excluded"]}
        )
        d["answers"] += 1
        d["correct"] += int(r["success"])
    return {"sessions": list(per.values())}


class ExcludeIn(BaseModel):
    excluded: bool


@router.post("/sessions/{session_id}")
def set_excluded(session_id: str, body: ExcludeIn, arena: Arena, authorization: str | None = Header(None)) -> dict:
    """Admin: exclude a session from (or include it in) the summary."""
    _admin(arena, authorization)
    arena.store.set_human_excluded(session_id, body.excluded)
    return {"session_id": session_id, "excluded": body.excluded}


@router.get("/pred.jsonl", response_class=PlainTextResponse)
def pred_jsonl(arena: Arena, session: str | None = None) -> str:
    """The included answers as PRED JSONL ``{id, points, session_id}`` (re-score with ``pointlab
    score pointing``, which wants one answer per item: pass ``?session=ID`` for one person's)."""
    return "".join(
        json.dumps({"id": r["id"], "points": r["points"], "session_id": r["session_id"]}) + "\n"
        for r in arena.store.human_clicks(include_excluded=False)
        if session is None or r["session_id"] == session
    )
