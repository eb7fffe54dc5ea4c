"""Scoring of VSI-Bench / ReVSI questions: exact match on option letters for multiple-choice tasks,
Mean Relative Accuracy for numeric tasks (ReVSI sec. 6 "Evaluation metrics"), both under a strict
and a lenient answer parser (:mod:`pointlab.benchmark.extract`).

Tables: per task, per frame budget, overall. As in VSI-Bench, the three relative-direction
sub-types (easy / medium / hard) are averaged into one ``object_rel_direction`` task before the
overall mean, which is the unweighted mean of the task means.
"""

from __future__ import annotations

import math
import string
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..extract import PARSERS, parse_choice_lenient, parse_choice_strict, parse_number_lenient, parse_number_strict
from ..records import by_unique_id as _unique
from .errors import RecordError
from .mra import mean_relative_accuracy

__all__ = ["MC_TASKS", "NUMERIC_TASKS", "TASK_UNITS", "VsiItemScore", "score_vsi_item", "score_vsi",
           "task_group", "budget_of"]

#: multiple-choice question types (ground truth is an option letter).
MC_TASKS = frozenset({"object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
                      "object_rel_distance", "route_planning", "obj_appearance_order"})
#: numeric question types (ground truth is a number; scored by MRA).
NUMERIC_TASKS = frozenset({"object_counting", "object_size_estimation", "object_abs_distance",
                           "room_size_estimation"})
#: unit of the ground truth of length tasks, used by the lenient parser to convert "1.2 m" -> 120 cm.
TASK_UNITS = {"object_size_estimation": "cm", "object_abs_distance": "m"}
_DIRECTION = "object_rel_direction"


def task_group(question_type: str) -> str:
    """The reporting task of a question type: the direction sub-types map to ``object_rel_direction``."""
    return _DIRECTION if question_type.startswith(_DIRECTION + "_") else question_type


def budget_of(record: Mapping[str, Any]) -> str:
    """The frame budget a question belongs to, as a string (``"16"``, ``"all"``): ``budget`` when
    present, else ``num_frames``, else ``"unspecified"``."""
    for key in ("budget", "num_frames"):
        if record.get(key) is not None:
            return str(record[key])
    return "unspecified"


@dataclass(frozen=True)
class VsiItemScore:
    """One scored question. ``score`` is the strict parser's score (VSI-Bench's rule),
    ``score_lenient`` the lenient one's; ``answer_*`` the parsed answers (``None``: unparseable)."""

    id: str
    question_type: str
    budget: str
    score: float
    score_lenient: float
    answer_strict: str | float | None
    answer_lenient: str | float | None
    ground_truth: str | float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _letters(qid: str, options: Sequence[str] | None) -> str:
    if not options:
        return "ABCD"
    if not isinstance(options, (list, tuple)):
        raise RecordError(f"question {qid}: options must be a list, got {type(options).__name__}")
    if len(options) > len(string.ascii_uppercase):
        raise RecordError(f"question {qid}: {len(options)} options, at most 26 (A-Z)")
    out = []
    for i, opt in enumerate(options):
        s = str(opt).strip()
        out.append(s[0].upper() if len(s) > 1 and s[1] in ".)" and s[0].isascii() and s[0].isalpha()
                   else string.ascii_uppercase[i])
    return "".join(out)


