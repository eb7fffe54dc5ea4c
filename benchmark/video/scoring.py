"""Scoring of VSI-Bench and ReVSI questions under a rule set (ReVSI sec. 6 "Evaluation metrics": exact
match for multiple choice, Mean Relative Accuracy for numbers).

The released evaluators are lmms-eval's ``vsibench`` and ``revsi`` tasks (``tasks/vsibench/utils.py``,
``tasks/revsi/utils.py`` at 75571cfe); which one applies follows from the question types
(``flavour``): ReVSI's (``object_counting_single``, ``object_rel_direction_forward_easy``, ...,
``room_size_estimation_multiple``; fields ``scene_id``, ``num_frames``) or VSI-Bench's.

- **Extraction (both rule sets)**: the released code's. VSI-Bench: multiple choice compares
  ``pred.split(" ")[0].rstrip(".").strip()`` with the ground truth, case-insensitive; numbers are
  ``extract_number`` (the first digit run or English number-word run, whichever comes first). ReVSI:
  the first token of the stripped answer, compared the same way or read with ``float()``. pointlab's
  lenient reading (answer markers, option text, units) is reported beside it (``metadata.lenient``).
- **MRA**: ``--rules reference`` computes ``|p - g| / g <= 1 - np.linspace(...)`` in floats
  (``mra.reference_mra``); ``--rules pointlab`` counts an error within 1e-9 of a tolerance and uses
  ``|g|`` (``mra.mean_relative_accuracy``).
- **Ground truth 0** (ReVSI dummy videos): reference: ReVSI's code catches the ZeroDivisionError and
  scores 0, VSI-Bench's crashes (we score 0 as ReVSI does); pointlab: exact match (ReVSI sec. 5).
- **Tables** (both): the mean per question type, the released code's composite tasks (VSI-Bench: the
  three direction sub-types; ReVSI: direction, relative distance, counting and room size sub-types)
  averaged over the sub-types present (VSI-Bench's code raises KeyError when one is missing; we average
  those present), the overall the mean of the task values; per frame budget as well (ReVSI runs one
  lmms-eval task per budget).
"""

from __future__ import annotations

import math
import re
import string
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..extract import parse_choice_lenient, parse_number_lenient, strip_reasoning
from ..records import by_unique_id as _unique
from ..scorers import ItemScore, ScoreReport, check_rules, register_scorer
from .errors import RecordError
from .mra import mean_relative_accuracy, reference_mra

__all__ = [
    "MC_TASKS",
    "NUMERIC_TASKS",
    "REVSI_MC_TASKS",
    "REVSI_NUMERIC_TASKS",
    "TASK_UNITS",
    "COMPOSITES",
    "VsiItemScore",
    "score_vsi_item",
    "score_vsi",
    "task_group",
    "budget_of",
    "detect_flavour",
    "lmms_extract_number",
    "lmms_results",
]

#: VSI-Bench multiple-choice question types (ground truth is an option letter).
MC_TASKS = frozenset(
    {
        "object_rel_direction_easy",
        "object_rel_direction_medium",
        "object_rel_direction_hard",
        "object_rel_distance",
        "route_planning",
        "obj_appearance_order",
    }
)
#: VSI-Bench numeric question types (ground truth is a number; scored by MRA).
NUMERIC_TASKS = frozenset({"object_counting", "object_size_estimation", "object_abs_distance", "room_size_estimation"})
#: ReVSI's released question types (lmms-eval ``revsi`` MCQ_QUESTION_TYPES / NQ_QUESTION_TYPES).
REVSI_MC_TASKS = frozenset(
    {
        "object_rel_direction_forward_easy",
        "object_rel_direction_backward_easy",
        "object_rel_direction_forward_hard",
        "object_rel_direction_backward_hard",
        "object_rel_distance_closest",
        "object_rel_distance_farthest",
        "route_planning",
    }
)
REVSI_NUMERIC_TASKS = frozenset(
    {
        "object_counting_single",
        "object_counting_multiple",
        "object_abs_distance",
        "object_size_estimation",
        "room_size_estimation_single",
        "room_size_estimation_multiple",
    }
)
#: composite tasks (averaged over their sub-types) per flavour.
COMPOSITES: dict[str, dict[str, tuple[str, ...]]] = {
    "vsibench": {
        "object_rel_direction": (
            "object_rel_direction_easy",
            "object_rel_direction_medium",
            "object_rel_direction_hard",
        )
    },
    "revsi": {
        "object_rel_direction": (
            "object_rel_direction_forward_easy",
            "object_rel_direction_backward_easy",
            "object_rel_direction_forward_hard",
            "object_rel_direction_backward_hard",
        ),
        "object_rel_distance": ("object_rel_distance_closest", "object_rel_distance_farthest"),
        "object_counting": ("object_counting_single", "object_counting_multiple"),
        "room_size_estimation": ("room_size_estimation_single", "room_size_estimation_multiple"),
    },
}
#: unit of the ground truth of length tasks, used by the lenient parser to convert "1.2 m" -> 120 cm.
TASK_UNITS = {"object_size_estimation": "cm", "object_abs_distance": "m"}


