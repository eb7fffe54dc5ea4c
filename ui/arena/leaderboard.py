"""Leaderboard and vote export routes (ratings from ``pointlab.benchmark.ratings``)."""

from __future__ import annotations

import json

from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse

from pointlab.benchmark.ratings import TIE_WINNERS, RatingsInputError, compute_ratings, parse_vote

from .battles import Arena

__all__ = ["router"]

router = APIRouter(prefix="/api")


@router.get("/leaderboard")
def leaderboard(arena: Arena, method: str = "bt", ties: str = "exclude") -> dict:
    """``{"method", "ties", "votes", "counted" (ties excluded or not), "ratings": {model: {rating, ci_low, ci_high, rank, games}}}``."""
    s = arena.settings
    votes = [parse_vote(v) for v in arena.store.votes(include_flagged=s.include_flagged)]
    try:
        ratings = compute_ratings(votes, method, ties=ties, k=s.elo_k, start=s.elo_start, base=s.elo_base,
                                  scale=s.elo_scale, bootstrap_rounds=s.bootstrap_rounds, seed=0)
    except RatingsInputError as e:
        raise HTTPException(400, str(e)) from None
    counted = sum(1 for v in votes if ties == "half" or v.winner not in TIE_WINNERS)
    return {"method": method, "ties": ties, "votes": len(votes), "counted": counted, "ratings": ratings}


@router.get("/votes.jsonl", response_class=PlainTextResponse)
def export_votes(arena: Arena) -> str:
    """Votes in vote order, one ``{"model_a", "model_b", "winner"}`` a line (``pointlab ratings`` input)."""
    rows = arena.store.votes(include_flagged=arena.settings.include_flagged)
    return "".join(json.dumps({k: v[k] for k in ("model_a", "model_b", "winner")}) + "\n" for v in rows)
