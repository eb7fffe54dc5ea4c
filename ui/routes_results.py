"""Operator API for results: per-agent success with a 95% Wilson interval, mean SUS, trial log, CSV."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

from pointlab.benchmark.records import finite_json
from pointlab.bridge.store import StoreError
from pointlab.bridge.study_results import agent_results, trial_log, trial_log_csv

from .deps import Db, IdQuery, Operator

__all__ = ["router"]

router = APIRouter(prefix="/api")


@router.get("/results")
def results(study_id: IdQuery, _: Operator, db: Db) -> dict:
    """``{"study", "agents": [per-agent results], "surveys", "trials": [trial log]}`` (see bridge.study_results)."""
    try:
        study = db.study(study_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    trials = db.trials(study_id=study_id)
    surveys = db.surveys(study_id=study_id)
    return finite_json({"study": study, "agents": agent_results(study["agents"], trials, surveys), "surveys": surveys,
                        "trials": trial_log(trials, db.participants(study_id)),
                        "block_starts": db.block_starts(study_id=study_id)})


@router.get("/results/plot.svg")
def results_plot(study_id: IdQuery, _: Operator, db: Db, kind: Literal["success", "sus"] = "success") -> Response:
    """The study's chart as SVG: ``success`` (per agent, participants and the automatic check with 95%
    Wilson bars) or ``sus`` (the SUS distribution per agent)."""
    from pointlab.bridge.study_plots import success_svg, sus_svg

    try:
        study = db.study(study_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    rows = agent_results(study["agents"], db.trials(study_id=study_id), db.surveys(study_id=study_id))
    svg = success_svg(rows) if kind == "success" else sus_svg(rows)
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})


@router.get("/results.csv")
def results_csv(study_id: IdQuery, _: Operator, db: Db) -> Response:
    """The study's trial log as CSV (one row per trial, all stored fields)."""
    try:
        db.study(study_id)
    except StoreError as e:
        raise HTTPException(404, str(e)) from e
    return Response(trial_log_csv(db.trials(study_id=study_id), db.participants(study_id)), media_type="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="study-{study_id}-trials.csv"'})
