"""Operator API for the arm and the human reference: queue, status, e-stop, reset, open gripper, human requests."""

from __future__ import annotations

import base64
import logging

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response
from pydantic import BaseModel

from .deps import Ctx, IdPath, Operator
from .ws import operator_status

__all__ = ["router"]

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api")


class ClickIn(BaseModel):
    u: float
    v: float


@router.get("/status")
def status(_: Operator, ctx: Ctx) -> dict:
    """Queue, current trial (with the agent's name), open human requests, e-stop flag, arm state."""
    return operator_status(ctx)


@router.post("/queue/{participant_id}/to-back")
def queue_to_back(participant_id: IdPath, _: Operator, ctx: Ctx) -> dict:
    """Move a participant to the back of the arm queue (e.g. one who went idle while in control).
    404 when not queued, 409 while their trial is running."""
    if ctx.current is not None and ctx.current.participant_id == participant_id:
        raise HTTPException(409, "this participant's trial is running")
    if not ctx.queue.move_to_back(participant_id):
        raise HTTPException(404, "participant is not in the queue")
    return {"queue": ctx.queue.snapshot()}


@router.post("/arm/stop")
def emergency_stop(_: Operator, ctx: Ctx) -> dict:
    """Emergency stop: the station stops the arm at once and ends a running trial ``aborted``
    (``estop``); no trial starts until ``/api/arm/reset``."""
    try:
        ctx.station.emergency_stop()  # marks the station stopped first: even if the arm call fails
    except Exception as e:
        log.exception("emergency stop failed")
        raise HTTPException(500, f"emergency stop failed: {e}; use the arm's hardware stop") from e
    return {"stopped": True}


@router.post("/arm/reset")
def reset(_: Operator, ctx: Ctx) -> dict:
    """Reset the arm (leave the stop; the arm's bring-up runs again) and allow trials again."""
    try:
        ctx.station.reset()
    except Exception as e:
        log.exception("arm reset failed")
        raise HTTPException(500, f"reset failed: {e}") from e
    return {"stopped": ctx.stopped}


@router.post("/arm/release")
async def release(_: Operator, ctx: Ctx) -> dict:
    """Open the gripper where the arm is and clear what the arm believes it holds (the Lite gripper
    has no sensor: after a crash mid-pick or an object removed by hand the belief is wrong, and the
    participant page would offer the wrong action). 409 while stopped or while a trial runs; trials
    wait for it (it holds the arm lock)."""
    if ctx.stopped:
        raise HTTPException(409, "the arm is stopped; reset it first")
    if ctx.busy():
        raise HTTPException(409, "a trial is running; open the gripper after it")
    try:
        res = await ctx.station.release()
    except Exception as e:
        log.exception("arm release failed")
        raise HTTPException(500, f"opening the gripper failed: {e}") from e
    if res.get("outcome") != "done":
        code = 409 if res.get("outcome") == "stopped" else 500
        raise HTTPException(code, f"the gripper was not opened ({res.get('outcome')}): {res.get('error')}")
    return {"released": True, "holding": bool(res.get("holding"))}


@router.get("/human-requests")
def human_requests(_: Operator, ctx: Ctx) -> list[dict]:
    """Open human-reference requests with their image (``jpeg_b64``) and its size in pixels."""
    return ctx.parts.human.pending()


@router.get("/human-requests/{request_id}/image")
def human_request_image(request_id: str, _: Operator, ctx: Ctx) -> Response:
    """The JPEG of one request (the frame the human reference points on)."""
    for r in ctx.parts.human.pending():
        if r["request_id"] == request_id:
            return Response(base64.b64decode(r["jpeg_b64"]), media_type="image/jpeg")
    raise HTTPException(404, "no such open request")


@router.post("/human-requests/{request_id}/decline")
def decline(request_id: str, _: Operator, ctx: Ctx) -> dict:
    """The human reference gives no point (cannot find what is asked): the trial is refused
    ``no_point``, told to the participant exactly as a model's answer without a point. 404 unknown."""
    if not ctx.parts.human.decline(request_id):
        raise HTTPException(404, "no such open request")
    return {"request_id": request_id, "declined": True}


@router.post("/human-requests/{request_id}/answer")
def answer(request_id: str, body: ClickIn, _: Operator, ctx: Ctx) -> dict:
    """Answer with the clicked point in ORIGINAL-image pixels ``(u, v)``; 422 outside the image, 404 unknown."""
    req = next((r for r in ctx.parts.human.pending() if r["request_id"] == request_id), None)
    if req is None:
        raise HTTPException(404, "no such open request")
    w, h = req.get("width"), req.get("height")
    # Pixel centres are at integers, so the image covers [-0.5, W - 0.5) x [-0.5, H - 0.5).
    if w and h and not (-0.5 <= body.u < w - 0.5 and -0.5 <= body.v < h - 0.5):
        raise HTTPException(422, f"point ({body.u}, {body.v}) is outside the {w}x{h} image")
    if not ctx.parts.human.answer(request_id, body.u, body.v):
        raise HTTPException(404, "no such open request")
    return {"request_id": request_id, "u": body.u, "v": body.v}
