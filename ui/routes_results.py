"""Operator API for results: per-agent success with a 95% Wilson interval, mean SUS, trial log, CSV,
and each trial's clip.

``GET /api/trials/{id}/clip`` serves a trial's MP4 (``video/mp4``, HTTP range requests, so a
``<video>`` element plays and seeks it). A ``<video>`` cannot send an ``Authorization`` header, so
besides the operator's bearer token the route takes a signed, expiring URL: ``/api/results`` gives
every trial that has a clip a ``clip_url`` (``?exp=<unix s>&sig=<HMAC-SHA256>``, keyed by the
operator token, valid ``UiSettings.clip_url_ttl_s``), and that URL works for that trial only, until
it expires. The operator token itself never appears in a URL (access logs keep URLs).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import threading
import time
from collections import OrderedDict
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import FileResponse, Response

from pointlab.benchmark.records import finite_json
from pointlab.bridge.recording.layout import recording_of
from pointlab.bridge.study.store import StoreError
from pointlab.bridge.study.results import agent_results, study_blocks, trial_log, trial_log_csv

from .context import AppContext
from .deps import Ctx, Db, IdPath, IdQuery, Operator, resolve_token

__all__ = ["router", "clip_url"]

router = APIRouter(prefix="/api")


def _clip_sig(ctx: AppContext, trial_id: int, exp: int) -> str:
    return hmac.new(ctx.operator_token.encode(), f"clip:{trial_id}:{exp}".encode(), hashlib.sha256).hexdigest()


def clip_url(ctx: AppContext, trial_id: int, now_s: float | None = None) -> str:
    """A signed URL of trial row ``trial_id``'s clip, valid ``clip_url_ttl_s`` from ``now_s``."""
    exp = int((time.time() if now_s is None else now_s) + ctx.settings.clip_url_ttl_s)
    return f"/api/trials/{trial_id}/clip?exp={exp}&sig={_clip_sig(ctx, trial_id, exp)}"


def _clip_path(ctx: AppContext, row: dict):
    rec = recording_of(row, ctx.recordings)
    path = ctx.recordings.resolve(rec.clip) if rec is not None and rec.clip else None
    return path if path is not None and path.is_file() else None


@router.get("/results")
def results(study_id: IdQuery, _: Operator, db: Db, ctx: Ctx) -> dict:
    """``{"study", "agents": [per-agent results], "blocks": [every participant's block, ``short``
    flagged], "surveys", "trials": [trial log], "block_starts"}`` (see bridge.study.results), all
    counted from one read of the study's trials; each trial also has ``clip_url`` (signed, see the
    module docstring) or ``None`` when it has no clip."""
    try:
        study = db.study(study_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    trials = db.trials(study_id=study_id)
    surveys = db.surveys(study_id=study_id)
    participants = db.participants(study_id)
    log = trial_log(trials, participants)
    for entry, row in zip(log, trials):
        entry["clip_url"] = clip_url(ctx, row["id"]) if _clip_path(ctx, row) is not None else None
    pairwise = study.get("mode") == "pairwise"
    blocks = [] if pairwise else study_blocks(study, trials, participants)  # no agent blocks in pairwise
    episodes = db.episodes(study_id=study_id) if pairwise else []
    out = {
        "study": study,
        "agents": agent_results(study["agents"], _rated(study, trials, episodes), surveys, blocks),
        "blocks": blocks,
        "surveys": surveys,
        "trials": log,
        "block_starts": db.block_starts(study_id=study_id),
    }
    if pairwise:
        out["pairwise"] = _pairwise(study, db, episodes, trials, participants)
    return finite_json(out)


def _rated(study: dict, trials: list[dict], episodes: list[dict]) -> list[dict]:
    """The trials per-agent rates count: in a pairwise study (its ``episodes``), not the halves of void
    episodes."""
    if study.get("mode") != "pairwise":
        return trials
    from pointlab.bridge.study.pairwise_results import rated_trials

    return rated_trials(episodes, trials)


# A pairwise study's results take a few hundred bootstrap fits: computed once per state of its rows and
# kept (the page and its chart ask together, and a results page left open is reloaded), not on every
# request, so an open results page does not slow the session's live view.
_PAIRWISE_CACHE: OrderedDict[tuple, dict] = OrderedDict()
_PAIRWISE_LOCK = threading.Lock()
_PAIRWISE_KEEP = 8


def _pairwise(study: dict, db, episodes: list[dict], trials: list[dict], participants: list[dict]) -> dict:
    from pointlab.bridge.study.pairwise_results import pairwise_results

    key = (
        id(db),
        study["id"],
        # finished_unix_s too: an episode aborted before its first half changes nothing else
        tuple((e["id"], e["preference"], e["trial_a_id"], e["trial_b_id"], e["finished_unix_s"]) for e in episodes),
        tuple((t["id"], t.get("outcome")) for t in trials),
        tuple((p["id"], p.get("label")) for p in participants),
    )
    with _PAIRWISE_LOCK:
        if key in _PAIRWISE_CACHE:
            _PAIRWISE_CACHE.move_to_end(key)
            return copy.deepcopy(_PAIRWISE_CACHE[key])
    res = pairwise_results(study, episodes, trials, participants)
    with _PAIRWISE_LOCK:
        _PAIRWISE_CACHE[key] = res
        while len(_PAIRWISE_CACHE) > _PAIRWISE_KEEP:
            _PAIRWISE_CACHE.popitem(last=False)
    return copy.deepcopy(res)


@router.get("/results/plot.svg")
def results_plot(
    study_id: IdQuery, _: Operator, db: Db, kind: Literal["success", "sus", "pairwise"] = "success"
) -> Response:
    """The study's chart as SVG: ``success`` (per agent, participants and the automatic check with 95%
    Wilson bars), ``sus`` (the SUS distribution per agent) or ``pairwise`` (a pairwise study's ratings
    with 95% bootstrap intervals and the progress per agent; 404 for an absolute study)."""
    from pointlab.bridge.study.plots import pairwise_svg, success_svg, sus_svg

    try:
        study = db.study(study_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    pairwise = study.get("mode") == "pairwise"
    if kind == "pairwise" and not pairwise:
        raise HTTPException(404, f"study {study_id} is not a pairwise study")
    trials = db.trials(study_id=study_id)
    episodes = db.episodes(study_id=study_id) if pairwise else []
    if kind == "pairwise":
        svg = pairwise_svg(_pairwise(study, db, episodes, trials, db.participants(study_id)))
        return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})
    rows = agent_results(study["agents"], _rated(study, trials, episodes), db.surveys(study_id=study_id))
    svg = success_svg(rows) if kind == "success" else sus_svg(rows)
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})


