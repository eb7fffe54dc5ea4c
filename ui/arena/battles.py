"""Battle routes: start a battle, stream both anonymous answers, vote, reveal.

Model names never leave the server before the vote: the page sees sides "A" and "B", their points
and whether an answer failed; raw answer text is kept in the store but not sent (a model's output
format would give its family away). The vote response is the first message that names the models.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, File, Form, HTTPException, Request, Response, UploadFile, WebSocket
from fastapi.responses import FileResponse
from pydantic import BaseModel
from starlette.websockets import WebSocketDisconnect

from .context import ArenaContext
from .images import decode_upload, load_curated, save_png
from .sampling import sample_pair
from .store import ArenaError

__all__ = ["router", "SESSION_COOKIE", "get_arena", "session_id"]

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api")
SESSION_COOKIE = "arena_session"


def get_arena(request: Request) -> ArenaContext:
    return request.app.state.arena


Arena = Annotated[ArenaContext, Depends(get_arena)]


def session_id(request: Request, response: Response, arena: Arena) -> str:
    """The caller's arena session (cookie), created on first use."""
    sid = arena.store.ensure_session(request.cookies.get(SESSION_COOKIE))
    if sid != request.cookies.get(SESSION_COOKIE):
        response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="strict")
    return sid


Sid = Annotated[str, Depends(session_id)]


def _http(e: ArenaError) -> HTTPException:
    return HTTPException(e.status, str(e))


def answer_record(ans: Any) -> dict:
    """Stored form of an agent answer (``AgentAnswer`` or anything with its attributes)."""
    pts = np.asarray(getattr(ans, "points_px", np.zeros((0, 2))), dtype=float).reshape(-1, 2)
    pts = pts[np.isfinite(pts).all(axis=1)]
    return {"points_px": pts.tolist(), "raw_text": getattr(ans, "raw_text", "") or "",
            "parse_error": getattr(ans, "parse_error", None), "error": getattr(ans, "error", None),
            "latency_s": getattr(ans, "latency_s", None)}


def public_answer(side: str, rec: dict) -> dict:
    """What the page may see of one answer: side, points, and whether it failed. No names, no raw text."""
    failed = bool(rec.get("error")) or not rec.get("points_px")
    return {"type": "answer", "side": side, "points": rec.get("points_px", []), "failed": failed}


async def _ask(arena: ArenaContext, battle_id: str, side: str, model: str, rgb: np.ndarray, instruction: str) -> dict:
    agent = arena.agents[model]
    try:
        ans = await asyncio.wait_for(agent.point(rgb, instruction), arena.settings.agent_timeout_s)
        rec = answer_record(ans)
    except asyncio.TimeoutError:
        rec = {"points_px": [], "raw_text": "", "parse_error": None, "error": "timeout", "latency_s": None}
    except Exception as e:  # an agent must never take the arena down; the failure is recorded
        log.exception("agent %s failed", model)
        rec = {"points_px": [], "raw_text": "", "parse_error": None, "error": f"{type(e).__name__}: {e}",
               "latency_s": None}
    arena.store.record_answer(battle_id, side, rec)
    return rec


@router.get("/images")
def list_images(arena: Arena) -> dict:
    return {"images": [{"name": n, "url": f"/api/images/{n}"} for n in arena.curated_images()]}


@router.get("/images/{name}")
def get_image(name: str, arena: Arena) -> FileResponse:
    path = arena.curated_images().get(name)  # only listed names: no path traversal
    if path is None:
        raise HTTPException(404, "unknown image")
    return FileResponse(path)