def detect_flavour(records: Sequence[Mapping[str, Any]]) -> str:
    """``"revsi"`` when any question type is ReVSI's own, or when only types both benchmarks share appear
    and the records carry ReVSI's ``scene_id`` and ``num_frames``; else ``"vsibench"``.

    Raises:
        RecordError: types of both benchmarks in one file (their tables differ).
    """
    types = {str(r.get("question_type")) for r in records}
    revsi = types & (REVSI_MC_TASKS | REVSI_NUMERIC_TASKS) - (MC_TASKS | NUMERIC_TASKS)
    vsi = types & (MC_TASKS | NUMERIC_TASKS) - (REVSI_MC_TASKS | REVSI_NUMERIC_TASKS)
    if revsi and vsi:
        raise RecordError(
            f"ReVSI question types ({sorted(revsi)[0]}, ...) and VSI-Bench ones ({sorted(vsi)[0]}, ...) "
            "in one file: score them separately"
        )
    if revsi:
        return "revsi"
    if not vsi and records and all("scene_id" in r and "num_frames" in r for r in records):
        return "revsi"
    return "vsibench"


def task_group(question_type: str, flavour: str = "vsibench") -> str:
    """The reporting task of a question type (a composite's name for its sub-types)."""
    for group, subs in COMPOSITES[flavour].items():
        if question_type in subs:
            return group
    return question_type


def budget_of(record: Mapping[str, Any]) -> str:
    """The frame budget a question belongs to, as a string (``"16"``, ``"all"``): ``budget`` when
    present, else ``num_frames`` (ReVSI), else ``"unspecified"``."""
    for key in ("budget", "num_frames"):
        if record.get(key) is not None:
            return str(record[key])
    return "unspecified"


@dataclass(frozen=True)
class VsiItemScore:
    """One scored question. ``score`` is the rule set's (the released extraction); ``score_lenient`` that of
    pointlab's lenient parser under the same rules; ``answer*`` the parsed answers (``None``: unparseable)."""

    id: str
    question_type: str
    budget: str
    score: float
    score_lenient: float
    answer: str | float | None
    answer_lenient: str | float | None
    ground_truth: str | float
    reason: str
    flavour: str = "vsibench"
    rules: str = "pointlab"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_contract(self) -> ItemScore:
        return ItemScore(
            id=self.id,
            value=self.score,
            parsed=self.answer,
            reason=self.reason,
            metadata={
                "question_type": self.question_type,
                "budget": self.budget,
                "ground_truth": self.ground_truth,
                "flavour": self.flavour,
                "lenient": {"answer": self.answer_lenient, "score": self.score_lenient},
            },
        )


# ----------------------------------------------------------------------------- the released extraction

