"""Leaderboard and vote export routes (ratings from ``pointlab.benchmark.ratings``).

``/api/leaderboard`` answers, in one document, what Chatbot Arena's leaderboard shows: per model
the battles it was drawn into and the votes counted, Bradley-Terry and online Elo side by side
(each with its 95 % bootstrap interval and interval-aware rank), the win-fraction matrix with its
game counts, and a "fewer than N votes" marker (``ArenaSettings.few_votes``, default 50) for a
model whose interval would mean nothing: its interval and rank are ``null`` then.

The board is recomputed only when the number of votes changed (one ``COUNT`` per request); each
worker process keeps its own copy.
"""

from __future__ import annotations

import json

import numpy as np
from fastapi import APIRouter, HTTPException
from fastapi.responses import PlainTextResponse

from .battles import Arena

__all__ = ["router", "win_matrix", "build_board", "rating_kwargs"]

router = APIRouter(prefix="/api")


def win_matrix(models: list[str], votes: list, ties: str) -> tuple[list[list[float | None]], list[list[int]]]:
    """``(win_fraction, games)``: row model's share of wins against the column model (ties excluded,
    or counted half with ``ties="half"``) and the number of those games; ``None`` where they never met."""
    from pointlab.benchmark.ratings import TIE_WINNERS

    idx = {m: i for i, m in enumerate(models)}
    n = len(models)
    wins, games = np.zeros((n, n)), np.zeros((n, n), dtype=int)
    for v in votes:
        i, j = idx.get(v.model_a), idx.get(v.model_b)
        if i is None or j is None:
            continue
        if v.winner in TIE_WINNERS:
            if ties != "half":
                continue
            wins[i, j] += 0.5
            wins[j, i] += 0.5
        elif v.winner == "model_a":
            wins[i, j] += 1
        else:
            wins[j, i] += 1
        games[i, j] += 1
        games[j, i] += 1
    frac = [
        [None if games[i, j] == 0 else round(float(wins[i, j] / games[i, j]), 4) for j in range(n)] for i in range(n)
    ]
    return frac, games.tolist()


def rating_kwargs(settings, ties: str) -> dict:
    """``compute_ratings``' keyword arguments from ``ArenaSettings`` (Elo parameters, bootstrap
    rounds, seed 0): the leaderboard and the published bundle rate votes alike."""
    return dict(
        ties=ties,
        k=settings.elo_k,
        start=settings.elo_start,
        base=settings.elo_base,
        scale=settings.elo_scale,
        bootstrap_rounds=settings.bootstrap_rounds,
        seed=0,
    )


def build_board(arena, ties: str) -> dict:
    """The whole leaderboard document (see the module docstring). Blocking.

    Raises: RatingsInputError for an unknown ties rule.
    """
    # scipy (Bradley-Terry) is imported on first use, off the start path (issue 14, #9)
    from pointlab.benchmark.ratings import TIE_WINNERS, compute_ratings, parse_vote

    s = arena.settings
    votes = [parse_vote(v) for v in arena.store.votes(include_flagged=s.include_flagged)]
    kw = rating_kwargs(s, ties)
    bt, elo = compute_ratings(votes, "bt", **kw), compute_ratings(votes, "elo", **kw)
    battles = arena.store.battle_counts()
    counted = [v for v in votes if ties == "half" or v.winner not in TIE_WINNERS]
    per_model = {m: 0 for m in arena.agents}
    for v in votes:
        for m in (v.model_a, v.model_b):
            per_model[m] = per_model.get(m, 0) + 1
    models = sorted(set(per_model) | set(battles), key=lambda m: (-(bt[m]["rating"] if m in bt else -1e9), m))
    rows = []
    for m in models:
        few = per_model.get(m, 0) < s.few_votes
        row = {"model": m, "battles": battles.get(m, 0), "votes": per_model.get(m, 0), "few_votes": few}
        for name, table in (("bt", bt), ("elo", elo)):
            r = table.get(m)
            row[name] = (
                None
                if r is None
                else {
                    "rating": r["rating"],
                    "games": r["games"],
                    "ci_low": None if few else r["ci_low"],
                    "ci_high": None if few else r["ci_high"],
                    "rank": None if few else r["rank"],
                }
            )
        rows.append(row)
    frac, games = win_matrix(models, votes, ties)
    return {
        "ties": ties,
        "votes": len(votes),
        "counted": len(counted),
        "few_votes": s.few_votes,
        "models": rows,
        "matrix": {"models": models, "win_fraction": frac, "games": games},
    }


@router.get("/leaderboard")
def leaderboard(arena: Arena, ties: str = "exclude", method: str | None = None) -> dict:
    """The leaderboard document; with ``method`` (``bt`` or ``elo``) also ``ratings`` of that method
    alone in the form ``pointlab ratings`` prints (``{model: {rating, ci_low, ci_high, rank, games}}``)."""
    if ties not in ("exclude", "half") or method not in (None, "bt", "elo"):
        raise HTTPException(400, "ties must be exclude or half, method bt or elo")
    key = ("board", ties, arena.store.vote_count())
    board = arena.cache.get(key)
    if board is None:
        from pointlab.benchmark.ratings import RatingsInputError

        try:
            board = build_board(arena, ties)
        except RatingsInputError as e:
            raise HTTPException(400, str(e)) from None
        arena.cache = {k: v for k, v in arena.cache.items() if not (isinstance(k, tuple) and k[0] == "board")}
        arena.cache[key] = board
    if method is None:
        return board
    return {
        **board,
        "method": method,
        "ratings": {r["model"]: r[method] for r in board["models"] if r[method] is not None},
    }


@router.get("/votes.jsonl", response_class=PlainTextResponse)
def export_votes(arena: Arena) -> str:
    """Votes in vote order, one ``{"model_a", "model_b", "winner"}`` a line (``pointlab ratings`` input)."""
    rows = arena.store.votes(include_flagged=arena.settings.include_flagged)
    return "".join(json.dumps({k: v[k] for k in ("model_a", "model_b", "winner")}) + "\n" for v in rows)