@router.post("/battles")
async def create_battle(arena: Arena, sid: Sid, instruction: Annotated[str, Form()],
                        image_name: Annotated[str | None, Form()] = None,
                        upload: Annotated[UploadFile | None, File()] = None) -> dict:
    """Start a battle on a curated image (``image_name``) or an upload; both models start at once."""
    s = arena.settings
    instruction = instruction.strip()
    if not instruction or len(instruction) > s.max_instruction_chars:
        raise HTTPException(400, f"instruction must be 1..{s.max_instruction_chars} characters")
    if arena.store.battles_since(sid, time.time() - 60.0) >= s.max_battles_per_minute:
        raise HTTPException(429, f"rate limit: at most {s.max_battles_per_minute} battles a minute")
    try:
        if upload is not None and upload.filename:
            data = await upload.read(s.max_upload_bytes + 1)
            rgb, sha = decode_upload(data, max_bytes=s.max_upload_bytes, formats=s.upload_formats,
                                     max_side_px=s.max_image_side_px)
            path, source = save_png(rgb, arena.uploads_dir / f"{sha}.png"), "upload"
        elif image_name:
            cpath = arena.curated_images().get(image_name)
            if cpath is None:
                raise ArenaError("unknown curated image", 404)
            rgb, sha = load_curated(cpath)
            path, source = cpath, "curated"
        else:
            raise ArenaError("choose a curated image or upload one", 400)
        a, b = sample_pair(list(arena.agents), s.sampler, arena.rng,
                           arena.store.votes() if s.sampler == "adaptive" else ())
    except ArenaError as e:
        raise _http(e) from None
    h, w = rgb.shape[:2]
    bid = arena.store.create_battle(session_id=sid, image_sha256=sha, image_path=str(path), image_source=source,
                                    width=w, height=h, instruction=instruction, model_a=a, model_b=b,
                                    sampler=s.sampler)
    arena.pending[bid] = {"A": asyncio.create_task(_ask(arena, bid, "A", a, rgb, instruction)),
                          "B": asyncio.create_task(_ask(arena, bid, "B", b, rgb, instruction))}
    return {"battle_id": bid, "image_url": f"/api/battles/{bid}/image", "width": w, "height": h}


def _own(arena: ArenaContext, bid: str, sid: str) -> dict:
    try:
        rec = arena.store.battle(bid)
    except ArenaError as e:
        raise _http(e) from None
    if rec["session_id"] != sid:
        raise HTTPException(403, "this battle belongs to another session")
    return rec


@router.get("/battles/{bid}/image")
def battle_image(bid: str, arena: Arena, sid: Sid) -> FileResponse:
    return FileResponse(_own(arena, bid, sid)["image_path"])


@router.get("/battles/{bid}")
def battle_state(bid: str, arena: Arena, sid: Sid) -> dict:
    """Polling alternative to the websocket: answers so far (anonymous); names only after the vote."""
    rec = _own(arena, bid, sid)
    answers = [public_answer(side, rec[key]) for side, key in (("A", "answer_a"), ("B", "answer_b"))
               if rec[key] is not None]
    if len(answers) == 2:
        arena.store.mark_shown(bid)
        arena.pending.pop(bid, None)
    out: dict = {"battle_id": bid, "answers": answers, "ready": len(answers) == 2, "voted": rec["vote"] is not None}
    if rec["vote"] is not None:
        out["reveal"] = {"A": rec["model_a"], "B": rec["model_b"], "winner": rec["vote"]}
    return out


@router.websocket("/battles/{bid}/ws")
async def battle_ws(websocket: WebSocket, bid: str) -> None:
    """Push each side's answer as it arrives, then ``{"type": "ready"}``; never a model name."""
    arena: ArenaContext = websocket.app.state.arena
    sid = websocket.cookies.get(SESSION_COOKIE)
    try:
        rec = arena.store.battle(bid)
    except ArenaError:
        await websocket.close(code=4404)
        return
    if rec["session_id"] != sid:
        await websocket.close(code=4403)
        return
    await websocket.accept()
    try:
        tasks = arena.pending.get(bid, {})
        sent = set()
        for side, key in (("A", "answer_a"), ("B", "answer_b")):
            if rec[key] is not None:
                await websocket.send_json(public_answer(side, rec[key]))
                sent.add(side)
        waiting = {t: side for side, t in tasks.items() if side not in sent}
        while waiting:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                side = waiting.pop(t)
                await websocket.send_json(public_answer(side, t.result()))
                sent.add(side)
        if len(sent) < 2:  # a battle from before a restart whose answers were lost
            await websocket.send_json({"type": "error", "message": "answers unavailable"})
        else:
            arena.store.mark_shown(bid)
            arena.pending.pop(bid, None)
            await websocket.send_json({"type": "ready"})
        # keep the socket open until the page leaves; ignore whatever it sends
        while True:
            await websocket.receive_text()
    except WebSocketDisconnect:
        return


class VoteIn(BaseModel):
    choice: str


@router.post("/battles/{bid}/vote")
def vote(bid: str, body: VoteIn, arena: Arena, sid: Sid) -> dict:
    """Cast the vote (``A``, ``B``, ``both_good``, ``both_bad``) and reveal both names."""
    try:
        rec = arena.store.vote(bid, sid, body.choice, flag_min_votes=arena.settings.flag_min_votes)
    except ArenaError as e:
        raise _http(e) from None
    return {"battle_id": bid, "winner": rec["vote"], "reveal": {"A": rec["model_a"], "B": rec["model_b"]}}
