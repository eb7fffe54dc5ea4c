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
from pointlab.bridge.study.design import block_progress
from pointlab.bridge.study.episodes import episode_outcomes, rated_episodes
from pointlab.bridge.study.results import csv_text

__all__ = [
    "EPISODE_COLUMNS",
    "win_matrix",
    "progress_summary",
    "pairwise_results",
    "episodes_csv_rows",
    "episodes_csv",
    "rated_trials",
]

FEW_EPISODES = 10  # an agent compared fewer times is marked: its rating and interval are rough

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
    "running",
    "trial_a_id",
    "trial_b_id",
    "created_unix_s",
    "judged_unix_s",
    "finished_unix_s",
)


def rated_trials(episodes: Sequence[Mapping], trials: Sequence[Mapping]) -> list[dict]:
    """The trials of a pairwise study that count in per-agent rates: all but the halves of void
    episodes that ran (a void episode is not rated: its other agent never got its half, so a success
    or a refusal there is not set against anything). A void episode's aborted half stays, counted as
    aborted like any aborted trial."""
    by_id = {t["id"]: t for t in trials}
    left_out = set()
    for e, o in zip(episodes, episode_outcomes(episodes, by_id)):
        if o["outcome"] == "aborted":
            for h in ("a", "b"):
                tid = e[f"trial_{h}_id"]
                if tid is not None and (by_id.get(tid) or {}).get("outcome") != "aborted":
                    left_out.add(tid)
    return [dict(t) for t in trials if t["id"] not in left_out]


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
        ``{"short_participants", "episodes", "ratings", "bucketed", "win_matrix", "progress", "log"}``:
        ``episodes`` counts ``compared``, ``void``, ``waiting`` and ``running`` episodes; ``ratings`` is
        ``benchmark.pairwise.davidson`` (95 % bootstrap intervals over episodes, seeded: the same study
        gives the same numbers) with each agent's ``wins``/``losses``/``ties``, ``bound`` (``"no
        losses"`` / ``"no wins"``: the rating is unbounded that way, not a number to read) and
        ``few_episodes`` (fewer than ``FEW_EPISODES``); ``bucketed`` is ``benchmark.pairwise.bucketed``
        (``None`` before any comparison); ``win_matrix`` as ``win_matrix``; ``progress`` maps each
        agent to ``progress_summary``; ``log`` is the episode log (``EPISODE_COLUMNS`` rows, oldest
        first); ``short_participants`` lists the labels (ids without ``participants``) of those whose
        repeats ran out before all their episodes were compared.
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
    ratings = davidson(rated, bootstrap_rounds=bootstrap_rounds, seed=seed)
    matrix = win_matrix(agents, compared)
    for a, r in ratings["ratings"].items():
        won = sum(c["wins"] for c in matrix.get(a, {}).values())
        lost = sum(c["losses"] for c in matrix.get(a, {}).values())
        tied = sum(c["ties"] for c in matrix.get(a, {}).values())
        r.update(wins=won, losses=lost, ties=tied)
        # an agent that never lost (or never won) has no finite maximum-likelihood strength: its
        # rating is held only by the fit's tiny L2 term and means "above (below) the others"
        r["bound"] = "no losses" if won and not lost else "no wins" if lost and not won else None
        r["few_episodes"] = r["episodes"] < FEW_EPISODES
    # participants whose repeats ran out before their episodes were all compared (as short blocks)
    labels = {p["id"]: p.get("label") for p in participants}
    short = []
    for pid in dict.fromkeys(e["participant_id"] for e in episodes):
        mine = [e for e in episodes if e["participant_id"] == pid]
        prog = block_progress(
            [o for o in episode_outcomes(mine, by_id) if o["outcome"] != "running"],
            trials_per_agent=int(study.get("trials_per_agent") or 1),
            max_repeats=int(study.get("max_repeats", 2)),
        )
        if prog.short:
            short.append(labels.get(pid, pid))
    return {
        "short_participants": short,
        "episodes": {
            "compared": len(compared),
            "void": sum(s["outcome"] == "aborted" for s in status),
            "waiting": sum(s["outcome"] is None for s in status),
            "running": sum(s["outcome"] == "running" for s in status),
        },
        "ratings": ratings,
        "bucketed": bucketed(rated, bootstrap_rounds=min(bootstrap_rounds, 100), seed=seed) if rated else None,
        "win_matrix": matrix,
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
        row["running"] = s["outcome"] == "running"
        out.append(row)
    return out


def episodes_csv(episodes: Sequence[Mapping], trials: Sequence[Mapping], participants: Sequence[Mapping] = ()) -> str:
    """The episode log as CSV text (``EPISODE_COLUMNS``; text cells guarded against spreadsheet
    formulas as the trial log's)."""
    status = episode_outcomes(episodes, {t["id"]: t for t in trials})
    return csv_text(EPISODE_COLUMNS, episodes_csv_rows(episodes, status, participants))