_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
}
_LMMS_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def lmms_extract_number(text: Any) -> float | None:
    """lmms-eval vsibench ``extract_number``: the first digit run (``-?\\d+(\\.\\d+)?``) or English
    number-word run (``"and"`` skipped), whichever starts first, on the lower-cased text."""
    if text is None:
        return None
    s = str(text).strip().lower()
    if not s:
        return None
    digit = _LMMS_NUM.search(s)
    start, tokens = None, []
    for m in re.finditer(r"[a-z]+", s):
        tok = m.group(0)
        if start is None:
            if tok in _NUMBER_WORDS:
                start = m.start()
                tokens.append(tok)
        elif tok == "and":
            continue
        elif tok in _NUMBER_WORDS:
            tokens.append(tok)
        else:
            break
    if digit is not None and (start is None or digit.start() < start):
        return float(digit.group(0))
    if start is None:
        return None
    total = current = 0
    for tok in tokens:
        val = _NUMBER_WORDS[tok]
        if val == 100:
            current = max(current, 1) * 100
        elif val == 1000:
            total += max(current, 1) * 1000
            current = 0
        else:
            current += val
    return float(total + current)


def _first_token(prediction: str, flavour: str) -> str:
    # VSI-Bench's fuzzy_matching splits the raw text; ReVSI strips it first
    text = prediction if flavour == "vsibench" else prediction.strip()
    return text.split(" ")[0].rstrip(".").strip()


def _float_or_none(s: str) -> float | None:
    try:
        return float(s)
    except (ValueError, OverflowError):
        return None


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
        out.append(
            s[0].upper()
            if len(s) > 1 and s[1] in ".)" and s[0].isascii() and s[0].isalpha()
            else string.ascii_uppercase[i]
        )
    return "".join(out)


def _mra(pred: float | None, truth: float, rules: str, flavour: str) -> tuple[float, str | None]:
    """MRA under the rule set, and a note when the reference code would have raised."""
    if pred is None or not math.isfinite(pred):
        return 0.0, None
    if rules == "pointlab":
        return mean_relative_accuracy(pred, truth), None
    if truth == 0:
        note = (
            "ReVSI's code scores 0 (ZeroDivisionError caught)"
            if flavour == "revsi"
            else "VSI-Bench's code raises ZeroDivisionError here; scored 0 as ReVSI's code does"
        )
        return 0.0, note
    return reference_mra(pred, truth), None