def score_vsi_item(gt: Mapping[str, Any], prediction: str | None) -> VsiItemScore:
    """Score one prediction against one ground-truth record (fields of the released data:
    ``id``, ``question_type``, ``ground_truth``, ``options``; optional ``budget``/``num_frames``).

    Multiple choice: 1.0 when the parsed letter equals ``ground_truth`` (case-insensitive), else 0.0.
    Numeric: :func:`~pointlab.benchmark.video.mra.mean_relative_accuracy`. An unparseable or
    missing prediction scores 0.0 with reason ``unparseable`` / ``missing prediction``.

    Raises:
        RecordError: unknown ``question_type``, a numeric ``ground_truth`` that is not a number, or a
            multiple-choice ``ground_truth`` that is not one of the option letters.
    """
    qid = str(gt.get("id"))
    qtype = str(gt.get("question_type"))
    budget = budget_of(gt)
    not_text = None
    if isinstance(prediction, (list, dict)):
        # a model answer is text; "['3']" must not be read as 3 (a malformed prediction file)
        not_text, prediction = type(prediction).__name__, ""
    elif prediction is not None and not isinstance(prediction, str):
        prediction = str(prediction)  # a bare JSON number or boolean is its text
    if qtype in MC_TASKS:
        truth: str | float = str(gt.get("ground_truth", "")).strip().upper()
        letters = _letters(qid, gt.get("options"))
        if truth not in letters:  # no answer could ever match: bad ground truth, not a 0 for the model
            raise RecordError(f"question {qid}: ground_truth {gt.get('ground_truth')!r} is not one of the "
                              f"option letters {letters}")
        a_s = parse_choice_strict(prediction, letters)
        a_l = parse_choice_lenient(prediction, letters, gt.get("options"))
        s_s, s_l = float(a_s == truth), float(a_l == truth)
    elif qtype in NUMERIC_TASKS:
        try:
            truth = float(gt.get("ground_truth"))
        except (TypeError, ValueError) as e:
            raise RecordError(f"question {qid}: ground_truth {gt.get('ground_truth')!r} is not a number") from e
        if not math.isfinite(truth):
            raise RecordError(f"question {qid}: ground_truth is not finite")
        a_s = parse_number_strict(prediction)
        a_l = parse_number_lenient(prediction, TASK_UNITS.get(qtype))
        s_s, s_l = mean_relative_accuracy(a_s, truth), mean_relative_accuracy(a_l, truth)
    else:
        raise RecordError(f"question {qid}: unknown question_type {qtype!r}")
    if prediction is None:
        reason = "missing prediction"
    elif not_text:
        reason = f"unparseable: prediction is a JSON {not_text}, not text"
    elif a_s is None and a_l is None:
        reason = "unparseable"
    elif a_s is None:
        reason = "strict parser failed; lenient parsed"
    else:
        reason = "ok"
    return VsiItemScore(qid, qtype, budget, s_s, s_l, a_s, a_l, truth, reason)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _table(items: list[VsiItemScore], attr: str) -> dict[str, Any]:
    by_type: dict[str, list[float]] = defaultdict(list)
    for it in items:
        by_type[it.question_type].append(getattr(it, attr))
    by_task: dict[str, list[float]] = defaultdict(list)
    for qtype, scores in by_type.items():
        by_task[task_group(qtype)].extend(scores)
    tasks = {}
    for task in sorted(by_task):
        if task == _DIRECTION:
            # VSI-Bench: the direction sub-types are averaged into one task (mean of sub-type means)
            subs = {q: _mean(s) for q, s in by_type.items() if task_group(q) == _DIRECTION}
            tasks[task] = {"score": _mean(list(subs.values())), "n": len(by_task[task]),
                           "subtypes": {q: {"score": v, "n": len(by_type[q])} for q, v in sorted(subs.items())}}
        else:
            tasks[task] = {"score": _mean(by_task[task]), "n": len(by_task[task])}
    overall = _mean([t["score"] for t in tasks.values()])
    return {"tasks": tasks, "overall": overall, "n": len(items)}


def score_vsi(ground_truth: list[Mapping[str, Any]], predictions: Mapping[str, Any]) -> dict[str, Any]:
    """Score every ground-truth question; returns ``{"items": [...], "summary": {...}}``.

    ``summary[parser]`` for ``parser`` in ("strict", "lenient") holds ``overall`` (mean of task
    means), ``tasks`` and ``budgets[budget]`` with the same table per frame budget. Also counted:
    missing predictions, unparseable answers, prediction ids that match no question.

    Raises:
        RecordError: a malformed ground-truth record or a repeated question id.
    """
    items: list[VsiItemScore] = []
    for qid, rec in _unique(ground_truth, error=RecordError):
        items.append(score_vsi_item(rec, predictions.get(qid)))
    summary: dict[str, Any] = {}
    for parser, attr in zip(PARSERS, ("score", "score_lenient")):
        table = _table(items, attr)
        budgets = sorted({it.budget for it in items}, key=lambda b: (not b.isdigit(), int(b) if b.isdigit() else 0, b))
        table["budgets"] = {b: _table([it for it in items if it.budget == b], attr) for b in budgets}
        summary[parser] = table
    summary["n_questions"] = len(items)
    summary["missing_predictions"] = sum(it.reason == "missing prediction" for it in items)
    summary["unparseable"] = sum(it.reason.startswith("unparseable") for it in items)
    summary["unknown_prediction_ids"] = sorted(set(map(str, predictions)) - {it.id for it in items})
    summary["metric"] = {"multiple_choice": "exact match of the option letter",
                         "numeric": "MRA over theta in 0.50..0.95 (10 thresholds); gt 0 by exact match"}
    return {"items": [it.to_dict() for it in items], "summary": summary}