@router.get("/results.csv")
def results_csv(study_id: IdQuery, _: Operator, db: Db) -> Response:
    """The study's trial log as CSV (one row per trial, all stored fields)."""
    try:
        db.study(study_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    return Response(
        trial_log_csv(db.trials(study_id=study_id), db.participants(study_id)),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="study-{study_id}-trials.csv"'},
    )


@router.get("/results/episodes.csv")
def results_episodes_csv(study_id: IdQuery, _: Operator, db: Db) -> Response:
    """A pairwise study's episode log as CSV (``bridge.study.pairwise_results.EPISODE_COLUMNS``);
    404 for an unknown or absolute study."""
    from pointlab.bridge.study.pairwise_results import episodes_csv

    try:
        study = db.study(study_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    if study.get("mode") != "pairwise":
        raise HTTPException(404, f"study {study_id} is not a pairwise study")
    return Response(
        episodes_csv(db.episodes(study_id=study_id), db.trials(study_id=study_id), db.participants(study_id)),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="study-{study_id}-episodes.csv"'},
    )


@router.get("/trials/{trial_id}/clip")
def trial_clip(
    trial_id: IdPath,
    request: Request,
    ctx: Ctx,
    db: Db,
    exp: Annotated[int | None, Query(ge=0, le=2**40)] = None,
    sig: Annotated[str | None, Query(max_length=128)] = None,
) -> FileResponse:
    """Trial row ``trial_id``'s clip as ``video/mp4`` with range support (206 for ``Range:``).

    Auth: the operator's bearer token, or a signed URL from ``/api/results`` (``exp``, ``sig``).
    401 without either, 403 for a participant, a wrong signature or an expired one, 404 when
    the trial or its clip does not exist."""
    h = request.headers.get("authorization", "")
    who = resolve_token(ctx, h[7:].strip()) if h.lower().startswith("bearer ") else None
    if who is None and sig is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "operator token or signed clip URL required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if who is not None and who.role != "operator":
        raise HTTPException(status.HTTP_403_FORBIDDEN, "operator token required")
    if who is None:
        if exp is None or sig is None or not hmac.compare_digest(sig, _clip_sig(ctx, trial_id, exp)):
            raise HTTPException(status.HTTP_403_FORBIDDEN, "bad clip signature")
        if exp < time.time():
            raise HTTPException(status.HTTP_403_FORBIDDEN, "clip URL expired; reload the results")
    try:
        row = db.trial(trial_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    path = _clip_path(ctx, row)
    if path is None:
        raise HTTPException(404, f"trial {trial_id} has no clip")
    return FileResponse(
        path,
        media_type="video/mp4",
        filename=f"trial-{trial_id}.mp4",
        content_disposition_type="inline",
        headers={"Cache-Control": "private, max-age=3600"},
    )
