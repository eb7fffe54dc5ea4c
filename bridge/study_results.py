"""Results of a Point-Act study: per-agent success rate with a 95% Wilson interval, mean SUS, the
trial log and its CSV export (issue 2, "Results page"; PointArena sec. 4.1 / Fig. 7b reports
success and SUS per agent).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from pointlab.benchmark.records import dumps_json

from .trial import TrialResult

__all__ = ["Z_95", "wilson_interval", "agent_results", "trial_log", "trial_log_csv", "TRIAL_LOG_COLUMNS"]

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


def agent_results(agents: list[str], trials: list[dict], surveys: list[dict]) -> list[dict[str, Any]]:
    """Per agent (in ``agents`` order, plus any other agent found in the rows):

    ``agent``, ``n_trials`` (stored), ``n_judged``, ``n_succeeded``, ``success_rate`` (judged
    trials only; ``None`` when none), ``ci95`` ``[low, high]`` (Wilson) or ``None``,
    ``sim_success_rate`` (the simulator's own judgement where known), ``mean_sus``, ``n_surveys``.
    """
    names = list(agents) + sorted({t["agent"] for t in trials} - set(agents))
    out = []
    for a in names:
        mine = [t for t in trials if t["agent"] == a]
        judged = [t for t in mine if t.get("judgement") in ("succeeded", "failed")]
        k = sum(t["judgement"] == "succeeded" for t in judged)
        sim = [t["sim_success"] for t in mine if t.get("sim_success") is not None]
        sus = [s["score"] for s in surveys if s.get("agent") == a]
        ci = wilson_interval(k, len(judged))
        out.append({
            "agent": a, "n_trials": len(mine), "n_judged": len(judged), "n_succeeded": k,
            "success_rate": k / len(judged) if judged else None,
            "ci95": list(ci) if ci else None,
            "sim_success_rate": sum(sim) / len(sim) if sim else None,
            "mean_sus": sum(sus) / len(sus) if sus else None, "n_surveys": len(sus),
        })
    return out


# The store's own columns around every field of TrialResult (the record is written down once: a field
# added there is a column of the log and the CSV too); ``participant`` is the label, not the id.
TRIAL_LOG_COLUMNS = (("id", "trial_uid", "study_id", "participant_id", "participant", "block")
                     + tuple(f for f in TrialResult.model_fields if f != "trial_id")
                     + ("judgement", "created_unix_s", "judged_unix_s"))


def trial_log(trials: list[dict], participants: list[dict] = ()) -> list[dict[str, Any]]:
    """The trial rows restricted to :data:`TRIAL_LOG_COLUMNS` (operator view; names agents).

    ``participant`` is the participant's label (``P1``...) from ``participants`` (store rows), and
    ``block`` counts from 1 as on the pages ("Agent 1 (1 of 3)"); the store keeps it from 0."""
    labels = {p["id"]: p.get("label") for p in participants}
    out = []
    for t in trials:
        row = {c: t.get(c) for c in TRIAL_LOG_COLUMNS}
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


def trial_log_csv(trials: list[dict], participants: list[dict] = ()) -> str:
    """The trial log as CSV text (header row first; nested values as compact JSON).

    Text cells starting with ``= + - @``, a tab or a carriage return get a leading ``'`` so a
    spreadsheet shows them as text instead of evaluating them (CSV injection)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(TRIAL_LOG_COLUMNS)
    for t in trial_log(trials, participants):
        w.writerow([_csv_cell(t.get(c)) for c in TRIAL_LOG_COLUMNS])
    return buf.getvalue()