def score_vsi_item(
    gt: Mapping[str, Any], prediction: Any, *, rules: str = "pointlab", flavour: str | None = None
) -> VsiItemScore:
    """Score one prediction against one ground-truth record (fields of the released data: ``id``,
    ``question_type``, ``ground_truth``, ``options``; optional ``budget`` / ``num_frames``).

    Raises:
        RecordError: unknown ``question_type``, a numeric ``ground_truth`` that is not a finite number, or a
            multiple-choice ``ground_truth`` that is not one of the option letters (no answer could match).
    """
    check_rules(rules)
    qid = str(gt.get("id"))
    qtype = str(gt.get("question_type"))
    flavour = flavour or detect_flavour([gt])
    mc, num = (MC_TASKS, NUMERIC_TASKS) if flavour == "vsibench" else (REVSI_MC_TASKS, REVSI_NUMERIC_TASKS)
    budget = budget_of(gt)
    not_text = None
    if isinstance(prediction, (list, dict)):
        # a model answer is text; "['3']" must not be read as 3 (a malformed prediction file)
        not_text, prediction = type(prediction).__name__, ""
    elif prediction is not None and not isinstance(prediction, str):
        prediction = str(prediction)  # a bare JSON number or boolean is its text
    if rules != "reference" and prediction is not None:
        # reasoning is never read for the answer; the space its block leaves is part of it (an answer
        # without reasoning is read as the released rule reads it, leading space and all)
        outside = strip_reasoning(prediction)
        if outside != prediction:
            prediction = outside.strip()
    note = None
    truth: str | float
    answer: str | float | None
    a_l: str | float | None
    if qtype in mc:
        truth = letter = str(gt.get("ground_truth", "")).strip().upper()
        letters = _letters(qid, gt.get("options"))
        if letter not in letters:  # no answer could ever match: bad ground truth, not a 0 for the model
            raise RecordError(
                f"question {qid}: ground_truth {gt.get('ground_truth')!r} is not one of the option letters {letters}"
            )
        tok = _first_token(prediction, flavour) if prediction is not None else None
        answer = tok if tok else None
        s = float(tok is not None and tok.lower() == str(gt.get("ground_truth", "")).strip().lower() and bool(tok))
        a_l = parse_choice_lenient(prediction, letters, gt.get("options"))
        s_l = float(a_l == truth)
    elif qtype in num:
        raw_truth: Any = gt.get("ground_truth")  # any JSON value: what float() refuses is reported
        try:
            truth = number = float(raw_truth)
        except (TypeError, ValueError, OverflowError) as e:
            raise RecordError(f"question {qid}: ground_truth {gt.get('ground_truth')!r} is not a number") from e
        if not math.isfinite(number):
            raise RecordError(f"question {qid}: ground_truth is not finite")
        number_answer: float | None
        if prediction is None:
            number_answer = None
        elif flavour == "vsibench":
            number_answer = lmms_extract_number(prediction)
        else:
            number_answer = _float_or_none(_first_token(prediction, flavour))
        s, note = _mra(number_answer, number, rules, flavour)
        answer = number_answer
        number_lenient = parse_number_lenient(prediction, TASK_UNITS.get(qtype))
        s_l = mean_relative_accuracy(number_lenient, number) if number_lenient is not None else 0.0
        a_l = number_lenient
    else:
        raise RecordError(
            f"question {qid}: unknown {'ReVSI' if flavour == 'revsi' else 'VSI-Bench'} question_type {qtype!r}"
        )
    if prediction is None:
        reason = "missing prediction"
    elif not_text:
        reason = f"unparseable: prediction is a JSON {not_text}, not text"
    elif answer is None and a_l is None:
        reason = "unparseable"
    elif answer is None:
        reason = "unparseable by the released extraction; lenient parsed"
    else:
        reason = "ok" if note is None else f"ok; {note}"
    return VsiItemScore(qid, qtype, budget, s, s_l, answer, a_l, truth, reason, flavour, rules)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _table(items: list[VsiItemScore], attr: str, flavour: str) -> dict[str, Any]:
    by_type: dict[str, list[float]] = defaultdict(list)
    for it in items:
        by_type[it.question_type].append(getattr(it, attr))
    tasks: dict[str, Any] = {}
    groups: dict[str, list[str]] = defaultdict(list)
    for qtype in sorted(by_type):
        groups[task_group(qtype, flavour)].append(qtype)
    for task in sorted(groups):
        subs = groups[task]
        if task in COMPOSITES[flavour]:
            # the released code: the mean of the sub-type means (not the pooled mean)
            means = {q: _mean(by_type[q]) for q in subs}
            tasks[task] = {
                "score": _mean([m for m in means.values() if m is not None]),  # (no sub-type is empty)
                "n": sum(len(by_type[q]) for q in subs),
                "subtypes": {q: {"score": v, "n": len(by_type[q])} for q, v in means.items()},
            }
        else:
            tasks[task] = {"score": _mean(by_type[task]), "n": len(by_type[task])}
    return {"tasks": tasks, "overall": _mean([t["score"] for t in tasks.values()]), "n": len(items)}


def _budget_key(b: str):
    return (not b.isdigit(), int(b) if b.isdigit() else 0, b)


def score_vsi(
    ground_truth: list[Mapping[str, Any]], predictions: Mapping[str, Any], *, rules: str = "pointlab"
) -> dict[str, Any]:
    """Score every ground-truth question; returns ``{"items": [...], "summary": {...}}``.

    ``summary`` holds ``rules``, ``flavour``, ``overall`` (mean of task means), ``tasks``,
    ``budgets[budget]`` (the same table per frame budget) and ``lenient`` (the same tables for pointlab's
    lenient reading); also counted: missing predictions, unparseable answers, prediction ids that match no
    question, unusable prediction lines.

    Raises:
        RecordError: a malformed ground-truth record, a repeated question id, mixed benchmarks.
    """
    report = score_vsi_report(ground_truth, predictions, rules=rules)
    return {"items": [it for it in report["_items"]], "summary": report["summary"]}


