"""Operator API for studies and invitations: ``/api/agents``, ``/api/studies``, ``/api/studies/{id}/participants``."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from pointlab.bridge.study.store import (
    DEFAULT_MAX_REPEATS,
    DEFAULT_MIN_FREE_MB,
    DEFAULT_REVEAL_HIGH_S,
    DEFAULT_REVEAL_LOW_S,
    StoreError,
)
from pointlab.bridge.study.design import DESIGN, invite_participant

from .deps import Ctx, Db, IdPath, Operator, StorableStr

__all__ = ["router"]

router = APIRouter(prefix="/api")


class StudyIn(BaseModel):
    # an unknown field is refused (422), not ignored: a setting a client meant to set (an old
    # ``reveal_floor_s``, a typo) must not silently fall back to a default
    model_config = ConfigDict(extra="forbid")

    agents: list[str] = Field(min_length=1)
    trials_per_agent: int = Field(ge=1, le=100, strict=True)  # strict: "2", true and 2.0 are refused
    scene: StorableStr = Field(default="", max_length=200)
    name: StorableStr = Field(default="", max_length=200)
    max_repeats: int = Field(default=DEFAULT_MAX_REPEATS, ge=0, le=20, strict=True)
    reveal_low_s: float = Field(default=DEFAULT_REVEAL_LOW_S, ge=0, le=300, allow_inf_nan=False)
    reveal_high_s: float = Field(default=DEFAULT_REVEAL_HIGH_S, ge=0, le=300, allow_inf_nan=False)
    min_free_mb: int = Field(default=DEFAULT_MIN_FREE_MB, ge=0, le=10**7, strict=True)
    # pairwise: A/B episodes, trials_per_agent read as each participant's episodes (docs/statistics.md)
    mode: Literal["absolute", "pairwise"] = "absolute"
    pair_sampling: Literal["uniform", "adaptive"] = "uniform"


class InviteIn(BaseModel):
    label: StorableStr = Field(default="", max_length=100)


@router.get("/agents")
def agents(_: Operator, ctx: Ctx) -> list[str]:
    """Agent config names the runner knows (operator only: these are what participants must not see)."""
    return ctx.parts.agent_names


@router.post("/studies", status_code=201)
def create_study(body: StudyIn, _: Operator, ctx: Ctx, db: Db) -> dict:
    """Create a study; 422 when an agent is unknown to the runner or repeated."""
    unknown = [a for a in body.agents if a not in ctx.parts.agent_names]
    if unknown:
        raise HTTPException(422, f"unknown agents {unknown}; known: {ctx.parts.agent_names}")
    try:
        sid = db.create_study(
            agents=body.agents,
            trials_per_agent=body.trials_per_agent,
            scene=body.scene,
            name=body.name,
            design=DESIGN,
            max_repeats=body.max_repeats,
            reveal_low_s=body.reveal_low_s,
            reveal_high_s=body.reveal_high_s,
            min_free_mb=body.min_free_mb,
            mode=body.mode,
            pair_sampling=body.pair_sampling,
        )
    except StoreError as e:
        raise HTTPException(422, str(e)) from e
    return db.study(sid)


@router.get("/studies")
def list_studies(_: Operator, db: Db) -> list[dict]:
    return db.studies()


@router.post("/studies/{study_id}/participants", status_code=201)
async def invite(study_id: IdPath, body: InviteIn, request: Request, _: Operator, ctx: Ctx, db: Db) -> dict:
    """Invite the next participant: returns its id, label, agent order, token and invite link.

    ``async`` on purpose: invitations then run one at a time on the event loop, so two at once
    cannot read the same participant count and get the same Williams row (the calls are short).

    A study whose agents this session does not run (the agents config changed since it was created)
    is refused with 409: its participants could not do a single trial."""
    try:
        missing = [a for a in db.study(study_id)["agents"] if a not in ctx.parts.agent_names]
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    if missing:
        raise HTTPException(
            409,
            f"this session does not run the study's agents {missing}; start pointlab act with "
            f"an agents config that has them (running: {ctx.parts.agent_names})",
        )
    try:
        pid, token = invite_participant(db, study_id, label=body.label)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    p = db.participant(pid)
    return {
        "participant_id": pid,
        "label": p["label"],
        "agent_order": p["agent_order"],
        "token": token,
        "url": _invite_url(ctx, request, token),
    }


def _invite_url(ctx, request: Request, token: str) -> str:
    """The participant's invite link: ``--public-url`` when set, else the URL the operator uses."""
    base = (ctx.settings.public_url or str(request.base_url)).rstrip("/")
    return f"{base}/p/{token}"


@router.get("/studies/{study_id}/participants")
def participants(study_id: IdPath, request: Request, _: Operator, ctx: Ctx, db: Db) -> list[dict]:
    return [
        {
            "participant_id": p["id"],
            "label": p["label"],
            "agent_order": p["agent_order"],
            "url": _invite_url(ctx, request, p["token"]),
            "queue_position": ctx.queue.position(p["id"]),
        }
        for p in db.participants(study_id)
    ]
