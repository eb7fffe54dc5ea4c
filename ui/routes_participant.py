"""Participant API (invite token): ``GET /api/me`` returns the blinded state of the websocket;
``GET /api/me/trials/{id}/frame?which=before|after`` the frame the agent saw, or the frame taken
after the arm stopped, in one of the caller's own trials (the judgement shows both)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from pointlab.bridge.study.store import StoreError

from .deps import Ctx, IdPath, Participant
from .flow import participant_state

__all__ = ["router", "own_trial_frame"]

router = APIRouter(prefix="/api")


@router.get("/me")
def me(c: Participant, ctx: Ctx) -> dict:
    """The participant's step, queue position and the action the robot would do (no agent names)."""
    return participant_state(ctx, c.participant_row)


@router.get("/me/trials/{trial_id}/frame")
def trial_frame(trial_id: IdPath, c: Participant, ctx: Ctx, which: Literal["before", "after"] = "before") -> Response:
    """JPEG of the colour frame the agent pointed on (``before``; the trial's ``points_px`` are pixels
    of this image) or of the frame after the arm stopped (``after``) in the caller's own trial
    ``trial_id``. The judgement shows the two side by side.

    404 (one message for all cases, so ids of other participants' trials are not revealed): not the
    caller's trial, or the trial has no such frame (the store keeps both frames of every trial that
    got as far as pointing, refusals included; an abort before the answer has none).
    """
    return own_trial_frame(ctx.store, trial_id, c.participant_row["id"], which, ctx.station.trial_jpeg)


def own_trial_frame(store, trial_id: int, participant_id: int, which: str, jpeg_of) -> Response:
    """The ``which`` JPEG of trial row ``trial_id`` when it is participant ``participant_id``'s own
    (``jpeg_of(trial_uid, which)`` finds it: the station's memory or a store), else one 404 for every
    case (ids of other participants' trials are not revealed). Shared by ``pointlab act`` and the
    study server."""
    not_found = HTTPException(404, "no frame for this trial")
    try:
        row = store.trial(trial_id)
    except StoreError:
        raise not_found from None
    if row.get("participant_id") != participant_id:
        raise not_found
    jpeg = jpeg_of(row["trial_uid"], which)
    if not jpeg:
        raise not_found
    return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "no-store"})
