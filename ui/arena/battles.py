"""Battle routes: start a battle, stream both anonymous answers, vote, reveal.

Model names never leave the server before the vote: the page sees sides "A" and "B", their points
and whether an answer failed; raw answer text is kept in the store but not sent (a model's output
format would give its family away). The vote response is the first message that names the models.

Nothing blocking runs on the event loop: database calls and resizes go to the arena's thread pool
(``ArenaContext.blocking``; FastAPI's own for the ``def`` routes off the vote's path), uploads are
decoded and written by ``ui.imageguard`` in worker threads, and model calls run on the ``AgentLoop``
thread. Several worker processes can serve one arena (PostgreSQL store): a battle's answers are
written to the store, so a websocket or a poll that lands on another worker than the one that asked
the models reads them from there.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, File, Form, HTTPException, Request, Response, UploadFile, WebSocket
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel
from starlette.websockets import WebSocketDisconnect

from ..imageguard import ImageRejected, decode_image_async, write_png_async
from .context import ArenaContext
from .curated import CuratedSetError
from .sampling import sample_pair
from .store import ArenaError, RateLimit, StoreUnavailable

__all__ = ["router", "SESSION_COOKIE", "get_arena", "session_id", "client_addr", "answer_record", "public_answer"]

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api")
SESSION_COOKIE = "arena_session"
_MULTIPART_OVERHEAD = 64 * 1024  # form fields and boundaries beside the image


def get_arena(request: Request) -> ArenaContext:
    return request.app.state.arena


Arena = Annotated[ArenaContext, Depends(get_arena)]


def client_addr(request: Request) -> str:
    """The client's address: the TCP peer, or the forwarded client when the app trusts its proxy
    (``ArenaSettings.trusted_proxies``: uvicorn's ProxyHeadersMiddleware rewrites the peer)."""
    return request.client.host if request.client else "unknown"


async def session_id(request: Request, response: Response, arena: Arena) -> str:
    """The caller's arena session (cookie), created on first use. A session this worker has seen
    stored is answered on the event loop; only a new or unseen cookie goes to the store, on the
    thread pool (a sync dependency would cost every request a thread hop)."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie and arena.store.session_known(cookie):
        return cookie
    sid = await arena.blocking(arena.store.ensure_session, cookie, client_addr(request))
    if sid != cookie:
        response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="strict")
    return sid


Sid = Annotated[str, Depends(session_id)]


def _http(e: ArenaError | ImageRejected | CuratedSetError) -> Exception:
    """The exception a route raises for a refused action: ``StoreUnavailable`` as it is (the app's
    handler answers 503 with Retry-After), anything else as an HTTPException of its status."""
    if isinstance(e, StoreUnavailable):
        return e
    return HTTPException(getattr(e, "status", 404), str(e))


async def when_store_back(arena: ArenaContext, fn, *args) -> Any:
    """``fn(*args)`` on the thread pool, tried again while the store is unreachable, for at most
    ``settings.store_retry_s``: for the writes nobody waits on (an answer, "answers shown"), so a
    battle in flight when the database goes away is still answered and can be voted on once it is
    back. Every such write is idempotent. Raises: StoreUnavailable past the deadline."""
    deadline = time.monotonic() + arena.settings.store_retry_s
    pause = 0.2
    while True:
        try:
            return await arena.blocking(fn, *args)
        except StoreUnavailable:
            if time.monotonic() + pause > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(2.0, pause * 2)


def answer_record(ans: Any) -> dict:
    """Stored form of an agent answer (``AgentAnswer`` or anything with its attributes)."""
    pts = np.asarray(getattr(ans, "points_px", np.zeros((0, 2))), dtype=float).reshape(-1, 2)
    pts = pts[np.isfinite(pts).all(axis=1)]
    return {
        "points_px": pts.tolist(),
        "raw_text": getattr(ans, "raw_text", "") or "",
        "parse_error": getattr(ans, "parse_error", None),
        "error": getattr(ans, "error", None),
        "latency_s": getattr(ans, "latency_s", None),
        "reasoning": getattr(ans, "reasoning", None),  # kept for the record, never parsed (docs/harness.md)
    }


def public_answer(side: str, rec: dict) -> dict:
    """What the page may see of one answer: side, points, and whether it failed. No names, no raw text."""
    failed = bool(rec.get("error")) or not rec.get("points_px")
    return {"type": "answer", "side": side, "points": rec.get("points_px", []), "failed": failed}


def _failed(error: str) -> dict:
    return {"points_px": [], "raw_text": "", "parse_error": None, "error": error, "latency_s": None}


def needs_resize(h: int, w: int, max_side_px: int | None) -> bool:
    """Whether an ``h`` x ``w`` image is downscaled before it goes to the models."""
    return max_side_px is not None and max_side_px != 0 and max(h, w) > max_side_px  # None or 0: never


def model_view(rgb: np.ndarray, max_side_px: int | None) -> tuple[np.ndarray, float, float]:
    """The image the models are sent and the scale back: ``(image, W / w, H / h)``. Blocking (resize)."""
    h, w = rgb.shape[:2]
    if not needs_resize(h, w, max_side_px):
        return rgb, 1.0, 1.0
    import cv2

    s = max_side_px / max(h, w)
    small = cv2.resize(rgb, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)
    return small, w / small.shape[1], h / small.shape[0]


def _rescale(rec: dict, sx: float, sy: float) -> dict:
    if sx == 1.0 and sy == 1.0:
        return rec
    # pixel centres at integers: u_orig + 0.5 = (u_sent + 0.5) * W / w
    return {
        **rec,
        "points_px": [[(u + 0.5) * sx - 0.5, (v + 0.5) * sy - 0.5] for u, v in rec["points_px"]],
        "sent_scale": [sx, sy],
    }


async def _ask(arena: ArenaContext, battle_id: str, side: str, model: str, view: tuple, instruction: str) -> dict:
    agent = arena.agents[model]
    rgb, sx, sy = view
    try:
        coro = agent.point(rgb, instruction)
        if arena.agent_loop is not None:
            ans = await arena.agent_loop.run(coro, arena.settings.agent_timeout_s)
        else:
            ans = await asyncio.wait_for(coro, arena.settings.agent_timeout_s)
        rec = _rescale(answer_record(ans), sx, sy)
    except (asyncio.TimeoutError, TimeoutError):
        rec = _failed("timeout")
    except Exception as e:  # an agent must never take the arena down; the failure is recorded
        log.exception("agent %s failed", model)
        rec = _failed(f"{type(e).__name__}: {e}")
    try:
        await when_store_back(arena, arena.store.record_answer, battle_id, side, rec)
    except Exception:  # the page still gets the answer; the record is lost only for this battle
        log.exception("storing answer %s of battle %s failed", side, battle_id)
    return rec


@router.get("/health")
def health(arena: Arena) -> JSONResponse:
    """For a load balancer or a monitor: 200 ``{"ok": true, "store": "reachable", "worker_pid"}``,
    or 503 with ``"store": "unreachable"`` while the database cannot be reached. ``worker_pid`` tells
    the worker processes apart (``pointlab perf arena`` waits until it has seen every worker)."""
    try:
        arena.store.ping()
        return JSONResponse({"ok": True, "store": "reachable", "worker_pid": os.getpid()})
    except Exception:  # any failure to reach the store is the answer, not an error of this route
        return JSONResponse(
            {"ok": False, "store": "unreachable", "worker_pid": os.getpid()},
            status_code=503,
            headers={"Retry-After": "3"},
        )


@router.get("/images")
def list_images(arena: Arena) -> dict:
    return {"images": [{"name": n, "url": f"/api/images/{n}"} for n in arena.curated.images]}


@router.get("/images/{name}")
def get_image(name: str, arena: Arena) -> FileResponse:
    img = arena.curated.get(name)  # only listed names: no path traversal
    if img is None:
        raise HTTPException(404, "unknown image")
    return FileResponse(img.path)


def _rate_limits(arena: ArenaContext, sid: str, addr: str, upload: bool) -> list[RateLimit]:
    s = arena.settings
    limits = [
        RateLimit({"session_id": sid}, s.max_battles_per_minute, "battles a minute per session"),
        RateLimit({"client_addr": addr}, s.max_battles_per_minute_per_address, "battles a minute per address"),
    ]
    if upload:
        limits += [
            RateLimit(
                {"session_id": sid, "source": "upload"}, s.max_uploads_per_minute, "uploads a minute per session"
            ),
            RateLimit(
                {"client_addr": addr, "source": "upload"},
                s.max_uploads_per_minute_per_address,
                "uploads a minute per address",
            ),
        ]
    return limits


@router.post("/battles")
async def create_battle(
    request: Request,
    arena: Arena,
    sid: Sid,
    instruction: Annotated[str, Form()],
    image_name: Annotated[str | None, Form()] = None,
    upload: Annotated[UploadFile | None, File()] = None,
) -> dict:
    """Start a battle on a curated image (``image_name``) or an upload; both models start at once."""
    s = arena.settings
    instruction = instruction.strip()
    if not instruction or len(instruction) > s.max_instruction_chars:
        raise HTTPException(400, f"instruction must be 1..{s.max_instruction_chars} characters")
    upload = upload if upload is not None and upload.filename else None
    addr = client_addr(request)
    limits = _rate_limits(arena, sid, addr, upload is not None)
    try:
        if upload is not None:
            # counted before the upload is decoded and written (the limits exist to bound that work),
            # and again when the battle is stored
            await arena.blocking(arena.store.check_rate_limits, limits)
            data = await upload.read(s.max_upload_bytes + 1)
            img = await decode_image_async(data, s.image_limits)
            rgb, sha = img.rgb, img.sha256
            path, source = await write_png_async(rgb, arena.uploads_dir / f"{sha}.png"), "upload"
        elif image_name:
            cur = arena.curated.get(image_name)
            if cur is None:
                raise ArenaError("unknown curated image", 404)
            rgb, sha = await arena.blocking(arena.curated.rgb, image_name)
            path, source = cur.path, "curated"
        else:
            raise ArenaError("choose a curated image or upload one", 400)
        votes = None
        if s.sampler == "adaptive":
            from .sampling import cached_votes

            votes = await arena.blocking(cached_votes, arena)
        a, b = sample_pair(list(arena.agents), s.sampler, arena.rng, votes or ())
    except (ArenaError, ImageRejected, CuratedSetError) as e:
        raise _http(e) from None
    h, w = rgb.shape[:2]
    try:
        bid = await arena.blocking(
            lambda: arena.store.create_battle(
                session_id=sid,
                image_sha256=sha,
                image_path=str(path),
                image_source=source,
                width=w,
                height=h,
                instruction=instruction,
                model_a=a,
                model_b=b,
                sampler=s.sampler,
                client_addr=addr,
                rate_limits=limits,
            )
        )
    except ArenaError as e:  # a rate limit reached (429), the store unreachable (503)
        raise _http(e) from None
    if needs_resize(h, w, s.model_image_side_px):  # a resize: off the event loop
        view = await arena.blocking(model_view, rgb, s.model_image_side_px)
    else:
        view = (rgb, 1.0, 1.0)
    arena.pending[bid] = {
        "A": asyncio.create_task(_ask(arena, bid, "A", a, view, instruction)),
        "B": asyncio.create_task(_ask(arena, bid, "B", b, view, instruction)),
    }
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
    answers = [
        public_answer(side, rec[key]) for side, key in (("A", "answer_a"), ("B", "answer_b")) if rec[key] is not None
    ]
    if len(answers) == 2:
        arena.store.mark_shown(bid)
        arena.pending.pop(bid, None)
    out: dict = {"battle_id": bid, "answers": answers, "ready": len(answers) == 2, "voted": rec["vote"] is not None}
    if rec["vote"] is not None:
        out["reveal"] = {"A": rec["model_a"], "B": rec["model_b"], "winner": rec["vote"]}
    return out


async def _answers_from_store(arena: ArenaContext, bid: str, sent: set, websocket: WebSocket, created: float) -> None:
    """Another worker asked the models: wait for the answers in the store (``ui.arena.watch``: one
    poll per worker for every battle it waits on) until the agent timeout, or for as long as the
    store is unreachable (the worker holding the answers stores them once it is back)."""
    deadline = created + arena.settings.agent_timeout_s + 5.0
    watcher = arena.answer_watcher()
    async with watcher.watch(bid, sent) as w:
        while len(sent) < 2:
            if watcher.store_down_since is not None:
                deadline = max(deadline, time.time() + arena.settings.store_retry_s)
            left = deadline - time.time()
            if left <= 0:
                return
            try:
                side, rec = await asyncio.wait_for(w.get(), min(left, 1.0))
            except (asyncio.TimeoutError, TimeoutError):
                continue
            await websocket.send_json(public_answer(side, rec))
            sent.add(side)


@router.websocket("/battles/{bid}/ws")
async def battle_ws(websocket: WebSocket, bid: str) -> None:
    """Push each side's answer as it arrives, then ``{"type": "ready"}``; never a model name."""
    arena: ArenaContext = websocket.app.state.arena
    sid = websocket.cookies.get(SESSION_COOKIE)
    try:
        rec = await arena.blocking(arena.store.battle, bid)
    except StoreUnavailable:
        # accepted first: a close before the handshake is an HTTP 403, which a page cannot tell from a refusal
        await websocket.accept()
        await websocket.close(code=1013, reason="the database is unreachable; try again")  # RFC 6455: try again later
        return
    except ArenaError:
        await websocket.close(code=4404)
        return
    if rec["session_id"] != sid:
        await websocket.close(code=4403)
        return
    await websocket.accept()
    try:
        tasks = arena.pending.get(bid, {})
        sent: set = set()
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
        if len(sent) < 2 and not tasks:
            await _answers_from_store(arena, bid, sent, websocket, rec["created_unix_s"])
        if len(sent) < 2:  # a battle from before a restart whose answers were lost
            await websocket.send_json({"type": "error", "message": "answers unavailable"})
        else:
            # "ready" (the vote buttons) only once the store has both answers and knows they were shown
            await _settle(arena, bid, tasks)
            arena.pending.pop(bid, None)
            await websocket.send_json({"type": "ready"})
        # keep the socket open until the page leaves; ignore whatever it sends
        while True:
            await websocket.receive_text()
    except WebSocketDisconnect:
        return
    except StoreUnavailable:
        # past store_retry_s: the answers stay with this worker (``arena.pending``) and the page opens the
        # socket again after a 1013, which stores them once the database is back (``_settle``)
        await websocket.close(code=1013, reason="the database is unreachable; try again")
    except ArenaError as e:  # the store refused (a battle whose answers were lost with a restart)
        await websocket.send_json({"type": "error", "message": str(e)})
        await websocket.close(code=1011)


async def _settle(arena: ArenaContext, bid: str, tasks: dict) -> None:
    """Both answers in the store, then "shown", each tried again while the store is unreachable
    (``when_store_back``). An answer whose own write gave up (an outage longer than
    ``store_retry_s``) is written again from this worker's finished task. Raises: StoreUnavailable,
    or ArenaError when an answer is neither stored nor held here."""
    try:  # the usual case first: both answers stored, one statement
        await when_store_back(arena, arena.store.mark_shown, bid)
        return
    except StoreUnavailable:
        raise
    except ArenaError as e:
        if e.status != 409:  # 409: an answer is missing (its own write gave up); written below
            raise
    stored = await when_store_back(arena, arena.store.answers_stored, bid)
    for side, have in zip("AB", stored):
        task = tasks.get(side)
        if not have and task is not None and task.done():
            await when_store_back(arena, arena.store.record_answer, bid, side, task.result())
    await when_store_back(arena, arena.store.mark_shown, bid)


class VoteIn(BaseModel):
    choice: str


@router.post("/battles/{bid}/vote")
async def vote(bid: str, body: VoteIn, arena: Arena, sid: Sid) -> dict:
    """Cast the vote (``A``, ``B``, ``both_good``, ``both_bad``) once and reveal both names; a second
    vote is 409 and changes nothing."""
    try:
        rec = await arena.blocking(
            functools.partial(arena.store.vote, flag_min_votes=arena.settings.flag_min_votes), bid, sid, body.choice
        )
    except ArenaError as e:
        raise _http(e) from None
    return {"battle_id": bid, "winner": rec["vote"], "reveal": {"A": rec["model_a"], "B": rec["model_b"]}}
