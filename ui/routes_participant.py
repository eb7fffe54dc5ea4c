"""Participant API (invite token): ``GET /api/me`` returns the blinded state of the websocket."""

from __future__ import annotations

from fastapi import APIRouter

from .deps import Ctx, Participant
from .flow import participant_state

__all__ = ["router"]

router = APIRouter(prefix="/api")


@router.get("/me")
def me(c: Participant, ctx: Ctx) -> dict:
    """The participant's step, queue position and the action the robot would do (no agent names)."""
    return participant_state(ctx, c.participant)
