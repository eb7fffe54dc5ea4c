"""Results of a Point-Act study: per-agent success rate with a 95% Wilson interval, mean SUS, the
trial log and its CSV export (issue 2, "Results page"; PointArena sec. 4.1 / Fig. 7b reports
success and SUS per agent).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any

from pointlab.benchmark.records import dumps_json

from pointlab.bridge.study.design import alias, block_progress
from pointlab.bridge.trials.record import TrialResult
from pointlab.bridge.trials.timing import late

__all__ = [
    "Z_95",
    "wilson_interval",
    "cohens_kappa",
    "agent_results",
    "trial_log",
    "trial_log_csv",
    "TRIAL_LOG_COLUMNS",
    "SUS_COLUMNS",
    "sus_csv",
    "study_blocks",
    "BLOCK_COLUMNS",
    "blocks_csv",
]

# Two-sided 95% normal quantile, scipy.stats.norm.ppf(0.975).
Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (Wilson, E. B. 1927, "Probable inference,
    the law of succession, and statistical inference", JASA 22(158):209-212).

    ``centre = (p + z^2/2n) / (1 + z^2/n)``, ``half = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2)``.
    Unlike the normal (Wald) interval it stays inside [0, 1] and is not empty at p = 0 or 1, which
    matters with the handful of trials per agent a user study has.

    Returns ``(low, high)`` or ``None`` when ``n == 0``.

    Raises:
        ValueError: ``successes`` outside ``0..n`` or ``n < 0``.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def cohens_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two raters' yes/no judgements (Cohen, J. 1960, "A coefficient of agreement for
    nominal scales", Educ. Psychol. Meas. 20(1):37-46): ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the
    observed agreement and ``p_e`` the agreement expected from each rater's own yes-rate.

    Returns ``None`` with no pairs, and ``None`` when both raters gave one and the same answer
    throughout: ``p_e = 1`` and kappa is 0/0, undefined (a single trial, or every trial a success by
    both; the agreement percentage beside it still says 100 %). It used to be reported as 1.0, which
    read as strong agreement from one trial.
    """
    n = len(pairs)
    if n == 0:
        return None
    po = sum(a == b for a, b in pairs) / n
    pa, pb = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def agent_results(
    agents: list[str], trials: list[dict], surveys: list[dict], blocks: list[dict] | None = None
) -> list[dict[str, Any]]:
    """Per agent (in ``agents`` order, plus any other agent found in the rows):

    ``agent``, ``n_trials`` (stored), ``n_aborted`` (left out of every rate: PointArena counts judged
    trials; an aborted one was not a test of the agent), ``n_judged`` (trials with an outcome: judged
    by the participant, a refusal, or headless the automatic check), ``n_succeeded``,
    ``success_rate`` (over exactly the ``n_judged`` trials; ``None`` when none), ``ci95`` ``[low, high]``
    (Wilson) or ``None``, ``auto_success_rate`` and ``auto_ci95`` (the automatic check, where it
    could tell), ``agreement`` (share of trials where the participant and the automatic check agree)
    with ``kappa`` (Cohen's) over ``n_compared`` trials, ``sim_success_rate`` (the simulator's own
    judgement where known), ``failure_stages`` ``{stage: n}`` over the trials not aborted, ``late_share`` (share of this agent's
    answers that came after their drawn reveal time, ``bridge.trials.timing``; operator only: a
    high share can unblind), ``n_short_blocks`` (blocks of ``blocks``, ``study_blocks`` rows, that
    ended short of their trials), ``mean_sus``, ``sus`` (every score), ``n_surveys``.
    """
    names = list(agents) + sorted({t["agent"] for t in trials} - set(agents))
    out = []
    for a in names:
        mine = [t for t in trials if t["agent"] == a]
        kept = [t for t in mine if t.get("outcome") != "aborted"]
        judged = [t for t in kept if t.get("outcome") in ("succeeded", "failed")]
        k = sum(t["outcome"] == "succeeded" for t in judged)
        auto = [x for t in kept if (x := (t.get("auto_check") or {}).get("success")) is not None]
        pairs = [
            (t["judgement"] == "succeeded", bool(t["auto_check"]["success"]))
            for t in kept
            if t.get("judgement") in ("succeeded", "failed") and (t.get("auto_check") or {}).get("success") is not None
        ]
        lates = [x for x in (late(t.get("timings_s") or {}) for t in mine) if x is not None]
        sim = [t["sim_success"] for t in kept if t.get("sim_success") is not None]
        sus = [s["score"] for s in surveys if s.get("agent") == a]
        stages: dict[str, int] = {}
        for t in kept:  # the stages of the failures; aborts are ``n_aborted``, not a stage of failure
            if t.get("failure_stage"):
                stages[t["failure_stage"]] = stages.get(t["failure_stage"], 0) + 1
        ci = wilson_interval(k, len(judged))
        auto_ci = wilson_interval(sum(auto), len(auto))
        out.append(
            {
                "agent": a,
                "n_trials": len(mine),
                "n_aborted": len(mine) - len(kept),
                "n_judged": len(judged),
                "n_succeeded": k,
                "success_rate": k / len(judged) if judged else None,
                "ci95": list(ci) if ci else None,
                "auto_success_rate": sum(auto) / len(auto) if auto else None,
                "auto_ci95": list(auto_ci) if auto_ci else None,
                "agreement": sum(x == y for x, y in pairs) / len(pairs) if pairs else None,
                "kappa": cohens_kappa(pairs),
                "n_compared": len(pairs),
                "sim_success_rate": sum(sim) / len(sim) if sim else None,
                "failure_stages": stages,
                "late_share": sum(lates) / len(lates) if lates else None,
                "n_short_blocks": sum(1 for b in blocks or () if b["agent"] == a and b["short"]),
                "mean_sus": sum(sus) / len(sus) if sus else None,
                "sus": sus,
                "n_surveys": len(sus),
            }
        )
    return out