def score_vsi_report(
    ground_truth: list[Mapping[str, Any]], predictions: Mapping[str, Any], *, rules: str = "pointlab"
) -> dict[str, Any]:
    check_rules(rules)
    recs = list(_unique(ground_truth, error=RecordError))
    flavour = detect_flavour([r for _, r in recs])
    problems = getattr(predictions, "problems", {})
    items: list[VsiItemScore] = []
    for qid, rec in recs:
        it = score_vsi_item(rec, predictions.get(qid), rules=rules, flavour=flavour)
        if qid in problems:
            it = VsiItemScore(
                it.id,
                it.question_type,
                it.budget,
                0.0,
                0.0,
                None,
                None,
                it.ground_truth,
                f"invalid_prediction: {problems[qid]}",
                flavour,
                rules,
            )
        items.append(it)
    summary: dict[str, Any] = {"rules": rules, "flavour": flavour}
    budgets = sorted({it.budget for it in items}, key=_budget_key)
    for name, attr in (("score", "score"), ("lenient", "score_lenient")):
        table = _table(items, attr, flavour)
        table["budgets"] = {b: _table([it for it in items if it.budget == b], attr, flavour) for b in budgets}
        if name == "score":
            summary.update(table)
        else:
            summary["lenient"] = table
    summary["n_questions"] = len(items)
    summary["missing_predictions"] = sum(it.reason == "missing prediction" for it in items)
    summary["unparseable"] = sum(it.reason.startswith("unparseable") for it in items)
    summary["unknown_prediction_ids"] = sorted(set(map(str, predictions)) - {it.id for it in items})
    summary["unreadable_prediction_lines"] = list(getattr(predictions, "unreadable", []))
    summary["metric"] = {
        "multiple_choice": "exact match of the first token (the released extraction)",
        "numeric": (
            "MRA, theta 0.50..0.95; "
            + (
                "float boundary as lmms-eval"
                if rules == "reference"
                else "an error within 1e-9 of a tolerance counts; gt 0 by exact match"
            )
        ),
    }
    return {"_items": [it.to_dict() for it in items], "_scores": items, "summary": summary}


_VSI_METRIC = {
    "obj_appearance_order": "obj_appearance_order_accuracy",
    "object_abs_distance": "object_abs_distance_mra",
    "object_counting": "object_counting_mra",
    "object_rel_distance": "object_rel_distance_accuracy",
    "object_size_estimation": "object_size_estimation_mra",
    "room_size_estimation": "room_size_estimation_mra",
    "route_planning": "route_planning_accuracy",
    "object_rel_direction": "object_rel_direction_accuracy",
}


def lmms_results(summary: Mapping[str, Any]) -> list[tuple[str, dict[str, float | None]]]:
    """``[(lmms-eval task, {metric: value})]`` of a VSI summary: VSI-Bench is one ``vsibench`` task;
    ReVSI one ``revsi_<budget>_frame`` task per frame budget (its released task configs)."""
    if summary["flavour"] == "vsibench":
        metrics = {"vsibench_overall": summary["overall"]}
        metrics.update({_VSI_METRIC.get(t, f"{t}_score"): v["score"] for t, v in summary["tasks"].items()})
        return [("vsibench", metrics)]
    out = []
    for b, table in summary["budgets"].items():
        metrics = {"overall_acc": table["overall"]}
        metrics.update({f"{t}_acc": v["score"] for t, v in table["tasks"].items()})
        out.append((f"revsi_{b}_frame", metrics))
    return out


@register_scorer("vsi", "VSI-Bench / ReVSI (ReVSI sec. 6): exact match and Mean Relative Accuracy")
def score_vsi_contract(
    ground_truth: list[Mapping[str, Any]], predictions: Mapping[str, Any], *, rules: str = "pointlab"
) -> ScoreReport:
    """The registered VSI scorer (contract form of ``score_vsi``)."""
    rep = score_vsi_report(ground_truth, predictions, rules=rules)
    summary = dict(rep["summary"])
    summary.pop("rules", None)
    return ScoreReport(scorer="vsi", rules=rules, items=[it.to_contract() for it in rep["_scores"]], summary=summary)
