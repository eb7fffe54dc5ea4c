"""Operator API for fair trials: abort the running trial, home the arm, reset the scene (and confirm
a block's start on real hardware), the study's reference scene, and the frames of any trial."""

from __future__ import annotations

import logging
from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response
from pydantic import BaseModel

from pointlab.bridge.study.store import StoreError

from .deps import Ctx, IdPath, Operator
from .flow import FlowError, participant_step, prepare_block

__all__ = ["router"]

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api")
_JPEG: dict[str, Any] = {"media_type": "image/jpeg", "headers": {"Cache-Control": "no-store"}}


def _idle(ctx) -> None:
    if ctx.stopped:
        raise HTTPException(409, "the arm is stopped; reset it first")
    if ctx.busy():
        raise HTTPException(409, "a trial is running; wait for it or abort it")


@router.post("/trials/abort")
def abort_trial(_: Operator, ctx: Ctx) -> dict:
    """Abort the running trial: it ends ``aborted`` (``operator_abort``), is not asked of the
    participant, and its slot is offered again; a motion is stopped in a controlled way (no fault,
    no e-stop), a pick's gripper opened and the arm homed. 409 when none runs, or when its pick or
    place has already completed (its outcome is fixed: the trial stands; the e-stop still stops the arm).
    A pairwise half waiting for the scene to be put back is aborted too: its episode ends there, void."""
    half = ctx.pending_half
    if half is not None and not half.confirmed.done():
        half.confirmed.set_exception(FlowError("the operator stopped this episode; it does not count"))
        return {"aborted": True}
    if not ctx.station.abort_current():
        raise HTTPException(
            409,
            "no trial can be aborted now: none runs, or its action has completed "
            "(the trial stands as it is; use the emergency stop to stop the arm)",
        )
    return {"aborted": True}


@router.post("/arm/home")
async def home(_: Operator, ctx: Ctx) -> dict:
    """Move the arm to its home pose. 409 while stopped or while a trial runs."""
    _idle(ctx)
    res = await ctx.station.home()
    if res.get("outcome") != "done":
        raise HTTPException(
            409 if res.get("outcome") == "stopped" else 500,
            f"the arm did not home ({res.get('outcome')}): {res.get('error')}",
        )
    return {"homed": True}


@router.post("/scene/reset")
async def scene_reset(_: Operator, ctx: Ctx) -> dict:
    """Reset the scene. When a participant waits for its next agent block (real hardware), this is
    the operator's confirmation that the scene matches the reference: the arm opens and homes and the
    block's starting frame is stored. Otherwise, with a simulator, the scene is restored exactly and
    the arm homed (no block starts). When a pairwise half waits for the start scene (real hardware),
    this confirms it is back, and the half runs. 409 while stopped or busy, or when a person must reset it."""
    half = ctx.pending_half
    if half is not None and not half.confirmed.done():
        if ctx.stopped:
            raise HTTPException(409, "the arm is stopped; reset it first")
        half.confirmed.set_result(True)
        return {"confirmed": "half", **half.to_dict()}
    _idle(ctx)
    if ctx.pending_block is not None:
        pid, block = ctx.pending_block
        participant = ctx.store.participant(pid)
        step = participant_step(ctx, participant)
        ctx.pending_block = None
        if step.kind != "setup" or step.block != block:
            raise HTTPException(409, "that participant no longer waits for a scene reset")
        try:
            return await prepare_block(
                ctx, participant, step, method="sim_reset" if ctx.parts.scene_automatic else "operator_confirmed"
            )
        except FlowError as e:
            ctx.pending_block = (pid, block)  # still waiting: the operator may try again
            raise HTTPException(409, str(e)) from e
    if not ctx.parts.scene_automatic:
        raise HTTPException(
            409,
            "no participant waits for a scene reset (on real hardware you put the scene back "
            "yourself; the console confirms it when a block starts)",
        )
    res = await ctx.station.reset_block()
    if res.get("outcome") != "done":
        raise HTTPException(409, f"the arm could not be reset ({res.get('outcome')}): {res.get('error')}")
    return {"reset": True}


@router.post("/studies/{study_id}/reference")
def capture_reference(study_id: IdPath, _: Operator, ctx: Ctx) -> dict:
    """Keep the current camera frame as the study's reference scene (what every block starts from)."""
    frame = ctx.parts.live_view.latest_jpeg()
    if frame is None:
        raise HTTPException(503, "no camera frame yet")
    try:
        ctx.store.set_scene_reference(study_id, frame[0])
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    return {"study_id": study_id, "frame_index": frame[1]}


@router.get("/studies/{study_id}/reference")
def reference_state(study_id: IdPath, _: Operator, ctx: Ctx) -> dict:
    """``{"study_id", "captured"}``: whether the study has a reference scene (the console asks this
    before it loads ``reference.jpg``, so a study without one is not a failed request)."""
    return {"study_id": study_id, "captured": ctx.store.scene_reference(study_id) is not None}


@router.get("/studies/{study_id}/reference.jpg")
def reference(study_id: IdPath, _: Operator, ctx: Ctx) -> Response:
    """The study's reference scene; 404 when none was captured."""
    jpeg = ctx.store.scene_reference(study_id)
    if jpeg is None:
        raise HTTPException(404, "no reference scene for this study")
    return Response(jpeg, **_JPEG)


@router.get("/trials/{trial_id}/frame")
def operator_trial_frame(
    trial_id: IdPath, _: Operator, ctx: Ctx, which: Literal["before", "after"] = "before"
) -> Response:
    """Any trial's ``before``/``after`` frame (the operator's attribution click, the results page)."""
    try:
        row = ctx.store.trial(trial_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    jpeg = ctx.station.trial_jpeg(row["trial_uid"], which)
    if not jpeg:
        raise HTTPException(404, "this trial's frame is no longer kept")
    return Response(jpeg, **_JPEG)


class ClickIn(BaseModel):
    u: float
    v: float


@router.post("/trials/{trial_id}/intended")
def intended_object(trial_id: IdPath, body: ClickIn, _: Operator, ctx: Ctx) -> dict:
    """The operator clicks the object the instruction meant on the trial's ``before`` frame (real
    frames: no segmentation): a mask is grown from the click (``bridge.trials.attribution.mask_from_click``)
    and the trial records whether the agent's first point was on it, which sets its failure stage.
    422 for a click off the image, 404 when the frame is no longer kept."""
    import cv2
    import numpy as np

    from pointlab.bridge.trials.attribution import mask_from_click, point_in_mask

    try:
        row = ctx.store.trial(trial_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    jpeg = ctx.station.trial_jpeg(row["trial_uid"], "before")
    if not jpeg:
        raise HTTPException(404, "this trial's frame is no longer kept")
    bgr = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:  # (indexing it was a 500)
        raise HTTPException(404, "this trial's frame cannot be decoded")
    try:
        mask = mask_from_click(bgr[:, :, ::-1], body.u, body.v)
    except ValueError as e:
        raise HTTPException(422, str(e)) from e
    first = (row.get("points") or [None])[0]
    on = None
    if first and first.get("valid") and first.get("u_px") is not None and first.get("v_px") is not None:
        on = point_in_mask(mask, first["u_px"], first["v_px"])
    updated = ctx.store.set_point_on_target(trial_id, on)
    return {
        "trial_id": trial_id,
        "point_on_target": on,
        "failure_stage": updated["failure_stage"],
        "mask_px": int(mask.sum()),
    }