# One row per participant and agent block: the same counts the participant's page shows (one rule,
# ``study.design.block_progress``), with ``short`` when repeats ran out before the block's trials.
BLOCK_COLUMNS = (
    "participant_id",
    "participant",
    "block",
    "alias",
    "agent",
    "kept",
    "judged",
    "succeeded",
    "aborted",
    "slots_used",
    "trials_per_agent",
    "short",
)


def study_blocks(study: dict, trials: list[dict], participants: list[dict]) -> list[dict[str, Any]]:
    """Every participant's blocks (``BLOCK_COLUMNS``; ``block`` counts from 1 as on the pages), from
    the study's trial rows (``Store.trials(study_id=...)``: one query for every counter)."""
    out = []
    for p in participants:
        mine = [t for t in trials if t.get("participant_id") == p["id"]]
        for b, agent in enumerate(p["agent_order"]):
            prog = block_progress(
                [t for t in mine if t.get("block") == b],
                trials_per_agent=study["trials_per_agent"],
                max_repeats=study.get("max_repeats", 2),
            )
            out.append(
                {
                    "participant_id": p["id"],
                    "participant": p.get("label"),
                    "block": b + 1,
                    "alias": alias(b),
                    "agent": agent,
                    "kept": prog.kept,
                    "judged": prog.judged,
                    "succeeded": prog.succeeded,
                    "aborted": prog.aborted,
                    "slots_used": prog.slots_used,
                    "trials_per_agent": study["trials_per_agent"],
                    "short": prog.short,
                }
            )
    return out


def blocks_csv(blocks: list[dict]) -> str:
    """``study_blocks`` rows as CSV text (header first)."""
    return csv_text(BLOCK_COLUMNS, blocks)


# The store's own columns around every field of TrialResult (the record is written down once: a field
# added there is a column of the log and the CSV too); ``participant`` is the label, not the id.
TRIAL_LOG_COLUMNS = (
    ("id", "trial_uid", "study_id", "number", "participant_id", "participant", "block")
    + tuple(f for f in TrialResult.model_fields if f != "trial_id")
    + ("judgement", "created_unix_s", "judged_unix_s")
)


def trial_log(trials: list[dict], participants: Sequence[dict] = ()) -> list[dict[str, Any]]:
    """The trial rows restricted to :data:`TRIAL_LOG_COLUMNS` (operator view; names agents).

    ``participant`` is the participant's label (``P1``...) from ``participants`` (store rows), and
    ``block`` counts from 1 as on the pages ("Agent 1 (1 of 3)"); the store keeps it from 0."""
    return _labelled(trials, TRIAL_LOG_COLUMNS, participants)


def _labelled(rows: list[dict], columns: tuple[str, ...], participants) -> list[dict[str, Any]]:
    """``rows`` restricted to ``columns``, with the participant's label and the block from 1."""
    labels = {p["id"]: p.get("label") for p in participants}
    out = []
    for t in rows:
        row = {c: t.get(c) for c in columns}
        row["participant"] = labels.get(t.get("participant_id"))
        row["block"] = None if t.get("block") is None else t["block"] + 1
        out.append(row)
    return out


# A text cell starting with one of these runs as a formula when the CSV is opened in a spreadsheet
# (OWASP "CSV Injection"); instructions are typed by participants and raw answers come from models.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return dumps_json(value, compact=True)
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value  # shown as text; numbers are not str here, so -0.5 stays a number
    return value


def csv_text(columns: tuple[str, ...], rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(columns)
    for row in rows:
        w.writerow([_csv_cell(row.get(c)) for c in columns])
    return buf.getvalue()


def trial_log_csv(trials: list[dict], participants: Sequence[dict] = ()) -> str:
    """The trial log as CSV text (header row first; nested values as compact JSON).

    Text cells starting with ``= + - @``, a tab or a carriage return get a leading ``'`` so a
    spreadsheet shows them as text instead of evaluating them (CSV injection)."""
    return csv_text(TRIAL_LOG_COLUMNS, trial_log(trials, participants))


# One row per SUS survey: the ten responses (1-5, Brooke 1996's item order) and the 0-100 score.
SUS_COLUMNS = (
    ("id", "study_id", "participant_id", "participant", "block", "agent")
    + tuple(f"q{i}" for i in range(1, 11))
    + ("score", "created_unix_s")
)


def sus_csv(surveys: list[dict], participants: Sequence[dict] = ()) -> str:
    """The SUS surveys (``Store.surveys()`` rows) as CSV text: ``participant`` is the label, ``block``
    counts from 1 as in the trial log, ``q1``..``q10`` the responses, ``score`` the SUS score."""
    rows = _labelled(surveys, SUS_COLUMNS, participants)
    for row, sv in zip(rows, surveys):
        row.update({f"q{i}": r for i, r in enumerate(sv.get("responses") or [], 1)})
    return csv_text(SUS_COLUMNS, rows)
