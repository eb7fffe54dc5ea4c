"""Results of a pairwise Point-Act study: ratings (Bradley-Terry with ties, overall and with task
buckets), the win matrix, each agent's progress scores with a 95 % interval, and the episode log
(docs/statistics.md, "Pairwise studies").

Only compared episodes are rated; a void episode (an aborted or missing half) is listed and counted
apart, never rated: the agent whose half ran was not compared with anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from pointlab.benchmark.pairwise import bucketed, davidson
from pointlab.bridge.study.episodes import episode_outcomes, rated_episodes
from pointlab.bridge.study.results import csv_text

__all__ = [
    "EPISODE_COLUMNS",
    "win_matrix",
    "progress_summary",
    "pairwise_results",
    "episodes_csv_rows",
    "episodes_csv",
]

EPISODE_COLUMNS = (
    "id",
    "participant",
    "number",
    "instruction",
    "category",
    "agent_a",
    "agent_b",
    "preference",
    "winner",
    "progress_a",
    "progress_b",
    "reason",
    "void",
    "trial_a_id",
    "trial_b_id",
    "created_unix_s",
    "judged_unix_s",
)


def win_matrix(agents: Sequence[str], episodes: Sequence[Mapping]) -> dict[str, dict[str, dict[str, int]]]:
    """``{row agent: {column agent: {"wins", "losses", "ties"}}}`` of the row agent against the column
    agent over the compared episodes (either side, A or B); the diagonal is left out."""
    m = {a: {b: {"wins": 0, "losses": 0, "ties": 0} for b in agents if b != a} for a in agents}
    for e in episodes:
        if e.get("preference") is None:
            continue
        a, b = e["agent_a"], e["agent_b"]
        if a not in m or b not in m:
            continue
        if e["preference"] == "tie":
            m[a][b]["ties"] += 1
            m[b][a]["ties"] += 1
        else:
            win, lose = (a, b) if e["preference"] == "A" else (b, a)
            m[win][lose]["wins"] += 1
            m[lose][win]["losses"] += 1
    return m


def progress_summary(values: Sequence[float]) -> dict[str, Any]:
    """``{"n", "mean", "ci95": [low, high] | None, "median", "values"}`` of 0-100 progress scores; the
    interval is Student's t on the mean (``mean -/+ t(0.975, n-1) s / sqrt(n)``, clipped to 0-100),
    ``None`` with fewer than two scores."""
    v = np.asarray(list(values), dtype=float)
    n = int(v.size)
    if n == 0:
        return {"n": 0, "mean": None, "ci95": None, "median": None, "values": []}
    mean = float(v.mean())
    ci = None
    if n >= 2:
        half = float(stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / math.sqrt(n))
        ci = [max(0.0, mean - half), min(100.0, mean + half)]
    return {"n": n, "mean": mean, "ci95": ci, "median": float(np.median(v)), "values": v.tolist()}


def pairwise_results(
    study: Mapping,
    episodes: Sequence[Mapping],
    trials: Sequence[Mapping],
    participants: Sequence[Mapping] = (),
    *,
    bootstrap_rounds: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """A pairwise study's results from its stored rows (``Store.study``, ``Store.episodes`` and
    ``Store.trials`` of the study; ``participants`` label the log).

    Returns:
        ``{"episodes": {"compared", "void", "waiting"}, "ratings": benchmark.pairwise.davidson(...),
        "bucketed": benchmark.pairwise.bucketed(...) | None, "win_matrix": win_matrix(...),
        "progress": {agent: progress_summary(...)}, "log": [EPISODE_COLUMNS rows, oldest first]}``;
        ratings use 95 % bootstrap intervals over episodes (seeded: the same study gives the same
        numbers), ``bucketed`` needs compared episodes.
    """
    by_id = {t["id"]: t for t in trials}
    status = episode_outcomes(episodes, by_id)
    compared = [e for e in episodes if e.get("preference") is not None]
    rated = rated_episodes(compared)
    agents = list(study["agents"])
    progress: dict[str, list[float]] = {a: [] for a in agents}
    for e in compared:
        for side in ("a", "b"):
            progress.setdefault(e[f"agent_{side}"], []).append(float(e[f"progress_{side}"]))
    return {
        "episodes": {
            "compared": len(compared),
            "void": sum(s["outcome"] == "aborted" for s in status),
            "waiting": sum(s["outcome"] is None for s in status),
        },
        "ratings": davidson(rated, bootstrap_rounds=bootstrap_rounds, seed=seed),
        "bucketed": bucketed(rated, bootstrap_rounds=min(bootstrap_rounds, 100), seed=seed) if rated else None,
        "win_matrix": win_matrix(agents, compared),
        "progress": {a: progress_summary(v) for a, v in progress.items()},
        "log": episodes_csv_rows(episodes, status, participants),
    }


def episodes_csv_rows(episodes: Sequence[Mapping], status: Sequence[Mapping], participants: Sequence[Mapping] = ()):
    """The episode log (``EPISODE_COLUMNS``): ``winner`` names the agent (``tie`` for a tie), ``void``
    marks an episode that does not count; ``participant`` is the label when ``participants`` are given."""
    labels = {p["id"]: p.get("label") for p in participants}
    out = []
    for e, s in zip(episodes, status):
        pref = e.get("preference")
        row = {c: e.get(c) for c in EPISODE_COLUMNS}
        row["participant"] = labels.get(e["participant_id"], e["participant_id"])
        row["winner"] = None if pref is None else "tie" if pref == "tie" else e[f"agent_{pref.lower()}"]
        row["void"] = s["outcome"] == "aborted"
        out.append(row)
    return out


def episodes_csv(episodes: Sequence[Mapping], trials: Sequence[Mapping], participants: Sequence[Mapping] = ()) -> str:
    """The episode log as CSV text (``EPISODE_COLUMNS``; text cells guarded against spreadsheet
    formulas as the trial log's)."""
    status = episode_outcomes(episodes, {t["id"]: t for t in trials})
    return csv_text(EPISODE_COLUMNS, episodes_csv_rows(episodes, status, participants))
